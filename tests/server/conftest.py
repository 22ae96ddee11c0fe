"""A real ``mindpalace serve`` on a free loopback port, and a seeded palace.

The server is a subprocess of the real CLI (hashing embedder, so it starts
in well under a second); the palace file is seeded through the library
before it starts, so every tool has something to find.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message

TOKENS = "alice=alice-token,bob=bob-token,*=gateway-token,admin:ops=ops-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MINDPALACE_AGENT_ID"}
    env.update({"MINDPALACE_EMBEDDER": "hashing", "MINDPALACE_TOKENS": TOKENS, **extra})
    return env


def seed(path: Path) -> dict[str, str]:
    """Memories of alice (and one of bob); returns their ids by role."""
    settings = Settings(embedder="hashing")
    with Palace(path, agent_id="alice", settings=settings) as palace:
        fact = palace.remember(
            "We chose SQLite for the embedded store because many processes share one file",
            category="decision",
            tags=["storage", "architecture"],
        )
        scratch = palace.remember("Scratch note about the zebra migration", tags=["scratch"])
        owner = palace.remember("Ann owns the Storage service")
        dependency = palace.remember("The Storage service depends on SQLite")
        lesson = palace.remember(
            "Lesson: SQLite needs WAL mode when many processes share one file",
            category="lesson",
        )
        rule = palace.remember(
            "Never edit the SQLite file of the Storage service by hand",
            category="rule",
            constraint=True,
        )
        skills = Path(__file__).resolve().parents[2] / "examples" / "skills"
        for name in ("api-integration", "code-review"):
            palace.skills.import_path(skills / name)
        palace.add_messages(
            [
                Message("What is the rollback plan for the release?", speaker="Ann"),
                Message("The rollback plan is to redeploy the previous tag.", speaker="Bo"),
                Message("Thanks, noted.", speaker="Ann"),
            ],
            session="standup-1",
        )
        palace.personal.journal("Walked by the river and planned the garden", date="2026-01-15")
        palace.personal.add_issue("Garden irrigation timer is broken", project="Home")
    with Palace(path, agent_id="bob", settings=settings) as palace:
        secret = palace.remember("Bob's private note: the sqlite backup key is in the vault")
        bob_owns = palace.remember("Bob owns the Storage service, privately")
    return {
        "fact": fact.id,
        "scratch": scratch.id,
        "bob": secret.id,
        "owner": owner.id,
        "dependency": dependency.id,
        "lesson": lesson.id,
        "rule": rule.id,
        "bob_owns": bob_owns.id,
    }


@dataclass
class Server:
    url: str
    db: Path
    ids: dict[str, str]
    process: subprocess.Popen[str]

    def client(
        self,
        token: str | None = "alice-token",  # noqa: S107
        *,
        timeout: float = 30,
        **headers: str,
    ) -> httpx.Client:
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def start_server(
    db: Path, *args: str, env: dict[str, str] | None = None, files: int | None = None
) -> Server:
    """``mindpalace serve`` on ``db``; ``files`` caps its open file
    descriptors (``ulimit -n``), as a small deployment's would be."""
    port = free_port()

    def limit_files() -> None:
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mindpalace.cli",
            "--db",
            str(db),
            "serve",
            "--port",
            str(port),
            *args,
        ],
        env=env or server_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit_files,  # noqa: PLW1509 - no threads are started around it
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"server exited with {process.returncode}: {output}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Server(url=url, db=db, ids={}, process=process)
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("server did not start in 30 s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One seeded server per test module (they are read-mostly), with every
    tool at /mcp."""
    db = tmp_path_factory.mktemp("serve") / "palace.db"
    ids = seed(db)
    running = start_server(db, "--tools", "all")
    running.ids = ids
    yield running
    assert running.stop() == 0


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start servers with custom options; each is stopped afterwards."""
    started: list[Server] = []

    def make(*args: str, env: dict[str, str] | None = None, files: int | None = None) -> Server:
        db = tmp_path / f"palace{len(started)}.db"
        running = start_server(db, *args, env=env, files=files)
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()
