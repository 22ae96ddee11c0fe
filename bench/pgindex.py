"""Recall in this process against recall in the database, on one PostgreSQL palace.

``MINDPALACE_INDEX=process`` loads every vector and text of the palace into
the process (warm indexes, an HNSW graph from 50,000 memories);
``database`` keeps nothing and asks PostgreSQL for each recall's rows
(pgvector, BM25 and the graph in SQL). This measures, side by side::

    python -m bench.pgindex --size 20000          # builds a palace as bench.pgspeed does
    python -m bench.pgindex --url postgresql://…  # a palace built before (bench.pgspeed's shape)

- per mode, in a fresh process each: time from opening the palace to the
  first recall answered (warm-up), resident memory after it and after the
  query set (``VmRSS``), and recall p50 / p95 over the query set;
- both modes in one process, query by query alternating (machine load
  falls on both alike): recall p50 / p95, stage medians, and how often the
  top 10 agree;
- the dense read alone: the old ``nearest`` (400 rows through pgvector's
  iterative HNSW walk, joined to memories) against ``dense_rows`` (what the
  database mode reads), with their plans' buffers (``EXPLAIN (ANALYZE,
  BUFFERS)``).

Two readers: ``agent0``, who sees its own 5% of the palace (20 agents), and
the management view, who sees every row (as a single-agent palace's owner
does). Static embedder (the query's embedding is the same work in both
modes). Prints one JSON report. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from bench.pgserver import ThrowawayPostgres
from bench.pgspeed import _NAMES, _RARE, _RARE_WEIGHTS, _WORDS, _build
from bench.textcost import _recorded
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.texts import vector_key
from mindpalace.models import RecallFilters, Scope
from mindpalace.store.postgres import PostgresStore

READERS = ("agent0", "all")


def _queries(count: int = 60) -> list[str]:
    rng = random.Random(11)
    out = [
        " ".join([rng.choice(_WORDS), *rng.choices(_RARE, weights=_RARE_WEIGHTS, k=3)])
        for _ in range(count - len(_NAMES))
    ]
    out += [f"what did {name} say about the {rng.choice(_WORDS)}" for name in _NAMES]
    return out


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
        "n": len(ordered),
    }


def _open(url: str, reader: str, index: str) -> Palace:
    settings = Settings(embedder="static", index=index, signals=False)
    if reader == "all":
        return Palace(url, management=True, settings=settings)
    return Palace(url, agent_id=reader, settings=settings)


def _one_mode(url: str, reader: str, index: str, out: Any) -> None:
    """In a fresh process: warm-up, memory, and latency of one mode."""
    queries = _queries()
    base = _rss_mb()
    start = time.perf_counter()
    palace = _open(url, reader, index)
    palace.recall(queries[0])
    warm = time.perf_counter() - start
    palace.recall(queries[1])  # the in-process mode's keyword and graph indexes come now
    second = time.perf_counter() - start
    after_first = _rss_mb()
    times = []
    for query in queries:
        began = time.perf_counter()
        palace.recall(query)
        times.append(time.perf_counter() - began)
    palace.close()
    out.put(
        {
            "first_recall_s": round(warm, 2),
            "warm_s": round(second, 2),
            "rss_before_mb": base,
            "rss_warm_mb": after_first,
            "rss_after_mb": _rss_mb(),
            "recall": _percentiles(times),
        }
    )


def _fresh_processes(url: str, reader: str) -> dict[str, Any]:
    context = mp.get_context("spawn")
    report = {}
    for index in ("process", "database"):
        queue: Any = context.Queue()
        process = context.Process(target=_one_mode, args=(url, reader, index, queue))
        process.start()
        report[index] = queue.get(timeout=3600)
        process.join()
    return report


def _alternating(url: str, reader: str, rounds: int) -> dict[str, Any]:
    queries = _queries()
    palaces = {index: _open(url, reader, index) for index in ("process", "database")}
    for palace in palaces.values():  # warm both
        palace.recall(queries[0])
        palace.recall(queries[1])
    times: dict[str, list[float]] = {name: [] for name in palaces}
    stages: dict[str, dict[str, list[float]]] = {name: {} for name in palaces}
    same = 0
    for i, query in enumerate(queries * rounds):
        top = {}
        for name in sorted(palaces, reverse=i % 2 == 1):
            began = time.perf_counter()
            hits = palaces[name].recall(query)
            times[name].append(time.perf_counter() - began)
            for stage, ms in (hits.timings or {}).items():
                stages[name].setdefault(stage, []).append(ms)
            top[name] = [h.memory.id for h in hits[:10]]
        same += top["process"] == top["database"]
    report: dict[str, Any] = {}
    for name, palace in palaces.items():
        report[name] = {
            **_percentiles(times[name]),
            "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in stages[name].items()},
        }
        palace.close()
    report["same_top10_share"] = round(same / (len(queries) * rounds), 3)
    return report


def _plan_work(store: PostgresStore, call: Callable[[], object]) -> dict[str, Any]:
    """Execution time and buffers of the statements ``call`` runs, replayed
    under EXPLAIN (ANALYZE, BUFFERS) with the same HNSW settings."""
    with _recorded(store) as statements:
        call()
    out = {"statements": len(statements), "buffers": 0, "execution_ms": 0.0}
    with store._read() as cur, cur.connection.transaction():
        cur.execute("SET LOCAL hnsw.ef_search = 400")
        cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        for sql, params in statements:
            if sql.lstrip().upper().startswith("SELECT SET_CONFIG"):
                continue
            plan = store._exec(cur, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
            top = plan.fetchone()[0][0]
            out["buffers"] += top["Plan"]["Shared Hit Blocks"] + top["Plan"]["Shared Read Blocks"]
            out["execution_ms"] = round(out["execution_ms"] + top["Execution Time"], 1)
    return out


def _dense_reads(url: str, reader: str) -> dict[str, Any]:
    embedder = from_settings(Settings(embedder="static"))
    key = vector_key(embedder.config)
    scope = Scope.management() if reader == "all" else Scope(agent_id=reader)
    store = PostgresStore(url)
    vectors = [embedder.embed_query(q) for q in _queries()]
    calls: dict[str, Callable[[Any], object]] = {
        "nearest_400 (old: iterative walk)": lambda v: store.nearest(
            key, v, scope, RecallFilters(), limit=400
        ),
        "dense_rows_400 (database mode)": lambda v: store.dense_rows(
            key, v, scope, RecallFilters(), nearest=400
        ),
        "dense_rows_100": lambda v: store.dense_rows(key, v, scope, RecallFilters(), nearest=100),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for i, vector in enumerate(vectors):
        for name in sorted(calls, reverse=i % 2 == 1):
            began = time.perf_counter()
            calls[name](vector)
            times[name].append(time.perf_counter() - began)
    report: dict[str, Any] = {"exact_path": store._exact(scope, 400)}
    for name, call in calls.items():
        report[name] = {
            **_percentiles(times[name]),
            **_plan_work(store, lambda c=call: c(vectors[0])),
        }
    store.close()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", help="an existing palace (else one is built)")
    parser.add_argument("--size", type=int, default=20_000, help="memories to build")
    parser.add_argument("--rounds", type=int, default=2, help="passes of the alternating loop")
    parser.add_argument("--readers", default=",".join(READERS))
    args = parser.parse_args(argv)
    server = None
    report: dict[str, Any] = {}
    try:
        url = args.url
        if url is None:
            server = ThrowawayPostgres(prefix="mindpalace_pgindex")
            url = server.create("index")
            embedder = from_settings(Settings(embedder="static"))
            report["build"] = _build(url, embedder, args.size, random.Random(7))
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
        with psycopg.connect(url) as conn:
            report["memories"] = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        for reader in args.readers.split(","):
            print(f"  {reader}: dense reads", file=sys.stderr)
            part: dict[str, Any] = {"dense_reads": _dense_reads(url, reader)}
            print(f"  {reader}: fresh processes", file=sys.stderr)
            part["fresh_process"] = _fresh_processes(url, reader)
            print(f"  {reader}: alternating", file=sys.stderr)
            part["alternating"] = _alternating(url, reader, args.rounds)
            report[reader] = part
            print(json.dumps({reader: part}), file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
