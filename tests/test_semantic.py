"""Semantic recall end to end, on real SQLite files: offline operation, the
embedding_config guard, embedder failures, vectors keyed by text hash, dense
scoping and filters, the unknown-entity gate, the text fallback, explain
output and session support."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindpalace import Memory, Palace, Scope, ValidationError, Visibility
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder, LocalEmbedder
from mindpalace.embed.base import Embedder, Vectors
from mindpalace.embed.texts import vector_key
from mindpalace.errors import EmbeddingError, EmbeddingMismatch
from mindpalace.models import Category, MemoryType, RecallFilters, Source
from mindpalace.retrieval import pipeline
from mindpalace.retrieval.pipeline import NOTHING_RELEVANT, TEXT_ONLY_NOTICE, RecallOptions
from mindpalace.store import Store
from mindpalace.store.core import SqlCore
from mindpalace.store.sqlite import SQLiteStore

MakePalace = Callable[..., Palace]

TEA = "Alice's favourite is green tea."
OTHERS = [
    "The deploy pipeline runs on Fridays.",
    "Alice reviews pull requests in the morning.",
    "We chose SQLite for the embedded store.",
    "Bob repaired the bicycle chain last week.",
    "Alice moved to Berlin in 2021.",
    "The office is on the third floor.",
]


class CountingEmbedder(Embedder):
    """The hashing embedder, recording every batch it is asked to embed."""

    def __init__(self, batch_size: int = 64) -> None:
        self.inner = HashingEmbedder()
        self.config = self.inner.config
        self.batch_size = batch_size
        self.batches: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for batch in self.batches for t in batch]

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return self.inner.embed_batch(texts)


class FailingEmbedder(Embedder):
    """An embedder whose service is down (same config as the hashing one)."""

    def __init__(self) -> None:
        self.config = HashingEmbedder().config
        self.calls = 0

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        raise EmbeddingError("model service is down")


def _embedding_rows(store: Store) -> list[tuple[str, str]]:
    """The stored (model, text hash) pairs, read through the store's own
    connection so the check is the same on every backend; each model by
    its name (the rows carry its code)."""
    assert isinstance(store, SqlCore)
    with store._read() as cur:
        codes = store._exec(
            cur, "SELECT key, value FROM palace_meta WHERE key LIKE 'vector!_code:%' ESCAPE '!'"
        )
        names = {str(v): str(k).removeprefix("vector_code:") for k, v in codes.fetchall()}
        rows = store._exec(cur, "SELECT model, text_hash FROM embeddings").fetchall()
    return sorted((names[str(m)], str(h)) for m, h in rows)


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env.pop("XDG_DATA_HOME", None)
    env.update(HOME=str(home), TMPDIR=str(home))
    return env


# -- 1. no network ----------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every way to open a connection raises; attempts are recorded (in case
    a caller swallows the error)."""
    attempts: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def refused(*args: object, **kwargs: object) -> Any:
            attempts.append(name)
            raise OSError(f"network access attempted: {name}")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    return attempts


def test_remember_and_recall_open_no_socket(no_network: list[str], tmp_path: Path) -> None:
    with Palace(tmp_path / "offline.db", settings=Settings()) as palace:
        assert isinstance(palace.semantic.embedder, LocalEmbedder)
        for text in [*OTHERS[:3], TEA]:
            palace.remember(text)
        palace.remember_many([{"content": t} for t in OTHERS[3:]])
        hits = palace.recall("what does Alice like to drink?")
        palace.reindex()
    assert hits.mode == "hybrid" and hits.notice is None
    assert hits[0].memory.content == TEA
    assert no_network == []
    with pytest.raises(OSError, match="network access attempted"):  # the trap is armed
        socket.create_connection(("127.0.0.1", 9))
    assert no_network == ["create_connection"]


_OFFLINE_SCRIPT = r"""
import json, socket, sys

attempts = []
NETWORK_EVENTS = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                  "socket.gethostbyaddr", "socket.getnameinfo", "socket.sendto",
                  "socket.sendmsg"}

def audit(event, args):
    if event in NETWORK_EVENTS or (
        event == "socket.__new__" and args[1] in (socket.AF_INET, socket.AF_INET6)
    ):
        attempts.append(event)
        raise RuntimeError("network access attempted: " + event)

sys.addaudithook(audit)

def refuse(*args, **kwargs):
    attempts.append("patched")
    raise RuntimeError("network access attempted")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from mindpalace import Palace
from mindpalace.config import Settings

with Palace(sys.argv[1], settings=Settings()) as palace:
    palace.remember("Alice's favourite is green tea.")
    palace.remember("The deploy pipeline runs on Fridays.")
    hits = palace.recall("what does Alice like to drink?")
    result = {"mode": hits.mode, "notice": hits.notice,
              "top": hits[0].memory.content if hits else None,
              "model": palace.semantic.embedder.config.model,
              "attempts": list(attempts)}
try:
    import _socket
    _socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    result["trap"] = False
except RuntimeError:
    result["trap"] = True
print(json.dumps(result))
"""


