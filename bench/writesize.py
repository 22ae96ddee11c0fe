"""Does a write slow down as the palace grows? Real chat text written into
an empty palace and into a large one, side by side in one run::

    python -m bench.writesize                          # 100k turns, static model
    python -m bench.writesize --base 100000 --writes 2000 --singles 200
    python -m bench.writesize --shapes facts --profile /tmp/w.prof
    python -m bench.writesize --build-facts 100000     # cache a palace of facts
    python -m bench.writesize --old /tmp/main/src      # two trees, alternated

The texts are ``bench.realspeed``'s LongMemEval turns (the development half,
sessions in date order, each turn once). The large palace is a copy of a
cached one: ``real-N-<model>.db`` (turns by ``add_messages``, the palace
``bench.realspeed`` builds) or, with ``--base-shape facts``,
``facts-N-<model>.db`` (the same turns as facts by ``remember_many``,
built with ``--build-facts N`` or ``bench.realspeed --shape facts
--build-only``). The written texts are the turns after the first N, so
none is already stored.

Each case runs in a fresh process on a fresh copy (the palace and its warm
indexes): the model is loaded and warmed and one recall is made (a serving
process has its warm indexes in), then timed:

- **facts**: ``remember_many`` of ``--writes`` texts (category fact, the
  turn's date as ``created_at``), in calls of ``--batch``;
- **turns**: ``add_messages`` of the same texts as turns of their sessions;
- **single**: ``--singles`` calls of ``remember``, one real text each
  (median and p95 of a call);
- **replace**: ``--singles`` times, a fact ("Kelab status is green."), a
  recall, the fact that replaces it ("... is red.", closed by supersession),
  and the recall after it (median and p95 of that recall: what a
  replacement costs the next reader; ``replaced`` counts the facts closed).

Figures are writes per second of the calls alone and the process's CPU time
a write (steadier on a shared machine); the empty and the large palace
alternate case by case, so both see the same load. ``--profile`` writes a
cProfile of each case (one file per case, suffixed by shape and palace).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.realspeed import CACHE, build, palace_path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = SRC.parent
SHAPES = ("facts", "turns", "single", "replace")


# One timed case, in a fresh process: argv = shape db embedder start count batch profile
CHILD = r"""
import cProfile, json, statistics, sys, time
from pathlib import Path
from bench.longmemeval import load
from bench.realspeed import turns
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings

