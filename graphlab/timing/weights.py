"""Do new weights need a new capture? Measured, not assumed.

Needs torch (imported at the top) and a GPU.
"""
from __future__ import annotations

import copy
from typing import Any

import torch

from graphlab.capture.api import capture


def _flat_outputs(out: Any) -> Any:
    if torch.is_tensor(out):
        return out.detach().float().flatten()
    if isinstance(out, dict):
        out = list(out.values())
    return torch.cat([_flat_outputs(o) for o in out if torch.is_tensor(o) or isinstance(o, (list, tuple, dict))])


def probe_weight_update(model: Any, inputs: Any, seed: int = 1) -> dict[str, Any]:
    """Do new weights need a new capture? Measure both ways of changing them, on a copy of `model`.

    A graph stores the *addresses* its kernels read. `param.copy_(new)` writes new values to the same
    address, so a replay sees them; `module.weight = nn.Parameter(new)` points the module at new
    memory, which the graph never reads. Returns the measured output differences (relative to the
    output's largest magnitude) and the verdicts drawn from them.
    """
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    work = copy.deepcopy(model).eval()
    params = [(mod, pname, p) for mod in work.modules() for pname, p in mod.named_parameters(recurse=False)]
    if not params:
        return {"batch_size": None, "note": "model has no parameters; nothing to probe"}
    gen = torch.Generator(device=params[0][2].device).manual_seed(seed)
    tol = 1e-3
    with torch.no_grad():
        cg = capture(work, *args, name="weight-probe")
        before = _flat_outputs(cg(*args)).clone()
        scale = float(before.abs().max()) or 1.0

        def rel(a: Any, b: Any) -> float:
            return float((a - b).abs().max()) / scale

        for _, _, p in params:
            if p.is_floating_point():
                p.copy_(p + 0.5 * p.std().nan_to_num(1.0) * torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype))
        replay_inplace = _flat_outputs(cg(*args)).clone()
        eager_inplace = _flat_outputs(work(*args)).clone()
        kept = [p for _, _, p in params]  # keep the old storage alive: the graph still reads it
        for mod, pname, p in params:
            if p.is_floating_point():
                setattr(mod, pname, torch.nn.Parameter(p.detach() * -1.0 + 0.1, requires_grad=False))
        replay_rebound = _flat_outputs(cg(*args)).clone()
        eager_rebound = _flat_outputs(work(*args)).clone()
        cg.reset()
        del kept
    changed = rel(eager_inplace, before)
    return {
        "batch_size": int(args[0].shape[0]) if hasattr(args[0], "shape") and args[0].dim() > 0 else None,
        "tolerance_rel": tol,
        "output_change_rel": changed,
        "inplace_copy": {
            "replay_vs_eager_new_rel": rel(replay_inplace, eager_inplace),
            "replay_follows_new_weights": rel(replay_inplace, eager_inplace) <= tol < changed,
        },
        "rebind_parameter": {
            "replay_vs_eager_new_rel": rel(replay_rebound, eager_rebound),
            "replay_vs_old_weights_rel": rel(replay_rebound, eager_inplace),
            "replay_follows_new_weights": rel(replay_rebound, eager_rebound) <= tol,
        },
        "method": "copy.deepcopy(model); new weights = old + 0.5*std*randn; rebound = -old + 0.1 as new Parameters",
    }


__all__ = ["probe_weight_update"]