def test_fresh_process_opens_no_socket(tmp_path: Path) -> None:
    """Imports, model loading, remember and recall in a new interpreter with
    sockets patched and an audit hook refusing any internet socket."""
    proc = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, str(tmp_path / "offline.db")],
        capture_output=True,
        text=True,
        env=_clean_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["trap"] is True
    assert result["attempts"] == []
    assert result["mode"] == "hybrid" and result["notice"] is None
    assert result["top"] == TEA
    assert result["model"] == LocalEmbedder().config.model


# -- 2. semantic recall ----------------------------------------------------------------


def test_recall_by_meaning(palace: Palace) -> None:
    for text in OTHERS[:3]:
        palace.remember(text)
    tea = palace.remember(TEA)
    for text in OTHERS[3:]:
        palace.remember(text)
    hits = palace.recall("what does Alice like to drink?")
    assert hits.mode == "hybrid" and hits.notice is None
    assert hits[0].memory.id == tea.id
    assert "dense" in hits[0].ranks


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("which beverage does she prefer?", TEA),
        ("her preferred beverage", TEA),
        ("fixing a bike", "Bob repaired the bicycle chain last week."),
    ],
)
def test_recall_by_meaning_alone(make_palace: MakePalace, query: str, expected: str) -> None:
    semantic = make_palace()
    text_only = make_palace("texter", settings=Settings(agent_id="texter", embedder="none"))
    for p in (semantic, text_only):
        for text in [TEA, *OTHERS]:
            p.remember(text)
    assert text_only.recall(query) == []  # no shared word: keywords find nothing
    hits = semantic.recall(query)
    assert hits.mode == "hybrid"
    assert hits[0].memory.content == expected
    assert "bm25" not in hits[0].ranks and hits[0].ranks["dense"] == 1


# -- 3. embedding_config ---------------------------------------------------------------


def test_other_model_is_refused_until_reindex(make_palace: MakePalace, store: Store) -> None:
    local = make_palace()
    for text in [TEA, *OTHERS[:3]]:
        local.remember(text)
    local_config = LocalEmbedder().config
    assert store.embedding_config() == local_config
    assert {m for m, _ in _embedding_rows(store)} == {vector_key(local_config)}

    hashing = make_palace(embedder=HashingEmbedder())
    before = hashing.stats().memories
    vectors_before = _embedding_rows(store)
    with pytest.raises(EmbeddingMismatch, match="reindex"):
        hashing.remember("A brand new memory about kafka.")
    with pytest.raises(EmbeddingMismatch):
        hashing.remember_many([{"content": "another new one"}])
    assert hashing.stats().memories == before
    assert _embedding_rows(store) == vectors_before

    hits = hashing.recall("green tea")
    assert hits.mode == "text"
    assert hits.notice is not None
    assert hits.notice.startswith(f"{TEXT_ONLY_NOTICE} Reason: ")
    assert f"{local_config.provider}/{local_config.model}" in hits.notice
    assert "hashing/hashing-v1" in hits.notice and "reindex" in hits.notice
    assert hits[0].memory.content == TEA  # keyword search still works

    progress: list[tuple[int, int]] = []
    assert hashing.reindex(progress=lambda done, total: progress.append((done, total))) == 4
    assert progress[-1] == (4, 4)
    assert store.embedding_config() == HashingEmbedder().config
    rows = _embedding_rows(store)
    assert {m for m, _ in rows} == {vector_key(HashingEmbedder().config)} and len(rows) == 4
    hits = hashing.recall("green tea")
    assert hits.mode == "hybrid" and hits.notice is None
    assert hits[0].memory.content == TEA and "dense" in hits[0].ranks
    hashing.remember("A brand new memory about kafka.")
    assert hashing.stats().memories == before + 1
    assert hashing.reindex() == 0  # everything has a vector now


def test_reindex_after_a_change_of_dimensions(make_palace: MakePalace) -> None:
    make_palace(embedder=HashingEmbedder(dimensions=256)).remember(TEA)
    smaller = make_palace(embedder=HashingEmbedder(dimensions=128))
    assert smaller.recall("green tea").mode == "text"
    assert smaller.reindex() == 1  # the 128-d model's vectors are keyed apart
    hits = smaller.recall("green tea")
    assert hits.mode == "hybrid" and hits[0].memory.content == TEA
    assert smaller.store.load_vectors(vector_key(HashingEmbedder(128).config)).matrix.shape == (
        1,
        128,
    )


