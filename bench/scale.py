"""A palace of a million memories, measured in one reproducible run::

    python -m bench.scale --n 1000000                  # SQLite, in-process
    python -m bench.scale --n 1000000 --postgres       # and the same palace in PostgreSQL
    python -m bench.scale --n 20000 --steps build,workers --workers 1 2   # a quick look

The palaces are ``bench.speed``'s synthetic ones (eight agents, scoped
queries, the bundled static model), built through the product's write path
(``remember_many``) once and cached under ``bench/.cache/speed/``. Each
step runs in processes of its own; a step's full report is kept in the
JSON (``--json``), and a summary table is printed:

1. ``build``: the palaces of 100,000 and of ``--n`` memories; the build's
   rate when this run builds one.
2. ``speed``: ``bench.speed`` at both sizes: one client's recall p50 / p95 /
   p99 (query embedding included), the first recall of a fresh command line
   process, peak resident memory, disk per memory, and the batch write rate
   at 100,000 against ``--n`` (2,000 memories on a copy of each palace).
3. ``workers``: ``bench.workers`` on the ``--n`` palace: 1, 2 and 4 serving
   processes at once, each one's resident and proportional memory (shared
   pages of the warm files counted once), first recall and time to warm.
4. ``load``: ``bench.load`` against a copy of the ``--n`` palace, in-process
   indexes, ``--clients`` concurrent REST clients (30% writes).
5. ``postgres`` (with ``--postgres`` or ``--postgres-url``): the ``--n``
   palace copied in with ``mindpalace migrate`` (a throwaway embedded server
   unless a URL is given), then ``bench.load`` in database mode with 1, 2
   and 4 server processes and with one client, and the write rate of
   ``remember_many`` at 100,000 against ``--n`` in database mode.

The load's clients are agents of their own (``load0``...): their recalls see
their own writes, not the synthetic agents' memories (``bench.speed`` and
``bench.workers`` read those). A benchmark, not a test: CI runs none of it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.speed import CACHE, build, palace_path, size_name

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("build", "speed", "workers", "load", "postgres")
#: ``maintenance_work_mem`` of the throwaway server (a million 256-d vectors'
#: HNSW graph takes about 1.3 GB)
HNSW_BUILD_MEMORY = "2GB"
# The server's page cache for the million: the vectors' HNSW index (1.3 GB),
# the keyword postings' index (1.3 GB) and the memories (1 GB) are read by
# every recall. With PostgreSQL's default 128 MB each recall copied ~20,000
# pages in from the system's cache (a dense read 172 ms; 88 ms with all held).
SHARED_BUFFERS = "4GB"
BASE = 100_000  # the size a write rate at --n is compared with (--base)
WRITES = 2000  # memories written at each size for the write rate (database mode)

# The write rate of one fresh process in database mode: argv = url, count.
_PG_WRITES = r"""
import json, sys, time
from bench.speed import AGENTS, agent_groups, records
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings

url, count = sys.argv[1], int(sys.argv[2])
settings = Settings(embedder="static", index="database", signals=False)
model = from_settings(settings)
fresh = [r for r in records(count, seed=11)]
with Palace(url, agent_id=AGENTS[0], settings=settings, embedder=model) as base:
    views = {a: base.for_agent(a, groups=agent_groups(a)) for a in AGENTS}
    base.recall("warm up")
    started = time.perf_counter()
    by_agent = {}
    for r in fresh:
        by_agent.setdefault(r.agent, []).append(r.fields)
    for agent, fields in by_agent.items():
        for i in range(0, len(fields), 250):
            views[agent].remember_many(fields[i : i + 250])
    seconds = time.perf_counter() - started
