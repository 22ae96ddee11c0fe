"""Which parts of a palace's PostgreSQL schema would stop Citus from sharding it.

Citus distributes a table by one column and requires, for each distributed
table, that every primary key and unique constraint include that column,
and that a foreign key between two distributed tables include it on both
sides (co-location); tables without the column can only be reference tables
(copied to every node, every write a distributed transaction). This reads a
freshly migrated palace's catalog and applies those rules with ``agent_id``
(the owner of a memory, an entity, a skill, a signal) as the distribution
column, as docs/scaling.md proposes::

    python -m bench.citus_check            # a throwaway palace on the embedded server

Prints one line per table: distributable as it is, or what blocks it. Citus
itself is not installed here (FACTS.md: no Debian package), so this checks
the rules, not a cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import psycopg

from bench.pgserver import ThrowawayPostgres

COLUMN = "agent_id"
# Tables that hold one row for the whole palace: reference tables by nature.
SINGLETONS = ("palace_meta", "embedding_config", "schema_migrations", "text_stats")


def check(url: str) -> dict[str, list[str]]:
    """Table -> what stops it from being distributed by ``agent_id`` (empty:
    nothing), from the catalog of the palace at ``url``."""
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                " ORDER BY tablename"
            ).fetchall()
        ]
        columns: dict[str, set[str]] = {t: set() for t in tables}
        for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ).fetchall():
            if table in columns:
                columns[table].add(column)
        keys = conn.execute(
            "SELECT c.conrelid::regclass::text, c.conname, c.contype,"
            " ARRAY(SELECT a.attname FROM unnest(c.conkey) k"
            "       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k),"
            " c.confrelid::regclass::text,"
            " ARRAY(SELECT a.attname FROM unnest(c.confkey) k"
            "       JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k)"
            " FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
            " WHERE n.nspname = current_schema() AND c.contype IN ('p', 'u', 'f')"
        ).fetchall()
        unique_indexes = conn.execute(
            "SELECT t.relname, i.relname, ARRAY(SELECT a.attname FROM unnest(x.indkey) k"
            " JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k)"
            " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = current_schema() AND x.indisunique AND NOT x.indisprimary"
            # Those backing a constraint are reported with it.
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)"
        ).fetchall()
    return _blockers(tables, columns, keys, unique_indexes)


def _blockers(
    tables: Sequence[str],
    columns: dict[str, set[str]],
    keys: Sequence[Any],
    unique_indexes: Sequence[Any],
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {t: [] for t in tables}
    for table in tables:
        if table in SINGLETONS:
            out[table].append("one row for the whole palace: a reference table")
        elif COLUMN not in columns[table]:
            out[table].append(f"no {COLUMN} column (a child of another table, or shared)")
    for table, name, kind, cols, target, target_cols in keys:
        if table not in out or table in SINGLETONS:
            continue
        if kind in ("p", "u") and COLUMN not in cols:
            label = "primary key" if kind == "p" else "unique constraint"
            out[table].append(f"{label} {name} ({', '.join(cols)}) lacks {COLUMN}")
        if kind == "f" and (COLUMN not in cols or COLUMN not in (target_cols or [])):
            out[table].append(
                f"foreign key {name} ({', '.join(cols)}) -> {target} does not carry {COLUMN}"
            )
    for table, name, cols in unique_indexes:
        if table in out and table not in SINGLETONS and COLUMN not in cols:
            shown = ", ".join(c for c in cols if c) or "an expression"
            out[table].append(f"unique index {name} ({shown}) lacks {COLUMN}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    server = ThrowawayPostgres(prefix="mindpalace_citus")
    try:
        found = check(server.create("citus"))
    finally:
        server.stop()
    ready = [t for t, problems in found.items() if not problems]
    print(f"distributable by {COLUMN} as they are: {', '.join(ready) or 'none'}")
    for table, problems in found.items():
        for problem in problems:
            print(f"{table}: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
