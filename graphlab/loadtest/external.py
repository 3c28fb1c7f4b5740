"""Servers in processes of their own, and `hey` (an HTTP load generator written by no one here) against them.

Pure: standard library only (subprocess, urllib, re). What the serving-over-HTTP study
(`graphlab record --models serving_http`) and `bench/bench_serve_http.py` share:

- `ServerProcess`: start a command that serves HTTP on 127.0.0.1:`port`, wait until `/healthz` answers 200, and
  stop it with SIGTERM (its exit code kept), whatever happens in between; or signal it and wait, and read its log;
- `run_hey`: one closed-loop run of `hey` (`-c` clients, each waiting for its answer; `-q` caps each client's
  rate), its summary parsed by `parse_hey`; `run_flood`: `hey -o csv`, per status how many and how fast;
- `capacity_rps`: the highest throughput of a concurrency sweep with p99 <= 50 ms and >= 99.9 % answered 200;
- `BARE_APP`: a Starlette route that parses the JSON body and answers a fixed JSON: what uvicorn and the client
  cost (the floor every server is compared with).

    >>> parse_hey("Requests/sec: 100.5\\n  50%% in 0.0012 secs\\n  [200]\\t201 responses\\n")["latency_ms"]
    {'p50': 1.2}
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Sequence

from graphlab.clock import now_s
from graphlab.errors import BadInputError, ConfigurationError
from graphlab.serve.config import INFER_PATH
from graphlab.stats import percentile

#: the capacity rule: the highest throughput with p99 at most this and at least `OK_LIMIT` answered 200
P99_LIMIT_MS = 50.0
OK_LIMIT = 0.999
#: the client counts of a capacity sweep
CONCURRENCY = (8, 32, 128, 256)
#: where `find_hey` looks first (a path to the binary, e.g. an extracted Debian package on a lent machine)
HEY_ENV = "GRAPHLAB_HEY"

BARE_APP = f'''
import json
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

async def infer(request: Request):
    json.loads(await request.body())
    return JSONResponse({{"id": 0, "results": [[{{"id": 1, "label": "a", "prob": 0.5}}]]}})

async def healthz(request: Request):
    return JSONResponse({{"state": "ready"}})

app = Starlette(routes=[Route({INFER_PATH!r}, infer, methods=["POST"]), Route("/healthz", healthz)])
'''


def find_hey() -> str | None:
    """The `hey` binary: $GRAPHLAB_HEY, else `hey` on PATH (Debian: `apt-get install hey`); None if neither."""
    given = os.environ.get(HEY_ENV)
    if given:
        return given if Path(given).is_file() and os.access(given, os.X_OK) else None
    return shutil.which("hey")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bare_app_command(folder: Path, stack: dict[str, str], python: str) -> list[str]:
    """Write `BARE_APP` into `folder` and return the uvicorn command that serves it (same loop and parser as the
    service: `graphlab.serve.http.describe_stack()`); `--port` and `--host` are added by `ServerProcess`."""
    (folder / "bare_app.py").write_text(BARE_APP, encoding="utf-8")
    return [python, "-m", "uvicorn", "--app-dir", str(folder), "bare_app:app", "--loop", stack["loop"],
            "--http", stack["http"], "--log-level", "warning", "--no-access-log"]


class ServerProcess:
    """`with ServerProcess(cmd, log_path) as server:` runs `cmd --port P --host 127.0.0.1` until ready.

    Attributes:
        port, url (of `/v1/infer`), base_url; command: the full command; exit_code: set once stopped.
    """

    def __init__(self, command: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None,
                 cwd: Path | None = None, ready_timeout_s: float = 120.0, stop_timeout_s: float = 30.0) -> None:
        if not command:
            raise BadInputError("ServerProcess needs a command")
        self.port = free_port()
        self.command = [*command, "--port", str(self.port), "--host", "127.0.0.1"]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base_url}{INFER_PATH}"
        self.log_path = log_path
        self.exit_code: int | None = None
        self._env, self._cwd = env, cwd
        self._ready_timeout_s, self._stop_timeout_s = ready_timeout_s, stop_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ServerProcess:
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self._env,
                                          cwd=self._cwd)
        deadline = now_s() + self._ready_timeout_s
        while now_s() < deadline:
            if self._proc.poll() is not None:
                raise ConfigurationError(f"{' '.join(self.command)} exited {self._proc.returncode} before it was "
                                         f"ready: {self.log_path.read_text(errors='replace')[-1500:]}")
            if self._healthy():
                return self
            time.sleep(0.25)
        self.stop()
        raise ConfigurationError(f"{' '.join(self.command)} was not ready within {self._ready_timeout_s:g} s "
                                 f"(log: {self.log_path})")

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def get_json(self, path: str) -> dict[str, Any]:
        """GET `path` of the server as JSON (e.g. "/v1/stats")."""
        with urllib.request.urlopen(f"{self.base_url}{path}", timeout=5) as answer:
            return dict(json.loads(answer.read()))

    @property
    def pid(self) -> int | None:
        """The server's process id (None before it starts)."""
        return None if self._proc is None else self._proc.pid

    def send_signal(self, sig: int) -> None:
        """Send `sig` to the server (SIGTERM: its drain) if it still runs; `wait` for its end."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(sig)

    def wait(self, timeout_s: float) -> int | None:
        """Wait up to `timeout_s` for the server to end; its exit code (kept in `exit_code`), None if it runs on."""
        if self._proc is None:
            return None
        try:
            self.exit_code = self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    def log_text(self) -> str:
        """What the server wrote (stdout and stderr) so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after `stop_timeout_s`; the exit code (idempotent)."""
        if self._proc is None or self.exit_code is not None:
            return self.exit_code
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self._proc.wait(self._stop_timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self.exit_code = self._proc.wait(5)
        return self.exit_code


def parse_hey(text: str) -> dict[str, Any]:
    """hey's summary: requests/s, the latency percentiles and min/mean/max (ms), status counts, errors."""
    out: dict[str, Any] = {"latency_ms": {}, "status": {}, "errors": 0}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else 0.0
    for pct, secs in re.findall(r"\s(\d+)%+ in ([\d.]+) secs", text):
        out["latency_ms"][f"p{pct}"] = round(float(secs) * 1000.0, 3)
    for key, name in (("Fastest", "min"), ("Average", "mean"), ("Slowest", "max")):
        m = re.search(rf"{key}:\s+([\d.]+) secs", text)
        if m:
            out["latency_ms"][name] = round(float(m.group(1)) * 1000.0, 3)
    for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", text):
        out["status"][code] = int(n)
    err = re.search(r"Error distribution:(.*)", text, re.S)
    if err:
        out["errors"] = sum(int(n) for n in re.findall(r"\[(\d+)\]", err.group(1)))
    total = sum(out["status"].values()) + out["errors"]
    out["requests"] = total
    out["ok_fraction"] = round(out["status"].get("200", 0) / total, 5) if total else 0.0
    return out


