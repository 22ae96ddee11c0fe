"""Resident memory, recall time and hits of two source trees on one palace
of real chat text, side by side::

    python -m bench.compact_ab --palace bench/.cache/speed/real-100000-static.db \\
        --old /work/main/src --new src --rounds 2

Each round runs a fresh process per tree, alternating (old, new, old, new,
...), on its own copy of the palace (made once; the copies keep their own
warm files, so each tree's first round builds and saves what it keeps on
disk and later rounds load them). A process opens the palace with the
static model, waits for the warm indexes and the HNSW graph, recalls 20
questions to warm up, then reads its memory (``/proc/self/status``:
``VmRSS``, its anonymous and file-backed parts, and the peak ``VmHWM``),
then recalls every question (LongMemEval development half) once, timed,
query embedding included, keeping the top 10 ids. The report gives each
figure's median over rounds, and how many questions have the same top 10
(ids, in order) from both trees.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = """
import json, sys, time
from pathlib import Path
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from bench.longmemeval import load

def status():
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out

path, count = sys.argv[1], int(sys.argv[2])
questions = load()[:count]
settings = Settings(embedder="static")
model = from_settings(settings)
now = [questions[0].when]
with Palace(path, settings=settings, embedder=model, clock=lambda: now[0]) as palace:
    opened = status()
    palace.semantic.wait_for_graph()
    for q in questions[:20]:
        now[0] = q.when
        palace.recall(q.text)
    warm = status()
    times, tops = [], []
    for q in questions:
        now[0] = q.when
        palace.semantic.forget_queries()
        start = time.perf_counter()
        hits = palace.recall(q.text, limit=10)
        times.append((time.perf_counter() - start) * 1000)
        tops.append([h.memory.id for h in hits])
    print(json.dumps({"opened": opened, "warm": warm, "end": status(), "ms": times, "tops": tops}))
"""


def _run(src: Path, palace: Path, count: int) -> dict[str, Any]:
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(src), str(root))))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(palace), str(count)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=root,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _copy(palace: Path, to: Path) -> Path:
    if not to.exists():
        for suffix in ("", "-wal", "-shm"):
            source = Path(str(palace) + suffix)
            if source.exists():
                shutil.copy2(source, Path(str(to) + suffix))
    return to


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compact_ab", description=__doc__)
    parser.add_argument("--palace", type=Path, required=True)
    parser.add_argument("--old", type=Path, required=True, help="the source tree before")
    parser.add_argument("--new", type=Path, required=True, help="the source tree after")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=238)
    parser.add_argument(
        "--work", type=Path, default=Path(__file__).resolve().parent / ".cache" / "compact_ab"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    copies = {
        side: _copy(args.palace, args.work / f"{side}-{args.palace.name}")
        for side in ("old", "new")
    }
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for n in range(args.rounds):
        for side in ("old", "new"):
            src = args.old if side == "old" else args.new
            started = time.perf_counter()
            runs[side].append(_run(src.resolve(), copies[side], args.queries))
            print(
                f"round {n + 1} {side}: {time.perf_counter() - started:.0f} s, load "
                f"{os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
    rows: list[tuple[str, str, str]] = []

    def figure(name: str, pick: Any) -> None:
        values = {side: [pick(r) for r in runs[side]] for side in runs}
        shown = {
            side: f"{statistics.median(v):.1f} ({', '.join(f'{x:.1f}' for x in v)})"
            for side, v in values.items()
        }
        rows.append((name, shown["old"], shown["new"]))

    figure("resident MB after warm-up (VmRSS)", lambda r: r["warm"]["VmRSS"])
    figure("  of it anonymous (RssAnon)", lambda r: r["warm"]["RssAnon"])
    figure("  of it file pages, shared (RssFile)", lambda r: r["warm"]["RssFile"])
    figure("resident MB after the timed recalls", lambda r: r["end"]["VmRSS"])
    figure("  of it anonymous", lambda r: r["end"]["RssAnon"])
    figure("peak resident MB (VmHWM)", lambda r: r["end"]["VmHWM"])
    figure("recall p50 ms", lambda r: statistics.median(r["ms"]))
    figure("recall p95 ms", lambda r: _pct(r["ms"], 0.95))
    same = [
        sum(a == b for a, b in zip(old["tops"], new["tops"], strict=True))
        for old, new in zip(runs["old"], runs["new"], strict=True)
    ]
    print(f"| {args.palace.name} | before ({args.old}) | after ({args.new}) |")
    print("|---|---|---|")
    for name, old_value, new_value in rows:
        print(f"| {name} | {old_value} | {new_value} |")
    same_text = ", ".join(map(str, same))
    print(f"| questions with the same top 10, by round | {same_text} of {args.queries} | |")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "same_top10": same}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
