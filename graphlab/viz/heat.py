"""Heat-map colours for a profiled graph: each node filled by its GPU time, a legend in µs, and the plotly
"time by module" bar chart.

Pure (plotly only inside `plot_modules`); every label through `graphlab.present`. `render(graph, heat=profile)` uses `HeatScale` for the fill, fills the
node drawn for a collapsed block's repeats by their mean (the block's label gives the sum), and outlines the
critical path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from graphlab import present

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
            return [(present.duration(self.low_us), self.color(self.low_us))]
        out = []
        for k in range(steps):
            v = self.low_us * (self.high_us / self.low_us) ** (k / (steps - 1))
            out.append((present.duration(v), self.color(v)))
        return out


def heat_of(source: Any) -> dict[str, float]:
    """node id -> µs from a `Profile` (its `.heat()`) or a mapping."""
    if hasattr(source, "heat"):
        return dict(source.heat())
    return {str(k): float(v) for k, v in dict(source).items()}


def plot_modules(profile: Any, depth: int | None = 2, top: int = 15) -> Any:
    """A plotly bar chart of GPU time by module (cut to `depth` dotted parts), slowest at the top, each bar labelled
    with its share of the node time; the title says how much the slowest three hold."""
    import plotly.graph_objects as go

    from graphlab.viz.banner import mark_recorded

    every = profile.module_rows(depth)
    rows = every[:top]
    labels = [_module_words(r["module"]) for r in rows][::-1]
    fig = go.Figure(go.Bar(x=[r["gpu_us"] for r in rows][::-1], y=labels, orientation="h",
                           text=[present.percent(r["share_pct"]) for r in rows][::-1], textposition="outside",
                           customdata=[present.duration(r["gpu_us"]) for r in rows][::-1],
                           hovertemplate="%{y}: %{customdata} per replay (%{text})<extra></extra>",
                           marker_color="#F0703C", showlegend=False))
    k = min(3, len(every))
    held = sum(r["share_pct"] for r in every[:k])
    cut = f", modules cut to {depth} dotted part{'s' if depth != 1 else ''}" if depth else ""
    finding = (f"{profile.name}: the {k} slowest modules hold {present.percent(held)} of the GPU time" if k > 1
               else f"{profile.name}: GPU time by module")
    where = profile.where() if hasattr(profile, "where") else ""
    shown = f"the {len(rows)} slowest of {len(every)} modules (plot_modules(prof, top=...) for more)" \
        if len(every) > len(rows) else ""
    title = f"{finding}{cut}" + "".join(f"<br><sup>{x}</sup>" for x in (shown, where) if x)
    largest = max((r["gpu_us"] for r in rows), default=1.0)
    fig.update_layout(title=title, xaxis_title="GPU time per replay (µs), the module's nodes summed",
                      yaxis_title="module", xaxis_range=[0, largest * 1.2], height=160 + 26 * len(rows),
                      margin={"l": 160, "t": 110})
    return mark_recorded(fig)


def _module_words(path: str) -> str:
    if path in ("(root)", ""):
        return "the model's own forward"
    if path == "(outside any module)":
        return "outside any module"
    return path


__all__ = ["HeatScale", "NO_TIME_FILL", "RAMP", "heat_of", "plot_modules"]
