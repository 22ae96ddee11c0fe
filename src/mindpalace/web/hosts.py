"""Who may reach a server from a web page: its host names and its origin.

A server on a loopback address is out of other machines' reach, but not out
of a browser's on this one. Two ways in, and the check that closes each,
shared by every front end (REST ``/v1``, MCP ``/mcp``, the inspector, and
``mindpalace ui``) in every auth mode:

* **DNS rebinding**: a page of ``attacker.test`` makes its name resolve to
  127.0.0.1; the browser then sends the attacker's name in ``Host`` and lets
  the page read every answer as its own. ``LoopbackHosts`` answers 421 on a
  loopback address to a request for any name but a loopback one
  (``localhost``, ``127.0.0.1``, ``[::1]``, any port).
* **Cross-origin requests**: any page may send a "simple" request (a POST
  of ``text/plain``, no CORS preflight) to any address; it cannot read the
  answer, but the request is made. ``foreign_origin`` says whether a request
  comes from a page of another origin (its ``Origin`` is not this server's
  own scheme and host), which ``SameOrigin`` refuses with 403 on the API's
  paths; the REST API also takes a write only as ``application/json``
  (``server.http``), which no simple request can send.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK_NAMES", "LoopbackHosts", "SameOrigin", "foreign_origin", "host_name"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def host_name(scope: Scope) -> str:
    """The name a request asks for: its ``Host`` without the port, lower case."""
    host = (_header(scope, b"host") or "").strip().lower()
    return host if host.endswith("]") else host.rsplit(":", 1)[0]


def foreign_origin(scope: Scope) -> str | None:
    """The request's ``Origin`` when it is not this server's own (scheme and
    ``Host``); None when the request has none (a client that is not a
    browser) or comes from the server's own pages."""
    origin = _header(scope, b"origin")
    if origin is None:
        return None
    own = f"{scope.get('scheme', 'http')}://{_header(scope, b'host') or ''}"
    return None if origin.strip().lower() == own.lower() else origin


def _problem(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status)


class LoopbackHosts:
    """On a loopback address, answers 421 to a request for a host name that
    is not a loopback one (see the module docstring); elsewhere every name
    is answered (other machines use the server's name)."""

    def __init__(self, app: ASGIApp, *, loopback: bool) -> None:
        self.app = app
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.loopback and scope["type"] == "http" and host_name(scope) not in LOOPBACK_NAMES:
            message = (
                "this server answers only to a loopback host name"
                f" ({', '.join(LOOPBACK_NAMES)}), not {host_name(scope)[:100]!r}"
            )
            await _problem(421, "misdirected_request", message)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class SameOrigin:
    """Answers 403 to a request to one of ``paths`` (prefixes) sent by a
    page of another origin (``foreign_origin``)."""

    def __init__(self, app: ASGIApp, *, paths: tuple[str, ...]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.paths):
            origin = foreign_origin(scope)
            if origin is not None:
                message = (
                    f"cross-origin request refused: Origin {origin[:100]!r} is not this"
                    " server's own"
                )
                await _problem(403, "cross_origin", message)(scope, receive, send)
                return
        await self.app(scope, receive, send)