shape, db, embedder, start, count, batch, profile = sys.argv[1:8]
start, count, batch = int(start), int(count), int(batch)
messages = turns(load(), start + count)[start:]
settings = Settings(embedder=embedder)
model = from_settings(settings)
model.embed_one("warm up")
out = {"writes": len(messages)}
with Palace(Path(db), settings=settings, embedder=model) as palace:
    palace.recall("warm up the indexes", limit=5)
    palace.semantic.wait_for_graph()
    palace.recall("warm up the indexes again", limit=5)
    prof = cProfile.Profile() if profile != "-" else None
    calls = []
    cpu = time.process_time()
    started = time.perf_counter()
    if prof is not None:
        prof.enable()
    if shape == "facts":
        for i in range(0, len(messages), batch):
            palace.remember_many(
                {"content": m.content, "created_at": m.created_at} for m in messages[i : i + batch]
            )
    elif shape == "replace":
        # a fact, a recall, its replacement, then the recall a user makes next
        for i, m in enumerate(messages):
            name = ("Kel" + chr(97 + i % 26) + chr(97 + i // 26 % 26)).title()
            old = palace.remember(f"{name} status is green.", created_at=m.created_at)
            palace.recall(f"what is the status of {name}")
            palace.remember(f"{name} status is red.", created_at=m.created_at)
            t = time.perf_counter()
            palace.recall(f"what is the status of {name}")
            calls.append((time.perf_counter() - t) * 1000)
            closed = palace.get(old.id).superseded_by is not None
            out["replaced"] = out.get("replaced", 0) + closed
    elif shape == "turns":
        for i in range(0, len(messages), batch):
            palace.add_messages(messages[i : i + batch])
    else:
        for m in messages:
            t = time.perf_counter()
            palace.remember(m.content, created_at=m.created_at)
            calls.append((time.perf_counter() - t) * 1000)
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    out["seconds"] = time.perf_counter() - started
    out["cpu_seconds"] = time.process_time() - cpu
    if calls:
        calls.sort()
        out["p50_ms"] = statistics.median(calls)
        out["p95_ms"] = calls[min(len(calls) - 1, int(0.95 * len(calls)))]
    out["pending"] = palace.pending_vectors() if hasattr(palace, "pending_vectors") else 0
print("RESULT " + json.dumps(out))
"""


def _copy(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        s = Path(str(src) + suffix)
        if s.exists():
            shutil.copyfile(s, str(dst) + suffix)
    warm = Path(str(src) + "-warm")
    if warm.is_dir():
        shutil.copytree(warm, str(dst) + "-warm")


def _case(  # noqa: PLR0917 - one benchmark case, every part named at the call
    shape: str,
    base: Path | None,
    embedder: str,
    start: int,
    count: int,
    batch: int,
    profile: str,
    tmp: Path,
    src: Path = SRC,
) -> dict[str, Any]:
    db = tmp / f"{shape}-{'large' if base else 'empty'}.db"
    for old in tmp.glob(db.name + "*"):
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    if base is not None:
        _copy(base, db)
    args = [shape, str(db), embedder, str(start), str(count), str(batch), profile]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": f"{src}:{ROOT}"},
        capture_output=True,
        text=True,
        check=False,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"{shape} case failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    for old in tmp.glob(db.name + "*"):
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    return result


def table(results: dict[str, dict[str, list[dict[str, Any]]]], head: str, base: int) -> str:
    """The run's figures as a markdown table: medians over rounds."""
    out = [f"| {head} | empty palace | {base:,} | ratio |", "|---|---|---|---|"]
    for shape, by in results.items():

        def med(key: str, where: str, by: dict[str, list[dict[str, Any]]] = by) -> float:
            return float(statistics.median(r[key] for r in by[where]))

        if shape in {"single", "replace"}:
            what = "single remember" if shape == "single" else "recall after a replacement"
            e, g = med("p50_ms", "empty"), med("p50_ms", "large")
            e95, g95 = med("p95_ms", "empty"), med("p95_ms", "large")
            out.append(f"| {what} p50 / p95 ms | {e:.1f} / {e95:.1f} | {g:.1f} / {g95:.1f} | |")
        else:
            rates = {w: statistics.median(r["writes"] / r["seconds"] for r in by[w]) for w in by}
            cpu = {
                w: statistics.median(1000 * r["cpu_seconds"] / r["writes"] for r in by[w])
                for w in by
            }
            ratio = rates["large"] / rates["empty"]
            out.append(
                f"| {shape} writes/s (CPU ms a write) | {rates['empty']:.0f} ({cpu['empty']:.2f})"
                f" | {rates['large']:.0f} ({cpu['large']:.2f}) | {ratio:.2f}x |"
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=int, default=100_000, help="size of the large palace")
    ap.add_argument("--base-shape", choices=("turns", "facts"), default="turns")
    ap.add_argument("--embedder", default="static")
    ap.add_argument("--writes", type=int, default=2000, help="texts per batch case")
    ap.add_argument("--batch", type=int, default=500, help="texts per call")
    ap.add_argument("--singles", type=int, default=200, help="single remember calls")
    ap.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES)
    )
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--old", default="", help="another tree's src folder, run alternately")
    ap.add_argument("--profile", default="", help="cProfile file prefix, one file per case")
    ap.add_argument("--build-facts", type=int, default=0, metavar="N")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.build_facts:
        build(args.build_facts, args.embedder, lambda line: print(line, flush=True), "facts")
        return 0
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    bad = [s for s in shapes if s not in SHAPES]
    if bad:
        ap.error(f"unknown shape(s) {', '.join(bad)}; choose from {', '.join(SHAPES)}")
    base = palace_path(args.base, args.embedder, args.base_shape)
    if not base.exists():
        ap.error(f"{base} is missing: build it (bench.realspeed --build-only, or --build-facts)")
    trees = {"this tree": SRC, **({"old": Path(args.old).resolve()} if args.old else {})}
    results: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {t: {} for t in trees}
    with tempfile.TemporaryDirectory(prefix="writesize-", dir=CACHE) as tmpdir:
        tmp = Path(tmpdir)
        for _ in range(args.rounds):
            for shape in shapes:
                count = args.singles if shape in {"single", "replace"} else args.writes
                for where, palace in (("empty", None), ("large", base)):
                    for tree, src in trees.items():  # alternated: both see the same load
                        profile = f"{args.profile}.{shape}.{where}" if args.profile else "-"
                        r = _case(
                            shape,
                            palace,
                            args.embedder,
                            args.base,
                            count,
                            args.batch,
                            profile,
                            tmp,
                            src,
                        )
                        results[tree].setdefault(shape, {}).setdefault(where, []).append(r)
                        print(f"{tree:9} {shape:7} {where:5} {json.dumps(r)}", flush=True)
    for tree, found in results.items():
        print(f"\n{tree} ({trees[tree]}):\n")
        print(table(found, f"{args.embedder} model, {args.base:,} {args.base_shape}", args.base))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
