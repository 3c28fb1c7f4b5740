"""Probe: the facts the multi-GPU code relies on, checked on this machine (about 45 s on one H200).

    PYTHONPATH=. python3 scripts/probes/multigpu_probe.py --out DIR [--nproc N]

One command does it all: this process checks the single-process facts (GPUs, NCCL version, topology,
thread-local streams for the replicas), then launches itself under torchrun
(`python3 -m torch.distributed.run --standalone --nproc-per-node N`, default N=1) as workers, each
run in its own process group with a timeout, so a hang is reported instead of blocking:

    main            eager communicator (init_process_group(device_id=...)), eager and MAX all-reduces,
                    a gloo side group, the all-reduce captured in a graph (raw torch and gl.capture),
                    its DOT (is the NCCL kernel in it at this world size?), the tensor-parallel layer
                    against the dense one, then teardown after resetting the graphs (timed)
    nowarm          eager communicator, the very first collective inside capture (no warm-up)
    otherstream     eager communicator, warm-up on the default stream, capture on a fresh stream
    lazy            no device_id (lazy communicator), the first collective inside capture
    lazy_warm       lazy communicator, 3 warm-ups on the capture stream, then capture
    mixing0         NCCL_GRAPH_MIXING_SUPPORT=0: which nodes the captured all-reduce makes
    teardown_alive  destroy_process_group while a keep_graph graph is alive (the hang seen on 2 GPUs)

Every check is in its own try/except; exact messages are kept. Writes DIR/multigpu_probe.json (and the
workers' DOT files, e.g. DIR/allreduce_ws1_rank0.dot). NCCL_NVLS_ENABLE=0 is set for every run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
MODES_AFTER_MAIN = ("nowarm", "otherstream", "lazy", "lazy_warm", "mixing0", "teardown_alive")
MAIN_TIMEOUT_S = 45
SIDE_TIMEOUT_S = 25


class Checks:
    """Results by name, written to `path` after every check (a later hang keeps what came before)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.results: dict[str, Any] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            value = fn()
            self.results[name] = {"ok": True, "value": value, "s": round(time.perf_counter() - t0, 3)}
        except BaseException as exc:  # noqa: BLE001 - a probe records everything
            value = None
            self.results[name] = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)[:3000],
                                  "traceback_tail": traceback.format_exc()[-1500:],
                                  "s": round(time.perf_counter() - t0, 3)}
        self.save()
        return value

    def note(self, name: str, value: Any) -> None:
        self.results[name] = {"ok": True, "value": value}
        self.save()

    def save(self) -> None:
        if self.path is not None:
            self.path.write_text(json.dumps(self.results, indent=1, default=str))


def _kernels_of(dot: str) -> dict[str, Any]:
    """Node kinds and kernel names/families of a DOT dump, through graphlab's parser."""
    from graphlab.graph.dot_parser import parse_dot

    graph = parse_dot(dot)
    return {
        "count_by_kind": graph.count_by_kind(),
        "count_by_family": graph.count_by_family(),
        "kernels": [{"name": n.name, "family": n.family, "short": n.short_name, "grid": n.grid, "block": n.block,
                     "shared_bytes": n.shared_bytes} for n in graph.kernels()],
        "nccl_kernels": [n.name for n in graph.kernels() if n.family == "NCCL"],
        "nodes_in_order": [n.kind.value for n in graph.root.nodes],
    }


def _dot_of(torch_graph: Any) -> str:
    from graphlab.graph.export import dump_dot

    return dump_dot(torch_graph, 1)


