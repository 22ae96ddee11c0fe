"""Bulk writes with a slow model: stored at once, embedded in the background.

Real SQLite files and the real PostgreSQL server; the bundled MiniLM where
the model matters, else the hashing embedder marked slow (what makes a
model "slow" is only its ``fast`` flag)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.base import Vectors
from mindpalace.embed.texts import embed_text, text_hash, vector_key
from mindpalace.errors import ConfigError, EmbeddingError
from mindpalace.retrieval import indexing, vector_writes
from mindpalace.retrieval.indexing import BULK_TEXTS
from mindpalace.retrieval.upgrading import VectorUpgrade
from mindpalace.store import Store, vector_bytes
from mindpalace.store.base import VectorBatch
from mindpalace.vectorjob import SERVER_LOCK, lock_path

ROOT = Path(__file__).resolve().parents[2]


class SlowHashing(HashingEmbedder):
    """The hashing embedder as a slow model: bulk writes defer to it."""

    fast = False

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.fail = False
        #: when set, the background upgrade's embedding waits for it
        self.gate: threading.Event | None = None

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if self.gate is not None and threading.current_thread().name == "mindpalace-vectors":
            assert self.gate.wait(60)
        if self.fail:
            raise EmbeddingError("the model is unavailable")
        self.calls += 1
        return super().embed_batch(texts)


def turns(n: int, topic: str = "hiking") -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i}: notes on {topic} trail number {i}",
        )
        for i in range(n)
    ]


def _row(seq: int, vector: bytes | None) -> tuple[object, ...]:
    """A row as the store's vector load returns it (``VectorTable.from_rows``)."""
    scope = ("a", "shared", "", "", False, False)
    return (f"m{seq}", *scope, "fact", "semantic", "fact", 0.0, vector, "", "manual", seq,
            "note", "", 5)  # fmt: skip


def dense_of(hits: Sequence[object]) -> list[float | None]:
    return [h.stage_scores.get("dense") for h in hits]  # type: ignore[attr-defined]


def test_a_bulk_write_is_stored_at_once_and_embedded_after(
    make_palace: Callable[..., Palace],
) -> None:
    model = SlowHashing()
    model.gate = threading.Event()  # hold the upgrade: the write must not wait for it
    palace = make_palace(embedder=model)
    stored = palace.add_messages(turns(BULK_TEXTS), session="trip")
    assert len(stored) == BULK_TEXTS
    assert palace.pending_vectors() == BULK_TEXTS
    # Found by their words meanwhile, without a dense score.
    found = palace.recall("hiking trail number 7", limit=3)
    assert "turn 7:" in found[0].memory.content
    assert dense_of(found) == [None] * len(found)
    model.gate.set()
    assert palace.wait_for_vectors(timeout=60) == 0
    assert palace.pending_vectors() == 0
    found = palace.recall("hiking trail number 7", limit=3)
    assert all(score is not None for score in dense_of(found))
    # The stored vectors are the model's, under each memory's text hash.
    memory = stored[7]
    key = vector_key(model.config)
    table = palace.engine.store.load_vectors(key)
    row = int(np.flatnonzero(table.ids == memory.id)[0])
    expected = model.embed([embed_text(memory.title, memory.content)])[0]
    assert np.array_equal(table.matrix[row], vector_bytes.from_blob(vector_bytes.to_blob(expected)))
    assert table.embedded.all()


def test_small_writes_and_fast_models_embed_inline(make_palace: Callable[..., Palace]) -> None:
    slow = make_palace(embedder=SlowHashing())
    slow.add_messages(turns(BULK_TEXTS - 1), session="a")
    assert slow.pending_vectors() == 0
    slow.remember_many([{"content": f"fact {i} about gardens"} for i in range(10)])
    assert slow.pending_vectors() == 0
    fast = make_palace(agent_id="other", embedder=HashingEmbedder())
    fast.add_messages(turns(BULK_TEXTS + 10, "sailing"), session="b")
    assert fast.pending_vectors() == 0


