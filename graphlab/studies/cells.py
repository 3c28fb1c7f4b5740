"""`graphlab record --models cells`: the notebooks' `%%cudagraph` cells, captured on a GPU.

Recorded mode's `%%cudagraph NAME` runs the cell eagerly on the CPU and shows the graph recorded here for
the cell of that name and exact code (`graphlab.capture.recorded.recorded_cell`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from graphlab.capture.cell import capture_cell
from graphlab.capture.options import CaptureOptions
from graphlab.capture.recorded import CELLS_RECORDING
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies.record import RECORD_DOT_FLAGS
from graphlab.zoo import get_model

#: the recording's name: the one recorded mode's `%%cudagraph` reads (`graphlab.capture.recorded.CELLS_RECORDING`)
RECORDING = CELLS_RECORDING
#: name -> (zoo model, batch size, cell code): the cells the notebooks show, word for word
CELLS: dict[str, tuple[str, int, str]] = {
    "step": ("gpt", 1, "logits = model(ids)\nprobs = logits.softmax(-1)\n"),
}


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """The %%cudagraph cells of the notebooks, captured on this GPU."""
    graphs = {}
    for name, (model_name, batch_size, code) in CELLS.items():
        zoo = get_model(model_name)
        namespace: dict[str, Any] = {"torch": torch, "model": zoo.build()}
        (namespace["ids"],) = zoo.make_inputs(batch_size)
        cg = capture_cell(code, namespace, CaptureOptions(dot_flags=RECORD_DOT_FLAGS), name=name)
        dot = cg.dot()
        graphs[name] = {"dot": dot, "model": parse_dot(dot, source=f"{name}.dot"), "code": code,
                        "zoo_model": model_name, "batch_size": batch_size, "dot_flags": RECORD_DOT_FLAGS,
                        "inputs": list(cg.input_names), "outputs": sorted(cg.outputs),
                        "capture_ms": round(cg.capture_ms, 3), "instantiate_ms": round(cg.instantiate_ms, 3),
                        "pool_bytes": cg.pool_bytes, "verify": cg.verify(trials=2).to_dict()}
        print(f"[record] cell {name}: {len(graphs[name]['model'])} nodes", flush=True)
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="The %%cudagraph cells of the notebooks, captured on this "
                    "GPU.", provenance=prov, graphs=graphs, results={})
    return folder


__all__ = ["CELLS", "RECORDING", "record"]