# -- the worker (runs under torchrun) -------------------------------------------------------------------
def worker(mode: str, out: Path) -> int:
    rank, local_rank, world = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"])
    checks = Checks(out / f"worker_{mode}_rank{rank}.json")
    import inspect

    import torch
    import torch.distributed as dist

    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    def nccl() -> str:
        import torch.cuda.nccl

        return ".".join(map(str, torch.cuda.nccl.version()))

    checks.run("nccl_version", nccl)
    checks.note("env", {"rank": rank, "local_rank": local_rank, "world_size": world, "torch": torch.__version__,
                        "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE"),
                        "NCCL_GRAPH_MIXING_SUPPORT": os.environ.get("NCCL_GRAPH_MIXING_SUPPORT"),
                        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING")})
    eager = mode not in ("lazy", "lazy_warm")
    params = inspect.signature(dist.init_process_group).parameters
    checks.note("init_has_device_id", "device_id" in params)

    def init() -> dict[str, Any]:
        t0 = time.perf_counter()
        if eager:
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("nccl")
        pg = dist.distributed_c10d._get_default_group()
        info: dict[str, Any] = {"init_ms": round((time.perf_counter() - t0) * 1e3, 1),
                                "bound_device_id": str(getattr(pg, "bound_device_id", "<no attribute>"))}
        try:
            backend = pg._get_backend(device)
            info["backend_type"] = type(backend).__name__
            info["backend_attrs"] = sorted(a for a in dir(backend) if any(w in a.lower() for w in (
                "init", "comm", "bound", "eager", "split", "uid")))
            for attr in ("_is_initialized", "comm_split_count"):
                if hasattr(backend, attr):
                    try:
                        info[attr] = getattr(backend, attr)()
                    except Exception as exc:  # noqa: BLE001
                        info[attr] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001
            info["backend_error"] = f"{type(exc).__name__}: {exc}"
        return info

    if checks.run("init", init) is None:
        return 1

    side = torch.cuda.Stream(device=device)
    keep = "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters

    def body(x: Any) -> Any:
        y = x * 1
        dist.all_reduce(y)
        return y + 1

    def capture_allreduce(warmups: int, warm_stream: Any, capture_stream: Any, tag: str) -> dict[str, Any]:
        x = torch.arange(1, 4, device=device, dtype=torch.float32)
        if warmups:
            warm_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(warm_stream):
                for _ in range(warmups):
                    body(x)
            torch.cuda.current_stream().wait_stream(warm_stream)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph(keep_graph=True) if keep else torch.cuda.CUDAGraph()
        capture_stream.wait_stream(torch.cuda.current_stream())
        t0 = time.perf_counter()
        with torch.cuda.stream(capture_stream):
            graph.capture_begin()
            try:
                z = body(x)
            except BaseException as exc:
                try:
                    graph.capture_end()
                except Exception as end_exc:  # noqa: BLE001 - keep the first error, note the second
                    exc.args = (*exc.args, f"[then capture_end: {type(end_exc).__name__}: {str(end_exc)[:600]}]")
                raise
            graph.capture_end()
        torch.cuda.current_stream().wait_stream(capture_stream)
        capture_ms = (time.perf_counter() - t0) * 1e3
        if keep and hasattr(graph, "instantiate"):
            graph.instantiate()
        sums = []
        for k in (1.0, 2.0, 5.0):
            x.copy_(torch.tensor([k, k + 1, k + 2], device=device))
            graph.replay()
            torch.cuda.synchronize()
            sums.append(z.tolist())
        expected = [[world * v + 1 for v in (k, k + 1, k + 2)] for k in (1.0, 2.0, 5.0)]
        info: dict[str, Any] = {"capture_ms": round(capture_ms, 2), "replays": sums, "expected": expected,
                                "correct": sums == expected}
        try:
            dot = _dot_of(graph)
            name = f"allreduce_{tag}_ws{world}_rank{rank}.dot" if tag else f"allreduce_ws{world}_rank{rank}.dot"
            (out / name).write_text(dot)
            info["dot_file"] = name
            info.update(_kernels_of(dot))
        except Exception as exc:  # noqa: BLE001
            info["dot_error"] = f"{type(exc).__name__}: {exc}"
        t0 = time.perf_counter_ns()
        for _ in range(100):
            graph.replay()
        info["replay_host_us"] = round((time.perf_counter_ns() - t0) / 100 / 1e3, 2)
        torch.cuda.synchronize()
        graphs.append(graph)
        return info

    graphs: list[Any] = []

    def diagnosed(fn: Callable[[], Any]) -> Callable[[], Any]:
        """Run fn; on failure record graphlab's diagnosis too, and whether the process recovers."""

        def wrapped() -> Any:
            try:
                return fn()
            except Exception as exc:
                from graphlab.capture.diagnose import diagnose

                diag = diagnose(exc)
                after: dict[str, Any] = {}
                try:
                    after["still_capturing"] = bool(torch.cuda.is_current_stream_capturing())
                    from graphlab.capture.recovery import recover

                    after["recover_repaired"] = recover()
                    t = torch.ones(4, device=device)
                    dist.all_reduce(t)
                    torch.cuda.synchronize()
                    after["eager_all_reduce_after"] = t.tolist()
                except Exception as exc2:  # noqa: BLE001
                    after["after_error"] = f"{type(exc2).__name__}: {str(exc2)[:800]}"
                raise RuntimeError(json.dumps({"message": str(exc)[:2500], "type": type(exc).__name__,
                                               "diagnosed_cause": diag.cause.key, "after": after})) from exc

        return wrapped

    if mode == "main":
        def eager_sum() -> Any:
            t = torch.full((4,), float(rank + 1), device=device)
            dist.all_reduce(t)
            torch.cuda.synchronize()
            return {"got": t.tolist(), "expected": world * (world + 1) / 2}

        checks.run("eager_all_reduce_sum", eager_sum)

        def max_size() -> Any:
            t = torch.tensor([3 + 2 * rank], device=device, dtype=torch.int64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            return int(t.item())

        checks.run("all_reduce_max_int64", max_size)

        def gloo_group() -> Any:
            group = dist.new_group(backend="gloo")
            objs: list[Any] = [None] * world
            dist.all_gather_object(objs, {"rank": rank, "size": 3 + rank}, group=group)
            t = torch.tensor([3 + rank])
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
            gathered: list[Any] = [None] * world if rank == 0 else None  # type: ignore[assignment]
            dist.gather_object({"r": rank}, gathered, dst=0, group=group)
            dist.barrier(group=group)
            return {"all_gather_object": objs, "max": int(t.item()), "gather_object": gathered}

        checks.run("gloo_side_group", gloo_group)
        checks.run("barrier_device_ids", lambda: dist.barrier(device_ids=[local_rank]) or "ok")
        checks.run("capture_raw_warm_on_capture_stream", lambda: capture_allreduce(3, side, side, ""))

        def via_graphlab() -> Any:
            from graphlab.capture import api as capture_module

            sig = inspect.signature(capture_module.capture).parameters
            kwargs = {"device": device} if "device" in sig else {}
            x = torch.arange(1, 4, device=device, dtype=torch.float32)
            cg = capture_module.capture(body, x, warmup=3, name="allreduce", **kwargs)
            z = cg(torch.tensor([2.0, 3.0, 4.0], device=device))
            torch.cuda.synchronize()
            dot = cg.dot()
            info = {"capture_has_device_param": "device" in sig, "out": z.tolist(),
                    "expected": [world * v + 1 for v in (2.0, 3.0, 4.0)], **_kernels_of(dot)}
            info["cg_device"] = str(getattr(cg, "device", "<no attribute>"))
            graphs.append(cg)
            return info

        checks.run("capture_via_graphlab", via_graphlab)

        def graph_cache_api() -> Any:
            try:
                from graphlab.cache import graph_cache
            except ImportError as exc:
                return f"not importable: {exc}"
            sig = inspect.signature(graph_cache.GraphCache).parameters
            return {"params": list(sig)}

        checks.run("graph_cache_api", graph_cache_api)

        def context() -> Any:
            from graphlab.distributed.comm import init_distributed

            ctx = init_distributed()
            return {"origin": ctx.origin(), "eager_communicator": ctx.eager_communicator, "nccl": ctx.nccl_version}

        checks.run("init_distributed_context", context)

        def via_capture_collective() -> Any:
            from graphlab.distributed.capture import capture_collective

            x = torch.arange(1, 4, device=device, dtype=torch.float32)
            cg = capture_collective(body, x, name="allreduce")
            z = cg(torch.tensor([2.0, 3.0, 4.0], device=device)).tolist()
            graphs.append(cg)
            return {"out": z, "expected": [world * v + 1 for v in (2.0, 3.0, 4.0)], **_kernels_of(cg.dot())}

        checks.run("capture_collective", via_capture_collective)

        def refuses_warmup0() -> Any:
            from graphlab.distributed.capture import capture_collective

            try:
                capture_collective(body, torch.ones(3, device=device), warmup=0)
            except Exception as exc:  # noqa: BLE001
                return {"type": type(exc).__name__, "cause": getattr(exc, "cause", None), "message": str(exc)[:600]}
            return "NOT refused"

        checks.run("capture_collective_refuses_warmup0", refuses_warmup0)

        def tensor_parallel() -> Any:
            from graphlab.distributed.capture import check_against_dense

            found = {}
            for batch_size in (1, 4):
                res = check_against_dense(batch_size, keep=True)
                cg = res.pop("captured")
                dot = cg.dot()
                (out / f"tp_layer_b{batch_size}_ws{world}_rank{rank}.dot").write_text(dot)
                graphs.append(cg)
                found[f"b{batch_size}"] = res
            return found

        checks.run("tensor_parallel_layer", tensor_parallel)

        def teardown_after_reset() -> Any:
            for g in graphs:
                g.reset()
            graphs.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dist.destroy_process_group()
            return {"destroy_ms": round((time.perf_counter() - t0) * 1e3, 1)}

        checks.run("teardown_after_reset", teardown_after_reset)
        return 0

    if mode == "nowarm":
        checks.run("capture_first_collective_no_warmup", diagnosed(lambda: capture_allreduce(0, side, side, "nowarm")))
    elif mode == "otherstream":
        other = torch.cuda.Stream(device=device)
        checks.run("capture_warm_on_default_stream",
                   diagnosed(lambda: capture_allreduce(3, torch.cuda.current_stream(), other, "otherstream")))
    elif mode == "lazy":
        def refuses_lazy() -> Any:
            from graphlab.distributed.comm import init_distributed
            from graphlab.distributed.capture import capture_collective

            ctx = init_distributed()
            try:
                capture_collective(body, torch.ones(3, device=device), ctx=ctx)
            except Exception as exc:  # noqa: BLE001
                return {"eager_communicator": ctx.eager_communicator, "type": type(exc).__name__,
                        "cause": getattr(exc, "cause", None), "message": str(exc)[:600]}
            return {"eager_communicator": ctx.eager_communicator, "result": "NOT refused"}

        checks.run("capture_collective_refuses_lazy", refuses_lazy)
        checks.run("capture_lazy_communicator", diagnosed(lambda: capture_allreduce(0, side, side, "lazy")))
    elif mode == "lazy_warm":
        checks.run("capture_lazy_communicator_warm", diagnosed(lambda: capture_allreduce(3, side, side, "lazywarm")))
    elif mode == "mixing0":
        checks.run("capture_mixing0", lambda: capture_allreduce(3, side, side, "mixing0"))
    elif mode == "teardown_alive":
        checks.run("capture_then_keep_alive", lambda: capture_allreduce(3, side, side, "teardown"))
        checks.note("about_to_destroy", True)

        def destroy() -> Any:
            t0 = time.perf_counter()
            dist.destroy_process_group()
            return {"destroy_ms": round((time.perf_counter() - t0) * 1e3, 1)}

        checks.run("destroy_with_graph_alive", destroy)
        checks.note("exiting", True)
    if dist.is_initialized() and mode != "teardown_alive":
        for g in graphs:
            g.reset()
        checks.run("destroy", lambda: dist.destroy_process_group() or "ok")
    return 0


# -- the launcher (this process) ------------------------------------------------------------------------
def launch(mode: str, out: Path, nproc: int, timeout_s: float, extra_env: dict[str, str] | None = None) -> Any:
    """Start `torchrun ... this file --worker MODE` (`finish` stops it and its workers on timeout)."""
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           **(extra_env or {})}
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            str(HERE), "--worker", mode, "--out", str(out)]
    log = out / f"worker_{mode}.log"
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT)
    return {"proc": proc, "t0": t0, "log": log, "timeout_s": timeout_s, "mode": mode}


