"""Slow and stalled clients: request deadlines and a cap on connections.

uvicorn's HTTP/1.1 protocol closes a keep-alive connection left idle after a
response, but sets no deadline on receiving a request: a client that
connects and sends nothing, or part of its headers, or its headers and part
of the body it declared (or trickles a byte now and then) holds its
connection, and a file descriptor, for ever. A few hundred of them exhaust
the descriptors and every other client times out, token or not. uvicorn's
``limit_concurrency`` does not help: it answers 503 to new requests while
the stalled connections keep their places.

``GuardedH11Protocol`` (uvicorn's h11 protocol with three additions) closes
them:

* **header deadline**: a request's headers must be in within
  ``header_timeout`` seconds of the connection opening, or of the first byte
  of a later request on it (else 408 and the connection is closed);
* **body deadline**: its body within ``body_timeout`` seconds of its headers
  (else 408 and closed; the app sees the client gone). Both are deadlines for
  the whole block, not between bytes, so trickling does not extend them;
* **connection cap**: at ``max_connections``, a new connection evicts the one
  that has waited longest for a request (stalled, or idle between
  keep-alive requests; 503 and closed); if every connection is busy with a
  request, the new one gets 503 and is closed. Stalled clients therefore
  cannot crowd out a client that sends its request at once.

The time an app takes to answer is not limited here (a recall may take a
while); a body is at most ``--max-body`` bytes, so a client cannot stretch
that either.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from mindpalace.server.limits import ConnectionLimits

__all__ = ["GuardedH11Protocol"]


_REASONS = {408: "Request Timeout", 503: "Service Unavailable"}


def _response(status: int, code: str, message: str) -> bytes:
    """A complete response that closes the connection, with the API's error
    body, written outside h11 (which cannot answer a request it has not
    received)."""
    body = json.dumps({"error": code, "message": message}).encode("ascii")
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with header and body deadlines and a
    connection cap (see the module docstring). A subclass sets ``limits``."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase: str | None = None
        # When the connection began waiting for a request (None: busy with one).
        self.waiting_since: float | None = None

    # -- the connection cap ----------------------------------------------------------

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        if len(self.connections) >= self.limits.max_connections:
            waiting = [
                c
                for c in self.connections
                if isinstance(c, GuardedH11Protocol) and c.waiting_since is not None
            ]
            if not waiting:
                self.transport = transport
                transport.write(_response(503, "too_many_connections", "too many connections"))
                transport.close()
                return
            oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
            oldest._close(503, "too_many_connections", "too many connections; try again")
            self.connections.discard(oldest)
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self.waiting_since = None
        super().connection_lost(exc)

    # -- the deadlines ----------------------------------------------------------------

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Start, keep or stop the deadline of what the connection is
        waiting for: request headers, a request body, or neither."""
        if self.transport is None or self.transport.is_closing():
            self._cancel()
            return
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            phase = "headers"
            if self.waiting_since is None:
                self.waiting_since = time.monotonic()
            # Between requests, uvicorn's keep-alive timer runs until the
            # next request's first byte (data_received cancels it).
            if self.timeout_keep_alive_task is not None:
                self._cancel()
                return
        else:
            self.waiting_since = None
            phase = "body" if cycle.more_body else "app"
        if phase == self._phase:
            return
        self._cancel()
        self._phase = phase
        if phase == "headers":
            self._deadline = self.loop.call_later(
                self.limits.header_timeout,
                self._close,
                408,
                "request_timeout",
                f"request headers not received within {self.limits.header_timeout:g} s",
            )
        elif phase == "body":
            self._deadline = self.loop.call_later(
                self.limits.body_timeout,
                self._close,
                408,
                "request_timeout",
                f"request body not received within {self.limits.body_timeout:g} s",
            )

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = None

    def _close(self, status: int, code: str, message: str) -> None:
        """Answer ``status`` if no response is under way, and close."""
        self._cancel()
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # The app is still running: it sees the client gone, and
            # anything it sends now is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        if self.conn.our_state in {h11.IDLE, h11.SEND_RESPONSE}:  # no response under way
            self.transport.write(_response(status, code, message))
        self.transport.close()
