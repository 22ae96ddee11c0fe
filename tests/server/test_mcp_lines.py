"""Raw lines to the real ``mindpalace mcp`` over stdio: each line that is no
JSON-RPC message gets a JSON-RPC error with a null id (the SDK alone drops
it, and the client waits for ever), and the server goes on serving."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import pytest

from .conftest import server_env

ANSWER_S = 20  # the first answer waits for the server to start


@dataclass
class Stdio:
    process: subprocess.Popen[bytes]
    lines: queue.Queue[bytes] = field(default_factory=queue.Queue)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=ANSWER_S)
        except queue.Empty:
            raise AssertionError(f"no answer in {ANSWER_S} s") from None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ping(self, request_id: int) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
        assert self.answer() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def _pump(stream: IO[bytes], lines: queue.Queue[bytes]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stdio]:
    db = tmp_path_factory.mktemp("lines") / "palace.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "mindpalace.cli", "--db", str(db), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    running = Stdio(process)
    assert process.stdout is not None
    threading.Thread(target=_pump, args=(process.stdout, running.lines), daemon=True).start()
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    running.send(json.dumps(hello).encode())
    assert running.answer()["id"] == 0
    running.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield running
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert process.stderr is not None
    assert b"Traceback" not in process.stderr.read()


PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": %s}}'
GARBAGE = {
    "not JSON": (b"this is not json", -32700),
    "5,000-digit number": (PING % (b"1" * 5000), -32700),
    "lone surrogate": (PING % b'"\\ud800"', -32700),
    "50,000-deep array": (b"[" * 50_000 + b"]" * 50_000, -32700),
    "cut short": (b'{"jsonrpc": "2.0", "id": 1, "meth', -32700),
    "invalid UTF-8": (b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"', -32700),
    "JSON, no message": (b'{"hello": "world"}', -32600),
    "a method that is a number": (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600),
    "a bare number": (b"12", -32600),
}


@pytest.mark.parametrize("name", list(GARBAGE))
def test_an_unreadable_line_gets_a_json_rpc_error(stdio: Stdio, name: str) -> None:
    line, code = GARBAGE[name]
    stdio.send(line)
    answer = stdio.answer()
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] is None
    assert answer["error"]["code"] == code
    assert len(answer["error"]["message"]) < 300
    stdio.ping(100)  # still serving


def test_a_blank_line_asks_nothing(stdio: Stdio) -> None:
    stdio.send(b"")
    stdio.send(b"   ")
    stdio.ping(101)  # the next answer is the ping's: none for the blank lines