def test_inline_setting_embeds_before_returning(make_palace: Callable[..., Palace]) -> None:
    palace = make_palace(embedder=SlowHashing(), settings=Settings(bulk_embed="inline"))
    palace.add_messages(turns(BULK_TEXTS + 5), session="trip")
    assert palace.pending_vectors() == 0
    assert palace.engine.semantic.upgrading is None


def test_an_unknown_bulk_embed_setting_names_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"MINDPALACE_BULK_EMBED": "later"})
    assert "background" in str(raised.value) and "inline" in str(raised.value)
    assert Settings.from_env({"MINDPALACE_BULK_EMBED": " Inline "}).bulk_embed == "inline"


def test_remember_many_and_import_defer_too(
    make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    model = SlowHashing()
    model.gate = threading.Event()
    palace = make_palace(embedder=model)
    palace.remember_many([{"content": f"fact {i} about gardens"} for i in range(BULK_TEXTS)])
    assert palace.pending_vectors() == BULK_TEXTS
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "".join(json.dumps({"content": f"note {i} on compost"}) + "\n" for i in range(BULK_TEXTS))
    )
    palace.import_file(notes)
    assert palace.pending_vectors() == 2 * BULK_TEXTS
    model.gate.set()
    assert palace.wait_for_vectors(timeout=60) == 0


def test_a_warm_reader_picks_the_vectors_up_and_keeps_its_indexes(
    store: Store, clock: Callable[[], object], tmp_path: Path
) -> None:
    """Two palaces over one store stand for two processes: one writes in
    bulk and upgrades, the other recalls warm throughout."""
    model = SlowHashing()
    model.gate = threading.Event()
    writer = Palace(store=store, embedder=model, clock=clock)  # type: ignore[arg-type]
    held = SlowHashing()
    held.gate = threading.Event()  # the reader's own upgrade (it recalls warm) waits
    reader = Palace(store=store, embedder=held, clock=clock)  # type: ignore[arg-type]
    reader.remember("The lighthouse keeper collects sea glass.")
    writer.add_messages(turns(BULK_TEXTS + 20), session="trip")
    for _ in range(2):  # warm: the second call builds the warm indexes
        reader.recall("hiking trail number 12", limit=3)
    reader.engine.semantic.wait_for_warm()
    before = reader.engine.semantic.dense()
    assert before is not None and not before.embedded.all()
    held.gate.set()
    model.gate.set()
    assert writer.wait_for_vectors(timeout=60) == 0
    found = reader.recall("hiking trail number 12", limit=3)
    after = reader.engine.semantic.dense()
    assert after is not None and after.embedded.all()
    assert after.keyword is not None and after.mentions is not None
    assert after.vectors != before.vectors
    assert "turn 12:" in found[0].memory.content
    assert all(score is not None for score in dense_of(found))


def test_a_warm_process_embeds_what_another_left_waiting(
    store: Store, clock: Callable[[], object]
) -> None:
    model = SlowHashing()
    writer = Palace(store=store, embedder=model, clock=clock)  # type: ignore[arg-type]
    writer.engine.semantic.on_pending = lambda: None  # a process that leaves at once
    writer.add_messages(turns(BULK_TEXTS), session="trip")
    assert writer.pending_vectors() == BULK_TEXTS
    reader = Palace(store=store, embedder=SlowHashing(), clock=clock)  # type: ignore[arg-type]
    reader.recall("trail", limit=1)
    reader.recall("trail", limit=1)  # a process that recalls again starts the upgrade
    upgrade = reader.engine.semantic.upgrading
    assert upgrade is not None
    assert upgrade.wait(60)
    assert reader.pending_vectors() == 0


