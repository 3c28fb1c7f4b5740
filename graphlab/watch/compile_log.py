"""Listen to torch.compile while a block runs: its `cudagraphs` and `recompiles` log records and its counters.

    >>> with gl.watch() as seen, watch_compile() as log:          # gl.watch adds capture time and pool growth
    ...     compiled = torch.compile(step, mode="reduce-overhead"); compiled(x); compiled(x)
    >>> print(log.summary(watched=seen))                          # graphlab.watch.compiled.CompileSummary

For the block, a handler sits on every logger torch registered for the two channels (found by name in
`logging`'s registry, so nothing is assumed about which modules log), at DEBUG; the loggers' levels are
put back when it ends, and torch's own TORCH_LOGS output is left as it was. Counters are read from
`torch._dynamo.utils.counters` where it exists (before/after). Records are kept as plain dicts
(`compile_summary` reads them; recordings store them). Works on the CPU too (recompiles; no graphs there).
"""
from __future__ import annotations

import logging
import os
from typing import Any, Iterable

import torch

from graphlab.watch.compiled import CompileSummary, clean_message, compile_summary, keeps_record

#: the channels whose records say what compile did
CHANNELS = ("cudagraphs", "recompiles")


def _loggers() -> list[logging.Logger]:
    # torch imports its inductor/dynamo modules lazily: touch the ones that own the channels first
    for name in ("torch._inductor.cudagraph_trees", "torch._inductor.cudagraph_utils", "torch._dynamo.guards"):
        try:
            __import__(name)
        except Exception:  # a torch without the module: that channel stays silent
            pass
    found = []
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and any(name.endswith(f".__{c}") for c in CHANNELS):
            found.append(logger)
    return found


def _counters() -> dict[str, int]:
    counters = getattr(getattr(getattr(torch, "_dynamo", None), "utils", None), "counters", None)
    if counters is None:
        return {}
    flat = {}
    for group in ("inductor", "stats"):
        for key, value in dict(counters.get(group, {})).items():
            if isinstance(value, int) and ("cudagraph" in key or key in ("unique_graphs", "calls_captured")):
                flat[f"{group}.{key}"] = value
    return flat


def _log_state() -> Any:
    internal = getattr(getattr(torch, "_logging", None), "_internal", None)
    return getattr(internal, "log_state", None)


def _compile_id() -> str | None:
    guards = getattr(torch, "_guards", None)
    context = getattr(guards, "CompileContext", None)
    try:
        cid = context.current_compile_id() if context is not None else None
    except Exception:
        return None
    return None if cid is None else str(cid)


class _Keep(logging.Handler):
    def __init__(self, into: list[dict[str, Any]]):
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        if not keeps_record(record.name, message):
            return
        self.into.append({"logger": record.name, "level": record.levelname,
                          "message": clean_message(message, os.getcwd()),
                          "compile_id": _compile_id()})


class CompileLog:
    """The records and counters a `watch_compile()` block collected."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.counters_before: dict[str, int] = {}
        self.counters_after: dict[str, int] = {}
        self.loggers: list[str] = []
        self._handler = _Keep(self.records)
        self._levels: list[tuple[logging.Logger, int, bool]] = []
        self._enabled: list[str] = []

    def __enter__(self) -> CompileLog:
        self.counters_before = _counters()
        for logger in _loggers():
            self._levels.append((logger, logger.level, logger.propagate))
            logger.addHandler(self._handler)
            if logger.getEffectiveLevel() > logging.DEBUG:  # not asked for (TORCH_LOGS): ours only, not printed
                logger.setLevel(logging.DEBUG)
                logger.propagate = False
            self.loggers.append(logger.name)
        # dynamo writes a recompile record only while the artifact is on (TORCH_LOGS=recompiles): turn it on
        names = getattr(_log_state(), "artifact_names", None)
        if isinstance(names, set) and "recompiles" not in names:
            names.add("recompiles")
            self._enabled.append("recompiles")
        return self

    def __exit__(self, *exc: Any) -> None:
        for logger, level, propagate in self._levels:
            logger.removeHandler(self._handler)
            logger.setLevel(level)
            logger.propagate = propagate
        self._levels = []
        names = getattr(_log_state(), "artifact_names", None)
        for name in self._enabled:
            if isinstance(names, set):
                names.discard(name)
        self._enabled = []
        self.counters_after = _counters()

    @property
    def counters(self) -> dict[str, int]:
        after = self.counters_after or _counters()
        return {k: v - self.counters_before.get(k, 0) for k, v in after.items() if v - self.counters_before.get(k, 0)}

    def sources(self) -> list[str]:
        channels = sorted({n.rsplit(".__", 1)[-1] for n in self.loggers})
        out = [f"torch log channel {c}" for c in channels]
        if self.counters_after or self.counters_before:
            out.append("torch._dynamo.utils.counters")
        return out

    def summary(self, watched: Iterable[Any] | None = None) -> CompileSummary:
        return compile_summary(self.records, counters=self.counters, watched=watched, sources=self.sources())

    def to_dict(self) -> dict[str, Any]:
        return {"records": list(self.records), "counters": self.counters, "sources": self.sources()}


def watch_compile() -> CompileLog:
    """A `with` block that keeps what torch.compile logs and counts (see the module doc)."""
    return CompileLog()


__all__ = ["CHANNELS", "CompileLog", "watch_compile"]