def _hey_command(binary: str, url: str, body_file: Path, concurrency: int, duration_s: float,
                 content_type: str = "application/json", headers: Sequence[tuple[str, str]] = ()) -> list[str]:
    if concurrency < 1 or duration_s <= 0:
        raise BadInputError(f"hey needs at least 1 client and a positive duration, got {concurrency}, {duration_s}")
    cmd = [binary, "-z", f"{duration_s:g}s", "-c", str(concurrency), "-m", "POST", "-T", content_type,
           "-D", str(body_file), "-t", "20"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    return cmd


def run_hey(binary: str, url: str, body_file: Path, *, concurrency: int, duration_s: float,
            qps: float | None = None, content_type: str = "application/json",
            headers: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """One closed-loop run: `concurrency` clients for `duration_s`, each capped at `qps` requests/s if given, each
    posting `body_file`'s bytes as they are (a binary body too) with `content_type` and `headers` (the protocol's
    `Inference-Header-Content-Length`: `graphlab.loadtest.protocols.HttpRequest`). The parsed summary with the
    command and hey's raw output ("raw")."""
    cmd = _hey_command(binary, url, body_file, concurrency, duration_s, content_type, headers)
    if qps is not None:
        cmd += ["-q", f"{qps:g}"]
    cmd.append(url)
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=duration_s + 60).stdout
    result = parse_hey(text)
    result.update(concurrency=concurrency, duration_s=duration_s, qps_per_client=qps, command=" ".join(cmd),
                  raw=text)
    return result


def run_flood(binary: str, url: str, body_file: Path, *, concurrency: int, duration_s: float) -> dict[str, Any]:
    """`hey -o csv` at `concurrency` clients: per status, how many and how fast (a refusal must come at once);
    "lost": requests hey counted with no status (a connection error or timeout).

    Each status also says where its slowest requests spent their time, from hey's own columns: `connect_*` is
    "DNS+dialup" (opening the TCP connection: 0 on a kept-alive one; a connection the kernel's listen queue
    dropped is retried by the client's TCP after 1 s, then 3 s), `wait_*` is "Response-delay" (request written
    -> first byte of the answer: the server), and `slow_connects` counts connections that took over 0.5 s.
    """
    cmd = [*_hey_command(binary, url, body_file, concurrency, duration_s), "-o", "csv", url]
    before = tcp_counters()
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=duration_s + 60).stdout
    after = tcp_counters()
    out = parse_hey_csv(text, {"concurrency": concurrency, "duration_s": duration_s, "command": " ".join(cmd)})
    out["kernel"] = {"somaxconn": _read_int(SOMAXCONN),
                     **{name: (after[name] - before[name]) if name in before and name in after else None
                        for name in TCP_COUNTERS}}
    return out


