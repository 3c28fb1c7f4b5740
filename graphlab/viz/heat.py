"""Heat-map colours for a profiled graph: each node filled by its GPU time, a legend in µs, and the plotly
"time by module" bar chart.

Pure (plotly only inside `plot_modules`). `render(graph, heat=profile)` uses `HeatScale` for the fill, fills the
node drawn for a collapsed block's repeats by their mean (the block's label gives the sum), and outlines the
critical path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

#: light to dark: white, pale yellow, orange, red, dark red (colour-blind-safe enough for one hue ramp)
RAMP = ("#FFFFFF", "#FFF3B0", "#FDBE6B", "#F0703C", "#C0272D", "#7A0C14")
NO_TIME_FILL = "#EEEEEE"


def _mix(a: str, b: str, t: float) -> str:
    ca, cb = (int(a[i:i + 2], 16) for i in (1, 3, 5)), (int(b[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(x + (y - x) * t):02X}" for x, y in zip(ca, cb))


@dataclass(frozen=True)
class HeatScale:
    """Maps µs to a fill colour on a log scale from `low_us` to `high_us`."""

    low_us: float
    high_us: float

    @classmethod
    def of(cls, times_us: Mapping[str, float]) -> HeatScale:
        values = [v for v in times_us.values() if v and v > 0]
        if not values:
            return cls(1.0, 1.0)
        return cls(min(values), max(values))

    def position(self, value_us: float) -> float:
        if self.high_us <= self.low_us or value_us <= self.low_us:
            return 0.0 if value_us <= self.low_us else 1.0
        return min(1.0, math.log(value_us / self.low_us) / math.log(self.high_us / self.low_us))

    def color(self, value_us: float | None) -> str:
        if value_us is None:
            return NO_TIME_FILL
        x = self.position(value_us) * (len(RAMP) - 1)
        i = min(int(x), len(RAMP) - 2)
        return _mix(RAMP[i], RAMP[i + 1], x - i)

    def legend(self, steps: int = 5) -> list[tuple[str, str]]:
        """(label, colour) pairs from low to high, for the drawing's legend."""
        if self.high_us <= self.low_us:
            return [(f"{self.low_us:.1f} µs", self.color(self.low_us))]
        out = []
        for k in range(steps):
            v = self.low_us * (self.high_us / self.low_us) ** (k / (steps - 1))
            out.append((f"{v:.1f} µs" if v < 100 else f"{v:,.0f} µs", self.color(v)))
        return out


def heat_of(source: Any) -> dict[str, float]:
    """node id -> µs from a `Profile` (its `.heat()`) or a mapping."""
    if hasattr(source, "heat"):
        return dict(source.heat())
    return {str(k): float(v) for k, v in dict(source).items()}


def plot_modules(profile: Any, depth: int | None = 2, top: int = 15) -> Any:
    """A plotly bar chart of GPU time by module (cut to `depth` dotted parts), slowest first."""
    import plotly.graph_objects as go

    rows = profile.module_rows(depth)[:top]
    fig = go.Figure(go.Bar(x=[r["gpu_us"] for r in rows][::-1], y=[r["module"] for r in rows][::-1], orientation="h",
                           text=[f"{r['share_pct']:.0f}%" for r in rows][::-1], textposition="outside",
                           hovertemplate="%{y}: %{x:.1f} µs<extra></extra>", marker_color="#F0703C"))
    where = profile.conditions.get("recorded") or profile.conditions.get("gpu", "")
    fig.update_layout(title=f"GPU time by module: {profile.name}<br><sup>{where}</sup>", xaxis_title="GPU µs per "
                      "replay (median node times, summed)", height=140 + 26 * len(rows), margin={"l": 160})
    return fig


__all__ = ["HeatScale", "NO_TIME_FILL", "RAMP", "heat_of", "plot_modules"]