def test_open_palace_notices_a_reindex_by_another(make_palace: MakePalace) -> None:
    first = make_palace(embedder=HashingEmbedder(dimensions=64))
    first.remember(TEA)
    make_palace(embedder=HashingEmbedder(dimensions=32)).reindex()
    with pytest.raises(EmbeddingMismatch):
        first.remember("written after the palace changed model")


def test_recall_writes_nothing(tmp_path: Path) -> None:
    with Palace(tmp_path / "new.db", settings=Settings(), embedder=HashingEmbedder()) as palace:
        before = palace.store.generation()
        palace.recall("anything at all")
        assert palace.store.generation() == before
        assert palace.store.embedding_config() is None


# -- 4. embedder failure ----------------------------------------------------------------


def test_failing_embedder_keeps_memories_and_reindex_embeds_them(
    make_palace: MakePalace, store: Store
) -> None:
    failing = FailingEmbedder()
    broken = make_palace(embedder=failing)
    m = broken.remember("the kafka brokers restart nightly")
    more = broken.remember_many([{"content": "kafka retention is seven days"}])
    assert failing.calls == 2
    assert broken.get(m.id) == m and len(more) == 1
    assert int(store.load_vectors(vector_key(HashingEmbedder().config)).embedded.sum()) == 0

    hits = broken.recall("kafka brokers")
    assert hits.mode == "text"
    assert hits.notice == f"{TEXT_ONLY_NOTICE} Reason: model service is down."
    assert hits[0].memory.id == m.id

    working = make_palace(embedder=CountingEmbedder())
    assert working.reindex() == 2
    assert int(store.load_vectors(vector_key(HashingEmbedder().config)).embedded.sum()) == 2
    hits = working.recall("kafka brokers")
    assert hits.mode == "hybrid" and hits.notice is None
    assert hits[0].memory.id == m.id and "dense" in hits[0].ranks


# -- 5. vectors keyed by text hash -------------------------------------------------------


def test_same_text_is_embedded_once(make_palace: MakePalace, store: Store) -> None:
    counting = CountingEmbedder()
    ann = make_palace("ann", embedder=counting)
    bob = make_palace("bob", embedder=counting)
    a = ann.remember("the staging database is postgres 16")
    b = bob.remember("the staging database is postgres 16")
    assert a.id != b.id
    assert counting.texts == ["the staging database is postgres 16"]
    assert len(_embedding_rows(store)) == 1
    ann.remember("the staging database is postgres 16")
    ann.remember_many([{"content": "the staging database is postgres 16"}])
    assert len(counting.batches) == 1
    ann.remember("the staging database is postgres 16", title="Staging")  # new embedded text
    assert counting.texts[-1] == "Staging\nthe staging database is postgres 16"
    assert len(_embedding_rows(store)) == 2
    assert (
        int(store.load_vectors(vector_key(HashingEmbedder().config)).embedded.sum()) == 2
    )  # ann's and bob's memory share a vector


def test_a_repeated_query_is_embedded_once(make_palace: MakePalace) -> None:
    counting = CountingEmbedder()
    palace = make_palace(embedder=counting)
    palace.remember(TEA)
    asked = "what tea does Alice like"
    before = len(counting.texts)
    first = palace.recall(asked)
    again = palace.recall(asked)
    assert [h.memory.id for h in first] == [h.memory.id for h in again] != []
    assert counting.texts[before:] == [asked]
    vector = palace.semantic.query_vector(asked)
    assert vector is not None and not vector.flags.writeable  # shared: nobody may change it
    # Bounded: a text is embedded again once 512 newer ones were asked.
    for i in range(512):
        palace.semantic.query_vector(f"query number {i}")
    palace.semantic.query_vector(asked)
    assert counting.texts.count(asked) == 2
    palace.semantic.forget_queries()
    palace.semantic.query_vector("query number 511")
    assert counting.texts.count("query number 511") == 2


def test_remember_many_embeds_in_batches(make_palace: MakePalace) -> None:
    counting = CountingEmbedder(batch_size=64)
    # inline: a bulk write with a slow model otherwise embeds in the background
    # (tests/retrieval/test_upgrade.py)
    palace = make_palace(embedder=counting, settings=Settings(bulk_embed="inline"))
    records = [{"content": f"note {i} about service {i % 7}", "tags": ["bulk"]} for i in range(300)]
    records += [{"content": "note 5 about service 5"}]  # a duplicate text: embedded once
    stored = palace.remember_many(records)
    assert len(stored) == 301 and stored[-1].id == stored[5].id
    assert len(counting.batches) <= math.ceil(300 / 64)
    assert sorted(counting.texts) == sorted({r["content"] for r in records})
    assert palace.stats().memories == 300
    hits = palace.recall("note 123 service", tags="bulk")
    assert hits.mode == "hybrid" and hits[0].memory.content == "note 123 about service 4"


