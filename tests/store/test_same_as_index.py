"""Only set same-entity links are indexed (schema 33): the index serves
every read of it (a key, or a list of keys), and a removed full name still
unlinks its short one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.store import Store
from mindpalace.store.sqlite import SQLiteStore


def _definition(store: Store) -> str:
    with store._read() as cur:  # type: ignore[attr-defined]
        if isinstance(store, SQLiteStore):
            sql = "SELECT sql FROM sqlite_master WHERE name = 'entities_same_as'"
        else:
            sql = "SELECT indexdef FROM pg_indexes WHERE indexname = 'entities_same_as'"
        return str(store._exec(cur, sql).fetchone()[0])  # type: ignore[attr-defined]


def test_the_index_holds_set_links_only(store: Store) -> None:
    assert "same_as IS NOT NULL" in _definition(store).replace("(", "").replace(")", "")


def test_reads_of_a_link_use_it_and_a_removed_full_name_unlinks(tmp_path: Path) -> None:
    path = tmp_path / "palace.db"
    with Palace(path, agent_id="ann", settings=Settings(agent_id="ann", embedder="none")) as p:
        p.remember("Maria Lopez owns the billing service")
        p.remember("Maria: I will take it")
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        linked = con.execute(
            "SELECT seq, same_as FROM entities WHERE same_as IS NOT NULL"
        ).fetchall()
        assert linked  # "maria" is the same entity as "maria lopez"
        for sql, params in (
            ("SELECT seq FROM entities WHERE same_as = ?", [1]),
            ("SELECT seq FROM entities WHERE same_as IN (?, ?)", [1, 2]),
        ):
            plan = " ".join(str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert "entities_same_as" in plan, plan
        short, full = linked[0]
        con.execute("DELETE FROM mentions WHERE entity_seq = ?", [full])
        con.execute("DELETE FROM entities WHERE seq = ?", [full])
        con.commit()
        assert con.execute("SELECT same_as FROM entities WHERE seq = ?", [short]).fetchone() == (
            None,
        )
    finally:
        con.close()
