"""Abstention signals: what answer support reads, per question, on the three benchmarks.

For every everyday question (both splits, MiniLM), LoCoMo question (its own
conversation's palace, depth 100, and the next conversation's questions as
never-stored ones, depth 10; MiniLM, the default ingest) and LongMemEval
question (a fixed subset of the scored ones and every abstention question;
the static model), one row: whether the palace holds the answer, the rank
and relevance of the first evidence hit, the top relevance, the answer
support reading (``retrieval/answered.py``: words carried, best cosine) and
each content word of the question with its table weight, how well a head hit
says it, and whether any memory the caller may see contains it (same stem,
``Store.terms_present``). Nothing is tuned here; ``--analyse`` reads the rows
back and prints how candidate rules split them::

    python -m bench.abstain_signals --out /tmp/signals.json
    python -m bench.abstain_signals --only everyday --out /tmp/everyday.json
    python -m bench.abstain_signals --analyse /tmp/signals.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import everyday, locomo, longmemeval
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.formats import read_messages
from mindpalace.models import HitList
from mindpalace.retrieval import answered

BENCHMARKS = ("everyday", "locomo", "longmemeval")
FLOOR = 0.5


def _model(name: str) -> Embedder:
    model = from_settings(Settings(embedder=name))
    if model is None:
        raise ValueError(f"embedder {name!r} gives no model")
    return model


def row(
    p: Palace,
    hits: HitList,
    question: str,
    evidence: Callable[[dict[str, Any]], bool] | None,
    **labels: Any,
) -> dict[str, Any]:
    """One question's signals (``evidence``: whether a hit's metadata marks
    it as evidence; None for a question the palace does not answer)."""
    embedder = p.semantic.embedder
    marks = answered.marks_for(embedder.config.model if embedder else "") or (1.0, 1.0)
    reading = answered.read(question, hits, marks)
    words = answered.asked_words(question, answered.head_texts(hits))
    present = p.store.terms_present([w.word for w in words], p.scope) if words else set()
    rank = None
    if evidence is not None:
        rank = next((i for i, h in enumerate(hits, 1) if evidence(h.memory.metadata)), None)
    return {
        **labels,
        "question": question,
        "answerable": evidence is not None,
        "empty": not hits,
        "notice": hits.notice,
        "top": round(hits[0].score, 4) if hits else None,
        "rank": rank,
        "evidence_relevance": round(hits[rank - 1].score, 4) if rank else None,
        "fired": bool(hits) and any(g.startswith("answer-support") for g in hits[0].gates),
        "missing": reading.missing if reading else None,
        "words_share": reading.words if reading else None,
        "cosine": reading.cosine if reading else None,
        "head": [t[:400] for t in answered.head_texts(hits)],
        "words": [
            {"w": w.word, "weight": round(w.weight, 4), "said": round(w.said, 3)}
            | {"present": w.word in present}
            for w in words
        ],
    }


def run_everyday() -> list[dict[str, Any]]:
    files = everyday.palace_files()
    dev = {f.stem for f in everyday.split_files(files, "dev")}
    model = _model("local")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for f in files:
            palace = everyday.load(f)
            p, _ = everyday.build_palace(palace, Path(scratch) / f"{palace.name}.db", model)
            try:
                for q in palace.questions:
                    hits = p.recall(q.text, limit=everyday.DEPTH)
                    wanted = set(q.evidence)
                    rows.append(
                        row(
                            p,
                            hits,
                            q.text,
                            (lambda m, w=wanted: m.get("key") in w) if q.answerable else None,
                            benchmark="everyday",
                            split="dev" if palace.name in dev else "heldout",
                            palace=palace.name,
                            id=q.id,
                            type=q.type,
                        )
                    )
            finally:
                p.close()
            print(f"  everyday {palace.name}", file=sys.stderr)
    return rows


def run_locomo() -> list[dict[str, Any]]:
    model = _model("local")
    rows = []
    conversations = locomo.load()
    with tempfile.TemporaryDirectory() as scratch:
        for own, foreign in locomo.iter_pairs(conversations):
            after = own.turns[-1].when + timedelta(days=1)
            p = Palace(
                Path(scratch) / f"{own.name}.db",
                embedder=model,
                settings=Settings(index="process"),
                clock=lambda after=after: after,
            )
            try:
                source = locomo.data_dir() / f"{own.name}.json"
                p.add_messages(read_messages(source, format="locomo"), dates=True)
                p.wait_for_vectors()
                p.semantic.wait_for_warm()
                for i, q in enumerate(own.questions):
                    hits = p.recall(q.text, limit=100)
                    rows.append(
                        row(
                            p,
                            hits,
                            q.text,
                            lambda m, e=q.evidence: m.get("dia_id") in e,
                            benchmark="locomo",
                            palace=own.name,
                            id=f"{own.name}:{i}",
                            type=str(q.category),
                        )
                    )
                for i, q in enumerate(foreign.questions):
                    hits = p.recall(q.text, limit=10)
                    rows.append(
                        row(
                            p,
                            hits,
                            q.text,
                            None,
                            benchmark="locomo",
                            palace=own.name,
                            id=f"{foreign.name}:{i}@{own.name}",
                            type="foreign",
                        )
                    )
            finally:
                p.close()
            print(f"  locomo {own.name}", file=sys.stderr)
    return rows


def run_longmemeval(limit: int) -> list[dict[str, Any]]:
    model = _model("static")
    questions = longmemeval.load()
    scored = [q for q in questions if not q.abstention and q.evidence]
    chosen = longmemeval.stratified(scored, limit) + [q for q in questions if q.abstention]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n, q in enumerate(chosen):
            with Palace(Path(scratch) / f"{n}.db", embedder=model, clock=lambda q=q: q.when) as p:
                p.add_messages(longmemeval._messages(q))
                p.wait_for_vectors()
                p.semantic.wait_for_warm()
                hits = p.recall(q.text, limit=longmemeval.DEPTH)
                evidence = q.evidence
                rows.append(
                    row(
                        p,
                        hits,
                        q.text,
                        None if q.abstention else (lambda m, e=evidence: m.get("turn_id") in e),
                        benchmark="longmemeval",
                        id=q.question_id,
                        type=q.question_type,
                    )
                )
            if n % 10 == 0:
                print(f"  longmemeval {n}/{len(chosen)}", file=sys.stderr)
    return rows


# --- reading the rows back ---


def low(r: dict[str, Any], extra: bool) -> bool:
    """Whether a row's question ends labelled low: abstained (no hits, or
    all under the floor) for a never-stored one, its evidence under the
    floor (or the rule fired) for an answerable one; ``extra``: a new rule
    fired as well."""
    if r["empty"]:
        return True
    if extra:
        return True
    if r["answerable"]:
        rel = r["evidence_relevance"]
        return rel is not None and rel < FLOOR
    return r["top"] < FLOOR


def unheard_share(r: dict[str, Any], close: float) -> float:
    """The share of the question's word weight that no visible memory says
    (no same stem) and no head hit says a near word of (under ``close``)."""
    total = sum(w["weight"] for w in r["words"])
    if total <= 0:
        return 0.0
    gone = sum(w["weight"] for w in r["words"] if not w["present"] and w["said"] < close)
    return gone / total


def analyse(rows: Sequence[dict[str, Any]], close: float, marks: Sequence[float]) -> None:
    groups = {
        "everyday dev never": lambda r: (
            r["benchmark"] == "everyday" and r["split"] == "dev" and not r["answerable"]
        ),
        "everyday dev answerable": lambda r: (
            r["benchmark"] == "everyday" and r["split"] == "dev" and r["answerable"]
        ),
        "everyday heldout never": lambda r: (
            r["benchmark"] == "everyday" and r["split"] == "heldout" and not r["answerable"]
        ),
        "everyday heldout answerable": lambda r: (
            r["benchmark"] == "everyday" and r["split"] == "heldout" and r["answerable"]
        ),
        "locomo answerable": lambda r: r["benchmark"] == "locomo" and r["answerable"],
        "locomo foreign": lambda r: r["benchmark"] == "locomo" and not r["answerable"],
        "longmemeval answerable": lambda r: r["benchmark"] == "longmemeval" and r["answerable"],
        "longmemeval abstention": lambda r: r["benchmark"] == "longmemeval" and not r["answerable"],
    }
    header = "| group | n | labelled low (rule fired; for a missing kind) |" + "".join(
        f" low if also U >= {m} |" for m in marks
    )
    print(header)
    print("|---" * (3 + len(marks)) + "|")
    for name, test in groups.items():
        chosen = [r for r in rows if test(r)]
        if not chosen:
            continue
        now = sum(low(r, False) for r in chosen)
        fired = sum(r["fired"] for r in chosen)
        kind = sum(r.get("missing") is not None for r in chosen)
        cells = []
        for mark in marks:
            after = sum(
                low(r, r["top"] is not None and unheard_share(r, close) >= mark) for r in chosen
            )
            cells.append(f" {after} |")
        print(f"| {name} | {len(chosen)} | {now} ({fired}; {kind}) |" + "".join(cells))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="write the rows here (JSON)")
    parser.add_argument("--only", help=f"comma-separated: {', '.join(BENCHMARKS)}")
    parser.add_argument("--lme-limit", type=int, default=60, help="LongMemEval scored questions")
    parser.add_argument("--analyse", type=Path, nargs="*", help="row files to read back")
    parser.add_argument("--close", type=float, default=answered.CLOSE)
    args = parser.parse_args(argv)
    if args.analyse:
        rows = [r for f in args.analyse for r in json.loads(f.read_text())]
        analyse(rows, args.close, (0.2, 0.25, 0.3, 0.35, 0.4, 0.5))
        return 0
    chosen = BENCHMARKS if not args.only else tuple(args.only.split(","))
    unknown = [c for c in chosen if c not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; valid options: {', '.join(BENCHMARKS)}")
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if "everyday" in chosen:
        rows += run_everyday()
    if "locomo" in chosen:
        rows += run_locomo()
    if "longmemeval" in chosen:
        rows += run_longmemeval(args.lme_limit)
    print(f"{len(rows)} rows, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
