"""PostgreSQL at scale: warm recall latency alone and under N concurrent
writer processes, writes per second, and a check that no write was lost or
duplicated. One command, on the embedded server of ``bench/pgserver.py``::

    python -m bench.pgspeed                          # 100,000 memories, 4 and 8 writers
    python -m bench.pgspeed --size 10000 --writers 4 --seconds 20
    python -m bench.pgspeed --size 20000 --writers "" --ann   # pgvector vs exact only

The palace is built with the ``static`` embedder (MiniLM embeds ~500
texts/s here; the store work is the same either way) and with synthetic
texts (words from a fixed vocabulary, names, numbers), 1,000 memories per
``remember_many``, spread over 20 agents' sessions. Recall is timed end to
end (query embedding included) after a warm-up, as agent 0. Writers each
run ``remember`` in a loop with distinct texts and report every id only
after it returned (committed); afterwards every reported id must be in the
palace exactly once, and nothing else they wrote may be. Prints one JSON
report. A benchmark, not a test.

``--ann`` adds, side by side in the same run, recall with dense candidates
from pgvector's HNSW index (``Store.nearest``, what a palace of 50,000
embedded memories uses) against recall scoring every visible row exactly
from the warm matrix: the two alternate query by query, so machine load
falls on both alike. It also reports ``nearest`` alone (latency, and recall
of its candidates against the exact top-k under the same scope), how often
the two recalls return the same top 10, and the plan of a ``nearest`` query
(the HNSW index must be in it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from bench.pgserver import ThrowawayPostgres
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.embed.texts import vector_key
from mindpalace.models import RecallFilters, Scope
from mindpalace.store.postgres import PostgresStore

_WORDS = (
    "deploy release budget meeting design review server database cache latency"
    " invoice customer contract hiring roadmap launch bug incident outage backup"
    " migration schema index query report dashboard garden recipe travel flight"
    " hotel concert birthday doctor school exam holiday painting guitar marathon"
).split()
_NAMES = ("Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Juno")
_AGENTS = 20


# Plus 3,000 made-up words drawn by a Zipf-like law, so that, as in real
# text, most words are rare and a query matches a small share of the palace.
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu")
_RARE = [
    "".join(random.Random(i).choice(_SYLLABLES) for _ in range(3 + i % 2)) for i in range(3000)
]
_RARE_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(_RARE))]


def _text(rng: random.Random, n: int) -> str:
    common = [rng.choice(_WORDS) for _ in range(rng.randint(3, 8))]
    rare = rng.choices(_RARE, weights=_RARE_WEIGHTS, k=rng.randint(5, 16))
    words = " ".join(common + rare)
    return f"{rng.choice(_NAMES)} noted {words} (item {n})."


def _writer(url: str, worker: int, deadline: float, out: Any) -> None:
    palace = Palace(
        url, agent_id=f"writer{worker}", embedder=from_settings(Settings(embedder="static"))
    )
    rng = random.Random(1000 + worker)
    ids: list[str] = []
    latencies: list[float] = []
    i = 0
    while time.time() < deadline:
        start = time.perf_counter()
        memory = palace.remember(f"writer {worker} entry {i}: " + _text(rng, i))
        latencies.append(time.perf_counter() - start)
        ids.append(memory.id)  # reported only once remember() returned: committed
        i += 1
    palace.close()
    out.put((worker, ids, latencies))


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
        "n": len(ordered),
    }


_STAGES: dict[str, list[float]] = {}


def _recall_loop(palace: Palace, queries: Sequence[str], seconds: float) -> list[float]:
    out: list[float] = []
    end = time.time() + seconds
    i = 0
    while time.time() < end or not out:
        start = time.perf_counter()
        hits = palace.recall(queries[i % len(queries)])
        out.append(time.perf_counter() - start)
        for stage, ms in (hits.timings or {}).items():
            _STAGES.setdefault(stage, []).append(ms)
        i += 1
    return out


def _build(url: str, embedder: Embedder, size: int, rng: random.Random) -> dict[str, float]:
    """Write ``size`` memories, 1,000 per ``remember_many``, over the agents."""
    start = time.perf_counter()
    done = 0
    while done < size:
        n = min(1000, size - done)
        agent = f"agent{(done // 1000) % _AGENTS}"
        with Palace(url, agent_id=agent, embedder=embedder) as builder:
            builder.remember_many(
                [
                    {"content": _text(rng, done + k), "session": f"s{(done + k) // 50}"}
                    for k in range(n)
                ]
            )
        done += n
        print(f"  built {done}", file=sys.stderr)
    build_s = time.perf_counter() - start
    return {"seconds": round(build_s, 1), "memories_per_s": round(size / build_s, 1)}


def _compare_ann(
    url: str, embedder: Embedder, queries: Sequence[str], rounds: int
) -> dict[str, Any]:
    """Recall with pgvector candidates against exact recall, alternating."""
    # Fresh planner statistics, as autovacuum keeps them in a palace at rest.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    palaces = {}
    for name, rows in (("exact", 0), ("pgvector", 1)):
        palace = Palace(url, agent_id="agent0", embedder=embedder)
        palace.semantic.ann_rows = rows
        palace.recall(queries[0])
        palace.recall(queries[1])  # warm: dense, keyword and mention indexes
        palaces[name] = palace
    times: dict[str, list[float]] = {name: [] for name in palaces}
    dense: dict[str, list[float]] = {name: [] for name in palaces}
    same_top = 0
    for i, query in enumerate(list(queries) * rounds):
        got = {}
        for name in sorted(palaces, reverse=i % 2 == 1):
            start = time.perf_counter()
            hits = palaces[name].recall(query)
            times[name].append(time.perf_counter() - start)
            dense[name].append((hits.timings or {}).get("dense", 0.0))
            got[name] = [h.memory.id for h in hits[:10]]
        same_top += got["exact"] == got["pgvector"]
    out: dict[str, Any] = {}
    for name in palaces:
        out[f"recall_{name}"] = _percentiles(times[name])
        out[f"recall_{name}"]["dense_stage_p50_ms"] = round(statistics.median(dense[name]), 1)
    out["same_top10_share"] = round(same_top / (len(queries) * rounds), 3)
    # nearest alone: latency and its candidates against the exact top-k.
    palace = palaces["exact"]
    store = palace.store
    assert isinstance(store, PostgresStore)
    index = palace.semantic.dense()
    assert index is not None
    key = vector_key(embedder.config)
    visible = index.mask(palace.scope, RecallFilters()) & index.embedded
    for k in (10, 400):  # the pipeline asks for ann_candidates = 400
        found, lat = [], []
        for query in queries:
            vector = embedder.embed_query(query)
            start = time.perf_counter()
            near = store.nearest(key, vector, palace.scope, RecallFilters(), limit=k) or []
            lat.append(time.perf_counter() - start)
            sims = np.where(visible, index.scores(vector), -np.inf)
            exact = {str(i) for i in index.table.ids[np.argsort(-sims)[:k]]}
            found.append(len(exact & set(near)) / k)
        out[f"nearest_k{k}"] = {**_percentiles(lat), "recall": round(statistics.fmean(found), 3)}
    sql, params = store.nearest_query(
        key, embedder.embed_query(queries[0]), palace.scope, RecallFilters(), limit=400
    )
    with store._read() as cur:
        plan = [str(r[0]) for r in store._exec(cur, "EXPLAIN " + sql, params).fetchall()]
    out["nearest_plan"] = [line.split("  Order By")[0] for line in plan if "Scan" in line]
    out["visible_rows"] = int(visible.sum())
    for palace in palaces.values():
        palace.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--writers", default="4,8", help="comma-separated writer counts")
    parser.add_argument("--seconds", type=float, default=30.0, help="per writer phase")
    parser.add_argument(
        "--ann", action="store_true", help="also compare pgvector candidates with exact recall"
    )
    parser.add_argument("--rounds", type=int, default=3, help="--ann: passes over the queries")
    args = parser.parse_args(argv)
    rng = random.Random(7)
    embedder = from_settings(Settings(embedder="static"))
    server = ThrowawayPostgres(prefix="mindpalace_pgspeed")
    report: dict[str, Any] = {"size": args.size, "embedder": "static"}
    try:
        url = server.create("speed")
        report["build"] = _build(url, embedder, args.size, rng)
        queries = [
            " ".join([rng.choice(_WORDS), *rng.choices(_RARE, weights=_RARE_WEIGHTS, k=3)])
            for _ in range(50)
        ]
        queries += [f"what did {name} say about the {rng.choice(_WORDS)}" for name in _NAMES]
        if args.ann:
            report["ann"] = _compare_ann(url, embedder, queries, args.rounds)
        with Palace(url, agent_id="agent0", embedder=embedder) as reader:
            _recall_loop(reader, queries[:5], 0)  # warm: loads the dense index
            _STAGES.clear()
            report["recall_alone"] = _percentiles(_recall_loop(reader, queries, args.seconds / 2))
            report["recall_alone"]["stage_p50_ms"] = {
                k: round(statistics.median(v), 1) for k, v in _STAGES.items()
            }
            for count in (int(c) for c in args.writers.split(",") if c):
                ctx = mp.get_context("spawn")
                results: Any = ctx.Queue()
                deadline = time.time() + args.seconds + 5  # 5 s for the writers to start
                procs = [
                    ctx.Process(target=_writer, args=(url, w + 100 * count, deadline, results))
                    for w in range(count)
                ]
                for p in procs:
                    p.start()
                time.sleep(5)
                under = _recall_loop(reader, queries, args.seconds)
                got = [results.get(timeout=300) for _ in procs]
                for p in procs:
                    p.join()
                ids = [i for _, worker_ids, _ in got for i in worker_ids]
                latencies = [x for _, _, lat in got for x in lat]
                everything = list(reader.store.iter_memories(Scope.management()))
                stored = {m.id for m in everything}
                writers = {f"writer{w + 100 * count}" for w in range(count)}
                written_by = [m.id for m in everything if m.agent_id in writers]
                report[f"writers_{count}"] = {
                    "writes": len(ids),
                    "writes_per_s": round(len(ids) / args.seconds, 1),
                    "remember": _percentiles(latencies),
                    "recall_under_writes": _percentiles(under),
                    "lost": len(set(ids) - stored),
                    "duplicated_ids": len(ids) - len(set(ids)),
                    "unreported_rows": len(set(written_by) - set(ids)),
                    "rows_per_id_max": max(Counter(written_by).values(), default=0),
                }
    finally:
        server.stop()
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
