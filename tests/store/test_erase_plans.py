"""An erasure of many memories finds every row by index: each statement it
runs once per chunk of keys (erase_sql.LOOKUPS) is EXPLAINed on both
backends, and none scans a whole table (a 1M-memory palace would scan it
once per 500 erased memories, inside the write transaction). So are the
look-ups a write and a warm index make on every write: the facts a write
may replace, the rows whose flags changed."""

from __future__ import annotations

import pytest

from mindpalace.models import Scope
from mindpalace.store import Store
from mindpalace.store.candidates_sql import FACT_MENTIONS, MEMORIES_BY_KEY
from mindpalace.store.core import FLAG_CHANGES
from mindpalace.store.erase_sql import EDGES_OF_PAIRS, LOOKUPS, MODELS, change_clause

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)

_KEYS = 3  # a chunk of three keys stands for one of 500


def _values(name: str) -> list[object]:
    if name in {"tags", "relations", "skills", "links_from", "links_to", "mentions", "delete"}:
        return [1, 2, 3]
    return ["x"] * _KEYS


def _plan(store: Store, name: str) -> str:
    """The statement as an erasure runs it: the chunk's values as the
    backend passes them (placeholders, or one array on PostgreSQL)."""
    marks, given = store.dialect.marks(_values(name))  # type: ignore[attr-defined]
    sql = LOOKUPS[name].format(marks)
    if name == "superseded":  # versions() narrows it to what the eraser may change
        where, _ = change_clause(Scope(agent_id="alice"))
        sql += f" AND {where}"
        given = [*given, "alice"]
    return _explain(store, sql, given)


def _explain(store: Store, sql: str, params: list[object]) -> str:
    with store._read() as cur:  # type: ignore[attr-defined]
        if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
            rows = store._exec(cur, f"EXPLAIN QUERY PLAN {sql}", params).fetchall()  # type: ignore[attr-defined]
            return "\n".join(str(r[-1]) for r in rows)
        # With sequential scans priced out, a scan is left only where no
        # index serves the statement (tiny tables would be scanned anyway).
        cur.execute("SET enable_seqscan = off")
        try:
            rows = store._exec(cur, f"EXPLAIN {sql}", params).fetchall()  # type: ignore[attr-defined]
        finally:
            cur.execute("RESET enable_seqscan")
        return "\n".join(str(r[0]) for r in rows)


@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_each_erase_lookup_finds_its_rows_by_index(store: Store, name: str) -> None:
    plan = _plan(store, name)
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert "SCAN" not in plan, plan  # SEARCH ... USING (COVERING) INDEX / PRIMARY KEY
        assert "SEARCH" in plan, plan
    else:
        assert "Seq Scan" not in plan, plan
        assert "Index" in plan, plan


def test_the_edges_of_pairs_are_probed_by_key(store: Store) -> None:
    """An erasure reads only the edges its memories supported: each pair of
    entities, probed by the edges' key (not every edge of each entity), and
    finds the stored ones."""
    table, given = store.dialect.pair_rows([(1, 2), (2, 3), (1, 3)])  # type: ignore[attr-defined]
    plan = _explain(store, EDGES_OF_PAIRS.format(table), given)
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert "SCAN e" not in plan and "SCAN entity_edges" not in plan, plan
        assert "SEARCH e USING" in plan, plan
    else:
        assert "Seq Scan on entity_edges" not in plan, plan
        assert "Index" in plan, plan
    with store._write() as cur:  # type: ignore[attr-defined]
        for n in (1, 2, 3, 4):
            store._exec(  # type: ignore[attr-defined]
                cur,
                "INSERT INTO entities (id, agent_id, visibility, name, norm, type, kind,"
                " created_at, updated_at)"
                " VALUES (?, 'a', 'isolated', ?, ?, 'person', 'entity', 0, 0)",
                [f"ent_{n}", f"N{n}", f"n{n}"],
            )
        seqs = [r[0] for r in store._exec(cur, "SELECT seq FROM entities ORDER BY seq").fetchall()]  # type: ignore[attr-defined]
        for (a, b), count in {(0, 1): 5, (1, 2): 1, (0, 3): 7}.items():
            store._exec(  # type: ignore[attr-defined]
                cur,
                "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
                " VALUES (?, ?, ?, 0.5, 0)",
                [seqs[a], seqs[b], count],
            )
    wanted = [(seqs[0], seqs[1]), (seqs[1], seqs[2]), (seqs[0], seqs[2]), (seqs[1], seqs[0])]
    table, given = store.dialect.pair_rows(wanted)  # type: ignore[attr-defined]
    with store._read() as cur:  # type: ignore[attr-defined]
        found = sorted(tuple(r) for r in store._exec(cur, EDGES_OF_PAIRS.format(table), given))  # type: ignore[attr-defined]
    assert found == sorted([(seqs[0], seqs[1], 5), (seqs[1], seqs[2], 1)])


