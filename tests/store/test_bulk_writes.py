"""Batched writes (one transaction, results read once, entities looked up
once per batch) give exactly what one-by-one writes give, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from mindpalace import Palace
from mindpalace.models import NewMemory, RecallFilters, Scope
from mindpalace.store import Store
from mindpalace.validation import content_hash

OWNER = Scope(agent_id="owner")
TEXTS = [
    "Alice Chen leads Project Falcon in Berlin.",
    "Alice said Falcon ships on Friday.",
    "Bob Stone met Alice Chen about Falcon.",
    "Alice said Falcon ships on Friday.",  # a duplicate inside the batch
    "Berlin office moves to Kreuzberg; Bob Stone organises it.",
]


def _graph(store: Store, agent: str) -> tuple[list[tuple[object, ...]], dict[str, list[str]]]:
    scope = Scope(agent_id=agent)
    entities = [(e.norm, e.type, e.mentions, e.aliases) for e in store.entities(scope, limit=1000)]
    memories = store.list_memories(scope, RecallFilters(), limit=100)
    by_text = store.entities_of([m.id for m in memories], scope)
    linked = {m.content: sorted(e.norm for e in by_text.get(m.id, [])) for m in memories}
    return sorted(entities, key=repr), linked


def test_batch_links_and_dedups_as_one_by_one(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    batched = make_palace("batched").remember_many([{"content": t} for t in TEXTS])
    single = make_palace("single")
    one_by_one = [single.remember(t) for t in TEXTS]
    assert batched[1].id == batched[3].id  # the duplicate is the same memory
    assert len({m.id for m in batched}) == len({m.id for m in one_by_one}) == 4
    assert [m.content for m in batched] == [m.content for m in one_by_one]
    # the duplicate was bumped in both cases, the row read back after the batch
    assert batched[3].strength == pytest.approx(one_by_one[3].strength)
    assert _graph(store, "batched") == _graph(store, "single")
    assert _graph(store, "batched")[0]  # entities were linked at all


def test_failing_batch_writes_nothing(store: Store) -> None:
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)

    def new(text: str) -> NewMemory:
        return NewMemory(content=text, content_hash=content_hash(text, 32), agent_id="owner")

    store.add(new("kept before"), memory_id="mem_kept", now=now, scope=OWNER)
    before = store.change_counters()
    # the last item reuses an id: the statement fails after earlier ones ran
    # (PostgreSQL: inside the pipeline), and the whole batch must roll back
    items = [(new(f"batch item {i}"), f"mem_b{i}") for i in range(50)]
    items.append((new("another text"), "mem_b0"))
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        store.add_many(items, now=now, scope=OWNER)
    assert store.ids_matching(OWNER, RecallFilters()) == {"mem_kept"}
    assert store.change_counters() == before
    # and the connection is usable afterwards
    assert store.add(new("after"), memory_id="mem_after", now=now, scope=OWNER).created


# Names met again and again in one batch (edges strengthened several times),
# types settled by later evidence, relations, and two facts where the second
# replaces the first inside the batch (supersession reads the batch's links).
GRAPH_TEXTS = [
    "Alice Chen owns Project Falcon; Bob Stone maintains Falcon and Redis.",
    "Falcon depends on Redis and Postgres.",
    "Alice met Bob Stone in Berlin about Falcon and Redis.",
    "Dr Alice Chen said Falcon depends on Redis.",
    "The Falcon service is owned by Alice Chen.",
    "Bob Stone is the maintainer of Redis.",
    "Alice Chen's office is in Berlin.",
    "Alice Chen's office is in Munich now.",
    "Bob Stone met Alice Chen, Redis and Falcon again in Berlin.",
    "Zed and Ymir met Alice Chen; Zed says Falcon needs Redis.",
]


def _graph_rows(store: Store, agent: str) -> dict[str, list[tuple[object, ...]]]:
    """Every graph row of ``agent``'s memories, keyed by texts and names
    (ids and write times differ between two palaces)."""
    queries = {
        "entities": "SELECT e.norm, e.name, e.type, e.kind, e.mentions FROM entities e"
        " WHERE e.agent_id = '{a}'",
        "aliases": "SELECT e.norm, a.alias FROM entity_aliases a"
        " JOIN entities e ON e.seq = a.entity_seq WHERE e.agent_id = '{a}'",
        "mentions": "SELECT m.content, e.norm, x.surface, x.count FROM mentions x"
        " JOIN memories m ON m.seq = x.memory_seq JOIN entities e ON e.seq = x.entity_seq"
        " WHERE m.agent_id = '{a}'",
        "edges": "SELECT s.norm, d.norm, g.count, g.weight FROM entity_edges g"
        " JOIN entities s ON s.seq = g.src_seq JOIN entities d ON d.seq = g.dst_seq"
        " WHERE s.agent_id = '{a}'",
        "relations": "SELECT m.content, s.norm, d.norm, r.kind, r.sentence"
        " FROM entity_relations r JOIN memories m ON m.seq = r.memory_seq"
        " JOIN entities s ON s.seq = r.src_seq JOIN entities d ON d.seq = r.dst_seq"
        " WHERE m.agent_id = '{a}'",
        "superseded": "SELECT m.content, n.content FROM memories m"
        " JOIN memories n ON n.id = m.superseded_by WHERE m.agent_id = '{a}'",
        "tags": "SELECT m.content, t.tag FROM memory_tags t"
        " JOIN memories m ON m.seq = t.memory_seq WHERE m.agent_id = '{a}'",
        "strength": "SELECT content, strength FROM memories WHERE agent_id = '{a}'",
    }
    out: dict[str, list[tuple[object, ...]]] = {}
    with store._read() as cur:  # type: ignore[attr-defined]
        for name, sql in queries.items():
            cur.execute(sql.format(a=agent))
            out[name] = sorted(tuple(row) for row in cur.fetchall())
        # Rows are keyed in the order they were written.
        cur.execute(f"SELECT content FROM memories WHERE agent_id = '{agent}' ORDER BY seq")
        out["order"] = [tuple(row) for row in cur.fetchall()]
    return out


def test_batch_stores_the_graph_one_by_one_writes_store(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    # The batch collects mention, edge and relation rows and writes each
    # kind once; one-by-one writes write them memory by memory.
    # Tags on some, and a duplicate of a row the batch has not written yet.
    records = [{"content": t, "tags": ["t", f"n{i % 3}"] if i % 2 else []} for i, t in
               enumerate([*GRAPH_TEXTS, GRAPH_TEXTS[2]])]  # fmt: skip
    make_palace("batched").remember_many(records)
    single = make_palace("single")
    for record in records:
        single.remember(**record)
    batched, one_by_one = _graph_rows(store, "batched"), _graph_rows(store, "single")
    assert batched == one_by_one
    edges = {(a, b): (n, w) for a, b, n, w in batched["edges"]}
    assert max(n for n, _ in edges.values()) >= 3  # an edge met three times in the batch
    assert batched["relations"] and batched["superseded"] and batched["tags"]
    assert len(batched["order"]) == len(GRAPH_TEXTS)
    assert any(t == "person" for _, _, t, _, _ in batched["entities"])


_FAIL_ON_BOOM = {
    "sqlite": [
        "CREATE TEMP TRIGGER boom BEFORE INSERT ON memories WHEN NEW.content LIKE '%boom%'"
        " BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
    ],
    "postgres": [
        "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN IF NEW.content LIKE '%boom%' THEN RAISE EXCEPTION 'boom refused'; END IF;"
        " RETURN NEW; END $$",
        "CREATE TRIGGER boom BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION boom()",
    ],
}


def _counts(store: Store) -> dict[str, int]:
    tables = ("memories", "entities", "entity_aliases", "mentions", "entity_edges")
    with store._read() as cur:  # type: ignore[attr-defined]
        out = {}
        for table in (*tables, "entity_relations", "memory_tags"):
            cur.execute(f"SELECT COUNT(*) FROM {table}")
            out[table] = int(cur.fetchone()[0])
    return out


def test_a_batch_failing_in_its_last_rows_leaves_nothing(
    make_palace: Callable[..., Palace], store: Store, backend: str
) -> None:
    # The batch's rows are written late (a few dozen memories to a
    # statement, links after them): a failure there, after new entities and
    # earlier rows went in, must take all of it back.
    palace = make_palace("owner")
    palace.remember("Kept before: Alice Chen leads Falcon.", tags=["kept"])
    before = _counts(store)
    with store._write() as cur:  # type: ignore[attr-defined]
        for statement in _FAIL_ON_BOOM[backend]:
            cur.execute(statement)
    records = [
        {"content": f"{GRAPH_TEXTS[i % len(GRAPH_TEXTS)]} Turn {i} with Zora{i}.", "tags": ["t"]}
        for i in range(90)
    ]
    records[75]["content"] = "boom goes Quentin Blake"
    with pytest.raises(Exception, match="boom refused"):
        palace.remember_many(records)
    assert _counts(store) == before
    assert palace.remember_many(records[:3])  # the store still writes
