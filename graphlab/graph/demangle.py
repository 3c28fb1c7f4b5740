"""Demangle Itanium C++ symbol names (`_ZN2at6native...`) into readable C++.

Pure (no torch): standard library only. It calls `__cxa_demangle` from the C++ runtime that is already
on every Linux machine with a C++ toolchain or PyTorch (libstdc++), through `ctypes`, so graphlab needs
no extra package. Where no C++ runtime can be loaded (some macOS/Windows set-ups), names come back
unchanged: a mangled name is ugly but still correct.

Example:
    >>> demangle("_ZN2at6native18elementwise_kernelEv")
    'at::native::elementwise_kernel()'
    >>> demangle("ampere_sgemm_128x64_tn")   # not mangled: returned as is
    'ampere_sgemm_128x64_tn'
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from typing import Any, Callable

_LIBRARY_NAMES = ("libstdc++.so.6", "libc++.so.1", "libc++abi.so.1", "libstdc++.6.dylib", "libc++.1.dylib")
_lock = threading.Lock()
_demangler: Callable[[bytes], str | None] | None = None
_loaded = False


def _load_demangler() -> Callable[[bytes], str | None] | None:
    """Find `__cxa_demangle` in a C++ runtime; None when there is none."""
    candidates = list(_LIBRARY_NAMES)
    for short in ("stdc++", "c++", "c++abi"):
        found = ctypes.util.find_library(short)
        if found:
            candidates.append(found)
    lib: Any = None
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
            lib.__cxa_demangle  # noqa: B018 - attribute look-up fails when the symbol is absent
            break
        except (OSError, AttributeError):
            lib = None
    if lib is None:
        return None
    libc: Any
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        free = libc.free
    except (OSError, AttributeError):
        return None
    cxa = lib.__cxa_demangle
    cxa.restype = ctypes.c_void_p
    cxa.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]
    free.restype = None

    def call(mangled: bytes) -> str | None:
        status = ctypes.c_int(0)
        pointer = cxa(mangled, None, None, ctypes.byref(status))
        if not pointer:
            return None
        try:
            if status.value != 0:
                return None
            raw = ctypes.string_at(pointer)
        finally:
            free(pointer)
        return raw.decode("utf-8", "replace")

    return call


def demangler_available() -> bool:
    """True when a C++ runtime with `__cxa_demangle` was found on this machine."""
    return _get() is not None


def _get() -> Callable[[bytes], str | None] | None:
    global _demangler, _loaded
    if not _loaded:
        with _lock:
            if not _loaded:
                _demangler = _load_demangler()
                _loaded = True
    return _demangler


@functools.lru_cache(maxsize=8192)
def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled `name`; `name` itself when it is not mangled,
    cannot be demangled, or no C++ runtime is available."""
    if not name.startswith("_Z") or "\x00" in name:
        return name
    call = _get()
    if call is None:
        return name
    try:
        result = call(name.encode("utf-8", "replace"))
    except (OSError, ValueError):  # pragma: no cover - defensive: a broken runtime
        return name
    return result if result else name


__all__ = ["demangle", "demangler_available"]
