"""What a captured graph did when the model's weights changed afterwards: `Sweep.weight_update`.

Pure (no torch): standard library only.

`graphlab.timing.weights.probe_weight_update` measures it on a GPU and records it as JSON with the
sweep. `WeightUpdate` is that JSON (a dict, so recordings and code that index it keep working) with
typed readings and a display that says what happened, in a notebook (a table) and in a terminal:

    >>> probe = WeightUpdate({"batch_size": 1, "tolerance_rel": 0.001, "output_change_rel": 0.87,
    ...     "inplace_copy": {"replay_vs_eager_new_rel": 0.0, "replay_follows_new_weights": True},
    ...     "rebind_parameter": {"replay_vs_eager_new_rel": 2.4, "replay_vs_old_weights_rel": 0.0,
    ...                          "replay_follows_new_weights": False}})
    >>> probe.inplace_copy_followed, probe.rebind_followed
    (True, False)
    >>> print(probe)  # doctest: +NORMALIZE_WHITESPACE
    weight update after capture (batch 1; differences relative to the output's largest value, tolerance 0.001):
      param.copy_(new), the same tensors: the replay follows the new weights (replay vs eager with the new weights 0)
      module.weight = nn.Parameter(new), new tensors: the replay keeps the old weights (replay vs eager with the new weights 2.4, with the old weights 0)
      eager's output, old weights vs new (the change a replay must follow): 0.87
"""
from __future__ import annotations

import html
from typing import Any

# (key in the probe's JSON, how the weights were changed, what that means for the graph's memory)
WAYS = (
    ("inplace_copy", "param.copy_(new)", "the same tensors"),
    ("rebind_parameter", "module.weight = nn.Parameter(new)", "new tensors"),
)


class WeightUpdate(dict):  # type: ignore[type-arg]
    """The weight-update probe of a sweep: the recorded JSON dict, read and shown as what it measured."""

    def _way(self, key: str) -> dict[str, Any]:
        value = self.get(key)
        return value if isinstance(value, dict) else {}

    @property
    def probed(self) -> bool:
        """False when the probe had nothing to change (a model without parameters), or was not run."""
        return bool(self._way("inplace_copy") or self._way("rebind_parameter"))

    @property
    def inplace_copy_followed(self) -> bool | None:
        """Did the replay use the new weights after `param.copy_(new)`? None when not measured."""
        return _bool(self._way("inplace_copy").get("replay_follows_new_weights"))

    @property
    def rebind_followed(self) -> bool | None:
        """Did the replay use the new weights after replacing the Parameter object? None when not measured."""
        return _bool(self._way("rebind_parameter").get("replay_follows_new_weights"))

    @property
    def output_change_rel(self) -> float | None:
        """How much the new weights changed the output (relative to its largest magnitude)."""
        value = self.get("output_change_rel")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def tolerance_rel(self) -> float | None:
        value = self.get("tolerance_rel")
        return float(value) if isinstance(value, (int, float)) else None

    def rows(self) -> list[dict[str, Any]]:
        """One row per way of changing the weights: how, what the graph reads, and what the replay did."""
        out = []
        for key, how, memory in WAYS:
            way = self._way(key)
            if not way:
                continue
            followed = _bool(way.get("replay_follows_new_weights"))
            out.append({
                "how": how, "memory": memory, "replay_follows_new_weights": followed,
                "replay": {True: "follows the new weights", False: "keeps the old weights"}.get(followed, "?"),
                "replay_vs_eager_rel": way.get("replay_vs_eager_new_rel"),
                "replay_vs_old_weights_rel": way.get("replay_vs_old_weights_rel"),
            })
        return out

    def _heading(self) -> str:
        relative = "differences relative to the output's largest value"
        if self.tolerance_rel is not None:
            relative += f", tolerance {self.tolerance_rel:g}"
        batch = f"batch {self['batch_size']}; " if self.get("batch_size") is not None else ""
        return f"weight update after capture ({batch}{relative})"

    def summary(self) -> str:
        """Plain text, one line per way of changing the weights."""
        if not self.probed:
            return f"weight update after capture: {self.get('note') or 'not probed'}"
        lines = [self._heading() + ":"]
        for row in self.rows():
            diffs = [f"replay vs eager with the new weights {_num(row['replay_vs_eager_rel'])}"]
            if row["replay_vs_old_weights_rel"] is not None:
                diffs.append(f"with the old weights {_num(row['replay_vs_old_weights_rel'])}")
            lines.append(f"  {row['how']}, {row['memory']}: the replay {row['replay']} ({', '.join(diffs)})")
        if self.output_change_rel is not None:
            lines.append(f"  {CHANGE_LABEL} {_num(self.output_change_rel)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        if not self.probed:
            return f"WeightUpdate({self.get('note') or 'not probed'})"
        said = "; ".join(f"{row['how']}: replay {row['replay']}" for row in self.rows())
        return f"WeightUpdate({said})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython's text form: the summary
        printer.text(self.summary())

    def _repr_html_(self) -> str:
        esc = html.escape
        if not self.probed:
            return f"<p>{esc(self.summary())}</p>"
        cell = "style='padding:2px 10px;text-align:{}'"
        head = "".join(f"<th {cell.format(a)}>{esc(h)}</th>" for h, a in (
            ("weights changed by", "left"), ("the graph reads", "left"), ("the replay", "left"),
            ("replay vs eager, new weights", "right"), ("replay vs eager, old weights", "right")))
        body = "".join(
            "<tr>" + "".join(f"<td {cell.format(a)}>{v}</td>" for v, a in (
                (f"<code>{esc(r['how'])}</code>", "left"), (esc(r["memory"]), "left"), (f"<b>{esc(r['replay'])}</b>", "left"),
                (_num(r["replay_vs_eager_rel"]), "right"), (_num(r["replay_vs_old_weights_rel"]), "right"))) + "</tr>"
            for r in self.rows())
        note = f"<br><small>{esc(str(self['method']))}</small>" if self.get("method") else ""
        change = f"; {CHANGE_LABEL} {_num(self.output_change_rel)}" \
            if self.output_change_rel is not None else ""
        return (f"<p>{esc(self._heading())}{esc(change)}{note}</p>"
                f"<table style='border-collapse:collapse'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


#: the one name of `output_change_rel`: how far the new weights moved eager's own output (not a replay's)
CHANGE_LABEL = "eager's output, old weights vs new (the change a replay must follow):"


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _num(value: Any) -> str:
    """A relative difference for a table: "0", "0.87", "3.67", "23,916"; "" when not measured."""
    if not isinstance(value, (int, float)):
        return ""
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def as_weight_update(value: Any) -> WeightUpdate | None:
    """A recorded probe (a dict) as a `WeightUpdate`; None stays None; anything else is kept as it is."""
    if value is None or isinstance(value, WeightUpdate) or not isinstance(value, dict):
        return value
    return WeightUpdate(value)


__all__ = ["WAYS", "WeightUpdate", "as_weight_update"]
