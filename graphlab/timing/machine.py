"""What the machine was doing while graphlab timed it: run conditions, GPU and CPU clocks, host speed.

Needs torch (imported at the top); pynvml (nvidia-ml-py) is imported lazily and optional. Reading a
clock never raises: a host that does not report one gets None, and the results say so.

    >>> from graphlab.timing.machine import ClockReader
    >>> clocks = ClockReader()                                     # doctest: +SKIP
    >>> clocks.gpu_mhz(), clocks.cpu_mhz(), clocks.host_speed_us()  # doctest: +SKIP
    (1980.0, 2100.0, 46.2)
    >>> ClockReader(0, dispatch=True).dispatch_speed_us()           # doctest: +SKIP
    142.7

Why these: eager calls at small batch are host-bound and follow the host's speed, graph replays are
GPU-bound and follow the SM clock. A virtual machine often reports a constant CPU MHz while its real
speed changes (on the H200 host of this project /proc/cpuinfo said 2,100 MHz throughout, while a fixed
pure-Python workload took 180-190 µs in one state and 300-350 µs in the other, for seconds at a
time); so graphlab also times a fixed workload after every block (`host_speed_us`), which follows
the state the host was really in (docs/latency-method.md).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

import torch

from graphlab.clock import now_ns
from graphlab.env import _driver_version, gpu_names

CPUINFO = "/proc/cpuinfo"


def current_cpu() -> int | None:
    """The CPU core this process last ran on (field 39 of /proc/self/stat), or None off Linux."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


#: iterations of the fixed host workload: ~50 µs on a fast core, short next to a block
HOST_WORK_ITERATIONS = 1500


def host_speed_us(iterations: int = HOST_WORK_ITERATIONS) -> float:
    """Time of a fixed pure-Python workload (µs): a direct reading of how fast the host runs Python now.

    Lower is faster. Comparable between runs on one machine and Python build, not across machines.
    """
    t0 = now_ns()
    total = 0
    for i in range(iterations):
        total += i * i
    return (now_ns() - t0) / 1e3


#: tiny in-place adds on a one-element CPU tensor per dispatch reading (~1-2 µs each)
DISPATCH_CALLS = 100


def dispatch_speed_us(scratch: Any, calls: int = DISPATCH_CALLS) -> float:
    """Time of `calls` in-place adds on a one-element CPU tensor (µs): how fast torch's dispatcher runs now.

    The pure-Python workload (`host_speed_us`) fits in the core's L1 cache; an eager CUDA call spends
    its host time in torch's C++ dispatcher, which a noisy neighbour slows down differently. This
    reading goes through the same dispatcher, without touching the GPU. Lower is faster.
    """
    add = scratch.add_
    t0 = now_ns()
    for _ in range(calls):
        add(1)
    return (now_ns() - t0) / 1e3


def _sysfs_mhz(cpu: int) -> float | None:
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq", encoding="ascii") as fh:
            return int(fh.read()) / 1000.0
    except (OSError, ValueError):
        return None


def _cpuinfo_mhz(cpu: int) -> float | None:
    """The "cpu MHz" line of one core in /proc/cpuinfo."""
    this = None
    try:
        with open(CPUINFO, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("processor"):
                    this = int(line.split(":", 1)[1])
                elif this == cpu and line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        return None
    return None


class ClockReader:
    """Reads the GPU's SM clock (NVML) and the current CPU core's clock (sysfs cpufreq, else /proc/cpuinfo).

    Made once per sweep; each read costs microseconds and happens between timed blocks, never inside one.
    With `dispatch`, it also reads torch's dispatcher speed (`dispatch_speed_us`), as a sweep does.
    """

    def __init__(self, device_index: int = 0, *, dispatch: bool = False):
        self._scratch = torch.zeros(1) if dispatch else None  # the dispatcher reading's tensor
        self._nvml: Any = None
        self._handle: Any = None
        self.gpu_source = "none (nvidia-ml-py not installed)"
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self._nvml = pynvml
            self.gpu_source = "NVML nvmlDeviceGetClockInfo(NVML_CLOCK_SM)"
        except Exception as exc:  # no NVML library, no permission, no such device: no GPU clock, said so
            self.gpu_source = f"none ({type(exc).__name__}: {exc})"[:200]
        cpu = current_cpu()
        if cpu is not None and _sysfs_mhz(cpu) is not None:
            self.cpu_source = "sysfs cpufreq scaling_cur_freq of the current core"
        elif cpu is not None and _cpuinfo_mhz(cpu) is not None:
            self.cpu_source = "/proc/cpuinfo 'cpu MHz' of the current core"
        else:
            self.cpu_source = "none (the host reports no CPU clock)"

    def gpu_mhz(self) -> float | None:
        """The SM clock now, in MHz (None without NVML)."""
        if self._nvml is None:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except Exception:  # a transient NVML failure: this reading is missing, the timing stands
            return None

    def cpu_mhz(self) -> float | None:
        """The clock of the core this process runs on now, in MHz (None when the host does not say)."""
        cpu = current_cpu()
        if cpu is None or self.cpu_source.startswith("none"):
            return None
        return _sysfs_mhz(cpu) if self.cpu_source.startswith("sysfs") else _cpuinfo_mhz(cpu)

    @staticmethod
    def host_speed_us() -> float:
        """The fixed host workload's time now (`host_speed_us`)."""
        return round(host_speed_us(), 2)

    def dispatch_speed_us(self) -> float | None:
        """The dispatcher reading now (`dispatch_speed_us`); None when made without `dispatch`."""
        if self._scratch is None:
            return None
        return round(dispatch_speed_us(self._scratch), 2)

    def describe(self) -> dict[str, str]:
        out = {"gpu_clock": self.gpu_source, "cpu_clock": self.cpu_source,
               "host_speed": f"time of a fixed pure-Python workload ({HOST_WORK_ITERATIONS} iterations of "
                             "total += i * i), after every block"}
        if self._scratch is not None:
            out["dispatch_speed"] = (f"time of {DISPATCH_CALLS} in-place adds on a one-element CPU tensor "
                                     "(torch's dispatcher), after every block")
        return out


def _cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        with open(CPUINFO, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return None


def run_conditions() -> dict[str, Any]:
    """GPU, driver, torch, CUDA, CPU and matmul settings of this run, for the `conditions` of a result."""
    gpus = gpu_names()
    affinity = None
    with contextlib.suppress(AttributeError, OSError):
        affinity = len(os.sched_getaffinity(0))
    return {
        "gpu": gpus[0] if gpus else None,
        "driver": _driver_version() if gpus else None,
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "cpu": _cpu_model(),
        "cpu_cores_usable": affinity,
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
    }


__all__ = ["DISPATCH_CALLS", "ClockReader", "current_cpu", "dispatch_speed_us", "host_speed_us", "run_conditions"]
