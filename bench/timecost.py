"""Speed: recall's time stage with each memory's stated times kept (read
once when it was written) against reading them from every candidate's text
at recall, as before they were kept (``retrieval/time/stored.py``)::

    python -m bench.timecost                          # 100k facts, default model
    python -m bench.timecost --shape turns --embedder static --json out.json

The palace is ``bench.realspeed``'s cached one (``--build-only`` there
builds it); memories it holds without kept times get them first, as
``reindex`` gives them. Then every LongMemEval development question is
recalled twice at its question date, once each way, in alternating order,
each after the cache of read texts was emptied (a question's candidates
are read cold, as in a large palace whose questions differ) and the
query's embedding forgotten. Reported: the time stage's and the whole
recall's milliseconds (median, p95) each way, over every question and over
those naming a time or asking when; the ratio of the medians; and how many
questions got the same hits with the same relevance both ways (the kept
form must change nothing but the cost).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.longmemeval import load
from bench.realspeed import palace_path, percentiles
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.models import Hit
from mindpalace.retrieval.time import stored, temporal
from mindpalace.retrieval.time.prior import read_query

WAYS = ("kept", "text")


class _Clock:
    def __init__(self) -> None:
        self.now = load()[0].when

    def __call__(self) -> Any:
        return self.now


@contextmanager
def _reading(way: str) -> Iterator[None]:
    """Recall reads stated times as ``way`` says: kept, or from the text."""
    if way == "kept":
        yield
        return
    kept = stored.decode
    stored.decode = lambda *_: None  # type: ignore[assignment]
    try:
        yield
    finally:
        stored.decode = kept


def _hits(hits: Sequence[Hit]) -> list[tuple[str, float]]:
    return [(h.memory.id, round(h.score, 9)) for h in hits]


def measure(path: Path, embedder: str, n_queries: int) -> dict[str, Any]:
    questions = load()[:n_queries]
    settings = Settings(embedder=embedder)
    model = from_settings(settings)
    clock = _Clock()
    out: dict[str, Any] = {"palace": path.name, "questions": len(questions)}
    with Palace(path, settings=settings, embedder=model, clock=clock) as palace:
        started = time.perf_counter()
        out["kept_first"] = stored.keep_all(palace.engine.store)
        out["kept_first_s"] = round(time.perf_counter() - started, 2)
        palace.semantic.wait_for_graph()
        for q in questions[:20]:  # warm: indexes adopted, code paths run
            clock.now = q.when
            palace.recall(q.text)
        stage: dict[str, dict[str, list[float]]] = {w: {"all": [], "timed": []} for w in WAYS}
        total: dict[str, dict[str, list[float]]] = {w: {"all": [], "timed": []} for w in WAYS}
        same = 0
        for i, q in enumerate(questions):
            clock.now = q.when
            timed = read_query(q.text, q.when).active
            got: dict[str, list[tuple[str, float]]] = {}
            for way in WAYS if i % 2 == 0 else WAYS[::-1]:
                temporal._find_cached.cache_clear()  # the bench empties the cache of read texts
                palace.semantic.forget_queries()
                with _reading(way):
                    start = time.perf_counter()
                    hits = palace.recall(q.text)
                    ms = (time.perf_counter() - start) * 1000
                got[way] = _hits(hits)
                for which in ("all", "timed") if timed else ("all",):
                    stage[way][which].append(hits.timings.get("time", 0.0))
                    total[way][which].append(ms)
            same += got["kept"] == got["text"]
    out["same_hits"] = same
    out["time_stage"] = {w: {k: percentiles(v) for k, v in stage[w].items()} for w in WAYS}
    out["recall"] = {w: {k: percentiles(v) for k, v in total[w].items()} for w in WAYS}
    out["ratio_p50"] = {
        what: {
            k: (values["kept"][k]["p50"] / values["text"][k]["p50"])
            if values["text"][k] and values["text"][k]["p50"]
            else None
            for k in ("all", "timed")
        }
        for what, values in (("time_stage", out["time_stage"]), ("recall", out["recall"]))
    }
    return out


def _cell(summary: dict[str, float]) -> str:
    return f"{summary['p50']:.2f} / {summary['p95']:.2f}" if summary else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shape", choices=("facts", "turns"), default="facts")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--queries", type=int, default=238)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    path = palace_path(args.size, args.embedder, args.shape)
    if not path.exists():
        sys.exit(
            f"no palace at {path}: build it with python -m bench.realspeed --size {args.size}"
            f" --shape {args.shape} --embedder {args.embedder} --build-only"
        )
    result = measure(path, args.embedder, args.queries)
    print(
        f"{path.name}: {result['questions']} questions, hits the same both ways:"
        f" {result['same_hits']}; kept first: {result['kept_first']} in {result['kept_first_s']} s"
    )
    print("| read | time stage p50 / p95 (all) | (timed) | recall p50 / p95 (all) | (timed) |")
    print("|---|---|---|---|---|")
    for way in WAYS:
        st, rc = result["time_stage"][way], result["recall"][way]
        print(
            f"| {way} | {_cell(st['all'])} | {_cell(st['timed'])} |"
            f" {_cell(rc['all'])} | {_cell(rc['timed'])} |"
        )
    print("ratio of medians, kept / text:", json.dumps(result["ratio_p50"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