@pytest.mark.parametrize(
    "bad",
    [
        {"content": "x", "type": "bogus"},
        {"content": "x", "category": 5},
        {"content": "x", "colour": "red"},
        {"title": "no content"},
        "not a mapping",
        {"content": "   "},
        {"content": "x", "visibility": "group"},
        {"content": "x", "confidence": 2},
    ],
    ids=["type", "category", "unknown-field", "no-content", "str", "blank", "no-group", "conf"],
)
def test_remember_many_names_the_bad_record_and_writes_nothing(
    make_palace: MakePalace, store: Store, bad: object
) -> None:
    counting = CountingEmbedder()
    palace = make_palace(embedder=counting)
    palace.remember("already here")
    batches = len(counting.batches)
    records: list[Any] = [{"content": f"record number {i}"} for i in range(12)]
    records[7] = bad
    with pytest.raises(ValidationError, match="record 7"):
        palace.remember_many(records)
    assert palace.stats().memories == 1
    assert len(counting.batches) == batches  # validated before anything was embedded
    assert len(_embedding_rows(store)) == 1


# -- 8. dense scoping and filters ----------------------------------------------------------

AGENTS = ("ann", "bob", "cat")
GROUPS = ("red", "blue")
CHANNELS = (None, "c1", "c2")
WORDS = ("apple", "river", "stone", "cloud", "ember", "maple", "delta", "frost")
TYPES = ("person", "task", "unknown")
CATEGORIES = ("fact", "event", "rule")
TAGS = ("x", "y", "z")
BASE = datetime(2025, 6, 1, tzinfo=timezone.utc)


@st.composite
def a_write(draw: st.DrawFn) -> dict[str, Any]:
    visibility = draw(st.sampled_from(["isolated", "shared", "group"]))
    return {
        "agent": draw(st.sampled_from(AGENTS)),
        "channel": draw(st.sampled_from(CHANNELS)),
        "content": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))),
        "visibility": visibility,
        "group": draw(st.sampled_from(GROUPS)) if visibility == "group" else None,
        "type": draw(st.sampled_from(TYPES)),
        "category": draw(st.sampled_from(CATEGORIES)),
        "tags": draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True)),
        "session": draw(st.sampled_from([None, "s1", "s2"])),
        "created_at": BASE - timedelta(days=draw(st.integers(0, 9))),
        "archive": draw(st.sampled_from([False, False, False, True])),
    }


readers = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sets(st.sampled_from(GROUPS)).map(lambda g: tuple(sorted(g))),
        st.sampled_from(CHANNELS),
    ),
    min_size=1,
    max_size=4,
    unique=True,
)
maybe_day = st.one_of(st.none(), st.integers(0, 10).map(lambda d: BASE - timedelta(days=d)))


@st.composite
def some_filters(draw: st.DrawFn) -> dict[str, Any]:
    def subset(values: tuple[str, ...]) -> list[str] | None:
        return draw(st.none() | st.lists(st.sampled_from(values), min_size=1, unique=True))

    return {
        "types": subset(TYPES),
        "categories": subset(CATEGORIES),
        "tags": subset(TAGS),
        "created_after": draw(maybe_day),
        "created_before": draw(maybe_day),
    }


def _visible(m: Memory, scope: Scope) -> bool:
    """The rule of store/sql.py scope_clause, restated."""
    who = (
        m.agent_id == scope.agent_id
        or m.visibility is Visibility.SHARED
        or (m.visibility is Visibility.GROUP and m.group in scope.groups)
    )
    return who and (m.channel or "") in {"", scope.channel or ""}


def _passes(m: Memory, f: dict[str, Any]) -> bool:
    return (
        not m.archived
        and (f["types"] is None or m.type.value in f["types"])
        and (f["categories"] is None or m.category.value in f["categories"])
        and (f["tags"] is None or bool(set(m.tags) & set(f["tags"])))
        and (f["created_after"] is None or m.created_at >= f["created_after"])
        and (f["created_before"] is None or m.created_at < f["created_before"])
    )


