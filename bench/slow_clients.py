"""Slow readers and slow senders against a real ``mindpalace serve``: how
fast a legitimate client is answered while they hold connections.

The attack keeps ``--readers`` connections that each pipeline
``--pipeline`` ``GET /login`` requests and never read an answer, and
``--senders`` connections that send a request's headers a byte at a time;
whenever the server closes one, the attacker opens another in its place. A
legitimate client meanwhile makes ``--requests`` calls (``GET /v1/stats``
with a token, a new connection each, as a script or a browser tab would),
0.1 s apart; a call that fails counts as the client's
timeout. Prints one JSON report: the legitimate client's p50/p95, its
failures, and how many connections the attacker had to reopen::

    python -m bench.slow_clients                        # 300 readers + 300 senders
    python -m bench.slow_clients --readers 60 --senders 60 --max-connections 40

The attacker runs in this process (one thread, raw sockets), so it shares
the machine's cores with the server. Linux only (it reads each socket's TCP
state to see the server close it). This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

__all__ = ["Attack", "legitimate_latencies", "main", "percentile"]

_ESTABLISHED = 1  # Linux tcp_states.h
_READER_REQUEST = b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
_SENDER_HEAD = b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
_TOKEN = "bench-token"  # noqa: S105 - a throwaway server's


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _open(host: str, port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A small receive window: the answers pile up on the server's side.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(2)
    try:
        sock.connect((host, port))
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def _established(sock: socket.socket) -> bool:
    """Whether the server has neither closed nor reset the connection."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    except OSError:
        return False
    return bool(struct.unpack("B", info[:1])[0] == _ESTABLISHED)


class Attack:
    """``readers`` slow readers and ``senders`` slow senders on
    ``host:port``, each reopened when the server closes it, until ``stop``.

    Attributes:
        reopened: connections opened after the server closed one.
    """

    def __init__(
        self, host: str, port: int, *, readers: int, senders: int, pipeline: int = 3000
    ) -> None:
        self.host, self.port = host, port
        self.readers, self.senders = readers, senders
        self.burst = _READER_REQUEST * pipeline
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)
        # (socket, is a reader, bytes still to send)
        self._held: list[tuple[socket.socket | None, bool, bytes]] = []

    def __enter__(self) -> Attack:
        self._held = [(None, True, b"")] * self.readers + [(None, False, b"")] * self.senders
        self._fill(first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for sock, _, _ in self._held:
            if sock is not None:
                sock.close()

    def _fill(self, *, first: bool = False) -> None:
        """Keep every place held (see ``_step``)."""
        for n, held in enumerate(self._held):
            if self._stop.is_set():
                return
            self._held[n] = self._step(*held, first=first)

    def _step(
        self, sock: socket.socket | None, reader: bool, pending: bytes, *, first: bool
    ) -> tuple[socket.socket | None, bool, bytes]:
        """Reopen a connection the server closed, push its pending bytes;
        a slow sender adds one more."""
        if sock is not None and not _established(sock):
            sock.close()
            sock = None
            self.reopened += 0 if first else 1
        if sock is None:
            sock = _open(self.host, self.port)
            pending = self.burst if reader else _SENDER_HEAD
        elif not reader and not pending:
            pending = b"x"  # one more byte of a header that never ends
        if sock is not None and pending:
            try:
                pending = pending[sock.send(pending) :]
            except BlockingIOError:
                pass
            except OSError:
                sock.close()
                sock = None
        return sock, reader, pending

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._fill()


def legitimate_latencies(
    url: str, token: str, requests: int, *, timeout: float = 5.0
) -> list[float]:
    """Seconds each of ``requests`` calls took (``timeout`` for one that failed)."""
    took: list[float] = []
    for _ in range(requests):
        started = time.monotonic()
        try:
            with httpx.Client(base_url=url, timeout=timeout) as client:
                answer = client.get("/v1/stats", headers={"authorization": f"Bearer {token}"})
            ok = answer.status_code == 200
        except httpx.HTTPError:
            ok = False
        elapsed = time.monotonic() - started
        took.append(elapsed if ok else timeout)
        time.sleep(max(0.0, 0.1 - elapsed))
    return took


def _report(name: str, took: list[float], timeout: float) -> dict[str, Any]:
    return {
        "phase": name,
        "requests": len(took),
        "failed": sum(1 for t in took if t >= timeout),
        "p50_ms": round(statistics.median(took) * 1000, 1),
        "p95_ms": round(percentile(took, 0.95) * 1000, 1),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=300, help="slow readers (300)")
    parser.add_argument("--senders", type=int, default=300, help="slow senders (300)")
    parser.add_argument("--pipeline", type=int, default=3000, help="requests per reader (3000)")
    parser.add_argument("--requests", type=int, default=100, help="legitimate calls (100)")
    parser.add_argument("--hold", type=float, default=3.0, help="seconds before measuring (3)")
    parser.add_argument(
        "--max-connections", type=int, default=None, help="the server's cap (its default)"
    )
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = args.readers + args.senders + 256
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MINDPALACE_EMBEDDER": "hashing", "MINDPALACE_TOKENS": f"a={_TOKEN}"}
    cap = ["--max-connections", str(args.max_connections)] if args.max_connections else []
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            [
                sys.executable,
                *("-m", "mindpalace.cli", "--db", str(Path(folder) / "palace.db")),
                *("serve", "--port", str(port), *cap),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}/healthz", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)
            quiet = legitimate_latencies(url, _TOKEN, args.requests)
            with Attack(
                "127.0.0.1",
                port,
                readers=args.readers,
                senders=args.senders,
                pipeline=args.pipeline,
            ) as attack:
                time.sleep(args.hold)
                attacked = legitimate_latencies(url, _TOKEN, args.requests)
            report = {
                "readers": args.readers,
                "senders": args.senders,
                "pipeline": args.pipeline,
                "phases": [_report("quiet", quiet, 5.0), _report("attacked", attacked, 5.0)],
                "reopened": attack.reopened,
            }
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
