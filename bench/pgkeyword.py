"""PostgreSQL's keyword search: scored from the postings against scored
from every visible matching row, side by side on one palace, one run.

A SQLite palace (``--palace``, e.g. a ``bench.scale`` or ``bench.realspeed``
cache) is copied into a throwaway PostgreSQL server with the product's bulk
path (which fills the postings), then each query is searched both ways,
alternating (machine load falls on both alike)::

    python -m bench.pgkeyword --palace bench/.cache/speed/palace-100k-static.db
    python -m bench.pgkeyword --palace … --queries real   # questions of LongMemEval
    python -m bench.pgkeyword --url postgresql://…        # a palace copied before

Queries: ``synthetic`` (``bench.corpus``' recall queries, scoped to their
agents, the palace's vocabulary) or ``real`` (LongMemEval_S questions, the
management view: for a palace of real turns). Reports per path the search's
p50 / p95 / max ms at the recall's depth (200 keyword candidates), how often
the postings path was exact (no word past ``WORD_DEPTH``), the postings it
read and rows it scored, whether its rows and order equal the exhaustive
search's (all places, and the first 10), and the size on disk of the
postings table and its indexes beside ``memories``'. Prints one JSON
report. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpus import queries
from bench.pgserver import ThrowawayPostgres
from bench.speed import agent_groups
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.pg_text import ScopeKeyTextSearch
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace


def _questions(kind: str, count: int, size: int) -> list[tuple[Scope, str]]:
    if kind == "synthetic":
        return [
            (Scope(agent_id=q.agent, groups=tuple(agent_groups(q.agent))), q.text)
            for q in queries(count, size)
        ]
    from bench.longmemeval import load as load_lme

    asked = [case.text for case in load_lme()][:count]
    return [(Scope.management(), text) for text in asked]


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _sizes(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        out = {}
        for table in ("memories", "text_postings"):
            row = conn.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()
            out[table] = int(row[0]) if row else 0
        return out


def run(palace: Path | None, url: str | None, kind: str, count: int, limit: int) -> dict[str, Any]:
    server = None
    try:
        copied = 0.0
        if url is None:
            assert palace is not None
            server = ThrowawayPostgres(prefix="pgkeyword", settings={"maintenance_work_mem": "2GB"})
            url = server.create()
            source, store = SQLiteStore(palace), PostgresStore(url, max_connections=2)
            start = time.perf_counter()
            copy_palace(source, store)
            copied = time.perf_counter() - start
            source.close()
        else:
            store = PostgresStore(url, max_connections=2)
        size = store.stats(Scope.management()).memories
        asked = _questions(kind, count, size)
        times: dict[str, list[float]] = {"every_match": [], "postings": []}
        equal = head = same = 0
        exact = 0
        read: list[int] = []
        scored: list[int] = []
        for scope, text in asked:
            terms = query_terms(text)
            t = time.perf_counter()
            every = ScopeKeyTextSearch.search_text(
                store, terms, scope, RecallFilters(), limit=limit
            )
            times["every_match"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            got = store.search_text(terms, scope, RecallFilters(), limit=limit)
            times["postings"].append((time.perf_counter() - t) * 1000)
            with store._read() as cur:
                ranking = store._rank_postings(cur, terms, scope, RecallFilters(), limit=limit)
            exact += ranking.exact
            read.append(ranking.read)
            scored.append(ranking.scored)
            ids = [m.memory.id for m in got]
            want = [m.memory.id for m in every]
            equal += ids == want
            # Rows of equal score (sums in another order) may trade places.
            same += [round(m.bm25, 9) for m in got] == [round(m.bm25, 9) for m in every]
            head += ids[:10] == want[:10]
        store.close()
        return {
            "palace": str(palace or "(a PostgreSQL palace)"),
            "memories": size,
            "queries": len(asked),
            "kind": kind,
            "limit": limit,
            "copy_s": round(copied, 1),
            "ms": {
                path: {"p50": _pct(v, 0.5), "p95": _pct(v, 0.95), "max": round(max(v), 1)}
                for path, v in times.items()
            },
            "exact": exact,
            "postings_read_p50": statistics.median(read),
            "postings_read_max": max(read),
            "rows_scored_p50": statistics.median(scored),
            "same_rows_and_order": round(equal / len(asked), 3),
            "same_scores_in_order": round(same / len(asked), 3),
            "same_first_10": round(head / len(asked), 3),
            "bytes": _sizes(url),
        }
    finally:
        if server is not None:
            server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--palace", type=Path, help="a SQLite palace, copied into a new server")
    where.add_argument("--url", help="a PostgreSQL palace already there (not copied)")
    parser.add_argument("--queries", choices=("synthetic", "real"), default="synthetic")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args(argv)
    report = run(args.palace, args.url, args.queries, args.count, args.limit)
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
