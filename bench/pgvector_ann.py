"""pgvector on a palace-shaped table: HNSW and IVFFlat against exact search.

Scope is part of every query (an agent sees its own rows and shared ones), as
in the product, so the ANN indexes are measured with the filter inside the
SQL (pgvector 0.8 iterative index scans), not on bare k-NN. Vectors are
clustered (like sentence embeddings, unlike uniform noise) and unit length;
the truth is exact cosine top-k under the same filter, in numpy::

    python -m bench.pgvector_ann                 # 20,000 x 384, 200 queries
    python -m bench.pgvector_ann --rows 100000
    python -m bench.pgvector_ann --write-cost    # what keeping ``vec`` costs a write

Runs on the throwaway server of bench/pgserver.py.

Measured here (2 shared cores, 100,000 x 384, 10 agents, 20% shared rows,
200 queries; recall@10 against exact, p50 ms): numpy exact 1.000, 16.0;
PostgreSQL sequential scan 1.000, 41.7; HNSW (m 16, ef_construction 64)
ef_search 40: 0.990, 2.4, ef_search 100: 1.000, 2.2, build 103 s; IVFFlat
(316 lists) probes 10: 0.998, 2.6, probes 30: 1.000, 5.9, build 4.3 s.
Choice: HNSW with ef_search 100. It needs no training, so it stays accurate
as a palace grows (IVFFlat's lists are fixed when the index is built and
need rebuilding); its build cost is paid a row at a time as memories
arrive. PostgreSQL palaces now use it (store/pg_vectors.py: an expression
index over ``vec::vector(D)``, searched with ef_search 100 and the iterative
scan) once they hold 50,000 embedded memories; ``bench.pgspeed --ann``
measures recall through it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector

from bench.pgserver import ThrowawayPostgres
from mindpalace.store.pg_vectors import PgVector, PgVectorDumper

K = 10
AGENTS = 10
SHARED_SHARE = 0.2


def _data(rows: int, dims: int, queries: int, seed: int = 7) -> tuple[npt.NDArray[np.float32], ...]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(rows // 100, 10), dims))
    points = centres[rng.integers(0, len(centres), rows + queries)]
    points += rng.normal(scale=1.0, size=points.shape)  # same-cluster cosine ~0.5
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    data = points.astype(np.float32)
    return data[:rows], data[rows:]


def _truth(
    data: npt.NDArray[np.float32],
    agents: npt.NDArray[np.int64],
    shared: npt.NDArray[np.bool_],
    query: npt.NDArray[np.float32],
    agent: int,
) -> tuple[set[int], float]:
    start = time.perf_counter()
    visible = (agents == agent) | shared
    scores = np.where(visible, data @ query, -np.inf)
    top = np.argpartition(-scores, K)[:K]
    return {int(i) for i in top}, (time.perf_counter() - start) * 1000


def _search(
    conn: psycopg.Connection[tuple[object, ...]], query: npt.NDArray[np.float32], agent: int
) -> tuple[set[int], float]:
    start = time.perf_counter()
    rows = conn.execute(
        "SELECT id FROM vectors WHERE (agent_id = %s OR visibility = 'shared')"
        " ORDER BY embedding <=> %s LIMIT %s",
        (f"agent{agent}", query, K),
    ).fetchall()
    return {int(r[0]) for r in rows}, (time.perf_counter() - start) * 1000


def _write_cost(
    conn: psycopg.Connection[tuple[object, ...]], data: npt.NDArray[np.float32]
) -> None:
    """Per-row cost of an embeddings insert (pipelined executemany, as the
    store writes): the bytes alone, with ``vec`` sent in binary (what
    PostgresStore does), and with ``vec`` decoded from the bytes in SQL
    (what the trigger does for rows written without it; ``mp_vector`` is
    there: the server's databases come from a migrated palace)."""
    conn.adapters.register_dumper(PgVector, PgVectorDumper)
    conn.execute("CREATE TABLE writes (k INT PRIMARY KEY, vector BYTEA NOT NULL, vec vector)")
    blobs = [row.tobytes() for row in data]
    variants = {
        "bytes only": ("INSERT INTO writes (k, vector) VALUES (%s, %s)", lambda b: ()),
        "bytes + vec in binary": (
            "INSERT INTO writes (k, vector, vec) VALUES (%s, %s, %s)",
            lambda b: (PgVector(b),),
        ),
        "bytes + vec decoded in SQL": (
            "INSERT INTO writes (k, vector, vec) VALUES (%s, %s, mp_vector(%s))",
            lambda b: (b,),
        ),
    }
    print("| insert | ms per row |\n|---|---|")
    for name, (sql, extra) in variants.items():
        conn.execute("TRUNCATE writes")
        start = time.perf_counter()
        with conn.cursor() as cur, conn.pipeline():
            cur.executemany(sql, [(i, b, *extra(b)) for i, b in enumerate(blobs)])
        print(f"| {name} | {(time.perf_counter() - start) * 1000 / len(blobs):.3f} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=20_000, help="vectors stored")
    parser.add_argument("--dims", type=int, default=384, help="vector size")
    parser.add_argument("--queries", type=int, default=200, help="queries measured")
    parser.add_argument("--write-cost", action="store_true", help="only the cost of keeping vec")
    args = parser.parse_args(argv)
    data, queries = _data(args.rows, args.dims, args.queries)
    rng = np.random.default_rng(11)
    agents = rng.integers(0, AGENTS, args.rows)
    shared = rng.random(args.rows) < SHARED_SHARE
    asking = rng.integers(0, AGENTS, args.queries)
    server = ThrowawayPostgres(prefix="mindpalace_ann")
    try:
        url = server.create("vectors")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            if args.write_cost:
                _write_cost(conn, data[: min(args.rows, 5000)])
                return 0
            register_vector(conn)
            conn.execute(
                f"CREATE TABLE vectors (id BIGINT PRIMARY KEY, agent_id TEXT NOT NULL,"
                f" visibility TEXT NOT NULL, embedding vector({args.dims}) NOT NULL)"
            )
            start = time.perf_counter()
            with conn.cursor().copy(
                "COPY vectors (id, agent_id, visibility, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "text", "text", "vector"])
                for i in range(args.rows):
                    visibility = "shared" if shared[i] else "isolated"
                    copy.write_row((i, f"agent{agents[i]}", visibility, data[i]))
            print(f"COPY {args.rows} rows: {time.perf_counter() - start:.2f} s", file=sys.stderr)
            conn.execute("CREATE INDEX ON vectors (agent_id)")
            conn.execute("ANALYZE vectors")
            truth = [
                _truth(data, agents, shared, q, int(a))
                for q, a in zip(queries, asking, strict=True)
            ]
            print(
                "| method | build s | recall@10 | p50 ms | p95 ms |\n|---|---|---|---|---|\n"
                f"| numpy exact (masked) | - | 1.000 |"
                f" {statistics.median(t for _, t in truth):.2f} |"
                f" {statistics.quantiles([t for _, t in truth], n=20)[18]:.2f} |"
            )
            variants = [
                ("seq scan exact", None, []),
                (
                    "HNSW m=16 efc=64, ef_search=40",
                    "USING hnsw (embedding vector_cosine_ops)",
                    ["SET hnsw.ef_search = 40", "SET hnsw.iterative_scan = relaxed_order"],
                ),
                ("HNSW, ef_search=100", "", ["SET hnsw.ef_search = 100"]),
                (
                    f"IVFFlat lists={max(int(args.rows**0.5), 10)}, probes=10",
                    f"USING ivfflat (embedding vector_cosine_ops)"
                    f" WITH (lists = {max(int(args.rows**0.5), 10)})",
                    ["SET ivfflat.probes = 10", "SET ivfflat.iterative_scan = relaxed_order"],
                ),
                ("IVFFlat, probes=30", "", ["SET ivfflat.probes = 30"]),
            ]
            for name, index, settings in variants:
                build = 0.0
                if index:
                    conn.execute("DROP INDEX IF EXISTS vectors_ann")
                    start = time.perf_counter()
                    conn.execute(f"CREATE INDEX vectors_ann ON vectors {index}")
                    build = time.perf_counter() - start
                for setting in settings:
                    conn.execute(setting)
                if index is None:
                    conn.execute("SET enable_indexscan = off")
                found, times = [], []
                for (q, a), (want, _) in zip(zip(queries, asking, strict=True), truth, strict=True):
                    got, ms = _search(conn, q, int(a))
                    found.append(len(got & want) / K)
                    times.append(ms)
                if index is None:
                    conn.execute("SET enable_indexscan = on")
                print(
                    f"| {name} | {build:.1f} | {statistics.fmean(found):.3f} |"
                    f" {statistics.median(times):.2f} |"
                    f" {statistics.quantiles(times, n=20)[18]:.2f} |"
                )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
