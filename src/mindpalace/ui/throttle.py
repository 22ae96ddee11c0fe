"""How often the inspector's login may be tried: per client address and in
all.

A token guessed at the login form (or a link's one-time token) is tried
against the palace's tokens; without a bound, a script could try thousands a
second. Each address has a bucket of ``per_address`` tries that refills at
one try every ``refill`` seconds, and all addresses together one of
``overall`` tries refilling ``overall / per_address`` times as fast; a try
takes one from both. A try is refused while either is empty (429 with
``Retry-After``: when the next try is in), before the token is looked at, so
a refused try tells nothing about it. A login that succeeds gives its try
back, so only failed tries count: logging in and out never uses the buckets
up. They refill whatever happens, so nobody is locked out for longer than
the wait the answer names (while tries keep coming from elsewhere, the
overall bucket still lets one in every ``refill * per_address / overall``
seconds).

The buckets live in the serving process (each ``serve --workers`` process
has its own), keyed by address; the least recently used go first beyond
``size`` addresses.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["LoginThrottle"]

_ALL = "*"  # the key of the overall bucket (no address is "*")


class LoginThrottle:
    """Token buckets of login tries, per address and overall.

    Args:
        per_address: tries an address may make at once.
        overall: tries all addresses together may make at once.
        refill: seconds for an address's bucket to win back one try.
        size: addresses tracked at most.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        *,
        per_address: int = 10,
        overall: int = 100,
        refill: float = 6.0,
        size: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._capacity = {_ALL: float(overall)}
        self._per_address = float(per_address)
        # Seconds per try won back: the overall bucket refills as many
        # addresses' buckets would together.
        self._rate = {_ALL: refill * per_address / overall}
        self._refill = refill
        self._size = size
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tries, at
        self._lock = threading.Lock()

    def _level(self, key: str, now: float) -> float:
        capacity = self._capacity.get(key, self._per_address)
        tries, at = self._buckets.get(key, (capacity, now))
        return min(capacity, tries + (now - at) / self._rate.get(key, self._refill))

    def take(self, address: str) -> float | None:
        """Take a try for ``address``: None when it may try now, else the
        seconds until it may (nothing is taken then)."""
        now = self._clock()
        keys = (address, _ALL)
        with self._lock:
            levels = {key: self._level(key, now) for key in keys}
            waits = [
                (1.0 - level) * self._rate.get(key, self._refill)
                for key, level in levels.items()
                if level < 1.0
            ]
            if waits:
                return max(waits)
            for key, level in levels.items():
                self._buckets[key] = (level - 1.0, now)
                self._buckets.move_to_end(key)
            while len(self._buckets) > self._size:
                oldest = next(iter(self._buckets))
                if oldest == _ALL:
                    self._buckets.move_to_end(_ALL)
                    continue
                del self._buckets[oldest]
        return None

    def give_back(self, address: str) -> None:
        """Return the try ``address`` took (its login succeeded)."""
        now = self._clock()
        with self._lock:
            for key in (address, _ALL):
                capacity = self._capacity.get(key, self._per_address)
                self._buckets[key] = (min(capacity, self._level(key, now) + 1.0), now)

    @staticmethod
    def retry_after(wait: float) -> str:
        """A ``Retry-After`` value (whole seconds, at least 1) for ``wait``."""
        return str(max(1, math.ceil(wait)))
