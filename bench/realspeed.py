"""Speed on real chat text: LongMemEval turns as memories, its questions as
queries::

    python -m bench.realspeed                         # 100k turns, default model
    python -m bench.realspeed --size 20000 --embedder static
    python -m bench.realspeed --build-only            # only build (and cache) the palace
    python -m bench.realspeed --shape facts           # the same texts written as facts
    python -m bench.realspeed --json out.json
    python -m bench.realspeed --unsaved               # time a first open: no saved indexes

The corpus is the LongMemEval_S development half (read in place, see
``bench.longmemeval.data_file``): every session of every question's
haystack, each turn once (a turn is its session and its text; the same
session appears in many haystacks), sessions in date order, cut at
``--size`` turns. Turns go in through ``Palace.add_messages`` (speaker =
role, the session and its date), so keyword contexts, date titles and
entities are built as a user's ingest builds them; the build's turns per
second are the ingest figure. With ``--shape facts`` the same texts go in as
facts through ``Palace.remember_many`` (each with its turn's date, no
session), the shape of a palace of curated memories. Queries are the development half's questions,
each recalled at its question date (the palace's clock), query embedding
included.

Two phases are timed, each in a fresh process:

- **first seconds**: recalls from the moment the palace is opened, while
  the warm indexes and the HNSW graph are still built in the background,
  until both are ready (and at least ``--first-seconds``);
- **steady state**: after the graph is built, every question once, with
  per-stage timings (``HitList.timings``), then again without graph
  propagation and without the re-ranker, interleaved.

A palace keeps its warm indexes and graph on disk once built
(``<palace>-warm/``, ``retrieval/warm_cache.py``): the first seconds of a
later run load them. ``--unsaved`` removes them first, so the run times a
first open (which builds and saves them again).

Palaces are cached under ``bench/.cache/speed/`` (gitignored). Timings are
percentiles over the question set; on a shared machine compare only figures
from one run.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.longmemeval import LmeQuestion, data_file, load
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.retrieval import warm_cache

CACHE = Path(__file__).resolve().parent / ".cache" / "speed"
INGEST_BATCH = 2000  # turns per add_messages call while building
FACTS_BATCH = 500  # facts per remember_many call while building


def turns(questions: Sequence[LmeQuestion], size: int) -> list[Message]:
    """The first ``size`` distinct turns, sessions in date order (ties by id)."""
    sessions: dict[str, tuple[datetime, list[tuple[str, str]]]] = {}
    seen: set[tuple[str, str]] = set()
    for q in questions:
        for s in q.sessions:
            entry = sessions.setdefault(s.session_id, (s.when, []))
            for t in s.turns:
                key = (s.session_id, t.content)
                if key in seen or not t.content.strip():
                    continue
                seen.add(key)
                entry[1].append((t.role, t.content))
    out: list[Message] = []
    for sid, (when, rows) in sorted(sessions.items(), key=lambda kv: (kv[1][0], kv[0])):
        for role, content in rows:
            if len(out) >= size:
                return out
            out.append(Message(content=content, role=role, session=sid, created_at=when))
    return out


def palace_path(size: int, embedder: str, shape: str = "turns") -> Path:
    """The cached palace: ``real-N-<model>.db`` holds the turns written by
    ``add_messages``, ``facts-N-<model>.db`` the same texts as facts."""
    return CACHE / f"{'real' if shape == 'turns' else 'facts'}-{size}-{embedder}.db"


def _batches(messages: Sequence[Message], n: int) -> Iterator[Sequence[Message]]:
    for i in range(0, len(messages), n):
        yield messages[i : i + n]


def build(
    size: int, embedder: str, log: Callable[[str], None], shape: str = "turns"
) -> dict[str, Any]:
    """Write the corpus into a cached palace (once); the ingest figures.

    ``shape`` "turns" writes turns of their sessions (``add_messages``);
    "facts" writes each text as a fact of its turn's date
    (``remember_many``, no sessions), 500 a call, logging the rate of
    each call as it goes (the rate's fall is itself a figure), with the
    warm keyword index in after the first call, as a serving process has."""
    path = palace_path(size, embedder, shape)
    if path.exists():
        return {}
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.db")
    for leftover in CACHE.glob(partial.name + "*"):
        leftover.unlink()
    messages = turns(load(), size)
    if len(messages) < size:
        log(f"  only {len(messages):,} distinct turns in the data")
    settings = Settings(embedder=embedder)
    model = from_settings(settings)
    model.embed_one("warm up")
    done = 0
    started = time.perf_counter()
    with Palace(partial, settings=settings, embedder=model) as palace:
        for chunk in _batches(messages, INGEST_BATCH if shape == "turns" else FACTS_BATCH):
            last = time.perf_counter()
            if shape == "turns":
                palace.add_messages(chunk)
            else:
                palace.remember_many(
                    {"content": m.content, "created_at": m.created_at} for m in chunk
                )
                if done == 0:
                    # Written as a serving process writes: with the warm
                    # keyword index in (replacements in other words are
                    # looked for there, not by the store's full-text search).
                    palace.engine.semantic.wait_for_warm()
            done += len(chunk)
            now = time.perf_counter()
            log(
                f"  ingested {done:,}/{len(messages):,} {shape}"
                f" ({len(chunk) / (now - last):.0f}/s now, {done / (now - started):.0f}/s overall)"
            )
        palace.wait_for_vectors()  # a slow model's bulk write is embedded after it
    seconds = time.perf_counter() - started
    for suffix in ("", "-wal", "-shm", warm_cache.SUFFIX):
        src = Path(str(partial) + suffix)
        if src.exists():
            src.rename(Path(str(path) + suffix))
    return {"turns": len(messages), "ingest_s": seconds, "ingest_per_s": len(messages) / seconds}


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "n": len(values),
        "p50": statistics.median(values),
        "p95": float(np.percentile(values, 95)),
        "p99": float(np.percentile(values, 99)),
    }


class _Clock:
    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        assert self.now is not None
        return self.now


def _first_seconds(
    palace: Palace, clock: _Clock, questions: Sequence[LmeQuestion], seconds: float
) -> dict[str, Any]:
    """Recalls from the moment ``palace`` was opened until its warm indexes
    and HNSW graph are built (and at least ``seconds``)."""
    opened = time.perf_counter()
    first: list[tuple[float, float]] = []  # (seconds since open, ms)
    ready: float | None = None
    warm: float | None = None
    i = 0
    while True:
        q = questions[i % len(questions)]
        i += 1
        clock.now = q.when
        palace.semantic.forget_queries()
        start = time.perf_counter()
        palace.recall(q.text)
        first.append((start - opened, (time.perf_counter() - start) * 1000))
        elapsed = time.perf_counter() - opened
        graph = palace.semantic._ann  # the bench reads whether the graph is built yet
        if ready is None and graph is not None and not graph.building and len(graph) > 0:
            ready = elapsed
        index = palace.semantic._dense  # and whether a recall has adopted the warm indexes
        if warm is None and index is not None and index.keyword is not None:
            warm = elapsed
        # No graph once warm: the palace is too small for one.
        no_graph = warm is not None and graph is None
        if (elapsed >= seconds and (ready is not None or no_graph)) or elapsed >= 600:
            break
    return {
        "first_open_recall_ms": first[0][1],
        # The second recall asks for the warm keyword and mention indexes.
        "second_recall_ms": first[1][1] if len(first) > 1 else None,
        "first_seconds_max": max(ms for _, ms in first[1:]) if len(first) > 1 else None,
        "graph_ready_s": ready,
        "warm_ready_s": warm,
        "first_seconds": percentiles([ms for _, ms in first[1:]]),
        # After the first recall: before the warm indexes were in a recall's
        # index (the store answers), then until the graph was built.
        "first_seconds_cold": percentiles(
            [ms for at, ms in first[1:] if warm is None or at + ms / 1000 < warm]
        ),
        "first_seconds_warm": percentiles(
            [
                ms
                for at, ms in first[1:]
                if warm is not None and at + ms / 1000 >= warm and (ready is None or at < ready)
            ]
        ),
        "first_seconds_by_second": {
            str(s): statistics.median([ms for at, ms in first[1:] if int(at) == s] or [0.0])
            for s in range(int(seconds) + 1)
        },
    }


def _steady(
    palace: Palace, clock: _Clock, questions: Sequence[LmeQuestion], model: Embedder
) -> dict[str, Any]:
    """Every question once after the graph is built: full recall, per-stage
    timings, recall without graph propagation, the query embedding alone."""
    waited = time.perf_counter()
    palace.semantic.wait_for_graph()
    out: dict[str, Any] = {"graph_wait_s": time.perf_counter() - waited}
    for q in questions[:20]:
        clock.now = q.when
        palace.recall(q.text)
    full: list[float] = []
    no_graph: list[float] = []
    no_rerank: list[float] = []
    again: list[float] = []  # with the re-ranker, right after no_rerank
    options = palace.recall_options
    stages: dict[str, list[float]] = {}
    slowest: list[tuple[float, str, dict[str, float]]] = []
    for q in questions:
        clock.now = q.when
        palace.semantic.forget_queries()
        start = time.perf_counter()
        hits = palace.recall(q.text)
        ms = (time.perf_counter() - start) * 1000
        full.append(ms)
        slowest.append((ms, q.text, dict(hits.timings)))
        for stage, value in hits.timings.items():
            stages.setdefault(stage, []).append(value)
        palace.semantic.forget_queries()
        start = time.perf_counter()
        palace.recall(q.text, expand=False)
        no_graph.append((time.perf_counter() - start) * 1000)
        # Without the re-ranker, then with it again: the mean of the two
        # with-it calls faces the one without it, in the same cache state.
        palace.semantic.forget_queries()
        palace.recall_options = replace(options, rerank=False)
        start = time.perf_counter()
        palace.recall(q.text)
        no_rerank.append((time.perf_counter() - start) * 1000)
        palace.recall_options = options
        palace.semantic.forget_queries()
        start = time.perf_counter()
        palace.recall(q.text)
        again.append((time.perf_counter() - start) * 1000)
    embed_only = []
    for q in questions:
        start = time.perf_counter()
        model.embed_query(q.text + " ")
        embed_only.append((time.perf_counter() - start) * 1000)
    out["recall"] = percentiles(full)
    out["recall_no_graph"] = percentiles(no_graph)
    out["recall_no_rerank"] = percentiles(no_rerank)
    out["recall_after_no_rerank"] = percentiles(again)
    out["query_embed"] = percentiles(embed_only)
    out["stages_p50"] = {k: statistics.median(v) for k, v in stages.items()}
    out["stages_p95"] = {k: float(np.percentile(v, 95)) for k, v in stages.items()}
    slowest.sort(key=lambda r: -r[0])
    out["slowest"] = [{"ms": ms, "query": text[:80], "timings": t} for ms, text, t in slowest[:5]]
    return out


def measure(path: Path, embedder: str, first_seconds: float, n_queries: int) -> dict[str, Any]:
    """In this (fresh) process: the first seconds, then the steady state."""
    questions = load()[:n_queries]
    settings = Settings(embedder=embedder)
    t0 = time.perf_counter()
    model = from_settings(settings)
    model.embed_one("warm up")
    clock = _Clock()
    clock.now = questions[0].when
    out: dict[str, Any] = {"model_load_s": time.perf_counter() - t0}
    with Palace(path, settings=settings, embedder=model, clock=clock) as palace:
        out.update(_first_seconds(palace, clock, questions, first_seconds))
        out.update(_steady(palace, clock, questions, model))
    return out


def _fresh(path: Path, embedder: str, first_seconds: float, n_queries: int) -> dict[str, Any]:
    code = (
        "import json, sys; from pathlib import Path; from bench.realspeed import measure;"
        " print(json.dumps(measure(Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]),"
        " int(sys.argv[4]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), embedder, str(first_seconds), str(n_queries)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def report(r: dict[str, Any]) -> str:
    def pct(key: str) -> str:
        p = r.get(key) or {}
        if not p:
            return "-"
        return f"{p['p50']:.1f} / {p['p95']:.1f} / {p['p99']:.1f}"

    lines = [
        f"| real chat text, {r['size']:,} {r.get('shape', 'turns')} ({r['embedder']}) | measured |",
        "|---|---|",
        f"| recall p50 / p95 / p99 ms, steady, query embedding included | {pct('recall')} |",
        f"| the same, no graph propagation | {pct('recall_no_graph')} |",
        f"| the same, no re-ranker | {pct('recall_no_rerank')} |",
        f"| the same, with it again right after | {pct('recall_after_no_rerank')} |",
        f"| query embedding alone p50 / p95 / p99 ms | {pct('query_embed')} |",
        f"| first seconds (graph building) p50 / p95 / p99 ms | {pct('first_seconds')} |",
        f"| the same, before the warm indexes are in | {pct('first_seconds_cold')} |",
        f"| the same, warm indexes in, graph building | {pct('first_seconds_warm')} |",
        f"| first recall after opening ms | {r.get('first_open_recall_ms', 0):.0f} |",
        f"| second recall (asks for the warm indexes) ms | {r.get('second_recall_ms') or 0:.0f} |",
        f"| warm keyword and mention indexes ready after s | {r.get('warm_ready_s') or 0:.1f} |",
        f"| HNSW graph ready after s | {r.get('graph_ready_s') or 0:.1f} |",
    ]
    if r.get("ingest_per_s"):
        facts = r.get("shape") == "facts"
        how = "remember_many, facts/s" if facts else "add_messages, turns/s"
        lines.append(f"| ingest through {how} | {r['ingest_per_s']:.0f} |")
    lines.append("")
    lines.append("| stage | p50 ms | p95 ms |")
    lines.append("|---|---|---|")
    for stage, p50 in r.get("stages_p50", {}).items():
        lines.append(f"| {stage} | {p50:.2f} | {r['stages_p95'][stage]:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realspeed", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="turns (default 100000)")
    parser.add_argument(
        "--embedder",
        default=Settings().embedder,
        help=f"embedding model (default: the product's, {Settings().embedder})",
    )
    parser.add_argument("--first-seconds", type=float, default=10.0)
    parser.add_argument("--queries", type=int, default=238, help="questions recalled")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--shape",
        choices=("turns", "facts"),
        default="turns",
        help="the palace's shape: turns of sessions (add_messages) or facts (remember_many)",
    )
    parser.add_argument(
        "--unsaved",
        action="store_true",
        help="remove the palace's saved warm indexes first (time a first open)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not data_file().exists():
        print(
            f"LongMemEval data not found at {data_file()} (set MINDPALACE_LONGMEMEVAL): skipped",
            file=sys.stderr,
        )
        return 0

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    result: dict[str, Any] = {
        "size": args.size,
        "embedder": args.embedder,
        "shape": args.shape,
        "load_start": _load(),
    }
    result.update(build(args.size, args.embedder, log, args.shape))
    if args.build_only:
        print(json.dumps(result, indent=1))
        return 0
    path = palace_path(args.size, args.embedder, args.shape)
    saved = Path(str(path) + warm_cache.SUFFIX)
    if args.unsaved and saved.exists():
        shutil.rmtree(saved)
    result["saved_indexes"] = saved.is_dir()
    result.update(_fresh(path, args.embedder, args.first_seconds, args.queries))
    result["load_end"] = _load()
    print(report(result))
    print(f"saved warm indexes found at start: {'yes' if result['saved_indexes'] else 'no'}")
    print(f"load average at start {result['load_start']}, at end {result['load_end']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