def _recall_filters(f: dict[str, Any]) -> RecallFilters:
    return RecallFilters(
        types=tuple(MemoryType(t) for t in f["types"] or ()),
        categories=tuple(Category(c) for c in f["categories"] or ()),
        tags=tuple(f["tags"] or ()),
        created_after=f["created_after"],
        created_before=f["created_before"],
    )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(a_write(), min_size=1, max_size=12),
    readers,
    some_filters(),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
)
def test_dense_recall_respects_scope_and_filters(
    writes: list[dict[str, Any]],
    reader_scopes: list[tuple[str, tuple[str, ...], str | None]],
    filters: dict[str, Any],
    query_words: list[str],
) -> None:
    embedder = HashingEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "palace.db", busy_timeout=10)
        try:

            def palace(agent: str, groups: Sequence[str], channel: str | None, **kw: Any) -> Palace:
                return Palace(
                    store=store,
                    agent_id=agent,
                    groups=groups,
                    channel=channel,
                    settings=Settings(agent_id=agent),
                    embedder=embedder,
                    **kw,
                )

            stored: dict[str, Memory] = {}
            to_archive: list[tuple[str, str | None, str]] = []
            for w in writes:
                m = palace(w["agent"], (), w["channel"]).remember(
                    w["content"],
                    visibility=w["visibility"],
                    group=w["group"],
                    type=w["type"],
                    category=w["category"],
                    tags=w["tags"],
                    session=w["session"],
                    created_at=w["created_at"],
                )
                stored[m.id] = m
                if w["archive"]:
                    to_archive.append((w["agent"], w["channel"], m.id))
            for agent, channel, memory_id in to_archive:
                if not stored[memory_id].archived:
                    palace(agent, (), channel).forget(memory_id)
                    stored[memory_id] = store.get(memory_id, Scope.management())  # type: ignore[assignment]

            query = " ".join(query_words)
            for agent, groups, channel in reader_scopes:
                scope = Scope(agent_id=agent, groups=groups, channel=channel)
                expected = {
                    i for i, m in stored.items() if _visible(m, scope) and _passes(m, filters)
                }
                reader = palace(agent, groups, channel)
                hits = reader.recall(query, limit=100, **filters)
                assert hits.mode == "hybrid"
                assert {h.memory.id for h in hits} <= expected
                # With no similarity floor every visible, matching memory is a
                # candidate: the dense mask must be exactly the scope and filters.
                everything = palace(
                    agent,
                    groups,
                    channel,
                    recall_options=RecallOptions(dense_floor=-1.0, unknown_entity_gate=False),
                ).recall(query, limit=100, **filters)
                assert {h.memory.id for h in everything} == expected
                dense = reader.semantic.dense()
                assert dense is not None
                wanted = _recall_filters(filters)
                allowed = store.ids_matching(scope, wanted) if wanted.tags else None
                mask = dense.mask(scope, wanted, allowed)
                unfiltered = dense.mask(scope, RecallFilters(include_archived=True))
                assert {str(i) for i in dense.table.ids[mask]} == expected
                assert {str(i) for i in dense.table.ids[unfiltered]} == {
                    i for i, m in stored.items() if _visible(m, scope)
                }
        finally:
            store.close()


def test_dense_path_honours_the_sources_filter(make_palace: MakePalace, clock: Any) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    palace.remember("kafka brokers restart nightly", source="pipeline")
    manual = palace.remember("kafka partitions rebalance", source="manual")
    dense = palace.semantic.dense()
    hits = pipeline.recall(
        palace.store,
        query="kafka brokers",
        scope=palace.scope,
        filters=RecallFilters(sources=(Source.MANUAL,)),
        limit=10,
        now=clock(),
        query_vector=palace.semantic.query_vector("kafka brokers"),
        dense_index=dense,
        options=RecallOptions(dense_floor=-1.0),
    )
    assert hits.mode == "hybrid"
    assert [h.memory.id for h in hits] == [manual.id]


# -- 9. the unknown-entity gate ------------------------------------------------------------

ENTITY_QUESTION = "What did Zanzibar Quimby say about NASA?"


@pytest.fixture(params=["hashing", "none"])
def gated(request: pytest.FixtureRequest, make_palace: MakePalace) -> Palace:
    palace = make_palace(settings=Settings(embedder=request.param))
    palace.remember("We always say thanks to the reviewers.")
    palace.remember("The kafka brokers restart nightly.")
    palace.remember(TEA)
    return palace


def test_gate_answers_nothing_for_unknown_names(gated: Palace) -> None:
    hits = gated.recall(ENTITY_QUESTION)
    assert hits == []
    assert hits.notice == NOTHING_RELEVANT.format(terms="'zanzibar', 'quimby', 'nasa'")
    assert hits.mode == ("hybrid" if gated.semantic.embedder else "text")


def test_gate_passes_known_names(gated: Palace) -> None:
    quimby = gated.remember("Zanzibar Quimby told NASA the launch slipped a week.")
    hits = gated.recall(ENTITY_QUESTION)
    assert hits and hits[0].memory.id == quimby.id
    assert "Nothing relevant" not in (hits.notice or "")
    # one of two names known: not more than half unknown, so no gate
    assert gated.recall("What did Alice say about NASA?")


