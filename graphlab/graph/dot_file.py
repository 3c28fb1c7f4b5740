"""A DOT file read in pieces, never whole: checked in one pass, then handed to the reader piece by piece.

Pure (no torch): standard library only.

`read_dot` (`graphlab.graph.dot_parser`) reads a file twice, `PIECE_BYTES` at a time:

1. `DotFile.open` checks it as `parse_dot` checks a text, in the same order: its size before a byte is read
   (`max_bytes`), then, reading it: the pre-scan of the node count, UTF-8, no control characters;
2. the reader (`dot_syntax.DotReader`) takes its text piece by piece (`DotFile.pieces`), each piece cut just
   after the last `;` that ends a line, so a driver statement is whole in one piece.

So a parse holds one piece of text at a time (1 MiB) besides the graph it builds, where it held the whole text
before (580 bytes a node of a verbose dump: bench/README.md). The line of an error is found by reading the
text again up to it (`DotFile.line_of`). `read_dot_text`, for those who want the text itself, reads it whole.
"""
from __future__ import annotations

import codecs
import errno
import os
import re
from typing import BinaryIO, Iterator

from graphlab.errors import DotFileError, DotParseError
from graphlab.files import open_regular
from graphlab.graph.dot_limits import (
    PRESCAN_LABEL,
    PRESCAN_NOT_NODES,
    DotLimits,
    resolve_limits,
)
from graphlab.graph.dot_syntax import DotText

#: bytes read at a time
PIECE_BYTES = 1 << 20

_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1f]")
_NOT_CONTROL = bytes(c for c in range(256) if not (c <= 0x08 or 0x0E <= c <= 0x1F))  # translate() leaves the rest
_LABEL = PRESCAN_LABEL.encode()
_BOM = "\ufeff"