def finish(run: dict[str, Any], out: Path, nproc: int) -> dict[str, Any]:
    proc = run["proc"]
    remaining = max(1.0, run["timeout_s"] - (time.perf_counter() - run["t0"]))
    timed_out = False
    try:
        proc.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        timed_out = True
        from graphlab.distributed.launch import stop_torchrun

        stop_torchrun(proc)  # SIGTERM to torchrun, then SIGKILL to it and each worker it started, by id
    ranks = {}
    for r in range(nproc):
        path = out / f"worker_{run['mode']}_rank{r}.json"
        ranks[f"rank{r}"] = json.loads(path.read_text()) if path.is_file() else None
    tail = run["log"].read_text(errors="replace")[-2500:] if run["log"].is_file() else ""
    return {"rc": proc.returncode, "timed_out": timed_out, "wall_s": round(time.perf_counter() - run["t0"], 1),
            "ranks": ranks, "log_tail": tail}


def single_process(checks: Checks) -> None:
    import torch

    checks.note("torch", torch.__version__)
    checks.run("device_count", lambda: torch.cuda.device_count())
    checks.run("device_names", lambda: [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
    def nccl() -> str:
        import torch.cuda.nccl

        return ".".join(map(str, torch.cuda.nccl.version()))

    checks.run("nccl_version", nccl)
    checks.run("nvidia_smi_topo_m", lambda: subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True,
                                                           text=True, timeout=15).stdout)

    def thread_local_stream() -> Any:
        side = torch.cuda.Stream()
        seen: dict[str, Any] = {}
        with torch.cuda.stream(side):
            t = threading.Thread(target=lambda: seen.update(
                is_default=torch.cuda.current_stream() == torch.cuda.default_stream(),
                device=torch.cuda.current_device()))
            t.start()
            t.join()
            seen["main_is_side"] = torch.cuda.current_stream() == side
        return seen

    checks.run("current_stream_is_thread_local", thread_local_stream)

    def replay_from_thread() -> Any:
        x = torch.randn(64, 64, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                y = x @ x
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x @ x
        out: dict[str, Any] = {}

        def run() -> None:
            torch.cuda.set_device(0)
            ws = torch.cuda.Stream()
            with torch.cuda.stream(ws):
                g.replay()
                ev = torch.cuda.Event()
                ev.record(ws)
            ev.synchronize()
            out["max_err"] = float((y - x @ x).abs().max())

        t = threading.Thread(target=run)
        t.start()
        t.join()
        g.reset()
        return out

    checks.run("replay_from_worker_thread", replay_from_thread)

    def replicas_one_device() -> Any:
        from graphlab.distributed import replicas

        return replicas.probe_one_device()

    checks.run("replicas_one_device", replicas_one_device)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--nproc", type=int, default=1, help="processes (GPUs) per torchrun run (default 1)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(args.worker, out)
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    t_start = time.perf_counter()
    checks = Checks(None)
    single_process(checks)
    runs: dict[str, Any] = {}
    runs["main"] = finish(launch("main", out, args.nproc, MAIN_TIMEOUT_S), out, args.nproc)
    started = [launch(m, out, args.nproc, SIDE_TIMEOUT_S, {"NCCL_GRAPH_MIXING_SUPPORT": "0"} if m == "mixing0"
                      else None) for m in MODES_AFTER_MAIN]
    for run in started:
        runs[run["mode"]] = finish(run, out, args.nproc)
    report = {"probe": "multigpu", "nproc": args.nproc, "wall_s": round(time.perf_counter() - t_start, 1),
              "single_process": checks.results, "torchrun": runs}
    (out / "multigpu_probe.json").write_text(json.dumps(report, indent=1, default=str))
    print(summary(report))
    return 0


def summary(report: dict[str, Any]) -> str:
    lines = [f"multigpu probe: nproc {report['nproc']}, {report['wall_s']} s"]
    for name, res in report["single_process"].items():
        val = res.get("value") if res.get("ok") else f"FAILED {res.get('error_type')}: {str(res.get('error'))[:160]}"
        lines.append(f"  {name}: {str(val)[:200]}")
    for mode, run in report["torchrun"].items():
        lines.append(f"  [{mode}] rc={run['rc']} timed_out={run['timed_out']} {run['wall_s']} s")
        rank0 = (run["ranks"] or {}).get("rank0") or {}
        for name, res in rank0.items():
            if name in ("env",):
                continue
            if res.get("ok"):
                val = res.get("value")
                if isinstance(val, dict):
                    keep = {k: val[k] for k in ("correct", "nccl_kernels", "count_by_kind", "destroy_ms", "init_ms",
                                                 "bound_device_id", "max_abs_err", "graph_max_abs_err") if k in val}
                    val = keep or val
                lines.append(f"      {name}: ok {str(val)[:220]}")
            else:
                lines.append(f"      {name}: FAILED {res.get('error_type')}: {str(res.get('error'))[:260]}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
