"""A kernel's argument bytes as 8-byte words, each a pointer or an integer, and the rule that says a word is baked.

Pure: standard library only, tested on CPU with synthetic words and memory segments (the GPU side,
`audit/kernel_args.py`, reads the bytes and the segments).

ATen kernels take structs that mix pointers and integers (TensorInfo, OffsetCalculator, the Philox state), laid out
by the driver's parameter offsets: the audit compares them word by word. A word is a **pointer** when it falls in a
segment of the caching allocator (`torch.cuda.memory_snapshot()`) or the driver's `cuMemGetAddressRange` accepts it;
otherwise an **integer** (a size, a stride, a scalar's bits). Between a graph captured at one draw (A) and one
captured at another (B), a word that differs is **baked** when:

- it is an integer: the value was fixed at capture (a Python scalar, a length from a shape or the host);
- it is a pointer that lies outside both graphs' pools and static buffers: the graph reads memory made outside it,
  at whatever address it had at capture (the vllm #6052 pattern). A pointer into each graph's own pool or static
  buffers differs between any two captures and is not baked.

An integer word that also differs between two captures at the *same* draw (A and A2) is noise (padding bytes inside
a struct) and never baked; pointers are judged by the rule above alone (a tensor replaced between the captures moves).

    >>> space = AddressSpace(segments=((0x1000, 0x1000),), owned_a=((0x1000, 0x100),), owned_b=((0x1800, 0x100),))
    >>> [w.kind for w in baked_words((0x1010, 7), (0x1810, 9), space)]
    ['integer']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from graphlab.errors import BadInputError

WORD_BYTES = 8

#: (start address, size in bytes)
Range = tuple[int, int]


def _within(value: int, ranges: Iterable[Range]) -> bool:
    return any(start <= value < start + size for start, size in ranges)


def words_of(blob: bytes) -> tuple[int, ...]:
    """`blob` as little-endian 8-byte words; a last partial word is padded with zero bytes."""
    if len(blob) % WORD_BYTES:
        blob = blob + bytes(WORD_BYTES - len(blob) % WORD_BYTES)
    return tuple(int.from_bytes(blob[i:i + WORD_BYTES], "little") for i in range(0, len(blob), WORD_BYTES))


def param_blob(params: Sequence[tuple[int, bytes]]) -> bytes:
    """The argument buffer from (offset, bytes) per parameter, as the driver lays it out (gaps are zeros).

    Raises:
        BadInputError: two parameters overlap (a layout the driver never gives).
    """
    end = max((offset + len(data) for offset, data in params), default=0)
    buffer = bytearray(end)
    taken = bytearray(end)
    for offset, data in params:
        if offset < 0 or any(taken[offset:offset + len(data)]):
            raise BadInputError(f"kernel parameters overlap at byte {offset}: not a layout the driver gives")
        buffer[offset:offset + len(data)] = data
        taken[offset:offset + len(data)] = b"\x01" * len(data)
    return bytes(buffer)


@dataclass(frozen=True)
class AddressSpace:
    """What the addresses in two graphs' arguments may point at.

    Attributes:
        segments: every segment of the caching allocator (start, size): a word inside one is a pointer.
        owned_a, owned_b: each graph's own memory: its pool's segments and its static inputs and outputs.
        is_device_address: the driver's check for a word outside every segment (`cuMemGetAddressRange`), or None.
    """

    segments: tuple[Range, ...] = ()
    owned_a: tuple[Range, ...] = ()
    owned_b: tuple[Range, ...] = ()
    is_device_address: Callable[[int], bool] | None = None

    def is_pointer(self, value: int) -> bool:
        if value == 0:
            return False
        if _within(value, self.segments) or _within(value, self.owned_a) or _within(value, self.owned_b):
            return True
        return bool(self.is_device_address is not None and self.is_device_address(value))

    def owned(self, value: int) -> bool:
        """True when `value` points into either graph's own memory."""
        return _within(value, self.owned_a) or _within(value, self.owned_b)


@dataclass(frozen=True)
class BakedWord:
    """One argument word that differs between the two captures and was fixed at capture.

    Attributes:
        index: the word's index (bytes index*8 to index*8+7 of the argument buffer).
        a, b: its value in graph A and in graph B.
        kind: "integer" or "pointer".
        reason: why it counts as baked, in words.
    """

    index: int
    a: int
    b: int
    kind: str
    reason: str

    def where(self) -> str:
        start = self.index * WORD_BYTES
        return f"argument word {self.index} (bytes {start}-{start + WORD_BYTES - 1})"


def classify(value: int, space: AddressSpace) -> str:
    """ "pointer" or "integer" (see the module docstring)."""
    return "pointer" if space.is_pointer(value) else "integer"


def baked_words(words_a: Sequence[int], words_b: Sequence[int], space: AddressSpace,
                words_again: Sequence[int] | None = None) -> list[BakedWord]:
    """The words that differ between graph A and graph B and are baked (see the module docstring).

    Args:
        words_a, words_b: one kernel's argument words in each graph (the same kernel, the same length).
        space: what the addresses may point at.
        words_again: the same kernel's words in a second capture at A's draw: an integer word that differs there
            too is noise, never baked.

    Raises:
        BadInputError: the two kernels' argument buffers have different lengths (not the same kernel).
    """
    if len(words_a) != len(words_b):
        raise BadInputError(f"the two launches have {len(words_a)} and {len(words_b)} argument words: not the same "
                            "kernel, compare launches of one kernel")
    found = []
    for index, (a, b) in enumerate(zip(words_a, words_b)):
        if a == b:
            continue
        pointer_a, pointer_b = space.is_pointer(a), space.is_pointer(b)
        if not pointer_a and not pointer_b:
            if words_again is not None and index < len(words_again) and words_again[index] != a:
                continue  # differs between two captures of the same draw: noise
            found.append(BakedWord(index, a, b, "integer", "an integer argument that differs between the captures: "
                                                           "a value fixed at capture"))
        elif not (space.owned(a) and space.owned(b)):
            outside = a if not space.owned(a) else b
            found.append(BakedWord(index, a, b, "pointer", f"an address ({outside:#x}) outside both graphs' pools "
                                                           "and static buffers: memory made outside the graph"))
    return found


__all__ = ["WORD_BYTES", "AddressSpace", "BakedWord", "Range", "baked_words", "classify", "param_blob", "words_of"]