#: the kernel's TCP counters a flood can move (/proc/net/netstat, machine-wide; "ListenOverflows": a connection
#: completed its handshake while the server's accept queue was full, so the kernel dropped it and the client's
#: TCP retries after 1 s, 3 s, ...; "TCPSynRetrans": SYNs sent again)
TCP_COUNTERS = ("ListenOverflows", "ListenDrops", "TCPSynRetrans", "TCPTimeouts")
SOMAXCONN = "/proc/sys/net/core/somaxconn"


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def tcp_counters(text: str | None = None) -> dict[str, int]:
    """`TCP_COUNTERS` from /proc/net/netstat (or `text` in its format); {} where the machine has none."""
    if text is None:
        try:
            text = Path("/proc/net/netstat").read_text()
        except OSError:
            return {}
    lines = text.splitlines()
    for names, values in zip(lines, lines[1:]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            found = dict(zip(names.split()[1:], values.split()[1:]))
            return {name: int(found[name]) for name in TCP_COUNTERS if found.get(name, "").isdigit()}
    return {}


def parse_hey_csv(text: str, head: dict[str, Any] | None = None) -> dict[str, Any]:
    r"""hey's `-o csv` lines (response-time, DNS+dialup, DNS, request-write, response-delay, response-read,
    status-code, offset; seconds) -> counts and percentiles per status (see `run_flood`).

        >>> csv = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n"
        >>> out = parse_hey_csv(csv + "1.0040,1.0010,0,0,0.0020,0,200,0.1\n0.0020,0,0,0,0.0019,0,503,0.2\n")
        >>> out["by_status"]["200"]["connect_max_ms"], out["by_status"]["200"]["slow_connects"], out["lost"]
        (1001.0, 1, 0)
    """
    columns: dict[str, list[list[float]]] = {}
    lost = 0
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) >= 7 and parts[6].strip().isdigit():
            try:
                total, connect, wait = (float(parts[i]) * 1000.0 for i in (0, 1, 4))
            except ValueError:
                lost += 1
                continue
            columns.setdefault(parts[6].strip(), []).append([total, connect, wait])
        elif line.strip():
            lost += 1
    out: dict[str, Any] = {**(head or {}), "by_status": {}, "lost": lost}
    for status, rows in sorted(columns.items()):
        total, connect, wait = (sorted(r[i] for r in rows) for i in range(3))
        out["by_status"][status] = {"count": len(rows), "p50_ms": round(percentile(total, 50), 3),
                                    "p99_ms": round(percentile(total, 99), 3), "max_ms": round(total[-1], 3),
                                    "connect_p99_ms": round(percentile(connect, 99), 3),
                                    "connect_max_ms": round(connect[-1], 3),
                                    "wait_p99_ms": round(percentile(wait, 99), 3), "wait_max_ms": round(wait[-1], 3),
                                    "slow_connects": sum(1 for c in connect if c > 500.0)}
    return out


def capacity_rps(curve: Sequence[dict[str, Any]], p99_limit_ms: float = P99_LIMIT_MS,
                 ok_limit: float = OK_LIMIT) -> float:
    """The highest throughput of a concurrency sweep (`run_hey` results) with p99 <= `p99_limit_ms` and at least
    `ok_limit` answered 200; 0.0 when no point qualifies.

        >>> capacity_rps([{"rps": 900.0, "latency_ms": {"p99": 20.0}, "ok_fraction": 1.0},
        ...               {"rps": 1200.0, "latency_ms": {"p99": 80.0}, "ok_fraction": 1.0}])
        900.0
    """
    good = [p["rps"] for p in curve
            if p["latency_ms"].get("p99", float("inf")) <= p99_limit_ms and p["ok_fraction"] >= ok_limit]
    return max(good, default=0.0)


__all__ = ["BARE_APP", "CONCURRENCY", "HEY_ENV", "OK_LIMIT", "P99_LIMIT_MS", "SOMAXCONN", "ServerProcess",
           "TCP_COUNTERS", "bare_app_command", "capacity_rps", "find_hey", "free_port", "parse_hey", "parse_hey_csv",
           "run_flood", "run_hey", "tcp_counters"]
