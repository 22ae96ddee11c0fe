"""What several worker processes on one host hold, together, for one palace::

    python -m bench.workers --palace bench/.cache/speed/real-100000-static.db --workers 1 2 4

For each count, that many processes open the palace at once (static model),
wait for the warm indexes and the HNSW graph (loaded from the warm files
beside the palace when they are there), recall 20 questions (LongMemEval
development half, read by this process and handed over), and then, all
still alive, have their memory read from ``/proc/PID/smaps_rollup``:
resident (``Rss``), and proportional (``Pss``: a page shared by k
processes counts 1/k in each), split into
anonymous pages (each process's own) and file pages (the memory-mapped
warm files and the database's pages in the page cache, shared). The sum of
``Pss`` over the workers is what they take from the host together; the
sum of ``Rss`` counts shared pages once per worker. Also each worker's
seconds from open to its first recall answered, and to warm.

Prints one JSON report (and, with ``--json``, writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.longmemeval import load

CHILD = """
import json, sys, time
from datetime import datetime
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings

path = sys.argv[1]
questions = [(text, datetime.fromisoformat(when)) for text, when in json.loads(sys.argv[2])]
settings = Settings(embedder="static")
model = from_settings(settings)
now = [questions[0][1]]
began = time.perf_counter()
with Palace(path, settings=settings, embedder=model, clock=lambda: now[0]) as palace:
    palace.recall(questions[0][0])
    first = time.perf_counter() - began
    palace.semantic.wait_for_warm()
    palace.semantic.wait_for_graph()
    warm = time.perf_counter() - began
    for text, when in questions:
        now[0] = when
        palace.recall(text)
    print(json.dumps({"first_recall_s": first, "warm_s": warm}), flush=True)
    sys.stdin.readline()  # hold everything until every worker has reported
"""


def _together(palace: Path, count: int, questions: str) -> list[dict[str, Any]]:
    """``count`` workers started at once; each one's report, read while all live.
    ``questions``: (text, ISO time) pairs as JSON (read here, not in each
    worker: the data set alone takes about 180 MB of a process)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(root / "src"), str(root))))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(palace), questions],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        for _ in range(count)
    ]
    reports: list[dict[str, Any]] = []
    try:
        for worker in workers:
            assert worker.stdout is not None
            line = worker.stdout.readline()
            if not line:
                raise RuntimeError(f"a worker ended without a report (exit {worker.wait()})")
            reports.append(json.loads(line))
        # Read once all have reported: a later worker's mapping of the
        # shared pages lowers the earlier ones' Pss.
        for worker, report in zip(workers, reports, strict=True):
            report["memory"] = _rollup(worker.pid)
    finally:
        for worker in workers:
            if worker.stdin is not None:
                worker.stdin.close()
        for worker in workers:
            worker.wait(timeout=120)
    return reports


def _rollup(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Pss_Shmem", "Anonymous"):
            out[key] = int(value.split()[0]) / 1024
    return out


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str) -> float:
        return round(sum(r["memory"].get(key, 0.0) for r in reports), 1)

    def median(key: str) -> float:
        return round(statistics.median(r["memory"].get(key, 0.0) for r in reports), 1)

    return {
        "workers": len(reports),
        "pss_total_mb": total("Pss"),
        "rss_total_mb": total("Rss"),
        "per_worker_mb": {
            "rss": median("Rss"),
            "pss": median("Pss"),
            "pss_anon": median("Pss_Anon"),
            "pss_file": median("Pss_File"),
        },
        "first_recall_s": [round(r["first_recall_s"], 2) for r in reports],
        "warm_s": [round(r["warm_s"], 2) for r in reports],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__)
    parser.add_argument("--palace", type=Path, required=True)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not args.palace.exists():
        parser.error(f"no palace at {args.palace} (python -m bench.realspeed builds one)")
    questions = json.dumps([(q.text, q.when.isoformat()) for q in load()[:20]])
    report: dict[str, Any] = {"palace": str(args.palace), "runs": []}
    for count in args.workers:
        started = time.perf_counter()
        report["runs"].append(summary(_together(args.palace, count, questions)))
        print(
            f"{count} workers: {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
