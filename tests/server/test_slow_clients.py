"""Slow and stalled clients against a real ``mindpalace serve`` (raw sockets):
they cannot hold connections forever nor starve a legitimate client, whether
they send slowly or read slowly.

The server runs with small limits (1 s deadlines, 40 connections) and, for
the starvation test, 256 file descriptors, so that stalled connections
would exhaust them if nothing closed them.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from bench.slow_clients import Attack, legitimate_latencies, percentile

from .conftest import Server, start_server

LIMITS = (
    *("--max-connections", "40"),
    *("--header-timeout", "1"),
    *("--body-timeout", "1"),
    *("--keep-alive", "1"),
)
HEAD = b"POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
NOTHING = b""
PARTIAL_HEADERS = HEAD + b"Content-Type: appl"
PARTIAL_BODY = HEAD + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
PARTIAL_BODY_WITH_TOKEN = (
    HEAD
    + b"Authorization: Bearer alice-token\r\n"
    + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("slow") / "palace.db", *LIMITS, files=256)
    yield running
    assert running.stop() == 0
    assert running.process.stdout is not None
    log = running.process.stdout.read()
    assert "Traceback" not in log, log  # a timed-out request is no app error


def stalled(server: Server, payload: bytes) -> socket.socket:
    """A connection that sends ``payload`` and then nothing."""
    address = urlsplit(server.url)
    sock = socket.create_connection((address.hostname, address.port), timeout=10)
    if payload:
        sock.sendall(payload)
    return sock


def until_closed(sock: socket.socket, *, trickle: bool = False, limit: float = 8.0) -> bytes:
    """What the server sends until it closes ``sock`` (at most ``limit``
    seconds), sending one more byte every 0.2 s if ``trickle``."""
    received = b""
    deadline = time.monotonic() + limit
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            chunk = None
        except ConnectionResetError:
            return received
        if chunk == b"":
            return received
        received += chunk or b""
        if trickle:
            try:
                sock.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                return received
    raise AssertionError(f"still open after {limit} s; received {received!r}")


def test_stalled_clients_do_not_starve_a_legitimate_one(limited: Server) -> None:
    payloads = (NOTHING, PARTIAL_HEADERS, PARTIAL_BODY)
    sockets = [stalled(limited, payload) for _ in range(100) for payload in payloads]
    try:
        time.sleep(0.5)  # let the server take them all in
        started = time.monotonic()
        with limited.client(timeout=5) as client:
            stored = client.post("/v1/memories", json={"content": "Kingfisher seen at dawn"})
        assert stored.status_code == 201
        assert time.monotonic() - started < 3
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize(
    ("payload", "answer"),
    [
        (NOTHING, b"HTTP/1.1 408 "),
        (PARTIAL_HEADERS, b"HTTP/1.1 408 "),
        (PARTIAL_BODY_WITH_TOKEN, b"HTTP/1.1 408 "),
        (PARTIAL_BODY, b"HTTP/1.1 401 "),  # refused at once, then idle: keep-alive ends it
    ],
    ids=["nothing", "partial-headers", "partial-body", "partial-body-no-token"],
)
def test_a_stalled_connection_is_closed_after_the_timeout(
    limited: Server, payload: bytes, answer: bytes
) -> None:
    sock = stalled(limited, payload)
    started = time.monotonic()
    with sock:
        received = until_closed(sock)
    assert 0.5 < time.monotonic() - started < 4
    assert received.startswith(answer), received
    if answer.startswith(b"HTTP/1.1 408"):
        assert b'{"error": "request_timeout", "message": "request ' in received, received


@pytest.mark.parametrize(
    "payload",
    [PARTIAL_HEADERS, PARTIAL_BODY_WITH_TOKEN, PARTIAL_BODY],
    ids=["headers", "body", "after-a-response"],
)
def test_a_trickling_connection_is_closed_after_the_timeout(
    limited: Server, payload: bytes
) -> None:
    """A byte every 0.2 s keeps no connection open: the deadlines are for
    the whole header block and the whole body, not between bytes."""
    sock = stalled(limited, payload)
    started = time.monotonic()
    with sock:
        until_closed(sock, trickle=True)
    assert time.monotonic() - started < 4


def test_at_the_cap_the_longest_waiting_connection_gives_way(
    fresh_server: Callable[..., Server],
) -> None:
    """With deadlines too long to help, the cap alone keeps the server
    reachable: each new connection closes the one waiting longest (503)."""
    running = fresh_server("--max-connections", "20", "--header-timeout", "600")
    sockets = [stalled(running, PARTIAL_HEADERS) for _ in range(60)]
    try:
        with running.client(timeout=5) as client:
            assert client.get("/v1/stats").status_code == 200
        assert until_closed(sockets[0], limit=2).startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in sockets:
            sock.close()


def test_slow_readers_and_senders_do_not_starve_a_legitimate_client(
    fresh_server: Callable[..., Server],
) -> None:
    """60 connections pipelining 3,000 ``GET /login`` each and reading none
    of the answers, and 60 sending headers a byte at a time, all reopened
    when closed, against a cap of 40: a client that sends its request at
    once and reads the answer is still served, within a second."""
    running = fresh_server("--max-connections", "40")
    address = urlsplit(running.url)
    assert address.hostname is not None and address.port is not None
    with Attack(address.hostname, address.port, readers=60, senders=60) as attack:
        time.sleep(1.5)  # every reader has sent its requests, the cap is reached
        took = legitimate_latencies(running.url, "alice-token", 20)
    assert attack.reopened > 0  # the attackers were closed, and came back
    assert max(took) < 5, took  # none failed (a failure counts as the 5 s timeout)
    assert percentile(took, 0.95) <= 1.0, took


LOGIN = b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_pipelining_connection_gets_a_bounded_number_of_answers(
    fresh_server: Callable[..., Server],
) -> None:
    """Requests sent ahead of their answers are answered ``--max-pipelined``
    in a row; then the connection is closed, the rest unanswered."""
    running = fresh_server("--max-pipelined", "5")
    with stalled(running, LOGIN * 50) as sock:
        received = until_closed(sock)
    assert received.count(b"HTTP/1.1 200 OK") == 5
    with running.client() as client:  # one request at a time is no pipelining
        for _ in range(8):
            assert client.get("/v1/stats").status_code == 200


def test_a_connection_that_reads_nothing_is_dropped_after_the_send_timeout(
    fresh_server: Callable[..., Server],
) -> None:
    """A client that reads none of its answers is dropped once the send
    buffer has stayed full for ``--send-timeout`` seconds."""
    running = fresh_server("--send-timeout", "1", "--max-pipelined", "10000")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    address = urlsplit(running.url)
    sock.connect((address.hostname, address.port))
    with sock:
        # 10 MB of answers: more than the kernel's buffers on both sides hold.
        sock.sendall(b"GET /static/app.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 1500)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
            if info[0] != 1:  # no longer established: the server reset it
                break
            time.sleep(0.1)
        else:
            raise AssertionError("a client that reads nothing was never dropped")


def test_limit_options_are_checked(fresh_server: Callable[..., Server]) -> None:
    with pytest.raises(AssertionError, match="--header-timeout must be a number of seconds"):
        fresh_server("--header-timeout", "0")
    with pytest.raises(AssertionError, match="--send-timeout must be a number of seconds"):
        fresh_server("--send-timeout", "-1")
    with pytest.raises(AssertionError, match="--max-pipelined must be an integer from 1"):
        fresh_server("--max-pipelined", "0")
    with pytest.raises(AssertionError, match=r"--max-connections 1000 needs 2064 file desc"):
        fresh_server("--max-connections", "1000", files=256)
