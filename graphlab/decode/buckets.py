"""A decode bucket by number or by label: `8`, `"8"` and `"b8"` name the same bucket.

    >>> resolve_bucket("b8", [1, 8, 64])
    8
    >>> bucket_label(8)
    'b8'

`gl.profile(decode_graphs, bucket=B)` and `DecodeGraphs.graph_for(B)` take either; a bucket that was not
captured is a `BadInputError` naming those that were.

Pure: standard library only.
"""
from __future__ import annotations

from typing import Any, Sequence

from graphlab.errors import BadInputError


def bucket_label(bucket: int) -> str:
    """The label of a bucket, as its graph's name and the recordings' keys write it: "b8"."""
    return f"b{int(bucket)}"


def resolve_bucket(asked: Any, captured: Sequence[int]) -> int:
    """The bucket `asked` names (an int, "8" or "b8"), checked to be one of `captured`.

    Raises:
        BadInputError: `asked` names no bucket, or one not captured (the message lists the captured ones).
    """
    have = sorted(int(b) for b in captured)
    words = ", ".join(str(b) for b in have) or "none yet (call capture_all() first)"
    if isinstance(asked, bool):
        value = None
    elif isinstance(asked, int):
        value = asked
    elif isinstance(asked, str):
        text = asked.strip().lower()
        text = text[1:] if text.startswith("b") else text
        value = int(text) if text.isdigit() else None
    else:
        value = None
    if value is None:
        raise BadInputError(f"a bucket is a batch size (8) or its label ('b8'), not {asked!r}; captured: {words}")
    if value not in have:
        raise BadInputError(f"bucket {value} was not captured; captured buckets: {words}")
    return value


__all__ = ["bucket_label", "resolve_bucket"]
