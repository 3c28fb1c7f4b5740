"""Run a measurement in a fresh Python process and read back its JSON result.

Measurements that must not share a process (memory baselines, torch.compile state, a CUDA fault that
would take the caller down) print one line `RESULT <json>`; `run_in_fresh_process` returns that object,
or {"error": the process's last output} when there is none. Pure: no torch here (the child process runs the GPU code).
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

MARK = "RESULT "


def result_line(value: Any) -> str:
    """The line a child prints to hand `value` back."""
    return MARK + json.dumps(value)


def run_in_fresh_process(code: str, timeout_s: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `code` with this Python; its last `RESULT` line as an object, else {"error": its output's tail}.

    Raises:
        subprocess.TimeoutExpired: the child ran past `timeout_s` (it is killed).
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if lines:
        return json.loads(lines[-1][len(MARK):])
    tail = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()][-12:]
    return {"error": f"exit {done.returncode}: " + " | ".join(tail)}


__all__ = ["MARK", "result_line", "run_in_fresh_process"]