def test_gate_lets_a_new_destination_through(gated: Palace) -> None:
    """A place the user is going to may be new; their taste is stored."""
    hotel = gated.remember("I like hotels with a rooftop pool and a view of the city.")
    hits = gated.recall("Can you suggest a hotel for my upcoming trip to Miami?")
    assert hits and hits[0].memory.id == hotel.id
    # who or what is asked about still has to be known
    assert gated.recall("What did Quimby think of the hotel in Miami?") == []


def test_gate_reads_a_role_or_a_kind_as_no_name(gated: Palace) -> None:
    """ "my TA", "a Muslim family": what the palace says in other words."""
    helper = gated.remember("Bernadette, the teaching assistant, wants the plan printed by 8:30.")
    hits = gated.recall("How should I get the plan to my TA?")
    assert hits and hits[0].memory.id == helper.id
    halal = gated.remember("We keep separate halal and vegetarian shelves for the parcels.")
    hits = gated.recall("Can a Muslim family get a halal parcel?")
    assert hits and hits[0].memory.id == halal.id
    # the same word named on its own is still a name the palace must know
    assert gated.recall("What did TA say about the plan?") == []


def test_gate_reads_days_and_months_as_dates(gated: Palace) -> None:
    """No memory needs to say "Saturday" for "last Saturday" to be asked about."""
    concert = gated.remember("Saw Queen live with my parents: the concert was great.")
    hits = gated.recall("Who did I go with to the concert last Saturday?")
    assert hits and hits[0].memory.id == concert.id
    assert gated.recall("What did Quimby play at the concert last Saturday?") == []


def test_gate_can_be_switched_off(make_palace: MakePalace) -> None:
    palace = make_palace(
        embedder=HashingEmbedder(), recall_options=RecallOptions(unknown_entity_gate=False)
    )
    say = palace.remember("We always say thanks to the reviewers.")
    hits = palace.recall(ENTITY_QUESTION)
    assert [h.memory.id for h in hits] == [say.id]
    assert hits.notice is None


def test_gate_only_counts_what_the_reader_may_see(make_palace: MakePalace) -> None:
    ann = make_palace("ann", embedder=HashingEmbedder())
    bob = make_palace("bob", embedder=HashingEmbedder())
    secret = bob.remember("Zanzibar Quimby briefed NASA on the budget.")
    assert ann.recall(ENTITY_QUESTION) == []  # not even a hint that bob knows
    assert [h.memory.id for h in bob.recall(ENTITY_QUESTION)] == [secret.id]
    bob.forget(secret.id)
    archived = bob.recall(ENTITY_QUESTION)
    assert archived == [] and archived.notice is not None and "quimby" in archived.notice


# -- 10. the text fallback -------------------------------------------------------------------


def test_text_fallback_full_text_first_then_substrings_by_recency(
    make_palace: MakePalace,
) -> None:
    assert TEXT_ONLY_NOTICE == "Using text search (semantic search is not available)."
    palace = make_palace(settings=Settings(embedder="none"))
    old = palace.remember("kubernetes cluster upgrade", created_at="2025-01-01T00:00:00Z")
    config = palace.remember("the kube config file lives in home", created_at="2024-01-01")
    newer = palace.remember("kubelet restarts nightly", created_at="2025-06-01T00:00:00Z")
    palace.remember("unrelated words here")
    make_palace("bob", settings=Settings(agent_id="bob", embedder="none")).remember(
        "kubeadm join token for bob only"
    )

    hits = palace.recall("kube")
    assert hits.mode == "text"
    assert hits.notice == f"{TEXT_ONLY_NOTICE} Reason: no embedding model is configured."
    assert [h.memory.id for h in hits] == [config.id, newer.id, old.id]
    assert [set(h.ranks) for h in hits] == [{"bm25", "final"}, *[{"substring", "final"}] * 2]
    assert [h.ranks["final"] for h in hits] == [1, 2, 3]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].stage_scores["relevance"] == 1.0 and hits[1].score > hits[2].score > 0

    assert [h.memory.id for h in palace.recall("kube", limit=2)] == [config.id, newer.id]
    explained = hits[1].to_dict(explain=True)["explain"]
    assert explained["ranks"] == {"substring": 1, "final": 2}


def test_text_fallback_substrings_respect_filters(make_palace: MakePalace) -> None:
    palace = make_palace(settings=Settings(embedder="none"))
    palace.remember("kubernetes cluster upgrade", category="event")
    rule = palace.remember("kubectl apply needs review", category="rule")
    assert [h.memory.id for h in palace.recall("kube", categories="rule")] == [rule.id]


# -- 11. explain ---------------------------------------------------------------------------------