def test_a_failing_model_leaves_the_texts_waiting(make_palace: Callable[..., Palace]) -> None:
    model = SlowHashing()
    model.fail = True
    palace = make_palace(embedder=model)
    palace.add_messages(turns(BULK_TEXTS), session="trip")
    with pytest.raises(EmbeddingError, match="the model is unavailable"):
        palace.wait_for_vectors(timeout=60)
    assert palace.pending_vectors() == BULK_TEXTS
    model.fail = False
    assert palace.wait_for_vectors(timeout=60) == 0
    # reindex embeds what waits as well
    other = make_palace(agent_id="b", embedder=SlowHashing())
    other.engine.semantic.on_pending = lambda: None
    other.add_messages(turns(BULK_TEXTS, "rowing"), session="river")
    assert other.pending_vectors() == BULK_TEXTS
    other.reindex()
    assert other.pending_vectors() == 0


def test_a_stopped_upgrade_keeps_what_it_stored(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    model = SlowHashing()
    model.gate = threading.Event()
    palace = Palace(path, embedder=model)
    palace.add_messages(turns(BULK_TEXTS * 2), session="trip")
    upgrade = palace.engine.semantic.upgrading
    assert upgrade is not None
    model.gate.set()
    time.sleep(0.05)
    upgrade.stop(wait=30)
    assert upgrade.done and upgrade.error is None
    left = palace.pending_vectors()
    assert left == BULK_TEXTS * 2 - upgrade.embedded
    palace.close()
    again = Palace(path, embedder=SlowHashing())
    assert again.pending_vectors() == left
    assert again.wait_for_vectors(timeout=60) == 0
    again.close()


def test_the_bundled_model_upgrades_to_the_same_vectors(tmp_path: Path) -> None:
    """MiniLM: a deferred write ends with the vectors an inline write has
    (int8 activations depend a little on batch mates: cosine, not bytes)."""
    texts = [
        f"turn {i}: we talked about the {['garden', 'boat', 'oven'][i % 3]} today"
        for i in range(BULK_TEXTS)
    ]
    deferred = Palace(tmp_path / "d.db")
    deferred.engine.semantic.on_pending = lambda: None
    deferred.remember_many([{"content": t} for t in texts])
    assert deferred.pending_vectors() == BULK_TEXTS
    assert deferred.wait_for_vectors(timeout=300) == 0
    inline = Palace(tmp_path / "i.db", settings=Settings(bulk_embed="inline"))
    inline.remember_many([{"content": t} for t in texts])
    assert inline.pending_vectors() == 0
    embedder = deferred.engine.semantic.embedder
    assert embedder is not None
    key = vector_key(embedder.config)
    a = deferred.engine.store.load_vectors(key)
    b = inline.engine.store.load_vectors(key)
    by_id = {text_hash(t, 32): i for i, t in enumerate(texts)}
    assert len(by_id) == BULK_TEXTS
    order_a = np.argsort(a.seq)
    order_b = np.argsort(b.seq)
    cosines = np.sum(a.matrix[order_a] * b.matrix[order_b], axis=1)
    assert a.embedded.all() and b.embedded.all()
    assert float(cosines.min()) > 0.97
    found = deferred.recall("what did we say about the boat", limit=5)
    assert all(score is not None for score in dense_of(found))
    deferred.close()
    inline.close()


def test_the_command_line_leaves_a_job_that_embeds_after_it(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} on tides"}
                for i in range(BULK_TEXTS + 4)
            ]
        )
    )
    db = tmp_path / "p.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("MINDPALACE_EMBEDDER", None)  # the default model
    done = subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", "--db", str(db), "ingest", str(chat)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["ingested"] == BULK_TEXTS + 4
    assert 0 < out["vectors_pending"] <= BULK_TEXTS + 4
    lock = lock_path(str(db.resolve()))
    assert lock is not None
    deadline = time.monotonic() + 240
    palace = Palace(db)
    while palace.pending_vectors() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert palace.pending_vectors() == 0
    assert lock.exists()
    found = palace.recall("turn 9 on tides", limit=3)
    assert all(score is not None for score in dense_of(found))
    palace.close()


