"""``mindpalace serve``: MCP streamable HTTP at ``/mcp`` and a REST API under
``/v1`` (OpenAPI at ``/openapi.json``), one process, one palace, many clients;
Prometheus metrics at ``/metrics`` (``metering``, same tokens as ``/v1``);
the web inspector (``mindpalace.ui``) at every other path.

The REST routes are generated from ``tools.OPERATIONS`` like the MCP tools:
arguments come from the JSON body (POST, PATCH) or the query string (GET, DELETE)
plus the path, are checked against the tool's argument model, and the tool
function runs in a worker thread. Status codes:

====  ==============================================================
400   invalid value (an enum names its valid options); two Authorization
      or two agent headers
401   no identity: missing or unknown bearer token (fails closed)
403   the memory belongs to another agent; a request from a web page of
      another origin (``web.hosts``)
404   no such memory in the caller's scope, or no such route
408   the request's headers or body did not arrive in time (``web.guard``)
413   request body over the limit
415   a write (POST, PATCH, DELETE with a body) not sent as application/json
421   on a loopback address, a host name that is not a loopback one (``web.hosts``)
422   malformed JSON, or arguments of the wrong shape or type
503   at the connection cap (``web.guard``); the store is busy
====  ==============================================================

Concurrency: Starlette runs each call's tool function in anyio's worker
thread pool (``threads`` tokens). Reads and writes of the SQLite store
serialise on its connection lock; embedding and ranking run outside it.
Shutdown (SIGINT/SIGTERM) stops accepting connections and lets in-flight
requests finish before the palace is closed, so an acknowledged write is
committed and nothing in flight is cut.

Slow clients: a request's headers and body must arrive within deadlines, a
client must read its answers within one, pipelined requests are answered a
few in a row, and connections are capped, those waiting longest on their
client giving way first (``web.guard``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mindpalace import __version__
from mindpalace.errors import MindPalaceError, ValidationError
from mindpalace.palace import Palace
from mindpalace.server import DEFAULT_THREADS
from mindpalace.server.channels import CHANNEL
from mindpalace.server.mcp import build_mcp, header_resolver
from mindpalace.server.metering import METRICS_PATH, Metered, MetricsFolder, metrics_endpoint
from mindpalace.server.schema import ArgumentsError
from mindpalace.server.shaping import RESULTS, SCHEMAS
from mindpalace.server.tools import (
    DEFAULT_TOOLS,
    OPERATIONS,
    Operation,
    call,
    describe_error,
    parse,
)
from mindpalace.ui import build_ui
from mindpalace.validation import parse_json
from mindpalace.web.body import BodyLimit
from mindpalace.web.guard import GuardedH11Protocol
from mindpalace.web.hosts import LoopbackHosts, SameOrigin
from mindpalace.web.identity import (
    AGENT_HEADER,
    AuthError,
    Caller,
    PalacePool,
    TokenTable,
    is_loopback,
)
from mindpalace.web.limits import ConnectionLimits, ensure_files

__all__ = ["DEFAULT_MAX_BODY", "build_app", "openapi_document", "serve"]

DEFAULT_MAX_BODY = 1024 * 1024
PROTECTED = ("/v1/", "/mcp", METRICS_PATH)
_API_FILES = ("/openapi.json", "/healthz", METRICS_PATH)
_PATH_ARG = re.compile(r"{(\w+)}")


def _problem(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    headers = {"www-authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {"error": code, "message": message, **extra}, status_code=status, headers=headers
    )


# -- middleware -----------------------------------------------------------------------


class Split:
    """Sends the API's paths (``/v1``, ``/mcp``, the OpenAPI document, the
    health check, ``/metrics``) and the lifespan to ``api``, every other
    request to the web inspector ``ui``."""

    def __init__(self, api: ASGIApp, ui: ASGIApp) -> None:
        self.api = api
        self.ui = ui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(("/v1", "/mcp")) or path in _API_FILES:
            await self.api(scope, receive, send)
        else:
            await self.ui(scope, receive, send)


class Authenticate:
    """Fails closed: a request to a protected path without a valid identity
    gets 401 (with two Authorization or agent headers, 400) and never
    reaches the app. The agent found is put in the
    request's state as ``caller``."""

    def __init__(self, app: ASGIApp, *, tokens: TokenTable) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PROTECTED):
            found: dict[str, list[str]] = {"authorization": [], AGENT_HEADER: []}
            for key, value in scope["headers"]:
                values = found.get(key.decode("latin-1").lower())
                if values is not None:
                    values.append(value.decode("latin-1"))
            for name, values in found.items():
                # Two credentials are ambiguous; picking one (as a dict of the
                # headers would, silently) could act as the wrong caller.
                if len(values) > 1:
                    shown = "Authorization" if name == "authorization" else name
                    message = f"the request has {len(values)} {shown} headers; send exactly one"
                    await _problem(400, "repeated_header", message)(scope, receive, send)
                    return
            try:
                caller = self.tokens.identify(
                    next(iter(found["authorization"]), None), next(iter(found[AGENT_HEADER]), None)
                )
            except AuthError as exc:
                await _problem(401, "unauthorised", str(exc))(scope, receive, send)
                return
            scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)