def test_explain_shows_ranks_and_scores(palace: Palace) -> None:
    for text in [TEA, *OTHERS]:
        palace.remember(text)
    hits = palace.recall("green tea")
    top = hits[0].to_dict(explain=True)
    assert top["content"] == TEA
    explain = top["explain"]
    assert explain["ranks"]["final"] == 1
    assert {"bm25", "dense"} <= set(explain["ranks"])
    assert {"final", "keyword", "dense", "fused", "session_support"} <= set(explain["scores"])
    assert "bm25" not in explain["scores"]  # raw BM25 carries whole-index statistics
    assert all(isinstance(v, float) for v in explain["scores"].values())
    assert "explain" not in hits[0].to_dict()
    json.dumps(top)  # JSON-ready
    for rank, hit in enumerate(hits, start=1):
        assert hit.ranks["final"] == rank
        assert "bm25" in hit.ranks or "dense" in hit.ranks


def test_cli_recall_explain_prints_the_json(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Palace(db, settings=Settings()) as palace:
        for text in [TEA, *OTHERS]:
            palace.remember(text)
    command = ["recall", "green tea", "--explain", "--limit", "3"]
    proc = subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", "--db", str(db), *command],
        capture_output=True,
        text=True,
        env=_clean_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert 1 <= len(out) <= 3
    assert out[0]["content"] == TEA
    assert [h["explain"]["ranks"]["final"] for h in out] == list(range(1, len(out) + 1))
    assert {"bm25", "dense"} <= set(out[0]["explain"]["ranks"])
    assert out[0]["explain"]["scores"]["final"] > 0
    ceiling = RecallOptions().relevance_ceiling
    assert out[0]["score"] == pytest.approx(
        min(1.0, out[0]["explain"]["scores"]["final"] / ceiling)
    )


# -- 12. session support ----------------------------------------------------------------------

SESSION = [
    "we booked the offsite venue",
    "the kafka brokers crashed during the upgrade",
    "after that the upgrade was rolled back",
]
SESSION_QUERY = "kafka brokers crashed upgrade"


def _session(make_palace: MakePalace, options: RecallOptions) -> tuple[Palace, list[Memory]]:
    """Three turns of session s1 (the middle one matches the query best) and
    a memory in no session."""
    palace = make_palace(embedder=HashingEmbedder(), recall_options=options)
    memories = [
        palace.remember(text, session="s1", created_at=BASE + timedelta(minutes=minute))
        for minute, text in enumerate(SESSION)
    ]
    memories.append(palace.remember("kafka upgrade notes for later", created_at=BASE))
    return palace, memories


def _by_id(hits: Sequence[Any]) -> dict[str, Any]:
    return {h.memory.id: h for h in hits}


def test_neighbour_lends_support(make_palace: MakePalace) -> None:
    options = RecallOptions(neighbour_weight=0.3, session_weight=0.0)
    palace, (venue, crash, rollback, control) = _session(make_palace, options)
    ranked = palace.recall(SESSION_QUERY)
    assert ranked[0].memory.id == crash.id
    hits = _by_id(ranked)
    neighbour = hits[rollback.id]
    support = neighbour.stage_scores["session_support"]
    assert support == pytest.approx(0.3 * hits[crash.id].stage_scores["fused"])
    assert neighbour.stage_scores["relevance"] == pytest.approx(
        neighbour.stage_scores["fused"] + support
    )
    assert neighbour.stage_scores["relevance"] > neighbour.stage_scores["fused"]
    # in no session: written on its own, it is its own neighbour
    control_scores = hits[control.id].stage_scores
    assert control_scores["session_support"] == pytest.approx(0.3 * control_scores["fused"])
    before = [hits[i].stage_scores["fused"] for i in (venue.id, rollback.id) if i in hits]
    assert hits[crash.id].stage_scores["session_support"] == pytest.approx(0.3 * max(before))


def test_default_options_lend_session_support(make_palace: MakePalace) -> None:
    palace, (_, _, rollback, _) = _session(make_palace, RecallOptions())
    hits = _by_id(palace.recall(SESSION_QUERY))
    scores = hits[rollback.id].stage_scores
    assert scores["session_support"] > 0 and scores["relevance"] > scores["fused"]


def test_zero_weights_give_no_support(make_palace: MakePalace) -> None:
    options = RecallOptions(neighbour_weight=0.0, session_weight=0.0)
    palace, _ = _session(make_palace, options)
    hits = palace.recall(SESSION_QUERY)
    assert len(hits) >= 3
    for hit in hits:
        assert hit.stage_scores["session_support"] == 0.0
        assert hit.stage_scores["relevance"] == pytest.approx(hit.stage_scores["fused"])


def test_hidden_neighbours_lend_nothing(make_palace: MakePalace) -> None:
    options = RecallOptions(neighbour_weight=0.3, session_weight=0.0)
    bob = make_palace("bob", embedder=HashingEmbedder(), recall_options=options)
    ann = make_palace("ann", embedder=HashingEmbedder(), recall_options=options)
    crash = bob.remember(SESSION[1], session="s1", created_at=BASE)
    rollback = ann.remember(
        SESSION[2], session="s1", visibility="shared", created_at=BASE + timedelta(minutes=1)
    )
    ann_hits = _by_id(ann.recall(SESSION_QUERY))
    assert set(ann_hits) == {rollback.id}
    assert ann_hits[rollback.id].stage_scores["session_support"] == 0.0
    bob_hits = _by_id(bob.recall(SESSION_QUERY))  # bob sees both: the support is real
    assert bob_hits[rollback.id].stage_scores["session_support"] == pytest.approx(
        0.3 * bob_hits[crash.id].stage_scores["fused"]
    )


LONG_REPLY = (
    "The kafka brokers crashed because the upgrade changed the log format; "
    + "a long explanation of retention, partitions and replicas follows. " * 20
)


def test_vectors_carry_the_length_of_their_content(make_palace: MakePalace, store: Store) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    short = palace.remember("green tea")
    long = palace.remember(LONG_REPLY)
    table = store.load_vectors(vector_key(HashingEmbedder().config))
    lengths = dict(zip(table.ids.tolist(), table.length.tolist(), strict=True))
    assert lengths == {short.id: len("green tea"), long.id: len(long.content)}
    assert len(long.content) > 1000
    first_seq = int(table.seq[table.ids.tolist().index(short.id)])
    later = store.load_vectors(vector_key(HashingEmbedder().config), after_seq=first_seq)
    assert later.length.tolist() == [len(long.content)]
    assert table.take(np.array([1, 0])).length.tolist() == [len(long.content), len("green tea")]


def test_a_long_turn_that_is_not_its_sessions_best_gets_less_support(
    make_palace: MakePalace,
) -> None:
    """A long turn carries its own context: its session support is scaled
    by ``self_contained / length``; short turns and the session's best keep
    all of theirs."""
    supports = {}
    for limit in (0, 400):
        palace = make_palace(
            f"agent{limit}",
            embedder=HashingEmbedder(),
            recall_options=RecallOptions(self_contained=limit),
        )
        turns = [
            palace.remember(text, session="s1", created_at=BASE + timedelta(minutes=minute))
            for minute, text in enumerate(
                ["kafka brokers crashed after the upgrade", LONG_REPLY, "ok, noted"]
            )
        ]
        hits = _by_id(palace.recall(SESSION_QUERY))
        assert hits[turns[0].id].stage_scores["fused"] > hits[turns[1].id].stage_scores["fused"]
        supports[limit] = {
            i: hits[t.id].stage_scores["session_support"]
            for i, t in enumerate(turns)
            if t.id in hits
        }
    assert supports[0][1] > 0
    assert supports[400][1] == pytest.approx(supports[0][1] * 400 / len(LONG_REPLY.strip()))
    assert supports[400][0] == pytest.approx(supports[0][0])  # the best keeps its support
    if 2 in supports[0]:
        assert supports[400][2] == pytest.approx(supports[0][2])  # short: unchanged


def test_the_sessions_best_keeps_its_support_however_long(make_palace: MakePalace) -> None:
    # Keyword evidence alone, so that the long turn is surely the best.
    keyword_only = RecallOptions(dense_weight=0.0)
    palace = make_palace(embedder=HashingEmbedder(), recall_options=keyword_only)
    long = palace.remember(LONG_REPLY, session="s1", created_at=BASE)
    palace.remember("see you tomorrow then", session="s1", created_at=BASE + timedelta(minutes=1))
    scaled = _by_id(palace.recall(SESSION_QUERY))[long.id].stage_scores
    palace.recall_options = replace(keyword_only, self_contained=0)
    whole = _by_id(palace.recall(SESSION_QUERY))[long.id].stage_scores
    assert scaled["fused"] == pytest.approx(whole["fused"])
    assert whole["session_support"] > 0
    assert scaled["session_support"] == pytest.approx(whole["session_support"])


def test_a_broken_model_install_degrades_to_text_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mindpalace import embed
    from mindpalace.embed import local

    # An install whose model files are missing (the default folder is empty).
    monkeypatch.setattr(local.LocalEmbedder.__init__, "__defaults__", (tmp_path / "missing",))
    embed._bundled.cache_clear()  # the process may hold a working instance already
    with Palace(tmp_path / "p.db", settings=Settings()) as palace:
        palace.remember("kubernetes upgrade notes")
        hits = palace.recall("kubernetes")
        assert hits.mode == "text" and len(hits) == 1
        assert hits.notice is not None and "no embedding model in" in hits.notice
