"""Run something under torchrun from a normal process: one command, a timeout, and a clean kill.

The recorder, the benchmark and the GPU tests all need "N processes, one per GPU" and must never
hang a session (a teardown after an NCCL capture has been seen not to finish). `run_torchrun` starts
`python -m torch.distributed.run --standalone --nproc-per-node N ...` and, on timeout, stops torchrun and
kills every worker it started (by process id), so no worker outlives it.

    >>> result = run_torchrun(["-m", "graphlab", "record", "--models", "multigpu"], nproc=2, timeout_s=300)
    >>> result.ok, result.timed_out, result.output[-500:]

`launch_command` gives the same launch as a short, path-free string for provenance.
Pure (in `graphlab.distributed.PURE`): torchrun is found through the running interpreter, not imported.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from graphlab.clock import Stopwatch
from graphlab.errors import DistributedError

#: Set for every launch unless the caller's environment says otherwise: NVLink multicast (NVLS) is
#: off on the lent multi-GPU machines.
DEFAULT_ENV = {"NCCL_NVLS_ENABLE": "0"}


@dataclass(frozen=True)
class TorchrunResult:
    """How a torchrun launch ended: return code, whether it was killed for time, its output, seconds."""

    returncode: int | None
    timed_out: bool
    output: str
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def torchrun_argv(args: Sequence[str], nproc: int) -> list[str]:
    """The argv that runs `args` (a script path or "-m module ...") under torchrun with `nproc` processes."""
    if nproc < 1:
        raise DistributedError(f"nproc must be at least 1, got {nproc}")
    args = list(args)
    module = args[:1] == ["-m"]
    head = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    return head + (["--module", *args[1:]] if module else args)


def run_torchrun(args: Sequence[str], *, nproc: int, timeout_s: float, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None, echo: bool = True) -> TorchrunResult:
    """Run `args` under torchrun; stop it and its workers after `timeout_s`. Output is echoed and kept."""
    full_env = {**DEFAULT_ENV, **os.environ, **(env or {})}
    root = str(Path(__file__).resolve().parents[2])
    full_env["PYTHONPATH"] = root + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
    running = Stopwatch().start()
    proc = subprocess.Popen(torchrun_argv(args, nproc), env=full_env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    lines: list[str] = []

    stdout = proc.stdout  # a pipe (stdout=PIPE above)

    def pump() -> None:  # a thread reads the output, so the wait below can time out
        for line in stdout:
            lines.append(line)
            if echo:
                sys.stdout.write(line)
                sys.stdout.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if proc.poll() is None:
            stop_torchrun(proc)
    reader.join(timeout=5)
    return TorchrunResult(proc.returncode, timed_out, "".join(lines), round(running.stop(), 2))


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (torchrun starts each worker in a session of its own)."""
    try:
        import psutil

        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 - the process is gone already
        return []
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def stop_torchrun(proc: subprocess.Popen) -> None:
    """Stop torchrun and every worker it started: SIGTERM first (torchrun stops its workers), then SIGKILL
    each process this launch started, by id."""
    workers = _descendants(proc.pid)
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for pid in [*workers, proc.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass


def path_free(arg: str) -> str:
    """An argument with no absolute path in it: relative to the working directory when inside it, else its name."""
    if not os.path.isabs(arg):
        return arg
    try:
        rel = os.path.relpath(arg)
    except ValueError:
        return Path(arg).name
    return rel if not rel.startswith("..") else Path(arg).name


def launch_command(args: Sequence[str], nproc: int) -> str:
    """`torchrun --nproc-per-node N <args>` as one line without absolute paths (for provenance)."""
    return " ".join(["torchrun", "--nproc-per-node", str(nproc), *(shlex.quote(path_free(a)) for a in args)])


__all__ = ["DEFAULT_ENV", "TorchrunResult", "launch_command", "path_free", "run_torchrun", "stop_torchrun",
           "torchrun_argv"]
