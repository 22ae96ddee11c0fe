"""Browser sessions of the inspector: who a browser acts as, and its CSRF token.

A browser never holds a bearer token. It proves itself once (a bearer token
pasted into the login form, or the one-time token in the link ``mindpalace
ui`` prints) and gets a session cookie: HttpOnly, SameSite=Strict. The
cookie is signed, not looked up: it names the session (a random id), its
caller (an agent, with or without management access) and when it ends,
with an HMAC-SHA256 under a key kept in the palace (``palace_meta``, never
exported), so every server process of the palace (``serve --workers``)
honours a session any of them opened. A session's CSRF token, which every
form that writes sends back in a hidden field, is an HMAC of its id.

Logging out records the session's id in the palace until the session would
have ended, and every process refuses a recorded id; an ended session is
refused by its time. A cookie that is not one of ours (altered, truncated,
signed under another palace's key) is no session.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mindpalace.store.roles_palace import Upkeep
from mindpalace.web.identity import Caller

__all__ = ["COOKIE", "OneTimeTokens", "Session", "Sessions", "same_token"]

COOKIE = "mindpalace_session"
DEFAULT_TTL = 12 * 3600.0
_KEY_PARTS = tuple(f"ui_session_key:{n}" for n in range(4))  # 4 x 63 random bits
_ENDED = "ui_session_ended:"  # + session id -> when it would have ended
_MAX_COOKIE = 1024  # ours are about 200 characters


def same_token(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Session:
    """One browser's session.

    Attributes:
        caller: who its requests act as.
        csrf: the token its forms send back.
        expires: when it ends (seconds since the epoch).
        id: the session's random id.
    """

    caller: Caller
    csrf: str
    expires: float
    id: str = ""


class Sessions:
    """The inspector's sessions over one palace's store.

    Args:
        store: the palace's store: it keeps the signing key and the ids of
            sessions logged out, for every process serving the palace.
        ttl: seconds a session lasts after it is opened.
        clock: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        store: Upkeep,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def _signing_key(self) -> bytes:
        """The palace's key: made by the first process that needs one."""
        with self._lock:
            if self._key is None:
                kept = self._store.keep_meta({k: secrets.randbits(63) for k in _KEY_PARTS})
                self._key = b"".join(kept[k].to_bytes(8, "big") for k in _KEY_PARTS)
            return self._key

    def _sign(self, payload: str, purpose: str) -> str:
        message = f"{purpose}\x1f{payload}".encode()
        return _b64(hmac.new(self._signing_key(), message, hashlib.sha256).digest())

    def open(self, caller: Caller) -> tuple[str, Session]:
        """A new session for ``caller``: (its cookie value, the session)."""
        session_id = secrets.token_urlsafe(16)
        expires = int(self._clock() + self._ttl)
        payload = _b64(
            json.dumps(
                {"s": session_id, "a": caller.agent, "m": caller.admin, "e": expires},
                separators=(",", ":"),
            ).encode()
        )
        cookie = f"{payload}.{self._sign(payload, 'session')}"
        return cookie, Session(caller, self._sign(session_id, "csrf"), expires, session_id)

    def get(self, cookie: str | None) -> Session | None:
        """The live session of a cookie value, if any (blocking: it reads the
        palace)."""
        if (
            not cookie
            or len(cookie) > _MAX_COOKIE
            or not cookie.isascii()  # ours are base64url and one dot
            or cookie.count(".") != 1
        ):
            return None
        payload, signature = cookie.split(".")
        if not same_token(signature, self._sign(payload, "session")):
            return None
        try:
            fields = json.loads(_unb64(payload))
            session_id, agent, admin, expires = fields["s"], fields["a"], fields["m"], fields["e"]
        except (ValueError, binascii.Error, KeyError, TypeError):
            return None  # signed by us, so never; but a key could leak
        if not (
            isinstance(session_id, str)
            and isinstance(agent, str)
            and isinstance(admin, bool)
            and isinstance(expires, int)
        ):
            return None
        if expires <= self._clock() or self._store.meta(_ENDED + session_id) is not None:
            return None
        return Session(
            Caller(agent, admin=admin), self._sign(session_id, "csrf"), expires, session_id
        )

    def close(self, cookie: str | None) -> None:
        """End a session (logging out), in every process: its id is kept
        until the session would have ended (older ones are dropped then)."""
        session = self.get(cookie)
        if session is not None:
            self._store.put_meta(
                _ENDED + session.id,
                int(session.expires),
                drop_below=(_ENDED, int(self._clock())),
            )


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
