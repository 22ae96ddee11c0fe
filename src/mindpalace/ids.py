"""Memory ids: ``mem_`` + 26 Crockford base32 characters (a ULID).

48 bits of milliseconds then 80 random bits, so ids sort by creation time.
Within one millisecond a generator increments the random part instead of
drawing a new one, so ids made by one process are strictly increasing.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

__all__ = ["IdGenerator"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80


def _encode(value: int) -> str:
    chars = []
    for _ in range(26):
        value, index = divmod(value, 32)
        chars.append(_CROCKFORD[index])
    return "".join(reversed(chars))


class IdGenerator:
    """Thread-safe, monotonic within a process."""

    def __init__(self, prefix: str = "mem_") -> None:
        self._prefix = prefix
        self._lock = threading.Lock()
        self._last = 0

    def next(self, now: datetime) -> str:
        """A new id for something created at ``now``."""
        millis = int(now.timestamp() * 1000)
        with self._lock:
            value = (millis << _RANDOM_BITS) | int.from_bytes(os.urandom(10), "big")
            if value <= self._last:
                value = self._last + 1
            self._last = value
        return self._prefix + _encode(value)
