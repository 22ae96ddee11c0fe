"""``GET /metrics`` of ``mindpalace serve``: the Prometheus text format
(0.0.4) of this server's request latencies, recall stage latencies, write
counts, pending vectors and palace size (``mindpalace.metrics``).

Who may read it: the same callers as ``/v1`` and ``/mcp`` (a valid bearer
token, any agent; no token under ``--auth none``, which only a loopback
address accepts). Nothing in it is per agent or drawn from what is stored:
the labels are routes, stages, operations and status classes, and the
numbers are whole-palace counts and timings, the kind of thing any agent
of the palace could already estimate from its own calls' speed.

Workers (``serve --workers N``): every worker counts its own requests, and
a scrape, whichever worker answers it, returns the sum over all of them.
Each worker writes its numbers (``metrics.Snapshot``) to a file in a folder
the parent made for this run (``MetricsFolder``), at most a second old,
and the answering worker adds the others' files to its own live numbers;
``mindpalace_workers`` says how many were summed. Restarting the server
starts every counter again from zero, as restarting any exporter does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mindpalace.metrics import (
    REQUEST_SECONDS,
    Family,
    Labels,
    Registry,
    Snapshot,
    exposition,
    merge,
)
from mindpalace.palace import Palace
from mindpalace.server.tools import OPERATIONS

__all__ = ["CONTENT_TYPE", "METRICS_PATH", "Metered", "MetricsFolder", "metrics_endpoint"]

METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: seconds between a worker's writes of its numbers for the others
FLUSH_SECONDS = 1.0

_FIXED = {
    "/mcp": "mcp",
    METRICS_PATH: "metrics",
    "/openapi.json": "openapi",
    "/healthz": "healthz",
}

MEMORIES = Family(
    "mindpalace_memories",
    "gauge",
    "Memory rows the palace holds, every agent's, archived and older versions included.",
)
PALACE_BYTES = Family(
    "mindpalace_palace_bytes",
    "gauge",
    "Bytes the palace takes in storage (SQLite: the file and its WAL; PostgreSQL: the database).",
)
PENDING_VECTORS = Family(
    "mindpalace_pending_vectors",
    "gauge",
    "Texts that wait for their vector, and memories written without one (reindex embeds them).",
)
WORKERS = Family(
    "mindpalace_workers",
    "gauge",
    "Server processes whose counters this answer sums.",
)


class Routes:
    """A request's route label: its operation's name for the REST API, a
    fixed word for the other paths (``mcp``, ``metrics``, ``openapi``,
    ``healthz``, ``inspector``), ``unmatched`` for any other ``/v1`` path.
    Never the path itself, which the caller chooses."""

    def __init__(self) -> None:
        self._rest = [
            (op.method, re.compile("^" + re.sub(r"{\w+}", "[^/]+", op.path) + "$"), op.name)
            for op in OPERATIONS
        ]

    def of(self, method: str, path: str) -> str:
        """The label of ``method path``."""
        fixed = _FIXED.get(path.rstrip("/") or path)
        if fixed is not None:
            return fixed
        if not path.startswith("/v1"):
            return "inspector"
        for op_method, pattern, name in self._rest:
            if op_method == method and pattern.match(path):
                return name
        return "unmatched"


class Metered:
    """Times every HTTP request from its arrival to the end of its answer,
    by route and status class (``REQUEST_SECONDS``). A request that got no
    answer (the client went away first) is not counted."""

    def __init__(self, app: ASGIApp, *, registry: Registry) -> None:
        self.app = app
        self.registry = registry
        self.routes = Routes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: list[int] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            status.append(500)  # uvicorn answers 500 for it
            raise
        finally:
            if status:
                route = self.routes.of(scope["method"], scope["path"])
                labels = (route, f"{status[0] // 100}xx")
                self.registry.observe(REQUEST_SECONDS, labels, time.perf_counter() - started)


class MetricsFolder:
    """Where the workers of one server share their numbers: a folder only
    this user may enter, made by the parent (``create``) and removed by it
    (``remove``); each worker ``publish``es into it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls) -> MetricsFolder:
        """A new, private folder."""
        return cls(tempfile.mkdtemp(prefix="mindpalace-metrics-"))

    def remove(self) -> None:
        """Remove the folder and what the workers wrote."""
        shutil.rmtree(self.path, ignore_errors=True)

    def write(self, snapshot: Snapshot) -> None:
        """This process's numbers, replacing its last ones atomically."""
        final = self.path / f"{os.getpid()}.json"
        aside = self.path / f".{os.getpid()}.tmp"
        aside.write_text(json.dumps(snapshot.to_dict()), encoding="utf-8")
        aside.replace(final)

    def others(self) -> list[Snapshot]:
        """The numbers the other workers wrote last."""
        mine = f"{os.getpid()}.json"
        found = []
        for path in self.path.glob("*.json"):
            if path.name == mine:
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # gone meanwhile, or a partial file of a crash
                continue
            if isinstance(data, dict):
                found.append(Snapshot.from_dict(data))
        return found

    @contextlib.contextmanager
    def publish(self, registry: Registry) -> Iterator[None]:
        """Write ``registry``'s numbers every ``FLUSH_SECONDS`` while the
        block runs (only when they changed), and once more at its end."""
        stop = threading.Event()

        def flush() -> None:
            last: dict[str, object] | None = None
            while True:
                snapshot = registry.snapshot()
                if snapshot.to_dict() != last:
                    with contextlib.suppress(OSError):  # the folder was removed: stopping
                        self.write(snapshot)
                    last = snapshot.to_dict()
                if stop.wait(FLUSH_SECONDS):
                    return

        thread = threading.Thread(target=flush, name="mindpalace-metrics", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _gauges(palace: Palace, workers: int) -> Sequence[tuple[Family, Labels, float]]:
    """The numbers read from the palace at the moment of the scrape."""
    store = palace.store
    semantic = palace.semantic
    pending = semantic.pending_vectors()
    if semantic.embedder is not None and semantic.available:
        pending += store.count_unembedded()
    return [
        (MEMORIES, (), store.size()),
        (PALACE_BYTES, (), store.disk_bytes()),
        (PENDING_VECTORS, (), pending),
        (WORKERS, (), workers),
    ]


def metrics_endpoint(palace: Palace, folder: MetricsFolder | None) -> Route:
    """``GET /metrics``: the numbers of ``palace``'s engine (this process),
    plus the other workers' from ``folder``."""

    async def endpoint(request: Request) -> Response:
        own = palace.engine.metrics.snapshot()
        others = folder.others() if folder is not None else []
        snapshot = merge([own, *others]) if others else own
        gauges = await anyio.to_thread.run_sync(lambda: _gauges(palace, 1 + len(others)))
        return Response(exposition(snapshot, gauges), media_type=CONTENT_TYPE)

    return Route(METRICS_PATH, endpoint, methods=["GET"])
