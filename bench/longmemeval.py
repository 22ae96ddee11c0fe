"""Quality benchmark: LongMemEval_S development half, evidence retrieval with no LLM.

Every question is its own corpus: its haystack (~50 sessions, ~500 turns)
goes into a fresh palace through ``Palace.add_messages``, one memory per turn
(speaker = role, the session's id and time), with the static model
(``--embedder local`` for the default model, MiniLM); the
question is recalled at the question's date. Scored as LongMemEval's own
retrieval evaluation does (``src/retrieval/eval_utils.py`` of its
repository): turn level, relevant turns are those marked ``has_answer``;
session level, the turn ranking read as sessions (``session_metrics``);
recall_any@k, recall_all@k and NDCG@k for k = 5, 10; abstention questions
(``_abs``) skipped. Baselines in the same run, over the bare turn texts:
plain BM25 (FTS5's BM25 with its Porter stemmer, ``retrieval/keyword.py``,
stopwords dropped from the query) and its RRF (k = 60) with the same
embedder's cosine::

    python -m bench.longmemeval                     # all 221 scored questions
    python -m bench.longmemeval --limit 40          # a fixed subset, stratified by type
    python -m bench.longmemeval --types multi-session,knowledge-update --jobs 2
    python -m bench.longmemeval --json out.json     # with per-question rows
    python -m bench.longmemeval --embedder local    # the default model (slower)

The data (MIT licence) is read in place from ``../shared/data/longmemeval/``
(or ``$MINDPALACE_LONGMEMEVAL``), never copied.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mindpalace import Palace, transcripts
from mindpalace.config import EMBEDDERS, Settings
from mindpalace.conversations import Message
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.retrieval.fusion import rrf
from mindpalace.retrieval.keyword import KeywordIndex
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.retrieval.sparse import query_terms

__all__ = [
    "TYPES",
    "LmeQuestion",
    "data_file",
    "load",
    "ndcg",
    "retrieval_metrics",
    "session_metrics",
    "stratified",
    "turn_metrics",
]

KS = (5, 10)
DEPTH = 50  # hits recalled per question
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)


def data_file() -> Path:
    """Where the development half is expected."""
    override = os.environ.get("MINDPALACE_LONGMEMEVAL")
    root = Path(override) if override else Path(__file__).resolve().parents[2] / "shared"
    if not override:
        root = root / "data" / "longmemeval"
    return root / "longmemeval_s_dev.json.xz"


@dataclass(frozen=True, slots=True)
class LmeTurn:
    turn_id: str  # "{session id}:{index in session}"
    role: str
    content: str
    relevant: bool


@dataclass(frozen=True, slots=True)
class LmeSession:
    session_id: str
    when: datetime
    turns: tuple[LmeTurn, ...]


@dataclass(frozen=True, slots=True)
class LmeQuestion:
    question_id: str
    question_type: str
    text: str
    when: datetime
    sessions: tuple[LmeSession, ...]
    answer_sessions: frozenset[str]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def evidence(self) -> frozenset[str]:
        return frozenset(t.turn_id for s in self.sessions for t in s.turns if t.relevant)

    def turns(self) -> list[LmeTurn]:
        return [t for s in self.sessions for t in s.turns]


def _when(text: str) -> datetime:
    # "2023/05/20 (Sat) 02:21"
    day, _, clock = text.split(" ")
    parsed = datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")
    return parsed.replace(tzinfo=timezone.utc)


def load(path: Path | None = None) -> list[LmeQuestion]:
    """Every question of the file, in its order."""
    with lzma.open(path or data_file(), "rt", encoding="utf-8") as raw:
        data = json.load(raw)
    questions = []
    for entry in data:
        sessions = []
        for sid, date, turns in zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        ):
            sessions.append(
                LmeSession(
                    sid,
                    _when(date),
                    tuple(
                        LmeTurn(f"{sid}:{i}", t["role"], t["content"], bool(t.get("has_answer")))
                        for i, t in enumerate(turns)
                    ),
                )
            )
        questions.append(
            LmeQuestion(
                entry["question_id"],
                entry["question_type"],
                entry["question"],
                _when(entry["question_date"]),
                tuple(sessions),
                frozenset(entry["answer_session_ids"]),
            )
        )
    return questions


def stratified(questions: Sequence[LmeQuestion], limit: int) -> list[LmeQuestion]:
    """A fixed subset of ``limit`` scored questions: each type's questions in
    an order given by a hash of their ids, taken type by type in turn."""
    by_type: dict[str, list[LmeQuestion]] = defaultdict(list)
    for q in questions:
        by_type[q.question_type].append(q)
    for group in by_type.values():
        group.sort(key=lambda q: hashlib.sha256(q.question_id.encode()).hexdigest())
    out: list[LmeQuestion] = []
    queues = [by_type[t] for t in sorted(by_type)]
    while len(out) < limit and any(queues):
        for queue in queues:
            if queue and len(out) < limit:
                out.append(queue.pop(0))
    return out


# --- metrics, as LongMemEval's src/retrieval/eval_utils.py defines them ---


def _dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG: rel_1 + sum_{i >= 2} rel_i / log2(i) (the first
    two ranks both count fully)."""
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg(ranked: Sequence[bool], relevant_total: int, k: int) -> float:
    """NDCG@k of a ranking's relevance flags, ``relevant_total`` relevant
    documents in the corpus (the ideal ranking puts them first)."""
    ideal = _dcg([1.0] * relevant_total, k)
    if ideal == 0:
        return 0.0
    return _dcg([1.0 if r else 0.0 for r in ranked], k) / ideal


