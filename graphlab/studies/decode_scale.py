"""`graphlab record --models decode_scale`: an 8B-class decoder's decode step, four ways per bucket, against the
roofline measured in the same run.

A Llama-3-8B-shaped model (32 layers, hidden 4,096, MLP 14,336, 32 heads / 8 KV heads, vocab 128,256), random
init made directly on the GPU in bf16; a 128-token prompt, `max_cache_len` 1,024; buckets 1, 8, 64 and 256 (or
`--buckets`), all on one KV cache; the ways HF eager, reduce-overhead, graphlab and graphlab+compile (or `--ways`),
run one at a time, each freeing its cache and graphs before the next.

It does not fit one 10-minute command, so it runs in parts (docs/decode.md gives the commands):

    graphlab record --models decode_scale --ways eager graphlab --buckets 1 8 64 256
    graphlab record --models decode_scale --ways graphlab+compile
    graphlab record --models decode_scale --ways reduce-overhead

Each call measures the GPU's bandwidth and matmul rate, runs its ways, writes its part after every way (a call
that runs out of time keeps the ways it finished) to `$GRAPHLAB_DECODE_SCALE_DIR/parts/` (default
/tmp/graphlab-decode-scale, outside the checkout; Inductor's and Triton's caches live there too, so a later call
on the same machine compiles from a warm cache), then merges every part there into the recording
(`<out>/<gpu>/decode_scale`: scale.json and the batch-1 graphs) and packs the recording and the parts into one
archive, `$GRAPHLAB_DECODE_SCALE_DIR/decode_scale.tar.gz`.

`GRAPHLAB_DECODE_SCALE_SIZE=toy` runs the same code on a tiny Llama (fp32; on the CPU where there is no GPU: the
eager way only), for the tests; no figure is claimed from it.
"""
from __future__ import annotations

import json
import os
import tarfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from graphlab.decode.results import WAYS
from graphlab.decode.roofline import DecoderShape
from graphlab.decode.roofline_gpu import measure_machine
from graphlab.decode.scale import ScaleReport, merge_parts, merged_provenance, parts_in_order
from graphlab.decode.scale_run import SCALE_CONFIG, TOY_CONFIG, DTYPES, ScaleOptions, build_on_device, run_way
from graphlab.errors import BadInputError, ConfigurationError
from graphlab.files import open_regular
from graphlab.recordings import gpu_slug, write_recording

RECORDING: str = ScaleReport.RESULTS.recording  # type: ignore[attr-defined]
WORK_DEFAULT = "/tmp/graphlab-decode-scale"
BUCKETS = (1, 8, 64, 256)
ARCHIVE = "decode_scale.tar.gz"


def work_folder() -> Path:
    """Where the parts, the graphs and Inductor's cache live between calls: $GRAPHLAB_DECODE_SCALE_DIR."""
    return Path(os.environ.get("GRAPHLAB_DECODE_SCALE_DIR", WORK_DEFAULT))


def options_for(size: str, buckets: Any) -> ScaleOptions:
    """The run's options: "8b" (the recording) or "toy" (a tiny Llama for the tests)."""
    chosen = tuple(sorted(set(int(b) for b in buckets))) if buckets else None
    if size == "8b":
        return ScaleOptions(config=dict(SCALE_CONFIG), buckets=chosen or BUCKETS)
    if size == "toy":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        return ScaleOptions(config=dict(TOY_CONFIG), dtype="float32", prompt_len=8, max_cache_len=32, new_tokens=6,
                            buckets=chosen or (1, 2, 4), rounds=1, device=device)
    raise ConfigurationError(f"GRAPHLAB_DECODE_SCALE_SIZE must be 8b or toy, got {size!r}")


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)


def read_parts(folder: Path) -> list[dict[str, Any]]:
    """Every part in `folder` (part-*.json), in the order they were made."""
    found = []
    for path in sorted(folder.glob("part-*.json")):
        with open_regular(path) as f:
            found.append((path.name, json.load(f)))
    return [dict(p) for p in parts_in_order(found)]


