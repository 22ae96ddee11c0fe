"""Load benchmark of ``mindpalace serve``: many concurrent clients, one palace.

Starts a real server on a free loopback port, runs ``--clients`` concurrent
clients that each make ``--calls`` mixed calls (``--writes`` of them
remember, the rest recall) over REST or MCP streamable HTTP, then checks that
every write the server acknowledged is in the palace file. Prints one JSON
report: throughput, latency percentiles per operation, errors, and the
verification::

    python -m bench.load                          # 50 clients x 200 calls, REST
    python -m bench.load --transport mcp          # the same over MCP
    python -m bench.load --threads 1              # one worker thread, for comparison
    python -m bench.load --embedder static        # the faster bundled model
    python -m bench.load --db postgresql://… --workers 4 --index database
                                                  # 4 server processes, recall in the database

The client load runs in this process (asyncio), so the machine's cores are
shared between the clients and the server, as on a laptop. This is a
benchmark, not a test: CI runs none of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx

from mindpalace import Palace
from mindpalace.config import Settings

AGENTS = 10
TOPICS = [
    "database migration",
    "release checklist",
    "incident triage",
    "code review",
    "dependency upgrade",
    "backup restore",
    "api rate limits",
    "onboarding guide",
    "cache invalidation",
    "feature flags",
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _tree_rss(pid: int) -> list[float]:
    """Resident memory (MB) of a process and each of its children."""
    out = []
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for each in [str(pid), *children]:
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out.append(round(int(line.split()[1]) / 1024, 1))
    return out


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Caller:
    """One client's way to remember and recall (REST or MCP)."""

    def __init__(self, url: str, token: str, transport: str) -> None:
        self.url = url
        self.token = token
        self.transport = transport
        self._context: AbstractAsyncContextManager[Any] | None = None
        self._client: Any = None

    async def __aenter__(self) -> Caller:
        headers = {"authorization": f"Bearer {self.token}"}
        if self.transport == "rest":
            self._client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=120)
            self._context = self._client
        else:
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=headers, timeout=120)
            self._client = Client(streamable_http_client(f"{self.url}/mcp", http_client=http))
            self._context = self._client
        await self._context.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._context is not None
        await self._context.__aexit__(None, None, None)

    async def remember(self, content: str, tags: list[str]) -> str:
        args = {"content": content, "tags": tags, "category": "lesson"}
        if self.transport == "rest":
            response = await self._client.post("/v1/memories", json=args)
            if response.status_code != 201:
                raise RuntimeError(f"remember: {response.status_code} {response.text}")
            memory_id: str = response.json()["memory"]["memory_id"]
            return memory_id
        result = await self._client.call_tool("memory_store", args)
        if result.is_error:
            raise RuntimeError(f"memory_store: {result.content}")
        memory_id = result.structured_content["memory"]["memory_id"]
        return memory_id

    async def recall(self, query: str) -> int:
        args = {"query": query, "limit": 5}
        if self.transport == "rest":
            response = await self._client.post("/v1/recall", json=args)
            if response.status_code != 200:
                raise RuntimeError(f"recall: {response.status_code} {response.text}")
            return len(response.json()["memories"])
        result = await self._client.call_tool("memory_search", args)
        if result.is_error:
            raise RuntimeError(f"recall: {result.content}")
        return len(result.structured_content["memories"])


async def _client(
    number: int,
    *,
    url: str,
    transport: str,
    calls: int,
    writes: float,
    latencies: dict[str, list[float]],
    acknowledged: list[tuple[str, str]],
    errors: list[str],
    start: asyncio.Event,
) -> None:
    agent = f"load{number % AGENTS}"
    rng = random.Random(number)
    async with Caller(url, f"token-{agent}", transport) as caller:
        await start.wait()
        for i in range(calls):
            topic = rng.choice(TOPICS)
            op: Callable[[], Awaitable[Any]]
            if rng.random() < writes:
                kind = "remember"
                content = (
                    f"Client {number} note {i}: lesson about {topic} number {rng.randrange(10**6)}"
                )

                async def op(content: str = content, topic: str = topic) -> Any:
                    memory_id = await caller.remember(content, [topic.split(maxsplit=1)[0]])
                    acknowledged.append((agent, memory_id))

            else:
                kind = "recall"

                async def op(topic: str = topic) -> Any:
                    return await caller.recall(f"what did we learn about {topic}")

            started = time.perf_counter()
            try:
                await op()
            except Exception as exc:  # every failure is counted, none hides
                errors.append(f"{kind}: {exc!r}"[:300])
                continue
            latencies[kind].append(time.perf_counter() - started)