# -- REST ---------------------------------------------------------------------------------


_BODY_METHODS = ("POST", "PATCH")
JSON_TYPE = "application/json"


def _not_json(request: Request, body: bytes) -> Response | None:
    """415 for a write that is not ``application/json`` (a DELETE without a
    body may name no type: its arguments are in the query). A web page of
    another site can send a POST of ``text/plain`` without asking (no CORS
    preflight); it cannot send ``application/json`` that way."""
    declared = request.headers.get("content-type")
    if declared is None and request.method == "DELETE" and not body:
        return None
    if declared is not None and declared.partition(";")[0].strip().lower() == JSON_TYPE:
        return None
    shown = f"content-type {declared[:100]!r}" if declared is not None else "no content-type"
    return _problem(
        415,
        "unsupported_media_type",
        f"{request.method} takes a body of type {JSON_TYPE} (got {shown})",
        valid=[JSON_TYPE],
    )


def _rest_route(op: Operation, pool: PalacePool) -> Route:
    properties = op.input_schema["properties"]
    lists = {name for name, schema in properties.items() if schema.get("type") == "array"}

    async def endpoint(request: Request) -> Response:
        raw: dict[str, Any]
        if op.method != "GET":
            refused = _not_json(request, await request.body())
            if refused is not None:
                return refused
        if op.method in _BODY_METHODS:
            body = await request.body()
            try:  # not JSON, not UTF-8, too deep, or an integer of over 4,300 digits
                decoded = parse_json(body, "the body", "body") if body.strip() else {}
            except ValidationError as exc:
                return _problem(422, "malformed_json", str(exc))
            if not isinstance(decoded, dict):
                return _problem(422, "malformed_json", "the body must be a JSON object")
            raw = decoded
        else:
            raw = {
                key: request.query_params.getlist(key) if key in lists else value
                for key, value in request.query_params.items()
            }
        raw.update(request.path_params)
        try:
            kwargs = parse(op, raw)
            caller: Caller = request.state.caller
            palace = pool.for_agent(caller.agent, channel=kwargs.get(CHANNEL), admin=caller.admin)
            result = await anyio.to_thread.run_sync(lambda: call(op, palace, kwargs))
        except ArgumentsError as exc:
            return _problem(422, "invalid_arguments", str(exc), details=exc.details)
        except MindPalaceError as exc:
            problem = describe_error(exc)
            return JSONResponse(problem.to_dict(), status_code=problem.status)
        return JSONResponse(result, status_code=op.status)

    endpoint.__name__ = op.name
    return Route(op.path, endpoint, methods=[op.method])


# -- OpenAPI ------------------------------------------------------------------------------

_PROBLEM_SCHEMA = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "description": "machine-readable code"},
        "message": {"type": "string", "description": "what went wrong; names valid options"},
        "field": {"type": "string"},
        "valid": {"type": "array", "items": {"type": "string"}},
        "details": {"type": "array", "items": {"type": "object"}},
    },
}

