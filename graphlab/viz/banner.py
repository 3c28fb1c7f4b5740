"""The recorded banner: in recorded mode every plotly figure says that its numbers were recorded elsewhere.

`@recorded_banner` on a plot function adds one line under the figure's title in recorded mode ("recorded on
the H200 ..., not measured on this machine") unless the title already says "recorded"; live, it adds nothing.
The decision is `graphlab.mode.pick`'s. Pure: it only edits the layout of the figure the function returns.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from graphlab.mode import pick, recorded_gpu

__all__ = ["banner_text", "mark_recorded", "recorded_banner"]

_Plot = TypeVar("_Plot", bound=Callable[..., Any])


def banner_text() -> str | None:
    """The banner line in recorded mode, None live."""
    return pick(live=None, recorded=f"recorded on the {recorded_gpu().upper()} (data/recordings/{recorded_gpu()}), "
                                    "not measured on this machine")


def mark_recorded(fig: Any) -> Any:
    """Add the banner under `fig`'s title in recorded mode (once); return `fig`."""
    text = banner_text()
    title = getattr(getattr(fig.layout, "title", None), "text", None) or ""
    if text and "recorded" not in title.lower():
        new = f"{title}<br><sup>{text}</sup>" if title else f"<sup>{text}</sup>"
        top = getattr(fig.layout.margin, "t", None)
        fig.update_layout(title_text=new, margin_t=max(top or 0, 110 if title else 60))
    return fig


def recorded_banner(plot: _Plot) -> _Plot:
    """Decorate a function that returns a plotly figure: the figure carries the banner in recorded mode."""

    @functools.wraps(plot)
    def call(*args: Any, **kwargs: Any) -> Any:
        return mark_recorded(plot(*args, **kwargs))

    return call  # type: ignore[return-value]
