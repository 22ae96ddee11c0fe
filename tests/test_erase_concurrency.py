"""A writer on another connection keeps writing while an agent of a few
thousand memories is erased: it waits for the erasure's one transaction at
most, never fails; the erasure's cleanup, after the commit, waits for it in
turn (on SQLite one merge of each text index, its own transaction), and
leaves both text indexes sound."""

from __future__ import annotations

import threading
import time

import pytest

from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.store.sqlite import SQLiteStore

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)

_MEMORIES = 2000


def _open(target: str, agent: str) -> Palace:
    settings = Settings(agent_id=agent, embedder="hashing", busy_timeout=30)
    return Palace(target, agent_id=agent, settings=settings)


class _Writer(threading.Thread):
    def __init__(self, target: str) -> None:
        super().__init__(daemon=True)
        self.target = target
        self.stop = threading.Event()
        self.spans: list[tuple[float, float]] = []
        self.errors: list[BaseException] = []

    def run(self) -> None:
        with _open(self.target, "bob") as bob:
            while not self.stop.is_set():
                began = time.monotonic()
                try:
                    bob.remember(f"Bob's note {len(self.spans)} written during the erasure")
                except BaseException as exc:  # what the test is about
                    self.errors.append(exc)
                self.spans.append((began, time.monotonic()))


def test_a_writer_on_another_connection_never_fails_during_an_erasure(store_target: str) -> None:
    with _open(store_target, "alice") as alice:
        alice.remember_many(
            [
                {"content": f"Alice's note {n} about the garden and the budget"}
                for n in range(_MEMORIES)
            ]
        )
        writer = _Writer(store_target)
        writer.start()
        while not writer.spans:  # bob's palace is open and writing
            time.sleep(0.01)
        began = time.monotonic()
        receipt = alice.erase(Selection.agent(), confirm=True)
        committed = time.monotonic()
        deadline = committed + 60
        while alice.erasures(limit=1)[0].cleanup != "done":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)
        writer.stop.set()
        writer.join(60)
    assert receipt.counts.memories == _MEMORIES
    assert writer.errors == []
    during = [(a, b) for a, b in writer.spans if a < committed and b > began]
    assert during, "the writer wrote while the erasure ran"
    longest = max(b - a for a, b in writer.spans)
    assert longest < 30  # the busy timeout: well inside it
    with _open(store_target, "bob") as bob:
        assert len(bob.memories(limit=10_000)) == len(writer.spans)
        if isinstance(bob.store, SQLiteStore):  # FTS5's own checks of both indexes
            assert bob.store.integrity_check(quick=True) == "ok"
            with bob.store._write() as cur:
                scoped = "memories_fts_scoped"
                cur.execute(f"INSERT INTO {scoped} ({scoped}) VALUES ('integrity-check')")
        assert bob.recall("Bob's note written during the erasure", limit=3)
