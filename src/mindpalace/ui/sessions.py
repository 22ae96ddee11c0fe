"""Browser sessions of the inspector: who a browser acts as, and its CSRF token.

A browser never holds a bearer token. It proves itself once (a bearer token
pasted into the login form, or the one-time token in the link ``mindpalace
ui`` prints) and gets a session cookie: random, HttpOnly, SameSite=Strict,
kept only in this process's memory. The session names the caller (an agent,
with or without management access) and carries a CSRF token that every form
that writes sends back in a hidden field.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from mindpalace.server.identity import Caller

__all__ = ["COOKIE", "OneTimeTokens", "Session", "Sessions", "same_token"]

COOKIE = "mindpalace_session"
DEFAULT_TTL = 12 * 3600.0


def same_token(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass(frozen=True, slots=True)
class Session:
    """One browser's session.

    Attributes:
        caller: who its requests act as.
        csrf: the token its forms send back.
        expires: when it ends (monotonic seconds).
    """

    caller: Caller
    csrf: str
    expires: float


class Sessions:
    """The sessions of one server process, by cookie value; the least recently
    opened go first when there are more than ``size``.

    Args:
        ttl: seconds a session lasts after it is opened.
        size: sessions kept at most.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        size: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._size = size
        self._clock = clock
        # Keyed by a digest of the cookie, so the table holds no usable cookie.
        self._open: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(cookie: str) -> str:
        return hashlib.sha256(cookie.encode("utf-8", "replace")).hexdigest()

    def open(self, caller: Caller) -> tuple[str, Session]:
        """A new session for ``caller``: (its cookie value, the session)."""
        cookie = secrets.token_urlsafe(32)
        session = Session(caller, secrets.token_urlsafe(32), self._clock() + self._ttl)
        with self._lock:
            self._open[self._key(cookie)] = session
            while len(self._open) > self._size:
                self._open.popitem(last=False)
        return cookie, session

    def get(self, cookie: str | None) -> Session | None:
        """The live session of a cookie value, if any."""
        if not cookie:
            return None
        key = self._key(cookie)
        with self._lock:
            session = self._open.get(key)
            if session is not None and session.expires <= self._clock():
                del self._open[key]
                return None
            return session

    def close(self, cookie: str | None) -> None:
        """End a session (logging out)."""
        if cookie:
            with self._lock:
                self._open.pop(self._key(cookie), None)


class OneTimeTokens:
    """Tokens that each open one session (the link ``mindpalace ui``
    prints): redeemed once, then gone."""

    def __init__(self) -> None:
        self._tokens: dict[str, Caller] = {}
        self._lock = threading.Lock()

    def issue(self, caller: Caller) -> str:
        """A new token that opens a session for ``caller``."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[hashlib.sha256(token.encode()).hexdigest()] = caller
        return token

    def redeem(self, token: str) -> Caller | None:
        """The caller of an unused token (the token is used up), else None."""
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        with self._lock:
            return self._tokens.pop(key, None)
