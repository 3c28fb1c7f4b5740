"""What torch.compile's structured trace says about kernels and modules on this machine (issue 24's probe).

    python3 scripts/probes/inductor_modules_probe.py OUT.json [mlp|gpt]

Compiles a Linear-GELU-Linear MLP (mode="reduce-overhead" on CUDA, else default on the CPU) inside
`record_kernel_modules()` and writes what the recorder found, every provenance artifact's payload and the
Dynamo graph's node -> module map, as JSON.
"""
import json
import logging
import sys

import torch

from graphlab.watch.inductor_modules import POST_GRAD_ARTIFACT, PROVENANCE_ARTIFACT, _graph_module_of_payload, _pre_modules, record_kernel_modules

seen = {"artifacts": [], "pre": [], "post": [], "names": []}


class Keep(logging.Handler):
    def emit(self, record):
        md = getattr(record, "metadata", None)
        if not isinstance(md, dict):
            return
        seen["names"].append(sorted(md)[:3])
        if "dynamo_output_graph" in md:
            gm = _graph_module_of_payload()
            seen["pre"].append(_pre_modules(gm) if gm is not None else None)
        art = md.get("artifact")
        if isinstance(art, dict) and art.get("name") == POST_GRAD_ARTIFACT:
            gm = _graph_module_of_payload()
            seen["post"].append(_pre_modules(gm) if gm is not None else None)
        if isinstance(art, dict) and art.get("name") == PROVENANCE_ARTIFACT:
            seen["artifacts"].append(getattr(record, "payload", None))


def main(out, which="mlp"):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if which == "gpt":
        from graphlab import zoo
        model = zoo.get_model("gpt").build(device=device)
        (x,) = zoo.get_model("gpt").make_inputs(1, device=device)
    else:
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256))
        model = model.to(device).eval()
        x = torch.randn(8, 256, device=device)
    with record_kernel_modules() as rec:
        logging.getLogger("torch.__trace").addHandler(Keep(logging.DEBUG))
        compiled = torch.compile(model, mode="reduce-overhead" if device == "cuda" else None)
        with torch.no_grad():
            for _ in range(3):
                compiled(x)
    data = {"torch": torch.__version__, "device": device, "notes": rec.notes, "graphs_seen": rec.graphs_seen,
            "mappings_seen": rec.mappings_seen, "compiles": rec.compiles, "reason": rec.reason,
            "kernel_modules": rec.kernel_modules, "seen": seen}
    open(out, "w").write(json.dumps(data, indent=1, default=str))
    print(json.dumps({k: v for k, v in data.items() if k != "seen"}, default=str)[:3000])


if __name__ == "__main__":
    main(sys.argv[1], *(sys.argv[2:3]))