def test_a_second_job_leaves_when_one_runs(tmp_path: Path) -> None:
    import fcntl

    db = tmp_path / "p.db"
    Palace(db).close()
    lock = lock_path(str(db))
    assert lock is not None
    with lock.open("a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MINDPALACE_DB": str(db)}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "mindpalace.vectorjob"], env=env, timeout=60, check=False
        )
        assert done.returncode == 0
        assert time.monotonic() - started < 30


def test_one_job_at_a_time_for_a_postgresql_palace(postgres_url: str) -> None:
    """A server's palace has no file to lock beside: the job holds an
    advisory lock in its database, and a second job leaves while it is held."""
    import psycopg

    writer = Palace(postgres_url)  # the default model: bulk writes wait for it
    writer.engine.semantic.on_pending = lambda: None
    writer.add_messages(turns(BULK_TEXTS, "tides"), session="harbour")
    assert writer.pending_vectors() == BULK_TEXTS
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MINDPALACE_DB": postgres_url}
    env.pop("MINDPALACE_EMBEDDER", None)

    def job() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "mindpalace.vectorjob"], env=env, timeout=240, check=False
        )
        assert done.returncode == 0

    try:
        with psycopg.connect(postgres_url, autocommit=True) as held:
            assert held.execute("SELECT pg_try_advisory_lock(%s)", (SERVER_LOCK,)).fetchone()
            job()  # another job holds the palace: this one leaves
            assert writer.pending_vectors() == BULK_TEXTS
        job()  # the lock went with its connection
        assert writer.pending_vectors() == 0
    finally:
        writer.close()


def test_the_threshold_is_read_at_call_time(
    make_palace: Callable[..., Palace], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_writes, "BULK_TEXTS", 8)
    palace = make_palace(embedder=SlowHashing())
    palace.engine.semantic.on_pending = lambda: None
    palace.add_messages(turns(8), session="s")
    assert palace.pending_vectors() == 8
    assert palace.wait_for_vectors(timeout=60) == 0
    palace.add_messages(turns(7, "caves"), session="t")
    assert palace.pending_vectors() == 0


def test_the_upgrade_waits_while_the_process_writes() -> None:
    """Writes first: a bulk ingest in many calls keeps the cores; the
    vectors come once it pauses."""
    calls: list[int] = []
    stored: list[VectorBatch] = []
    busy = [True]

    def embed(after_seq: int, limit: int) -> tuple[VectorBatch, int] | None:
        calls.append(after_seq)
        if after_seq >= 2:
            return None
        return VectorBatch("m", {f"h{after_seq}": b"\0" * 4}), after_seq + 1

    upgrade = VectorUpgrade(
        embed,
        stored.append,
        last_write=lambda: time.monotonic() if busy[0] else 0.0,
        name="mindpalace-vectors",
    ).start()
    time.sleep(0.6)
    assert calls == [] and not upgrade.done
    busy[0] = False
    assert upgrade.wait(30)
    assert calls == [0, 1, 2]
    assert upgrade.embedded == 2 and upgrade.error is None
    assert [sorted(b.vectors) for b in stored] == [["h0", "h1"]]  # one store, one transaction


def test_database_mode_finds_the_vectors_once_they_are_in(postgres_url: str) -> None:
    """PostgreSQL recalling in the database (pgvector): the upgrade's
    vectors reach the ``vec`` column and its index like any write's."""
    model = SlowHashing()
    palace = Palace(postgres_url, embedder=model, settings=Settings(index="database"))
    try:
        palace.engine.semantic.on_pending = lambda: None
        palace.add_messages(turns(BULK_TEXTS, "sailing"), session="harbour")
        assert palace.pending_vectors() == BULK_TEXTS
        found = palace.recall("sailing trail number 40", limit=3)
        assert "turn 40:" in found[0].memory.content
        assert dense_of(found) == [None] * len(found)
        assert palace.wait_for_vectors(timeout=60) == 0
        found = palace.recall("sailing trail number 40", limit=3)
        assert "turn 40:" in found[0].memory.content
        assert all(score is not None for score in dense_of(found))
    finally:
        palace.close()


