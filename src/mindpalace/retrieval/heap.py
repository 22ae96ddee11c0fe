"""Giving the memory an index load freed back to the system.

Loading a large palace's vectors and building its warm indexes allocate
hundreds of megabytes of temporary arrays (the float vectors before they
are packed, the postings before they are sorted), most of them freed a
moment later. glibc's allocator keeps much of what was freed in its heap
for reuse rather than returning it, so a worker that loaded a 100,000-row
palace held about 145 MB it no longer used (``bench/workers.py``).
``release`` asks it to return those pages (``malloc_trim``); it is called
after a load or a build replaced the arrays of an index, not per recall.
Elsewhere (another C library, another system) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["release"]


def _trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _trim()


def release() -> bool:
    """Return the heap's free pages to the system; whether it could
    (glibc's ``malloc_trim``; a fraction of a millisecond)."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