def retrieval_metrics(
    ranked: Sequence[str], relevant: frozenset[str], relevant_total: int, k: int
) -> dict[str, float]:
    """recall_any@k, recall_all@k and NDCG@k of ranked document ids
    (``evaluate_retrieval``); ``relevant_total`` counts the relevant entries
    of the corpus (documents may repeat there, as sessions do)."""
    top = set(ranked[:k])
    return {
        f"recall_any@{k}": float(any(d in top for d in relevant)),
        f"recall_all@{k}": float(all(d in top for d in relevant)),
        f"ndcg@{k}": ndcg([d in relevant for d in ranked[:k]], relevant_total, k),
    }


def turn_metrics(ranked: Sequence[str], evidence: frozenset[str]) -> dict[str, float]:
    """Turn-level metrics for k in ``KS``."""
    out: dict[str, float] = {}
    for k in KS:
        out.update(retrieval_metrics(ranked, evidence, len(evidence), k))
    return out


def session_metrics(
    ranked_sessions: Sequence[str], answer: frozenset[str], answer_turns: int
) -> dict[str, float]:
    """Session-level metrics from the session of each ranked turn
    (``evaluate_retrieval_turn2session``): k is widened until the ranking's
    first k' turns hold k distinct sessions; every turn of an answer session
    is relevant (``answer_turns`` of them in the corpus)."""
    out: dict[str, float] = {}
    for k in KS:
        effective = k
        while effective <= len(ranked_sessions) and len(set(ranked_sessions[:effective])) < k:
            effective += 1
        found = retrieval_metrics(ranked_sessions, answer, answer_turns, effective)
        out.update({key.replace(f"@{effective}", f"@{k}"): v for key, v in found.items()})
    return out


def question_metrics(
    question: LmeQuestion, ranked: Sequence[str], *, session_of: dict[str, str]
) -> dict[str, float]:
    """Turn metrics (``turn_``) and session metrics (``session_``) of one
    question's ranking of turn ids."""
    out = {f"turn_{k}": v for k, v in turn_metrics(ranked, question.evidence).items()}
    answer_turns = sum(
        len(s.turns) for s in question.sessions if s.session_id in question.answer_sessions
    )
    sessions = session_metrics(
        [session_of[t] for t in ranked], question.answer_sessions, answer_turns
    )
    out.update({f"session_{k}": v for k, v in sessions.items()})
    return out


# --- the configurations of one run ---


@dataclass(frozen=True)
class Config:
    """A row of the tables: the product's recall with ``options``, or a
    baseline over the bare turns (``baseline``: "bm25", "dense", "rrf")."""

    name: str
    options: RecallOptions | None = None
    baseline: str = ""