_ERRORS = {
    "400": "Invalid value; the message and `valid` list the valid options. Also a request"
    " with two Authorization (or two agent) headers.",
    "401": "Missing or unknown bearer token (or a shared token without the agent header).",
    "403": "The memory belongs to another agent; or the request came from a web page of"
    " another origin.",
    "404": "No such memory in the caller's scope.",
    "408": "The request's headers or body did not arrive in time.",
    "413": "Request body over the limit.",
    "415": "A write not sent as application/json.",
    "421": "On a loopback address: a host name that is not a loopback one.",
    "422": "Malformed JSON, or arguments of the wrong shape or type.",
    "503": "Too many connections, or the store is busy.",
}


def _request_name(op: Operation) -> str:
    """``memory_store`` -> ``MemoryStoreRequest``."""
    return "".join(part.capitalize() for part in op.name.split("_")) + "Request"


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of the REST API, built from the same
    argument models the routes validate with and the same shapes the
    results are built as (``shapes``): every request body and result is a
    named schema under ``components/schemas``."""
    paths: dict[str, dict[str, Any]] = {}
    requests: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        schema = op.input_schema
        properties: dict[str, Any] = schema["properties"]
        required = set(schema.get("required", []))
        in_path = set(_PATH_ARG.findall(op.path))
        parameters = [
            {
                "name": name,
                "in": "path" if name in in_path else "query",
                "required": name in in_path or name in required,
                "description": prop.get("description", ""),
                "schema": prop,
            }
            for name, prop in properties.items()
            if name in in_path or op.method not in _BODY_METHODS
        ]
        responses: dict[str, Any] = {
            str(op.status): {
                "description": "Success.",
                "content": {"application/json": {"schema": RESULTS[op.name]}},
            },
        }
        for status, text in _ERRORS.items():
            if status == "415" and op.method == "GET":
                continue
            responses[status] = {
                "description": text,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}
                },
            }
        operation: dict[str, Any] = {
            "operationId": op.name,
            "summary": op.description.split(". ")[0].rstrip(".") + ".",
            "description": op.description + f" (MCP tool `{op.name}`.)",
            "parameters": parameters,
            "responses": responses,
        }
        if op.method in _BODY_METHODS:
            name = _request_name(op)
            requests[name] = {
                "type": "object",
                "description": f"The arguments of {op.name}.",
                "properties": {k: v for k, v in properties.items() if k not in in_path},
                "required": sorted(required - in_path),
                "additionalProperties": False,
            }
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                },
            }
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mindpalace",
            "version": __version__,
            "description": "Local-first memory for AI agents. The same operations are MCP tools"
            " at /mcp (streamable HTTP).",
        },
        "paths": paths,
        "components": {
            "schemas": {**SCHEMAS, **requests, "Problem": _PROBLEM_SCHEMA},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "agentHeader": {"type": "apiKey", "in": "header", "name": AGENT_HEADER},
            },
        },
        "security": [{"bearer": []}, {"bearer": [], "agentHeader": []}],
    }


# -- the app ---------------------------------------------------------------------------------


def build_app(
    pool: PalacePool,
    tokens: TokenTable,
    *,
    host: str = "127.0.0.1",
    max_body: int = DEFAULT_MAX_BODY,
    threads: int = DEFAULT_THREADS,
    tools: str = DEFAULT_TOOLS,
    metrics_folder: MetricsFolder | None = None,
) -> ASGIApp:
    """The ASGI app of ``mindpalace serve``.

    Args:
        pool: the palaces requests act through, one per agent.
        tokens: bearer tokens and their agents.
        host: the address served; on a loopback one, only loopback host names
            are answered, on every route (DNS rebinding: ``web.hosts``).
        max_body: the largest request body accepted, in bytes.
        threads: worker threads for tool calls.
        tools: the MCP tool sets served at ``/mcp`` (``tools.select_tools``);
            REST serves every operation.
        metrics_folder: where the workers of ``serve --workers`` share their
            numbers, so ``/metrics`` sums them (``metering``); None for one
            process.
    """
    mcp = build_mcp(header_resolver(pool, tokens), tools)
    # Stateless JSON responses: any request may go to any worker and carries
    # its own identity; no session table to grow with clients. On a loopback
    # address the SDK also checks Origin (any loopback origin may call).
    mcp_app = mcp.streamable_http_app(
        stateless_http=True, json_response=True, host=host, max_request_body_size=max_body
    )
    document = openapi_document()

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def not_found(request: Request, exc: Exception) -> Response:
        return _problem(404, "not_found", f"no route {request.method} {request.url.path}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _problem(405, "method_not_allowed", f"{request.method} is not allowed here")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        async with mcp.session_manager.run():
            yield

    routes: list[BaseRoute] = [
        *(_rest_route(op, pool) for op in OPERATIONS),
        *mcp_app.routes,
        Route("/openapi.json", openapi),
        Route("/healthz", health),
        metrics_endpoint(pool.base, metrics_folder),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        404: not_found,
        405: not_allowed,
    }
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers)
    # The host name first, then the origin (neither reads the request), then
    # identity: an anonymous caller gets its 401 before any body is read.
    api = LoopbackHosts(
        SameOrigin(Authenticate(BodyLimit(app, limit=max_body), tokens=tokens), paths=("/v1",)),
        loopback=is_loopback(host),
    )
    # The inspector has its own sessions (a cookie, not a bearer token), and
    # checks the host name the same way (``build_ui``).
    inspector = BodyLimit(build_ui(pool, tokens, host=host), limit=max_body)
    return Metered(Split(api, inspector), registry=pool.base.engine.metrics)


def serve(
    palace: Palace,
    *,
    tokens: TokenTable,
    host: str = "127.0.0.1",
    port: int = 8765,
    max_body: int = DEFAULT_MAX_BODY,
    threads: int = DEFAULT_THREADS,
    limits: ConnectionLimits | None = None,
    tools: str = DEFAULT_TOOLS,
    listener: socket.socket | None = None,
    metrics_folder: MetricsFolder | None = None,
) -> None:
    """Serve ``palace`` until SIGINT or SIGTERM; in-flight requests finish first.

    Args:
        palace: the palace opened by the caller (who closes it afterwards);
            other agents' palaces share its store.
        tokens: bearer tokens and their agents.
        host: the address to listen on.
        port: the TCP port.
        max_body: the largest request body accepted, in bytes.
        threads: worker threads for tool calls.
        limits: request deadlines and the connection cap (defaults when None).
        tools: the MCP tool sets served at ``/mcp``.
        listener: a socket already listening on ``host:port``, shared with
            other server processes (``serve --workers``); None binds one.
        metrics_folder: where the workers share their numbers for
            ``/metrics`` (``serve --workers``); None for one process.

    Raises:
        ConfigError: the process may not open enough file descriptors for
            ``limits.max_connections``.
    """
    chosen = limits or ConnectionLimits()
    ensure_files(chosen)

    class Protocol(GuardedH11Protocol):
        limits = chosen

    app = build_app(
        PalacePool(palace),
        tokens,
        host=host,
        max_body=max_body,
        threads=threads,
        tools=tools,
        metrics_folder=metrics_folder,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=Protocol,
        ws="none",
        timeout_keep_alive=chosen.keep_alive,
        backlog=chosen.backlog,
        log_level="warning",
        timeout_graceful_shutdown=30,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the
    # signal through the handler it found installed. Installing one that only
    # notes the signal lets ``serve`` return, so the caller closes the palace.
    caught: list[int] = []
    watched = (signal.SIGINT, signal.SIGTERM)
    previous = (
        {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in watched}
        if threading.current_thread() is threading.main_thread()
        else {}
    )
    worker = f" (worker {os.getpid()})" if listener is not None else ""
    print(
        f"mindpalace: serving {palace.store.location} on http://{host}:{port}"
        f" (MCP /mcp, REST /v1, OpenAPI /openapi.json, metrics /metrics, inspector /){worker}",
        file=sys.stderr,
        flush=True,
    )
    publishing = (
        metrics_folder.publish(palace.engine.metrics)
        if metrics_folder is not None
        else contextlib.nullcontext()
    )
    try:
        with publishing:
            server.run(sockets=[listener] if listener is not None else None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        print(f"mindpalace: stopped by {signal.Signals(caught[0]).name}", file=sys.stderr)