def flags() -> tuple[list[str], list[int] | None]:
    """(the ways, the buckets) this call runs: `--ways` and `--buckets` (through $GRAPHLAB_RECORD_WAYS and
    $GRAPHLAB_RECORD_BUCKETS, `graphlab.studies.record.study_flags`); all ways and the default buckets when not
    given."""
    ways = os.environ.get("GRAPHLAB_RECORD_WAYS", "").split() or list(WAYS)
    unknown = [w for w in ways if w not in WAYS]
    if unknown:
        raise BadInputError(f"unknown way(s) {unknown}; choose from {', '.join(WAYS)}")
    text = os.environ.get("GRAPHLAB_RECORD_BUCKETS", "").split()
    if not all(t.isdigit() and int(t) > 0 for t in text):
        raise BadInputError(f"--buckets must be positive batch sizes, got {' '.join(text)}")
    return ways, [int(t) for t in text] or None


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """An 8B-class decoder's decode step four ways per bucket, against the roofline (in parts: --ways, --buckets)."""
    ways, buckets = flags()
    options = options_for(os.environ.get("GRAPHLAB_DECODE_SCALE_SIZE", "8b"), buckets)
    work = work_folder()
    parts_dir, dots_dir = work / "parts", work / "dots"
    parts_dir.mkdir(parents=True, exist_ok=True)
    dots_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(work / "inductor" / "triton"))

    def say(text: str) -> None:
        print(f"[record] decode_scale: {text}", flush=True)

    machine = measure_machine()  # a GPUUnavailableError without a GPU (the tests stand in for it on a CPU)
    say(f"bandwidth {machine['bandwidth']}, bf16 mm {machine['mm_flops_per_s'] / 1e12:.1f} TFLOP/s")
    model = build_on_device(options.config, options.device, DTYPES[options.dtype])
    shape = DecoderShape.from_hf_config(options.config, param_bytes=model.dtype.itemsize,
                                        kv_bytes=model.dtype.itemsize).to_dict()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    named = "-".join(w.replace("+", "_") for w in ways) + "-b" + "_".join(str(b) for b in options.buckets)
    part_path = parts_dir / f"part-{stamp}-{named}.json"
    part: dict[str, Any] = {"shape": shape, "conditions": options.conditions(), "machine": machine, "rows": [],
                            "memory": {}, "ways": [], "buckets": list(options.buckets), "provenance": prov}
    for way in ways:
        dots: dict[str, str] = {}
        rows, memory = run_way(way, model, options, say=say, keep_dots=dots)
        part["rows"] += [r.to_dict() for r in rows]
        part["memory"][way] = memory
        part["ways"].append(way)
        for key, dot in dots.items():
            (dots_dir / f"{key}.dot").write_text(dot, encoding="utf-8")
        _write_json(part_path, part)  # after every way: a call that runs out of time keeps what it finished
        say(f"{way} done; part written to {part_path}")
    return write_merged(out_root, work)


def write_merged(out_root: Path, work: Path) -> Path:
    """Merge every part in `work`/parts into the recording and pack it with the parts into one archive."""
    parts = read_parts(work / "parts")
    merged = merge_parts(parts)
    prov = merged_provenance(parts)
    graphs = {p.stem: {"dot": p.read_text(encoding="utf-8"), "batch_size": int(p.stem.rsplit("-b", 1)[-1])}
              for p in sorted((work / "dots").glob("*.dot"))}
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING,
                    description="An 8B-class decoder's decode step (Llama-3-8B shape, random init, bf16; prompt 128, "
                                "cache 1,024): HF eager, reduce-overhead, graphlab and graphlab+compile per bucket on "
                                "one shared KV cache, against the roofline (bandwidth and matmul rate measured in the "
                                "same run).",
                    provenance=prov, graphs=graphs, results={"scale": merged})
    report = ScaleReport.from_dict(merged, source="this run")
    print(report.table("steps"), report.table("roofline"), sep="\n", flush=True)
    archive = work / ARCHIVE
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=f"{gpu_slug(prov['gpu'])}/{RECORDING}")
        tar.add(work / "parts", arcname="parts")
    print(f"[record] decode_scale: {len(parts)} part(s) merged; archive {archive}", flush=True)
    return folder


__all__ = ["ARCHIVE", "BUCKETS", "RECORDING", "flags", "options_for", "read_parts", "record", "work_folder", "write_merged"]