@pytest.mark.parametrize("table", ["embeddings", "part_vectors"])
def test_the_models_of_a_vector_table_are_read_by_its_key(store: Store, table: str) -> None:
    """An erasure looks up vectors per model: the models are found by
    stepping the key from one to the next, not by reading every vector;
    every model is found, in order."""
    sql = MODELS.format(table=table)
    plan = _explain(store, sql, [])
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert f"SCAN {table}" not in plan and "SCAN t" not in plan, plan
    else:
        assert "Seq Scan" not in plan, plan
    blob = b"\x00" * 8
    with store._write() as cur:  # type: ignore[attr-defined]
        for model in ("model-b", "model-a", "model-c"):
            for n in range(3):
                column = "vector" if table == "embeddings" else "vectors"
                store._exec(  # type: ignore[attr-defined]
                    cur,
                    f"INSERT INTO {table} (model, text_hash, {column}) VALUES (?, ?, ?)",
                    [model, f"h{n}", blob],
                )
    with store._read() as cur:  # type: ignore[attr-defined]
        found = [r[0] for r in store._exec(cur, sql).fetchall()]  # type: ignore[attr-defined]
    assert found == ["model-a", "model-b", "model-c"]


def test_full_names_by_first_word_are_read_by_index(store: Store) -> None:
    """The first-name rule runs on every write of a one-word name; it reads
    the part's person entities by first word through an index, not a scan
    of the part's entities (the cost of a write grew with the palace)."""
    from mindpalace.store.same_as_sql import fulls_query

    sql, params = fulls_query(store.dialect.name, ("alice", "isolated", "", ""), "maria")  # type: ignore[attr-defined]
    with store._read() as cur:  # type: ignore[attr-defined]
        if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
            rows = store._exec(cur, f"EXPLAIN QUERY PLAN {sql}", params).fetchall()  # type: ignore[attr-defined]
            plan = "\n".join(str(r[-1]) for r in rows)
            assert "norm>? AND norm<?" in plan, plan
            return
    # A part of 5,000 person entities, analysed: the planner then weighs
    # the prefix index against reading the whole part by its key.
    with store._mutate() as cur:  # type: ignore[attr-defined]
        cur.execute(
            "INSERT INTO entities (id, agent_id, visibility, group_name, channel, name, norm,"
            " type, kind, mentions, created_at, updated_at)"
            " SELECT 'ent' || g, 'alice', 'isolated', '', '', 'n' || g, 'name' || g || ' x',"
            " 'person', 'name', 0, 0, 0 FROM generate_series(1, 5000) g"
        )
    with store._read() as cur:  # type: ignore[attr-defined]
        cur.execute("ANALYZE entities")
        rows = store._exec(cur, f"EXPLAIN {sql}", params).fetchall()  # type: ignore[attr-defined]
    plan = "\n".join(str(r[0]) for r in rows)
    assert "entities_name_prefix" in plan and "Seq Scan" not in plan, plan


def test_flag_changes_are_read_by_index(store: Store) -> None:
    # A warm index reads the rows archived or superseded since it last looked
    # after such a write: by index, not a scan of the palace.
    plan = _explain(store, FLAG_CHANGES, [7])
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert "SCAN" not in plan and "memories_flagged" in plan, plan
    else:
        assert "Seq Scan" not in plan and "memories_flagged" in plan, plan


def test_the_facts_a_write_may_replace_are_read_by_index(store: Store) -> None:
    # Each name's newest mentions by facts: by the partial index, newest first.
    plan = _explain(store, FACT_MENTIONS.format(2000), [7, 2**62])
    assert "mentions_fact" in plan, plan
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert "SCAN" not in plan and "TEMP B-TREE" not in plan, plan
    else:
        assert "Seq Scan" not in plan and "Sort" not in plan, plan


def test_the_memories_those_mentions_point_to_are_read_by_key(store: Store) -> None:
    plan = _explain(store, MEMORIES_BY_KEY.format("seq IN (?, ?, ?)"), [1, 2, 3])
    if store.dialect.name == "sqlite":  # type: ignore[attr-defined]
        assert "PRIMARY KEY" in plan and "SCAN" not in plan, plan
    else:
        assert "memories_pkey" in plan and "Seq Scan" not in plan, plan
