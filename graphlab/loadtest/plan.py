"""What one load test runs: the model, its settings, the arrival rates and how long each runs, how requests are sent
(`LoadPlan`), declared once for `gl.run_loadtest`, `graphlab loadtest` and the serving studies.

    >>> from graphlab.loadtest.plan import LoadPlan
    >>> LoadPlan("mlp", rates=(500, 250)).rates_rps()
    [250.0, 500.0]

The service under test is a `ServeConfig` beside it (batch size, wait, buckets, device, ...): `graphlab loadtest`
takes its flags from there. Pure Python: no torch here.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any

from graphlab.errors import BadInputError, ConfigurationError
from graphlab.loadtest.loadgen import DEFAULT_ROWS
from graphlab.loadtest.protocols import PROTOCOLS, check_protocol
from graphlab.serve.config import DEFAULT_SETTINGS, SETTINGS, ServeConfig

DEFAULT_RATES: dict[str, tuple[float, ...]] = {
    "gpt": (250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000),  # the rates `graphlab record` sweeps
    "resnet18": (100, 250, 500, 1000, 1500, 2000, 3000, 4000),
    "cnn": (250, 500, 1000, 2000, 4000, 8000, 12000),
    "mlp": (250, 500, 1000, 2000, 4000, 8000, 12000),
}
#: the rate whose run keeps a timeline window by default (gpt: 500 req/s, the first the recording keeps)
DEFAULT_TIMELINE_RATE = {"gpt": 500, "resnet18": 500, "cnn": 1000, "mlp": 1000}
#: how much of each run's middle a timeline keeps
TIMELINE_WINDOW_US = 20_000.0
TRANSPORTS = ("direct", "asgi", "http")


@dataclass(frozen=True)
class LoadPlan:
    """One load test: which service settings see which open-loop load.

    Attributes:
        model: a zoo model (gpt, cnn, resnet18, mlp).
        settings: the settings swept, each in a fresh service (ignored by transport "http": the server's own).
        rates: arrival rates in req/s, swept lowest first (default: the model's `DEFAULT_RATES`).
        duration_s: seconds of arrivals per rate.
        seed: the requests of a rate are seeded by it and the rate, so every setting sees the same ones.
        transport: "direct" (the service in process), "asgi" (its HTTP app in process) or "http" (a server at `url`).
        url: with transport "http", the server (http://127.0.0.1:8000).
        rows: (rows, weight) pairs: the distribution of rows per request.
        timeline_rates: rates whose runs keep a timeline window per setting (default: the rate nearest the
            model's `DEFAULT_TIMELINE_RATE`).
        protocol: with transport "http", how each request is sent: "graphlab" (its JSON to /v1/infer), "oip_json"
            or "oip_binary" (the Open Inference Protocol, JSON tensors or binary data; `graphlab.loadtest.protocols`).
            A protocol's answers carry none of the service's own timings: its points have no stage breakdown.
    """

    model: str = "gpt"
    settings: tuple[str, ...] = DEFAULT_SETTINGS
    rates: tuple[float, ...] | None = None
    duration_s: float = 2.0
    seed: int = 0
    transport: str = "direct"
    url: str | None = None
    rows: tuple[tuple[int, float], ...] = DEFAULT_ROWS
    timeline_rates: tuple[float, ...] | None = None
    protocol: str = "graphlab"

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise BadInputError(f"transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        check_protocol(self.protocol)
        if self.protocol != "graphlab" and self.transport != "http":
            raise BadInputError(f"protocol {self.protocol!r} is spoken over HTTP only: pass transport='http' and the "
                                "server's url (the in-process transports call the service with graphlab's JSON)")
        unknown = [s for s in self.settings if s not in SETTINGS]
        if unknown:
            raise BadInputError(f"settings must be among {', '.join(SETTINGS)}, got {', '.join(map(repr, unknown))}")
        for name in ("settings", "rates", "rows", "timeline_rates"):  # lists in, tuples kept: a plan is a value
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def check_url(self) -> None:
        """ConfigurationError unless transport "http" has its url."""
        if self.transport == "http" and not self.url:
            raise ConfigurationError("transport 'http' needs url= (a running `python -m graphlab.serve` server)")

    def rates_rps(self) -> list[float]:
        """The rates swept, lowest first."""
        return sorted(float(r) for r in (self.rates or DEFAULT_RATES.get(self.model, DEFAULT_RATES["gpt"])))

    def timeline_rates_rps(self) -> set[float]:
        """The rates whose runs keep a timeline window."""
        rates = self.rates_rps()
        if self.timeline_rates is not None:
            return {float(r) for r in self.timeline_rates}
        target = DEFAULT_TIMELINE_RATE.get(self.model, rates[len(rates) // 2])
        return {min(rates, key=lambda r: abs(r - target))}

    # -- `graphlab loadtest` ----------------------------------------------------------------------------------
    @classmethod
    def add_flags(cls, parser: argparse.ArgumentParser) -> None:
        """`graphlab loadtest`'s flags: the plan's here, the service's from `ServeConfig.add_flags`."""
        default = {f.name: f.default for f in fields(cls)}
        parser.add_argument("--model", default=default["model"],
                            help=f"the zoo model served, by name (default {default['model']})")
        parser.add_argument("--settings", nargs="+", default=list(default["settings"]), choices=tuple(SETTINGS),
                            help=f"the settings swept (default: {' '.join(default['settings'])})")
        parser.add_argument("--rates", nargs="+", type=float, default=None,
                            help="arrival rates in req/s (default per model)")
        parser.add_argument("--duration", dest="duration_s", type=float, default=default["duration_s"],
                            help=f"seconds of arrivals per rate (default {default['duration_s']:g})")
        parser.add_argument("--seed", type=int, default=default["seed"])
        parser.add_argument("--transport", choices=TRANSPORTS, default=default["transport"],
                            help="direct: the service in process; asgi: its HTTP app in process; http: a server at "
                                 "--url")
        parser.add_argument("--url", default=None, help="with --transport http: e.g. http://127.0.0.1:8000")
        parser.add_argument("--protocol", choices=PROTOCOLS, default=default["protocol"],
                            help="with --transport http: graphlab (its JSON, /v1/infer), oip_json or oip_binary (the "
                                 "Open Inference Protocol, JSON tensors or binary data)")
        parser.add_argument("--out", default=None, help="folder for loadtest_<model>.json")
        parser.add_argument("--no-progress", action="store_true")
        ServeConfig.add_flags(parser, skip=("model", "setting"))

    @classmethod
    def from_flags(cls, args: argparse.Namespace | dict[str, Any]) -> LoadPlan:
        """The plan a parsed `graphlab loadtest` command line asks for."""
        values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
        return cls(**{f.name: values[f.name] for f in fields(cls) if values.get(f.name) is not None})


__all__ = ["DEFAULT_RATES", "DEFAULT_TIMELINE_RATE", "LoadPlan", "TIMELINE_WINDOW_US", "TRANSPORTS"]