def test_database_mode_embeds_what_another_process_left_waiting(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server recalling in the database keeps no warm index to tell that
    rows wait: it looks for writes since its last look (at most every
    ``PENDING_LOOK`` seconds, from its second recall on) and embeds what
    another process's bulk write left waiting."""
    writer = Palace(postgres_url, embedder=SlowHashing(), settings=Settings(index="database"))
    server = Palace(postgres_url, embedder=SlowHashing(), settings=Settings(index="database"))
    try:
        writer.engine.semantic.on_pending = lambda: None  # a command that left at once
        server.recall("warm up", limit=1)  # the first recall (a one-shot process) never looks
        server.recall("warm up", limit=1)  # the second looks: nothing written since
        first = server.engine.semantic.upgrading
        assert first is not None
        assert first.wait(60) and first.embedded == 0
        writer.add_messages(turns(BULK_TEXTS, "sailing"), session="harbour")
        assert server.pending_vectors() == BULK_TEXTS
        found = server.recall("sailing trail number 40", limit=3)
        assert server.engine.semantic.upgrading is first  # within the interval: no look
        assert dense_of(found) == [None] * len(found)
        monkeypatch.setattr(indexing, "PENDING_LOOK", 0.0)
        server.recall("sailing trail number 40", limit=3)
        upgrade = server.engine.semantic.upgrading
        assert upgrade is not None and upgrade is not first
        assert upgrade.wait(60) and upgrade.error is None
        assert upgrade.embedded == BULK_TEXTS and server.pending_vectors() == 0
        found = server.recall("sailing trail number 40", limit=3)
        assert "turn 40:" in found[0].memory.content
        assert all(score is not None for score in dense_of(found))
        # nothing written since: the next look starts no other upgrade
        server.recall("sailing", limit=1)
        assert server.engine.semantic.upgrading is upgrade
    finally:
        writer.close()
        server.close()


def test_a_warm_process_recalls_through_a_bulk_write(
    make_palace: Callable[..., Palace],
) -> None:
    """The usual order: the palace is in use (its warm index loaded), a bulk
    write leaves its rows waiting, recall goes on (rows without a vector
    have no width of their own to join the loaded matrix with)."""
    model = SlowHashing()
    model.gate = threading.Event()
    palace = make_palace(embedder=model)
    sister = palace.remember("My sister lives in Lisbon.")
    for _ in range(2):
        assert palace.recall("sister", limit=1)[0].memory.id == sister.id
    palace.add_messages(turns(BULK_TEXTS, "ferry"), session="crossing")
    assert palace.pending_vectors() == BULK_TEXTS
    for _ in range(2):
        assert palace.recall("where does my sister live", limit=1)[0].memory.id == sister.id
        assert "turn 12:" in palace.recall("ferry trail number 12", limit=1)[0].memory.content
    model.gate.set()
    assert palace.wait_for_vectors(timeout=60) == 0
    assert palace.recall("where does my sister live", limit=1)[0].memory.id == sister.id


def test_a_new_palace_of_waiting_rows_takes_an_embedded_one(
    make_palace: Callable[..., Palace],
) -> None:
    """The other order: every row waits when the index loads, then a small
    write arrives with its vector."""
    model = SlowHashing()
    model.gate = threading.Event()
    palace = make_palace(embedder=model)
    palace.add_messages(turns(BULK_TEXTS, "ferry"), session="crossing")
    for _ in range(2):
        assert palace.recall("ferry trail number 3", limit=1)
    lisbon = palace.remember("My sister lives in Lisbon.")
    for _ in range(2):
        found = palace.recall("where does my sister live", limit=1)
        assert found[0].memory.id == lisbon.id
        assert found[0].stage_scores.get("dense") is not None
    model.gate.set()
    assert palace.wait_for_vectors(timeout=60) == 0


def test_rows_without_vectors_load_at_the_models_width() -> None:
    from mindpalace.store.vector_rows import VectorTable, key_dimensions

    embedded = VectorTable.from_rows([_row(1, np.ones(4, dtype=np.float32).tobytes())])
    assert VectorTable.from_rows([_row(2, None)]).matrix.shape == (1, 0)  # no width known
    waiting = VectorTable.from_rows([_row(2, None)], key_dimensions("local/m/4"))
    assert waiting.matrix.shape == (1, 4)
    for joined in (embedded.extend(waiting), waiting.extend(embedded)):
        assert joined.matrix.shape == (2, 4)
        assert joined.embedded.tolist() in ([True, False], [False, True])
    other = VectorTable.from_rows([_row(3, np.ones(3, dtype=np.float32).tobytes())])
    with pytest.raises(ValueError, match="4 and 3 dimensions"):
        embedded.extend(other)
    assert key_dimensions("hashing/hashing-v1/256") == 256
    assert key_dimensions("m") == 0


def test_a_one_shot_command_leaves_what_waits_to_a_job(
    make_palace: Callable[..., Palace],
) -> None:
    """With ``on_pending`` set (the command line), a recall that finds rows
    waiting hands them to it rather than starting a thread it would have
    to wait for when it closes."""
    writer = make_palace(embedder=SlowHashing())
    writer.engine.semantic.on_pending = lambda: None
    writer.add_messages(turns(BULK_TEXTS), session="trip")
    asked: list[bool] = []
    reader = make_palace(agent_id="reader", embedder=SlowHashing())
    reader.engine.semantic.on_pending = lambda: asked.append(True)
    for _ in range(3):
        reader.recall("trail", limit=1)
    assert asked == [True]
    assert reader.engine.semantic.upgrading is None
    assert reader.pending_vectors() == BULK_TEXTS


def test_the_command_line_starts_no_job_for_a_palace_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": f"t {i}"} for i in range(300)]))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MINDPALACE_EMBEDDER": "local"}
    subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", "--db", ":memory:", "ingest", str(chat)],
        capture_output=True, text=True, env=env, timeout=120, check=True, cwd=tmp_path,
    )  # fmt: skip
    time.sleep(5)  # a job, had one started, would have opened its palace by now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.json"]