BARE = RecallOptions(
    neighbour_weight=0.0,
    session_weight=0.0,
    unknown_entity_gate=False,
    dense_floor=-1.0,
    expand=False,
    rerank=False,
    newer_first=False,
    answer_support=False,
)
DEFAULT = RecallOptions()
# The stages without the re-ranker, which was fitted on the default stages:
# ablations of one stage's constant start from here.
STAGES = replace(DEFAULT, rerank=False)
CONFIGS = [
    Config("bm25 (bare turns)", baseline="bm25"),
    Config("dense (bare turns)", baseline="dense"),
    Config("bm25 + dense rrf (bare turns)", baseline="rrf"),
    Config(
        "keyword stage alone",
        replace(BARE, dense_weight=0.0, time_window_weight=0.0, time_when_weight=0.0),
    ),
    Config("session support off", replace(STAGES, neighbour_weight=0.0, session_weight=0.0)),
    Config("long turns fully supported", replace(STAGES, self_contained=0)),
    Config("re-ranker off", STAGES),
    Config("default", DEFAULT),
]

# --folds: the one constant fitted on this benchmark, and its neighbours.
SELF_CONTAINED_GRID = (0, 200, 300, 400, 600, 800, 1200)
GRID_CONFIGS = [
    Config(f"self_contained {n}", replace(STAGES, self_contained=n)) for n in SELF_CONTAINED_GRID
]


