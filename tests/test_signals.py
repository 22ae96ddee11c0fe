"""Signals (seed 004 E) and read-only recall (seed 000): write sources are
recorded with the write, recall outcomes and feedback apart from the
memories, exportable as training pairs, and switchable off."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import ConfigError, NotFoundError, Palace, ValidationError
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.store import Store

MakePalace = Callable[..., Palace]


def _palace(make_palace: MakePalace, agent: str = "ann", **options: object) -> Palace:
    return make_palace(agent, embedder=HashingEmbedder(), **options)


def _signals(store: Store, kind: str) -> list[object]:
    return list(store.iter_signals(kinds=(kind,), agent_id=None))


def test_every_write_records_its_source(make_palace: MakePalace, store: Store) -> None:
    palace = _palace(make_palace)
    first = palace.remember("kafka brokers restart nightly", source="pipeline")
    palace.remember("kafka brokers restart nightly", source="pipeline")  # dedup bump
    palace.remember_many([{"content": "from a skill", "source": "skill"}])
    stored = list(store.iter_signals(kinds=("store",), agent_id="ann"))
    assert [(s.memory_id == first.id, s.data["source"], s.data["created"]) for s in stored] == [
        (True, "pipeline", True),
        (True, "pipeline", False),
        (False, "skill", True),
    ]
    # what the memory is stays its row's: the signal says where the write came from
    assert {frozenset(s.data) for s in stored} == {frozenset({"source", "created"})}


def test_a_failed_write_records_no_signal(make_palace: MakePalace, store: Store) -> None:
    palace = _palace(make_palace)
    with pytest.raises(ValidationError):
        palace.remember_many([{"content": "ok"}, {"content": "bad", "type": "nope"}])
    assert _signals(store, "store") == []


def test_recall_records_outcomes_and_feedback_makes_pairs(make_palace: MakePalace) -> None:
    palace = _palace(make_palace)
    tea = palace.remember("Alice drinks green tea", source="manual")
    coffee = palace.remember("Bob drinks black coffee", source="import")
    hits = palace.recall("what does alice drink")
    [recall] = list(palace.store.iter_signals(kinds=("recall",), agent_id="ann"))
    assert recall.query == "what does alice drink"
    assert [h["id"] for h in recall.data["hits"]] == [h.memory.id for h in hits]
    assert [h["rank"] for h in recall.data["hits"]] == list(range(1, len(hits) + 1))
    palace.feedback(tea.id, useful=True)
    palace.feedback(coffee.id, useful=False)
    pairs = palace.signals.pairs()
    assert [(p.memory_id, p.useful, p.source) for p in pairs] == [
        (tea.id, True, "manual"),
        (coffee.id, False, "import"),
    ]
    assert pairs[0].query == "what does alice drink" and pairs[0].rank == 1
    out = io.StringIO()
    assert palace.signals.export_pairs(out) == len(pairs)
    assert json.loads(out.getvalue().splitlines()[0])["memory_id"] == tea.id


def test_feedback_is_scoped(make_palace: MakePalace) -> None:
    ann, bob = _palace(make_palace, "ann"), _palace(make_palace, "bob")
    secret = ann.remember("ann's private plan")
    with pytest.raises(NotFoundError):
        bob.feedback(secret.id, useful=True)
    with pytest.raises(ValidationError, match="valid options: true, false"):
        ann.feedback(secret.id, useful="yes")  # type: ignore[arg-type]
    ann.recall("private plan")
    ann.feedback(secret.id, useful=True)
    assert len(ann.signals.pairs()) == 1
    assert bob.signals.pairs() == []  # another agent's signals are not exported


def test_signals_switch_off(make_palace: MakePalace, store: Store) -> None:
    settings = Settings.from_env({"MINDPALACE_SIGNALS": "off", "MINDPALACE_AGENT_ID": "ann"})
    palace = make_palace("ann", settings=settings, embedder=HashingEmbedder())
    memory = palace.remember("nothing recorded")
    palace.recall("nothing")
    assert palace.feedback(memory.id, useful=True) is None
    assert list(store.iter_signals(agent_id=None)) == []
    with pytest.raises(ConfigError, match="valid options: on, off"):
        Settings.from_env({"MINDPALACE_SIGNALS": "sometimes"})


def test_hard_delete_drops_the_memorys_signals(make_palace: MakePalace, store: Store) -> None:
    palace = _palace(make_palace)
    memory = palace.remember("short lived")
    palace.feedback(memory.id, useful=True)
    palace.forget(memory.id, hard=True)
    assert [s for s in store.iter_signals(agent_id=None) if s.memory_id == memory.id] == []


# -- recall is read-only ------------------------------------------------------------------------


def _dump(db: Path) -> dict[str, str]:
    """A digest of every row of every table but the signals, byte for byte."""
    con = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] != "signals" and not r[0].startswith(("sqlite_", "memories_fts_"))
        ]
        digests = {}
        for table in tables:
            rows = con.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            digests[table] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return digests
    finally:
        con.close()


def test_a_thousand_recalls_leave_every_row_identical(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    embedder = HashingEmbedder()
    settings = Settings(agent_id="ann", embedder="hashing")
    with Palace(db, settings=settings, embedder=embedder) as palace:
        ids = [
            palace.remember(f"memory {n} about topic {n % 7}", visibility="shared").id
            for n in range(60)
        ]
        palace.add_messages(
            [Message(f"turn {n} on topic {n % 3}", speaker="sam") for n in range(20)], session="s"
        )
        before = _dump(db)
        signals_before = len(list(palace.store.iter_signals(agent_id=None)))
        for n in range(1000):
            palace.recall(f"topic {n % 9}", limit=5)
            if n % 10 == 0:
                palace.get(ids[n % len(ids)])
                palace.memories(limit=20)
                palace.recent(5)
                palace.stats()
        assert _dump(db) == before
        recalls = len(list(palace.store.iter_signals(agent_id=None))) - signals_before
        assert recalls == 1000  # outcomes went to the signals table instead


def test_cli_feedback_and_signals_export(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    env = {"MINDPALACE_EMBEDDER": "hashing", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mindpalace.cli", "--db", str(db), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    memory = json.loads(cli("remember", "the staging database is postgres").stdout)
    assert cli("recall", "staging database").returncode == 0
    done = cli("feedback", memory["id"], "--useful")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"memory_id": memory["id"], "useful": True, "recorded": True}
    assert cli("feedback", memory["id"]).returncode == 2  # --useful or --not-useful required
    missing = cli("feedback", "mem_nope", "--not-useful")
    assert missing.returncode == 1 and "no memory" in missing.stderr
    exported = cli("signals", "export")
    assert exported.returncode == 0, exported.stderr
    [pair] = [json.loads(line) for line in exported.stdout.splitlines()]
    assert pair["memory_id"] == memory["id"] and pair["useful"] is True
    assert pair["query"] == "staging database" and pair["rank"] == 1
    other = cli("--agent", "bob", "signals", "export")
    assert other.returncode == 0 and other.stdout == ""


def test_a_recall_never_waits_for_a_writer_to_record_its_signal(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    settings = Settings(agent_id="ann", embedder="none", busy_timeout=10)
    with Palace(db, settings=settings) as palace, Palace(db, settings=settings) as writer:
        memory = palace.remember("heron sighting at the lake")
        with writer.store._write():  # another writer holds the lock (e.g. a long import)
            started = time.monotonic()
            hits = palace.recall("heron")
            assert time.monotonic() - started < 2  # not the 10 s busy timeout
        assert [h.memory.id for h in hits] == [memory.id]
        assert palace.signals.dropped == 1
        palace.recall("heron")  # the lock is free again: recorded
        assert palace.signals.dropped == 1
        assert len(list(palace.store.iter_signals(kinds=("recall",), agent_id="ann"))) == 1