def test_the_lock_is_beside_the_palace_file() -> None:
    assert lock_path("/data/p.db") == Path("/data/p.db.vectors-lock")
    assert lock_path("sqlite:///data/p.db") == Path("/data/p.db.vectors-lock")
    assert lock_path("postgresql://u@h/db") is None
    assert lock_path(":memory:") is None


def test_the_job_leaves_a_palace_removed_since(tmp_path: Path) -> None:
    db = tmp_path / "gone.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MINDPALACE_DB": str(db)}
    done = subprocess.run(
        [sys.executable, "-m", "mindpalace.vectorjob"], env=env, timeout=60, check=False
    )
    assert done.returncode == 0
    assert list(tmp_path.iterdir()) == []


def test_vectors_that_arrive_while_the_graph_builds_reach_it() -> None:
    """A graph step under way read the rows while they waited (it skips
    them); the rows that gained a vector meanwhile are added after it."""
    from mindpalace.retrieval import ann
    from mindpalace.store.vector_rows import VectorTable

    if not ann.available():
        pytest.skip("faiss is not installed")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((6_000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    late = set(range(100, 400))

    def table(waiting: set[int]) -> VectorTable:
        rows = [_row(i + 1, None if i in waiting else v.tobytes()) for i, v in enumerate(vectors)]
        return VectorTable.from_rows(rows, 16)

    before, after = table(late), table(set())
    graph = ann.AnnIndex(16)
    graph.sync(before)  # more than a step: built in the background
    graph.refresh(before, after)
    graph.wait()
    graph.wait()
    in_graph = set(graph._seqs.tolist())
    assert {i + 1 for i in late} <= in_graph
    assert len(in_graph) == len(vectors)