def _open_dot(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a DOT file for reading, or raise `DotFileError` (which is also the OSError Python raised) saying what
    is wrong with the path and where a dump comes from."""
    try:
        return open_regular(path)  # never waits on a FIFO
    except OSError as exc:
        why = {errno.ENOENT: "no such file", errno.EISDIR: "it is a folder, not a file",
               errno.EACCES: "no permission to read it"}.get(exc.errno, exc.strerror or "it cannot be opened")
        where = os.path.abspath(path)
        error = DotFileError(
            f"cannot read the DOT file {str(path)!r} ({why}; looked at {where}). Give the path to a file written by "
            "cudaGraphDebugDotPrint: a captured graph's .dot() text saved to a file, or a .dot file of a recording "
            "(gl.list_recordings())")
        error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(path)
        raise error from None


def _binary(source: str, line: int, what: str) -> DotParseError:
    return DotParseError(f"binary data, not a {what}", source=source, line=line)


class DotFile(DotText):
    """An open DOT file, checked, read in pieces (`pieces`) as often as the reader asks. Close it (or use `with`).

    Attributes:
        size: the bytes checked, and the most any later read takes (a file that grows is read as it was).
    """

    def __init__(self, file: BinaryIO, source: str, size: int):
        self.file, self.source, self.size = file, source, size

    @classmethod
    def open(cls, path: str | os.PathLike[str], limits: DotLimits | None = None) -> DotFile:
        """Open and check the file at `path` (see the module docstring).

        Raises:
            DotFileError: it cannot be opened (also the OSError Python raised).
            DotLimitError: past `limits.max_bytes`, or the pre-scan counts more nodes than `limits.max_nodes`.
            DotParseError: not UTF-8 text, or a control character in it (the line named).
        """
        limits = resolve_limits(limits)
        source = str(path)
        file = _open_dot(path)
        try:
            limits.check_bytes(os.fstat(file.fileno()).st_size, source)  # before a byte is read
            dot = cls(file, source, _check(file, source, limits))
        except BaseException:
            file.close()
            raise
        return dot

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> DotFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _bytes(self) -> Iterator[bytes]:
        self.file.seek(0)
        left = self.size
        while left > 0:
            data = self.file.read(min(PIECE_BYTES, left))
            if not data:
                return
            left -= len(data)
            yield data

    def pieces(self) -> Iterator[str]:
        """The text (a BOM dropped), each piece but the last cut just after a `;` that ends a line."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        carry, first = "", True
        for data in self._bytes():
            try:
                text = carry + decoder.decode(data)
            except UnicodeDecodeError:  # the file changed since it was checked
                raise _binary(self.source, 1, "UTF-8 DOT text dump (the file changed while it was read)") from None
            if first and text:
                text, first = (text[1:] if text.startswith(_BOM) else text), False
            cut = text.rfind(";\n") + 2
            if cut < 2 and len(text) < 4 * PIECE_BYTES:  # no statement ends here: read on (but never hold much)
                carry = text
                continue
            cut = cut if cut >= 2 else len(text)
            carry = text[cut:]
            yield text[:cut]
        try:
            rest = carry + decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise _binary(self.source, 1, "UTF-8 DOT text dump (the file changed while it was read)") from None
        if rest:
            yield rest[1:] if first and rest.startswith(_BOM) else rest

    def line_of(self, pos: int) -> int:
        """The line of character `pos` (the text read again up to it)."""
        lines, seen = 1, 0
        for piece in self.pieces():
            if seen + len(piece) >= pos:
                return lines + piece.count("\n", 0, pos - seen)
            lines += piece.count("\n")
            seen += len(piece)
        return lines


def _check(file: BinaryIO, source: str, limits: DotLimits) -> int:
    """Read the file once in pieces: its size, the node pre-scan, UTF-8, control characters (the problem found
    first in that order is raised, as `parse_dot` finds them in a text); returns its size in bytes."""
    size, labels, tail = 0, 0, b""
    decoder = codecs.getincrementaldecoder("utf-8")()
    not_utf8: int | None = None  # where the first byte that is not UTF-8 is
    control: int | None = None  # where the first control character is
    pending = False  # the decoder holds the start of a character cut by the piece's end
    while True:
        data = file.read(PIECE_BYTES)
        if not data:
            break
        if limits.max_bytes is not None and size + len(data) > limits.max_bytes:  # the file grew
            limits.check_bytes(size + len(data), source)
        if limits.max_nodes is not None:  # each label counted when its last byte is read, across the pieces
            held = tail + data
            labels += held.count(_LABEL)
            tail = held[1 - len(_LABEL):]
        if not_utf8 is None and (pending or not data.isascii()):
            held = len(decoder.getstate()[0])  # bytes of a character the last piece cut, decoded with this one
            try:
                decoder.decode(data)
                pending = bool(decoder.getstate()[0])
            except UnicodeDecodeError as exc:
                not_utf8 = size - held + exc.start
        if control is None and data.translate(None, _NOT_CONTROL):
            found = _CONTROL_BYTES.search(data)
            control = size + found.start() if found is not None else None
        size += len(data)
    if not_utf8 is None and pending:  # the file ends inside a character
        not_utf8 = size - len(decoder.getstate()[0])
    limits.check_prescan(labels, lambda: _count_not_nodes(file), source)
    if not_utf8 is not None:
        raise _binary(source, _line_at(file, max(not_utf8, 0)), "UTF-8 DOT text dump")
    if control is not None:
        raise _binary(source, _line_at(file, control), "DOT text dump (control character found)")
    return size


def _count_not_nodes(file: BinaryIO) -> int:
    """The pre-scan's labels that are no node's (`PRESCAN_NOT_NODES`), read again (only past `max_nodes`)."""
    file.seek(0)
    words = [w.encode() for w in PRESCAN_NOT_NODES]
    longest = max(len(w) for w in words)
    found, tail = 0, b""
    while True:
        data = file.read(PIECE_BYTES)
        if not data:
            return found
        found += sum((tail[1 - len(w):] + data).count(w) for w in words)  # each when its last byte is read
        tail = (tail + data)[1 - longest:]


def _line_at(file: BinaryIO, offset: int) -> int:
    """The line of byte `offset` (the file read again up to it)."""
    file.seek(0)
    data = file.read(offset)
    return data.count(b"\n") + 1


def read_dot_text(path: str | os.PathLike[str], *, limits: DotLimits | None = None) -> str:
    """The text of a DOT file, its size checked against `limits` before it is read (a UTF-8 BOM dropped).

    Raises:
        DotFileError: the file cannot be opened (also the OSError Python raised).
        DotLimitError: the file is larger than `limits.max_bytes`.
        DotParseError: the file is not UTF-8 text.
    """
    limits = resolve_limits(limits)
    source = str(path)
    with _open_dot(path) as file:
        size = os.fstat(file.fileno()).st_size  # the file opened, so the size is the one read
        limits.check_bytes(size, source)
        data = file.read() if limits.max_bytes is None else file.read(limits.max_bytes + 1)
    limits.check_bytes(len(data), source)  # a file that grew, or one whose size the system does not know
    limits.prescan_nodes(data, source)  # before decoding: the bytes and the text are never held together then
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DotParseError("binary data, not a UTF-8 DOT text dump", source=source, line=line) from None
    del data  # the bytes and the text would otherwise be held together through the parse
    if text.startswith(_BOM):
        text = text[1:]
    return text


__all__ = ["PIECE_BYTES", "DotFile", "read_dot_text"]