async def _run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    latencies: dict[str, list[float]] = defaultdict(list)
    acknowledged: list[tuple[str, str]] = []
    errors: list[str] = []
    start = asyncio.Event()
    tasks = [
        asyncio.create_task(
            _client(
                n,
                url=url,
                transport=args.transport,
                calls=args.calls,
                writes=args.writes,
                latencies=latencies,
                acknowledged=acknowledged,
                errors=errors,
                start=start,
            )
        )
        for n in range(args.clients)
    ]
    await asyncio.sleep(1.0 if args.transport == "rest" else 5.0)  # let every client connect
    began = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - began
    done = sum(len(v) for v in latencies.values())
    report: dict[str, Any] = {
        "calls": args.clients * args.calls,
        "completed": done,
        "errors": len(errors),
        "error_samples": errors[:5],
        "seconds": round(elapsed, 2),
        "throughput_per_s": round(done / elapsed, 1),
        "acknowledged_writes": len(acknowledged),
    }
    every = [x for v in latencies.values() for x in v]
    for kind, values in [("all", every), *sorted(latencies.items())]:
        if values:
            report[f"{kind}_ms"] = {
                "p50": round(1000 * statistics.median(values), 1),
                "p95": round(1000 * _percentile(values, 0.95), 1),
                "p99": round(1000 * _percentile(values, 0.99), 1),
                "max": round(1000 * max(values), 1),
            }
    report["_acknowledged"] = acknowledged
    return report


def _wait_and_warm(
    url: str, server: subprocess.Popen[bytes], workers: int, started: float
) -> dict[str, Any]:
    """Wait for ``/healthz``, then make one recall per worker (each builds
    what it keeps warm); how long each took."""
    deadline = time.monotonic() + 600
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not start") from None
            time.sleep(0.1)
    ready = time.perf_counter() - started
    warm = []
    for _ in range(workers):  # new connections: the kernel spreads them
        began = time.perf_counter()
        httpx.post(
            f"{url}/v1/recall",
            json={"query": "database migration", "limit": 5},
            headers={"authorization": "Bearer token-load0"},
            timeout=600,
        )
        warm.append(round(time.perf_counter() - began, 2))
    return {"startup_s": round(ready, 2), "first_recalls_s": warm}


def _seed(db: str | Path, embedder: str, count: int) -> None:
    """``count`` shared notes, every vector in before the server starts."""
    settings = Settings(embedder=embedder, index="process")
    with Palace(db, agent_id="load0", settings=settings) as palace:
        rng = random.Random(0)
        if count:
            palace.remember_many(
                {
                    "content": f"Seed note {i}: {rng.choice(TOPICS)} detail {rng.randrange(10**6)}",
                    "visibility": "shared",
                }
                for i in range(count)
            )
            palace.wait_for_vectors()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200, help="calls per client")
    parser.add_argument("--writes", type=float, default=0.3, help="share of calls that remember")
    parser.add_argument("--transport", choices=["rest", "mcp"], default="rest")
    parser.add_argument("--threads", type=int, default=4, help="server worker threads")
    parser.add_argument("--embedder", default="local", help="local, static, hashing, none")
    parser.add_argument("--seed-memories", type=int, default=1000, help="memories before the run")
    parser.add_argument("--out", help="also write the report to this JSON file")
    parser.add_argument("--db", help="an existing palace (file or URL); default a fresh file")
    parser.add_argument("--workers", type=int, default=1, help="server processes (serve --workers)")
    parser.add_argument("--index", default="auto", help="MINDPALACE_INDEX for the server")
    args = parser.parse_args(argv)
    # Stopped from outside: still stop the server (the ``finally`` below).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))

    workdir = Path(tempfile.mkdtemp(prefix="mindpalace-load-"))
    db: str | Path = args.db or workdir / "palace.db"
    _seed(db, args.embedder, args.seed_memories)
    port = _port()
    env = dict(os.environ)
    env["MINDPALACE_EMBEDDER"] = args.embedder
    env["MINDPALACE_TOKENS"] = ",".join(f"load{a}=token-load{a}" for a in range(AGENTS))
    env["MINDPALACE_INDEX"] = args.index
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mindpalace.cli",
            "--db",
            str(db),
            "serve",
            "--port",
            str(port),
            "--threads",
            str(args.threads),
            "--workers",
            str(args.workers),
        ],
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    try:
        warm = _wait_and_warm(url, server, args.workers, started)
        report = asyncio.run(_run(url, args))
        report.update(warm)
        report["server_rss_mb"] = _tree_rss(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        status = server.wait(timeout=60)
    acknowledged: list[tuple[str, str]] = report.pop("_acknowledged")
    missing = 0
    with Palace(
        db, management=True, settings=Settings(embedder=args.embedder, index="process")
    ) as palace:
        for _agent, memory_id in acknowledged:
            try:
                palace.get(memory_id)
            except Exception:
                missing += 1
    report.update(
        {
            "transport": args.transport,
            "clients": args.clients,
            "calls_per_client": args.calls,
            "write_share": args.writes,
            "server_threads": args.threads,
            "server_workers": args.workers,
            "index": args.index,
            "embedder": args.embedder,
            "seed_memories": args.seed_memories,
            "acknowledged_missing_after_shutdown": missing,
            "server_exit_status": status,
            "cpu_count": os.cpu_count(),
        }
    )
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0 if report["errors"] == 0 and missing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
