"""A node's compact JSON text, exactly as `json.dumps(node.to_dict())` writes it, made from cached pieces.

Pure (no torch): standard library only.

`CudaGraph.write_json(out, indent=None)` (`graphlab parse --compact`) writes each node with `node_json`. A big dump
repeats most of what its nodes hold from node to node (kernel names, launch shapes, a kernel's details), so each
such value is encoded once (`_Pieces`) and a node's text is joined from the pieces; the text is `json.dumps`'s,
character for character (`tests/test_dot_limits.py` compares them on every fixture). Measured on a 50,000-node
verbose decoder dump: 0.3 s where `to_dict` and `json.dumps` took 0.75 s (bench/README.md, `bench_parse.py --cli`).
"""
from __future__ import annotations

import enum
import json
from json.encoder import (
    encode_basestring_ascii,  # what json.dumps (ensure_ascii, the default) quotes strings with
)
from typing import Any, Callable, Sequence

#: values kept encoded; a table this full is emptied and starts again (ids and handles never repeat)
PIECES_MAX = 8192

Encoders = Sequence[tuple[str, Callable[[Any], Any]]]


class _Pieces:
    """Encoded values (a str, a tuple, a dict's items, an enum) and field-key layouts (which fields a node holds)."""

    def __init__(self, encoders: Encoders) -> None:
        self.values: dict[Any, str] = {}
        self.layouts: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
        self.encoders = dict(encoders)
        self.order = {name: i for i, (name, _) in enumerate(encoders)}
        self.prefix = {name: f", {json.dumps(name)}: " for name, _ in encoders}

    def encode(self, key: Any, value: Any, name: str) -> str:
        """`value` as `to_dict` and `json.dumps` write it, kept under `key`."""
        if type(value) is str:
            text = encode_basestring_ascii(value)
        elif isinstance(value, enum.Enum):
            text = json.dumps(value.value)
        else:
            text = json.dumps(self.encoders[name](value))
        if len(self.values) >= PIECES_MAX:
            self.values.clear()
        self.values[key] = text
        return text

    def layout(self, keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """(field, its `, "field": ` prefix) for the fields in `keys` that `to_dict` may write, in its order."""
        found = self.layouts.get(keys)
        if found is None:
            names = sorted((k for k in keys if k in self.order), key=self.order.__getitem__)
            found = self.layouts[keys] = tuple((name, self.prefix[name]) for name in names)
        return found


def node_writer(encoders: Encoders, kernel_fields: tuple[str, ...] = ()) -> Callable[[Any], str]:
    """A function giving each `Node`'s compact JSON text. `encoders`: (field, to-JSON) for every field `to_dict`
    may write after `id` and `kind`, in its order (`model._ENCODERS`); `kernel_fields`: written as null on a kernel
    node that lacks them (the CLI's contract, as `write_json` adds them)."""
    pieces = _Pieces(encoders)
    known, encode, layouts, layout = pieces.values, pieces.encode, pieces.layouts, pieces.layout
    null_fields = tuple((name, f", {json.dumps(name)}: null") for name in kernel_fields)

    def node_json(node: Any) -> str:
        state = node.__dict__
        keys = tuple(state)
        kind = node.kind
        parts = ['{"id": ', encode_basestring_ascii(node.id), ', "kind": ', known.get(kind) or encode(kind, kind, "kind")]
        for name, prefix in layouts.get(keys) or layout(keys):
            item = state[name]
            of = type(item)
            if of is int:
                text = str(item)
            elif of is str:
                text = known.get(item) or encode(item, item, name)
            elif item is None or item == () or item == {}:
                continue
            elif of is dict:
                key = ("dict", *item.items())
                text = known.get(key) or encode(key, item, name)
            elif of is tuple or isinstance(item, enum.Enum):
                text = known.get(item) or encode(item, item, name)
            else:
                text = json.dumps(pieces.encoders[name](item))
            parts.append(prefix)
            parts.append(text)
        if null_fields and kind == "kernel":
            for name, text in null_fields:
                item = state.get(name)
                if item is None or item == () or item == {}:
                    parts.append(text)
        parts.append("}")
        return "".join(parts)

    return node_json


__all__ = ["PIECES_MAX", "node_writer"]