def folds(
    rows: Sequence[dict[str, Any]], names: Sequence[str], *, repeats: int = 10, seed: int = 0
) -> tuple[dict[str, int], dict[str, float]]:
    """Two-fold cross-validation over questions (each question is its own
    conversation), ``repeats`` times: each half picks the configuration
    best on it (turn recall_all@10 + NDCG@10) and is scored on the other.
    Returns how often each configuration was picked and the held-out means."""
    rng = np.random.default_rng(seed)

    def score(name: str, chosen: Sequence[int], key: str) -> float:
        return statistics.fmean(rows[i]["metrics"][name][key] for i in chosen)

    def objective(name: str, chosen: Sequence[int]) -> float:
        return score(name, chosen, "turn_recall_all@10") + score(name, chosen, "turn_ndcg@10")

    picked: dict[str, int] = defaultdict(int)
    held: list[tuple[float, float]] = []
    for _ in range(repeats):
        order = rng.permutation(len(rows)).tolist()
        halves = (order[: len(order) // 2], order[len(order) // 2 :])
        for train, test in (halves, halves[::-1]):
            best = max(
                names,
                key=lambda n: (
                    score(n, train, "turn_recall_all@10") + score(n, train, "turn_ndcg@10")
                ),
            )
            picked[best] += 1
            held.append(
                (score(best, test, "turn_recall_all@10"), score(best, test, "turn_ndcg@10"))
            )
    return dict(picked), {
        "turn_recall_all@10": statistics.fmean(h[0] for h in held),
        "turn_ndcg@10": statistics.fmean(h[1] for h in held),
    }


@dataclass
class _Worker:
    """What one process keeps between questions."""

    embedder: Embedder
    scratch: Path
    configs: Sequence[Config]
    done: int = 0
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


_STATE: dict[str, _Worker] = {}


def _start(
    configs: Sequence[Config], scratch: str, context_chars: int | None, embedder: str
) -> None:
    if context_chars is not None:
        transcripts.CONTEXT_CHARS = context_chars
    _STATE["w"] = _Worker(from_settings(Settings(embedder=embedder)), Path(scratch), configs)


def _messages(question: LmeQuestion) -> list[Message]:
    return [
        Message(
            content=turn.content,
            role=turn.role,
            session=session.session_id,
            created_at=session.when,
            metadata={"turn_id": turn.turn_id},
        )
        for session in question.sessions
        for turn in session.turns
    ]


def _baselines(question: LmeQuestion, embedder: Embedder, wanted: set[str]) -> dict[str, list[str]]:
    turns = question.turns()
    ids = [t.turn_id for t in turns]
    out: dict[str, list[str]] = {}
    bm25_order: list[str] = []
    dense_order: list[str] = []
    if wanted & {"bm25", "rrf"}:
        index = KeywordIndex([(None, t.content, None, None) for t in turns])
        scores = index.scores(query_terms(question.text), np.ones(len(turns), dtype=bool))
        order = sorted(range(len(turns)), key=lambda i: (-scores[i], i))
        bm25_order = [ids[i] for i in order if scores[i] > 0]
        out["bm25"] = bm25_order[:DEPTH]
    if wanted & {"dense", "rrf"}:
        vectors = embedder.embed([t.content for t in turns])
        sims = vectors @ embedder.embed_query(question.text)
        dense_order = [ids[i] for i in np.argsort(-sims, kind="stable")]
        out["dense"] = dense_order[:DEPTH]
    if "rrf" in wanted:
        out["rrf"] = [key for key, _ in rrf([bm25_order, dense_order], k=60.0)][:DEPTH]
    return out


def measure(question: LmeQuestion) -> dict[str, Any]:
    """One question's rankings under every configuration, scored."""
    worker = _STATE["w"]
    session_of = {t.turn_id: s.session_id for s in question.sessions for t in s.turns}
    wanted = {c.baseline for c in worker.configs if c.baseline}
    rankings: dict[str, list[str]] = {}
    base = _baselines(question, worker.embedder, wanted) if wanted else {}
    path = worker.scratch / f"{os.getpid()}-{worker.done}.db"
    worker.done += 1
    start = time.perf_counter()
    ingest_s = 0.0
    latencies: dict[str, float] = {}
    palace_configs = [c for c in worker.configs if c.options is not None]
    if palace_configs:
        with Palace(
            path,
            embedder=worker.embedder,
            clock=lambda: question.when,
        ) as palace:
            palace.add_messages(_messages(question))
            palace.wait_for_vectors()  # a slow model's bulk write is embedded after it
            ingest_s = time.perf_counter() - start
            # Asked of a palace in use: its warm indexes built (else the
            # question races their background build, and the graph stage's
            # time budget makes the figures vary from run to run).
            palace.engine.semantic.wait_for_warm()
            for config in palace_configs:
                assert config.options is not None
                palace.recall_options = config.options
                began = time.perf_counter()
                hits = palace.recall(question.text, limit=DEPTH)
                latencies[config.name] = (time.perf_counter() - began) * 1000
                rankings[config.name] = [str(h.memory.metadata["turn_id"]) for h in hits]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    for config in worker.configs:
        if config.baseline:
            rankings[config.name] = base[config.baseline]
    return {
        "question_id": question.question_id,
        "question_type": question.question_type,
        "turns": len(session_of),
        "ingest_s": ingest_s,
        "latency_ms": latencies,
        "rankings": rankings,
        "metrics": {
            name: question_metrics(question, ranked, session_of=session_of)
            for name, ranked in rankings.items()
        },
    }


def run(
    questions: Sequence[LmeQuestion],
    configs: Sequence[Config],
    *,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    context_chars: int | None = None,
    embedder: str = "static",
) -> list[dict[str, Any]]:
    """Every scored question (abstention ones and those without evidence
    turns are skipped), measured in ``jobs`` processes with ``embedder``;
    ``context_chars`` overrides how much of the previous turn is keyword
    context."""
    scored = [q for q in questions if not q.abstention and q.evidence]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        if jobs <= 1:
            _start(configs, scratch, context_chars, embedder)
            for q in scored:
                rows.append(measure(q))
                if progress:
                    progress(len(rows), len(scored))
        else:
            context = multiprocessing.get_context("spawn")
            with context.Pool(
                jobs, initializer=_start, initargs=(configs, scratch, context_chars, embedder)
            ) as pool:
                for row in pool.imap_unordered(measure, scored):
                    rows.append(row)
                    if progress:
                        progress(len(rows), len(scored))
    order = {q.question_id: i for i, q in enumerate(scored)}
    rows.sort(key=lambda r: order[r["question_id"]])
    return rows


def summarise(rows: Sequence[dict[str, Any]], configs: Sequence[Config]) -> dict[str, Any]:
    """Means over all scored questions and per question type, per configuration."""

    def mean(group: Iterable[dict[str, Any]], name: str) -> dict[str, float]:
        chosen = [r["metrics"][name] for r in group]
        if not chosen:
            return {}
        return {key: statistics.fmean(m[key] for m in chosen) for key in chosen[0]}

    out: dict[str, Any] = {}
    for config in configs:
        by_type = {
            t: mean([r for r in rows if r["question_type"] == t], config.name)
            for t in TYPES
            if any(r["question_type"] == t for r in rows)
        }
        latencies = [r["latency_ms"][config.name] for r in rows if config.name in r["latency_ms"]]
        out[config.name] = {
            "all": mean(rows, config.name),
            "by_type": by_type,
            "questions": len(rows),
            "latency_p50_ms": statistics.median(latencies) if latencies else None,
        }
    return out


COLUMNS = [
    ("turn_recall_any@5", "any@5"),
    ("turn_recall_all@5", "all@5"),
    ("turn_ndcg@5", "NDCG@5"),
    ("turn_recall_any@10", "any@10"),
    ("turn_recall_all@10", "all@10"),
    ("turn_ndcg@10", "NDCG@10"),
    ("session_recall_any@5", "s any@5"),
    ("session_recall_all@5", "s all@5"),
    ("session_ndcg@5", "s NDCG@5"),
    ("session_recall_all@10", "s all@10"),
    ("session_ndcg@10", "s NDCG@10"),
]
TYPE_COLUMNS = ("turn_recall_all@10", "turn_ndcg@10", "session_recall_all@5")
SHORT = {
    "single-session-user": "ss-user",
    "single-session-assistant": "ss-asst",
    "single-session-preference": "ss-pref",
    "multi-session": "multi",
    "knowledge-update": "update",
    "temporal-reasoning": "temporal",
}


def markdown(summary: dict[str, Any]) -> str:
    lines = ["| configuration | " + " | ".join(h for _, h in COLUMNS) + " | p50 ms |"]
    lines.append("|---" * (len(COLUMNS) + 2) + "|")
    for name, result in summary.items():
        row = result["all"]
        latency = result["latency_p50_ms"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{row[k]:.3f}" for k, _ in COLUMNS)
            + f" | {'-' if latency is None else f'{latency:.1f}'} |"
        )
    types = [t for t in TYPES if any(t in r["by_type"] for r in summary.values())]
    for key in TYPE_COLUMNS:
        lines += ["", f"{key} by question type:", ""]
        header = " | ".join(SHORT[t] for t in types)
        lines.append(f"| configuration | {header} |")
        lines.append("|---" * (len(types) + 1) + "|")
        for name, result in summary.items():
            cells = " | ".join(
                f"{result['by_type'][t][key]:.3f}" if t in result["by_type"] else "-" for t in types
            )
            lines.append(f"| {name} | {cells} |")
    return "\n".join(lines)


def _progress(start: float) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            elapsed = time.perf_counter() - start
            print(f"  {done}/{total} questions, {elapsed:.0f} s", file=sys.stderr)

    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--limit", type=int, help="a fixed subset of N questions, stratified by type"
    )
    parser.add_argument(
        "--types", help=f"comma-separated question types (valid: {', '.join(TYPES)})"
    )
    parser.add_argument("--only", help="run configurations whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--embedder",
        choices=[name for name in EMBEDDERS if name not in ("http", "none")],
        default="static",
        help="the palaces' model (default static; local is the default model, MiniLM)",
    )
    parser.add_argument(
        "--folds",
        action="store_true",
        help="the self_contained grid, with two-fold cross-validation over questions",
    )
    parser.add_argument(
        "--context-chars",
        type=int,
        help="characters of the previous turn indexed as keyword context"
        f" (default {transcripts.CONTEXT_CHARS}, as the product ingests)",
    )
    args = parser.parse_args(argv)
    if not data_file().is_file():
        print(
            f"LongMemEval data not found at {data_file()}; set MINDPALACE_LONGMEMEVAL",
            file=sys.stderr,
        )
        return 2
    types = TYPES
    if args.types:
        types = tuple(t.strip() for t in args.types.split(",") if t.strip())
        unknown = sorted(set(types) - set(TYPES))
        if unknown or not types:
            parser.error(f"unknown question type(s) {unknown}; valid options: {', '.join(TYPES)}")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    grid = GRID_CONFIGS if args.folds else CONFIGS
    configs = [c for c in grid if not args.only or args.only in c.name]
    if not configs:
        parser.error(f"no configuration matches {args.only!r}")
    questions = [q for q in load() if q.question_type in types and not q.abstention and q.evidence]
    if args.limit is not None:
        questions = stratified(questions, args.limit)
    start = time.perf_counter()
    rows = run(
        questions,
        configs,
        jobs=args.jobs,
        progress=_progress(start),
        context_chars=args.context_chars,
        embedder=args.embedder,
    )
    summary = summarise(rows, configs)
    print(f"{len(rows)} questions, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(markdown(summary))
    if args.folds:
        picked, held = folds(rows, [c.name for c in configs])
        print(f"\nTwo-fold cross-validation over questions, 10 repeats: picked {picked};")
        print(
            f"held-out turn recall_all@10 {held['turn_recall_all@10']:.3f},"
            f" NDCG@10 {held['turn_ndcg@10']:.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