print(json.dumps({"writes": count, "seconds": seconds, "per_s": count / seconds}))
"""


def _python(args: Sequence[str], log: Callable[[str], None]) -> str:
    """Run ``python args`` from the repository root; its standard output."""
    log("  $ python " + " ".join(args))
    out = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"failed ({out.returncode}): {' '.join(args)}\n{out.stderr[-3000:]}")
    return out.stdout


def _json_of(args: Sequence[str], log: Callable[[str], None]) -> dict[str, Any]:
    """The JSON a benchmark module prints last (its whole standard output,
    or its last line that is a JSON object)."""
    text = _python(args, log)
    try:
        found: dict[str, Any] = json.loads(text)
        return found
    except json.JSONDecodeError:
        last = [line for line in text.splitlines() if line.startswith("{")][-1]
        found = json.loads(last)
        return found


def _copy_palace(src: Path, dst: Path) -> None:
    """A file copy of a palace: database, log and warm files."""
    for suffix in ("", "-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copyfile(str(src) + suffix, str(dst) + suffix)
    warm = Path(str(src) + "-warm")
    if warm.is_dir():
        shutil.copytree(warm, str(dst) + "-warm")


def step_build(n: int, log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in (BASE, n):
        path = palace_path(size, "static")
        if path.exists():
            out[size_name(size)] = {"cached": True, "path": str(path)}
            continue
        started = time.perf_counter()
        build(size, "static", log=log)
        seconds = time.perf_counter() - started
        out[size_name(size)] = {"seconds": round(seconds), "per_s": round(size / seconds)}
    return out


def step_speed(n: int, queries: int, log: Callable[[str], None], tmp: Path) -> dict[str, Any]:
    report = tmp / "speed.json"
    sizes = f"{size_name(BASE)},{size_name(n)}"
    _python(
        [
            "-m", "bench.speed", "--sizes", sizes, "--embedder", "static",
            "--embedder-1m", "static", "--queries", str(queries), "--json", str(report),
        ],
        log,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(report.read_text())
    return found


def step_workers(n: int, counts: Sequence[int], log: Callable[[str], None]) -> dict[str, Any]:
    palace = palace_path(n, "static")
    args = ["-m", "bench.workers", "--palace", str(palace), "--workers", *map(str, counts)]
    return _json_of(args, log)


def _load(db: str, log: Callable[[str], None], **options: Any) -> dict[str, Any]:
    args = ["-m", "bench.load", "--db", db, "--embedder", "static", "--seed-memories", "0"]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return _json_of(args, log)


def step_load(
    n: int, clients: int, calls: int, log: Callable[[str], None], tmp: Path
) -> dict[str, Any]:
    copy = tmp / "load.db"
    _copy_palace(palace_path(n, "static"), copy)
    try:
        return _load(str(copy), log, clients=clients, calls=calls, workers=1, index="process")
    finally:
        for leftover in tmp.glob("load.db*"):
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()


def step_postgres(
    n: int,
    url: str | None,
    counts: Sequence[int],
    *,
    clients: int,
    calls: int,
    log: Callable[[str], None],
) -> dict[str, Any]:
    from bench.pgserver import ThrowawayPostgres

    # The vectors' HNSW index of a million memories is built in memory, as
    # pgvector advises for a bulk load (with the default 64 MB the graph
    # spills after ~100,000 rows and the copy's build takes over an hour).
    server = (
        None
        if url
        else ThrowawayPostgres(
            prefix="mindpalace_scale",
            settings={"maintenance_work_mem": HNSW_BUILD_MEMORY, "shared_buffers": SHARED_BUFFERS},
        )
    )
    out: dict[str, Any] = {}
    try:
        targets = {}
        for size in (BASE, n):
            if server is not None:
                target = server.create(f"n{size}")
            else:
                assert url is not None
                target = url if size == n else ""
            if not target:
                continue  # a given server holds the --n palace only
            started = time.perf_counter()
            _python(
                [
                    "-m", "mindpalace.cli", "migrate",
                    "--from", str(palace_path(size, "static")), "--to", target,
                ],
                log,
            )  # fmt: skip
            out[f"migrate_{size_name(size)}_s"] = round(time.perf_counter() - started)
            targets[size] = target
        big = targets[n]
        out["single_client"] = _load(
            big, log, clients=1, calls=100, writes=0, workers=1, index="database"
        )
        out["load"] = {
            str(count): _load(
                big, log, clients=clients, calls=calls, workers=count, index="database"
            )
            for count in counts
        }
        out["writes"] = {
            size_name(size): _json_of(["-c", _PG_WRITES, target, str(WRITES)], log)
            for size, target in targets.items()
        }
    finally:
        if server is not None:
            server.stop()
    return out


def _ms(figures: dict[str, Any], key: str, pct: str) -> str:
    value = figures.get(key, {})
    return f"{value[pct]:.1f}" if isinstance(value, dict) and pct in value else "-"


def summary(n: int, report: dict[str, Any]) -> str:
    """The figures the scale goals name, one line each."""
    lines = [f"## {n:,} memories (static model)", "", "| figure | value |", "|---|---|"]

    def row(name: str, value: object) -> None:
        lines.append(f"| {name} | {value} |")

    for name, built in report.get("build", {}).items():
        if "per_s" in built:
            row(f"build {name}, memories/s", built["per_s"])
    by_size = {r["size"]: r for r in report.get("speed", {}).get("results", [])}
    for size, f in sorted(by_size.items()):
        label = size_name(size)
        p = "/".join(_ms(f, "recall", k) for k in ("p50", "p95", "p99"))
        row(f"{label}: recall p50 / p95 / p99 ms, one client", p)
        row(f"{label}: batch writes/s", round(f.get("remember_batch_per_s", 0)))
        row(f"{label}: disk bytes per memory", f.get("disk_bytes_per_memory", "-"))
        row(f"{label}: peak RSS MB (open + 20 recalls)", f.get("palace_peak_rss_mb", "-"))
    if BASE in by_size and n in by_size:
        ratio = by_size[n]["remember_batch_per_s"] / by_size[BASE]["remember_batch_per_s"]
        row(f"writes at {size_name(n)} against {size_name(BASE)}", f"{ratio:.2f}x")
    for run in report.get("workers", {}).get("runs", []):
        per = run["per_worker_mb"]
        row(
            f"{run['workers']} workers: Pss together MB; per worker Rss / Pss MB; first recall s",
            f"{run['pss_total_mb']}; {per['rss']} / {per['pss']}; {run['first_recall_s']}",
        )
    load = report.get("load")
    if load:
        row(
            f"{load['clients']} clients in-process: calls/s; recall p50 / p95 ms",
            f"{load.get('throughput_per_s', '-')}; {_ms(load, 'recall_ms', 'p50')} /"
            f" {_ms(load, 'recall_ms', 'p95')}",
        )
    pg = report.get("postgres", {})
    if pg:
        one = pg["single_client"]
        row("PostgreSQL, one client: recall p50 / p95 ms",
            f"{_ms(one, 'recall_ms', 'p50')} / {_ms(one, 'recall_ms', 'p95')}")  # fmt: skip
        for count, run in pg["load"].items():
            row(
                f"PostgreSQL, {run['clients']} clients, {count} workers: calls/s;"
                " recall p50 / p95 ms",
                f"{run.get('throughput_per_s', '-')}; {_ms(run, 'recall_ms', 'p50')} /"
                f" {_ms(run, 'recall_ms', 'p95')}",
            )
        writes = pg.get("writes", {})
        for name, w in writes.items():
            row(f"PostgreSQL writes/s at {name}", round(w["per_s"]))
        if len(writes) == 2:
            small, large = (writes[size_name(s)]["per_s"] for s in (BASE, n))
            row(f"PostgreSQL writes at {size_name(n)} against {size_name(BASE)}",
                f"{large / small:.2f}x")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="the large palace's size")
    parser.add_argument(
        "--base", type=int, default=100_000, help="the size writes are compared with"
    )
    parser.add_argument("--steps", default=",".join(STEPS[:4]), help=",".join(STEPS))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20, help="calls per client")
    parser.add_argument("--queries", type=int, default=200, help="bench.speed's queries")
    parser.add_argument("--postgres", action="store_true", help="add the PostgreSQL step")
    parser.add_argument("--postgres-url", help="a server to use instead of a throwaway one")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    global BASE  # noqa: PLW0603 - one run, one base size
    BASE = args.base
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if args.postgres or args.postgres_url:
        steps.append("postgres")
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown steps {', '.join(unknown)}; the steps are {', '.join(STEPS)}")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    report: dict[str, Any] = {"n": args.n, "seconds": {}}
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        tmp = Path(scratch)
        for step in STEPS:
            if step not in steps:
                continue
            log(f"{step}:")
            started = time.perf_counter()
            if step == "build":
                report[step] = step_build(args.n, log)
            elif step == "speed":
                report[step] = step_speed(args.n, args.queries, log, tmp)
            elif step == "workers":
                report[step] = step_workers(args.n, args.workers, log)
            elif step == "load":
                report[step] = step_load(args.n, args.clients, args.calls, log, tmp)
            else:
                report[step] = step_postgres(
                    args.n,
                    args.postgres_url,
                    args.workers,
                    clients=args.clients,
                    calls=args.calls,
                    log=log,
                )
            report["seconds"][step] = round(time.perf_counter() - started)
            if args.json:  # kept as it grows: a long run stopped keeps its steps
                args.json.write_text(json.dumps(report, indent=2))
    print(summary(args.n, report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
