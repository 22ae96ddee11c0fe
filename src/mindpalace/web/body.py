"""Request bodies with a ceiling: ``BodyLimit`` answers 413 to a body over
its limit before the app reads a byte of it (REST and MCP under ``mindpalace
serve``, the inspector's forms under both ``serve`` and ``mindpalace ui``)."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit"]


class BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413, before the app
    reads them: by Content-Length when sent, else by counting chunks (the
    body is buffered, at most ``limit`` bytes, then replayed to the app)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # client went away (or timed out)
                return  # nobody to answer, and no request to act on
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(chunks, receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body over the limit of {self.limit} bytes"
        response = JSONResponse({"error": "payload_too_large", "message": message}, status_code=413)
        await response(scope, receive, send)


def _replay(chunks: list[bytes], receive: Receive) -> Receive:
    """A ``receive`` that first returns the buffered body, then defers to the
    real one (which reports the client's disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replay
