"""The Store protocol, checked the same way on every backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from mindpalace.models import (
    Category,
    Memory,
    NewMemory,
    RecallFilters,
    Scope,
    Visibility,
)
from mindpalace.store import Store
from mindpalace.store.base import VectorBatch
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.validation import content_hash

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
ANY = RecallFilters()
OWNER = Scope(agent_id="owner")


def new(text: str, **kw: object) -> NewMemory:
    fields: dict[str, object] = {"agent_id": "owner", **kw}
    return NewMemory(content=text, content_hash=content_hash(text, 32), **fields)  # type: ignore[arg-type]


def add(store: Store, text: str, n: int = 0, **kw: object) -> Memory:
    memory = new(text, **kw)
    return store.add(
        memory,
        memory_id=f"mem_{n:04d}",
        now=T0 + timedelta(minutes=n),
        scope=Scope(agent_id=memory.agent_id),
    ).memory


def test_add_then_get(store: Store) -> None:
    result = store.add(new("hello store", tags=("a", "b")), memory_id="mem_1", now=T0, scope=OWNER)
    assert result.created
    got = store.get("mem_1", OWNER)
    assert got == result.memory
    assert got is not None and got.tags == ("a", "b") and got.created_at == T0


def test_duplicate_returns_existing(store: Store) -> None:
    first = store.add(new("dup text"), memory_id="mem_1", now=T0, scope=OWNER)
    second = store.add(
        new("dup text"), memory_id="mem_2", now=T0 + timedelta(seconds=5), scope=OWNER
    )
    assert not second.created
    assert second.memory.id == "mem_1"
    assert second.memory.strength > first.memory.strength
    assert second.memory.updated_at == T0 + timedelta(seconds=5)
    assert store.get("mem_2", OWNER) is None


def test_search_text_scores_and_filters_inside(store: Store) -> None:
    add(store, "postgres replication lag alert", 1, category=Category.EVENT)
    add(store, "postgres vacuum settings", 2)
    add(store, "redis eviction policy", 3)
    matches = store.search_text(["postgres", "lag"], OWNER, ANY, limit=10)
    assert [m.memory.id for m in matches] == ["mem_0001", "mem_0002"]
    assert matches[0].bm25 > matches[1].bm25 > 0
    only_events = RecallFilters(categories=(Category.EVENT,))
    assert [m.memory.id for m in store.search_text(["postgres"], OWNER, only_events, limit=10)] == [
        "mem_0001"
    ]
    assert store.search_text([], OWNER, ANY, limit=10) == []


def test_search_applies_scope_before_limit(store: Store) -> None:
    # Many strong matches of another agent must not crowd out the owner's one.
    for n in range(30):
        store.add(
            new("kafka kafka kafka topic", agent_id=f"other{n}"),
            memory_id=f"mem_o{n}",
            now=T0,
            scope=Scope(agent_id=f"other{n}"),
        )
    add(store, "a kafka note", 99)
    matches = store.search_text(["kafka"], OWNER, ANY, limit=1)
    assert [m.memory.id for m in matches] == ["mem_0099"]


def test_stemming(store: Store) -> None:
    add(store, "we were deploying the services", 1)
    assert [m.memory.id for m in store.search_text(["deploy"], OWNER, ANY, limit=5)] == ["mem_0001"]


def test_text_index_follows_delete(store: Store) -> None:
    add(store, "ephemeral unicorn", 1)
    assert store.delete("mem_0001", owner="owner")
    assert store.search_text(["unicorn"], OWNER, ANY, limit=5) == []
    assert not store.delete("mem_0001", owner="owner")


def test_archive_and_delete_respect_owner(store: Store) -> None:
    add(store, "owned", 1)
    assert not store.archive("mem_0001", owner="intruder", now=T0)
    assert not store.delete("mem_0001", owner="intruder")
    assert store.archive("mem_0001", owner="owner", now=T0)
    got = store.get("mem_0001", OWNER)
    assert got is not None and got.archived
    assert store.archive("mem_0001", owner=None, now=T0)  # management


@pytest.mark.parametrize(
    ("scope", "visible"),
    [
        (Scope(agent_id="owner"), {"iso", "shared", "group", "chan"} - {"chan"}),
        (Scope(agent_id="stranger"), {"shared"}),
        (Scope(agent_id="stranger", groups=("g1",)), {"shared", "group"}),
        (Scope(agent_id="stranger", groups=("g2",)), {"shared"}),
        (Scope(agent_id="owner", channel="c1"), {"iso", "shared", "group", "chan"}),
        (Scope(agent_id="owner", channel="c2"), {"iso", "shared", "group"}),
        (Scope.management(), {"iso", "shared", "group", "chan"}),
    ],
)
def test_scope_rules_on_every_read(store: Store, scope: Scope, visible: set[str]) -> None:
    rows = [
        ("iso", new("zeta iso", embed_hash="h_iso")),
        ("shared", new("zeta shared", visibility=Visibility.SHARED, embed_hash="h_shared")),
        ("group", new("zeta group", visibility=Visibility.GROUP, group="g1", embed_hash="h_group")),
        ("chan", new("zeta chan", channel="c1", embed_hash="h_chan")),
    ]
    vectors = {f"h_{i}": np.eye(4, dtype=np.float32)[n].tobytes() for n, (i, _) in enumerate(rows)}
    for memory_id, memory in rows:
        store.add(
            memory,
            memory_id=memory_id,
            now=T0,
            scope=OWNER,
            vectors=VectorBatch("t/t/4", vectors),
        )
    assert {m.memory.id for m in store.search_text(["zeta"], scope, ANY, limit=50)} == visible
    assert {m.id for m in store.list_memories(scope, ANY, limit=50)} == visible
    assert {m.id for m in store.iter_memories(scope)} == visible
    assert {i for i in ("iso", "shared", "group", "chan") if store.get(i, scope)} == visible
    assert store.stats(scope).memories == len(visible)
    # A backend's own nearest-neighbour index (None: the backend has none).
    query = np.full(4, 0.5, dtype=np.float32)
    near = store.nearest("t/t/4", query, scope, ANY, limit=50)
    assert near is None or set(near) == visible
    assert (near is None) == isinstance(store, SQLiteStore)


def test_unembedded_and_pending_counts(store: Store) -> None:
    vector = np.eye(4, dtype=np.float32)[0].tobytes()
    batch = VectorBatch("t/t/4", {"h_done": vector})
    store.add(new("has a vector", embed_hash="h_done"), memory_id="m1", now=T0, scope=OWNER,
              vectors=batch)  # fmt: skip
    store.add(new("waits for one", embed_hash="h_wait"), memory_id="m2", now=T0, scope=OWNER)
    store.add(new("has none at all"), memory_id="m3", now=T0, scope=OWNER)
    assert store.count_unembedded() == 1
    assert store.count_pending_vectors("t/t/4") == 1


def test_list_order_and_paging(store: Store) -> None:
    for n in range(5):
        add(store, f"entry {n}", n)
    ids = [m.id for m in store.list_memories(OWNER, ANY, limit=10)]
    assert ids == [f"mem_{n:04d}" for n in (4, 3, 2, 1, 0)]
    assert [m.id for m in store.list_memories(OWNER, ANY, limit=2, offset=2)] == ids[2:4]


def test_iter_memories_pages(store: Store) -> None:
    for n in range(23):
        add(store, f"item {n}", n)
    assert [m.id for m in store.iter_memories(OWNER, batch=5)] == [
        f"mem_{n:04d}" for n in range(23)
    ]


def test_import_keeps_everything_and_skips_present(store: Store) -> None:
    original = add(store, "imported text", 1)
    copy = replace(
        original,
        id="mem_new",
        content="another text",
        content_hash=content_hash("another text", 32),
        archived=True,
    )
    report = store.import_memories([original, copy], scope=OWNER, new_id=lambda: "mem_unused")
    assert (report.inserted, report.skipped) == (1, 1)
    assert store.get("mem_new", OWNER) == copy


def test_import_is_one_transaction(store: Store) -> None:
    good = replace(
        add(store, "seed", 1), id="mem_x", content="fresh", content_hash=content_hash("fresh", 32)
    )
    bad = replace(
        good, id="mem_y", content="bad", content_hash=content_hash("bad", 32), tags=(None,)
    )  # type: ignore[arg-type]
    with pytest.raises(Exception):  # noqa: B017 - the backend's own error
        store.import_memories([good, bad], scope=OWNER, new_id=lambda: "mem_unused")
    assert store.get("mem_x", OWNER) is None


def test_keyset_listing_pages_newest_first(store: Store) -> None:
    made = [add(store, f"keyset note {n}", n) for n in range(5)]
    # Two memories at one instant: the id breaks the tie.
    twin = store.add(
        new("keyset twin"), memory_id="mem_0003b", now=T0 + timedelta(minutes=3), scope=OWNER
    ).memory
    full = store.list_memories(OWNER, ANY, limit=100)
    assert [m.id for m in full] == [
        "mem_0004",
        "mem_0003b",
        "mem_0003",
        "mem_0002",
        "mem_0001",
        "mem_0000",
    ]
    walked: list[Memory] = []
    before = None
    while True:
        page = store.list_memories(OWNER, ANY, limit=2, before=before)
        if not page:
            break
        walked += page
        before = (page[-1].created_at, page[-1].id)
    assert walked == full
    assert store.list_memories(Scope(agent_id="other"), ANY, limit=10, before=before) == []
    assert made and twin


def test_rows_without_their_floats_and_the_vectors_of_some(store: Store) -> None:
    vector = np.arange(4, dtype=np.float32).tobytes()
    batch = VectorBatch("t/t/4", {"h_done": vector})
    store.add(new("has a vector", embed_hash="h_done"), memory_id="m1", now=T0, scope=OWNER,
              vectors=batch)  # fmt: skip
    store.add(new("waits for one", embed_hash="h_wait"), memory_id="m2", now=T0, scope=OWNER)
    store.add(new("has none at all"), memory_id="m3", now=T0, scope=OWNER)
    store.add(new("the same text again", embed_hash="h_done"), memory_id="m4", now=T0,
              scope=OWNER)  # fmt: skip
    whole = store.load_vectors("t/t/4")
    bare = store.load_vectors("t/t/4", floats=False)
    assert bare.matrix.shape == (4, 0) and whole.matrix.shape == (4, 4)
    assert bare.embedded.tolist() == whole.embedded.tolist() == [True, False, False, True]
    assert bare.ids.tolist() == whole.ids.tolist() and np.array_equal(bare.seq, whole.seq)
    later = store.load_vectors("t/t/4", after_seq=int(bare.seq[1]), floats=False)
    assert later.ids.tolist() == ["m3", "m4"] and later.matrix.shape == (2, 0)
    found = store.memory_vectors("t/t/4", ["m4", "m2", "m3", "m1", "m1", "absent"])
    assert found == {"m1": vector, "m4": vector}
    assert store.memory_vectors("other/model/4", ["m1"]) == {}
