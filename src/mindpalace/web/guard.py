"""Slow and stalled clients: request deadlines and a cap on connections.

uvicorn's HTTP/1.1 protocol closes a keep-alive connection left idle after a
response, but sets no deadline on receiving a request: a client that
connects and sends nothing, or part of its headers, or its headers and part
of the body it declared (or trickles a byte now and then) holds its
connection, and a file descriptor, for ever. A few hundred of them exhaust
the descriptors and every other client times out, token or not. uvicorn's
``limit_concurrency`` does not help: it answers 503 to new requests while
the stalled connections keep their places.

Nor on sending: a client that pipelines thousands of requests and reads
none of the answers keeps the app writing into a full send buffer, its
connection busy for ever; a few hundred of them held every place at the cap
(they are busy, so none was ever given up) and every other client got 503.

``GuardedH11Protocol`` (uvicorn's h11 protocol with these additions) closes
them:

* **header deadline**: a request's headers must be in within
  ``header_timeout`` seconds of the connection opening, or of the first byte
  of a later request on it (else 408 and the connection is closed);
* **body deadline**: its body within ``body_timeout`` seconds of its headers
  (else 408 and closed; the app sees the client gone). Both are deadlines for
  the whole block, not between bytes, so trickling does not extend them;
* **send deadline**: once the send buffer is full (the client reads nothing),
  it must drain within ``send_timeout`` seconds, else the connection is
  dropped (no answer can reach that client; the app sees it gone);
* **pipelining bound**: at most ``max_pipelined`` requests that arrived
  before the answer to the one ahead of them are answered in a row; then
  the connection is closed and the rest go unanswered (HTTP/1.1 lets a
  server close between requests; a client retries what it still needs).
  Answers a client does not read therefore cost at most that many calls;
* **connection cap**: at ``max_connections``, a new connection evicts the
  stalest one: the one that has waited longest on its client, for a request
  (stalled, or idle between keep-alive requests; 503 and closed) or to read
  an answer (dropped). If every connection is busy with a call, the new one
  gets 503 and is closed. Slow senders and slow readers therefore cannot
  crowd out a client that sends its request at once and reads the answer.

The time an app takes to answer is not limited here (a recall may take a
while); a body is at most ``--max-body`` bytes, so a client cannot stretch
that either.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from typing import Any, ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from mindpalace.web.limits import ConnectionLimits

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
        # When its send buffer filled (None: the client reads what is sent).
        self.stalled_since: float | None = None
        self._send_deadline: asyncio.TimerHandle | None = None
        self._pipelined = 0  # answers in a row to requests sent ahead

    @property
    def waiting_on_client(self) -> float | None:
        """Since when the connection has waited on its client (for a request,
        or to read an answer); None while a call is under way and the
        client keeps up."""
        times = [t for t in (self.waiting_since, self.stalled_since) if t is not None]
        if self.transport is not None and self.transport.is_closing():
            times.append(float("-inf"))  # closed, waiting to flush to a client
        return min(times, default=None)

    # -- the connection cap ----------------------------------------------------------

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        if len(self.connections) >= self.limits.max_connections:
            waiting = [
                (since, c)
                for c in self.connections
                if isinstance(c, GuardedH11Protocol) and (since := c.waiting_on_client) is not None
            ]
            if not waiting:
                self.transport = transport
                transport.write(_response(503, "too_many_connections", "too many connections"))
                transport.close()
                return
            _, stalest = min(waiting, key=lambda pair: pair[0])
            if stalest.stalled_since is not None or stalest.transport.is_closing():
                stalest._drop()  # it reads nothing: no answer would reach it
            else:
                stalest._close(503, "too_many_connections", "too many connections; try again")
            self.connections.discard(stalest)
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self._cancel_send()
        self.waiting_since = None
        super().connection_lost(exc)

    # -- slow readers ------------------------------------------------------------------

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stalled_since is None:
            self.stalled_since = time.monotonic()
            self._send_deadline = self.loop.call_later(self.limits.send_timeout, self._drop)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_send()

    def _cancel_send(self) -> None:
        if self._send_deadline is not None:
            self._send_deadline.cancel()
            self._send_deadline = None
        self.stalled_since = None

    def _drop(self) -> None:
        """Drop a connection whose client reads nothing: what is left to
        send is discarded, and a call under way sees the client gone."""
        self._cancel()
        self._cancel_send()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        self.flow.resume_writing()  # a call waiting to write goes on (and finds no client)
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            # A reset, not a close: the kernel would otherwise keep trying to
            # deliver its buffer (megabytes) to a client that reads nothing.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    # -- the deadlines ----------------------------------------------------------------

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        # The next request is already in: it was sent ahead of this answer.
        ahead = bool(self.conn.trailing_data[0])
        self._pipelined = self._pipelined + 1 if ahead else 0
        if ahead and self._pipelined >= self.limits.max_pipelined:
            self.server_state.total_requests += 1
            self._cancel()
            self._finish()
            return
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
        self._finish()

    def _finish(self) -> None:
        """Close once what was written is sent; a client that does not read
        it within the send deadline is dropped."""
        self.transport.close()
        if self.transport.get_write_buffer_size() and self._send_deadline is None:
            self._send_deadline = self.loop.call_later(self.limits.send_timeout, self._drop)
