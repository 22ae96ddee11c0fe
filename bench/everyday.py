"""Quality benchmark: everyday palaces, curated facts among conversations (BENCHMARKS.md).

A user's palace is not a chat log: it holds facts written with ``remember``
(decisions, rules, people by full name, dates in the text, decisions later
replaced by a newer fact) beside ingested conversations (first names only,
chat on the same topics that does not answer the questions). Each palace of
``bench/everyday/*.json`` (written for this benchmark, one domain each) is
built in a fresh SQLite file: every fact is remembered with the palace clock
at its ``created`` time, every conversation goes through
``Palace.add_messages`` at its date (one minute per turn), in time order; a
replacement is written with ``remember`` like any fact (never ``update``:
whether the ranking puts it first is what is measured). Questions are then
recalled with the clock fixed at the palace's ``now``, depth 20, from a
palace in use (vectors written, warm indexes built).

Split by palace, in filename order: the first six (``DEV_PALACES``,
01_software_team to 06_rowing_club) are the development split, every
palace added after them is held out. 07_vet_clinic, 08_primary_school_class,
09_food_bank and 10_campsite were written after every constant of the
time was chosen and measured before any change (changes were then made
looking at their failures); 11_allotment_society, 12_home_renovation and
13_law_firm were written after those changes and measured once, blind,
and 14_theatre_group, 15_wedding_photographer and 16_lifeboat_station
after the changes that followed.

Measured on answerable questions: hit@1, hit@5 (an evidence memory among
the first k), MRR (reciprocal rank of the first evidence memory, 0 past 20),
recall_all@5 for ``multi_evidence``; ``stale first``: of the questions
naming replaced facts (``stale``), how many rank one above the first
evidence memory (a stale one ranked while no evidence is counts too).
Abstention on ``never_mentioned`` questions (the right answer is nothing):
the share answered with no hits, and the share whose hits all have a
relevance (``Hit.score``) below 0.5. The top hit's relevance, median over
answerable and over never-mentioned questions, says whether relevance
separates them.

Rows of one run: the product's recall with the default options, the stages
without the re-ranker (and those without session support: facts have no
session, chat turns do), the fused keyword + embedding lists with nothing
after them, each list alone (``RecallOptions`` knobs, as bench/quality.py
and bench/longmemeval.py ablate), and a plain BM25 of this module over the
same memory texts. Below each table: how many of the replaced facts asked
about the palace's own supersession rule closed (``superseded_by``)::

    python -m bench.everyday                        # every palace, default model (MiniLM)
    python -m bench.everyday --split dev --embedder static
    python -m bench.everyday --json out.json        # with per-question rows
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mindpalace import Palace
from mindpalace.config import EMBEDDERS, Settings
from mindpalace.conversations import Message
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.models import Hit
from mindpalace.retrieval.pipeline import RecallOptions

__all__ = [
    "CONFIGS",
    "DATA_DIR",
    "TYPES",
    "Bm25",
    "Config",
    "EverydayPalace",
    "load",
    "measure_palace",
    "palace_files",
    "question_metrics",
    "split_files",
    "summarise",
    "validate",
]

DATA_DIR = Path(__file__).resolve().parent / "everyday"
DEPTH = 20  # hits recalled per question; MRR is 0 past it
FLOOR = 0.5  # a hit below this relevance does not count as an answer
TYPES = (
    "fact_among_chat",
    "time_window",
    "decision_latest",
    "ownership",
    "who_is",
    "alias",
    "preference",
    "multi_evidence",
    "never_mentioned",
)
CATEGORIES = ("decision", "lesson", "person", "rule", "event", "fact", "goal", "workflow")
SPLITS = ("dev", "heldout", "all")
#: the development split: the first six palace files, those the constants
#: were chosen on; every palace added later is held out
DEV_PALACES = 6


# --- the data ---


@dataclass(frozen=True, slots=True)
class Fact:
    key: str
    content: str
    category: str
    created: datetime
    title: str | None = None
    tags: tuple[str, ...] = ()
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    key: str
    content: str
    speaker: str | None = None
    role: str = "user"

    @property
    def text(self) -> str:
        """The memory's content as ``add_messages`` stores it."""
        return f"{self.speaker or self.role}: {self.content}"


@dataclass(frozen=True, slots=True)
class Conversation:
    session: str
    date: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    type: str
    text: str
    evidence: tuple[str, ...]
    stale: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return self.type != "never_mentioned"


@dataclass(frozen=True, slots=True)
class EverydayPalace:
    name: str  # the file's stem
    now: datetime
    facts: tuple[Fact, ...]
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]

    def texts(self) -> dict[str, str]:
        """Every memory's key and stored text (facts, then turns)."""
        out = {f.key: f.content for f in self.facts}
        out.update({t.key: t.text for c in self.conversations for t in c.turns})
        return out


def _when(text: str, where: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{where}: {text!r} has no time zone")
    return moment


def load(path: Path) -> EverydayPalace:
    """One palace file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    facts = tuple(
        Fact(
            key=f["key"],
            content=f["content"],
            category=f["category"],
            created=_when(f["created"], f"{path.name} fact {f['key']}"),
            title=f.get("title"),
            tags=tuple(f.get("tags", ())),
            replaces=f.get("replaces"),
        )
        for f in data["facts"]
    )
    conversations = tuple(
        Conversation(
            session=c["session"],
            date=_when(c["date"], f"{path.name} session {c['session']}"),
            turns=tuple(
                Turn(t["key"], t["content"], t.get("speaker"), t.get("role", "user"))
                for t in c["turns"]
            ),
        )
        for c in data["conversations"]
    )
    questions = tuple(
        Question(
            id=q["id"],
            type=q["type"],
            text=q["question"],
            evidence=tuple(q["evidence"]),
            stale=tuple(q.get("stale", ())),
        )
        for q in data["questions"]
    )
    return EverydayPalace(
        path.stem, _when(data["now"], f"{path.name} now"), facts, conversations, questions
    )


def palace_files(root: Path = DATA_DIR) -> list[Path]:
    """The palace files, in filename order."""
    return sorted(root.glob("*.json"))


def split_files(files: Sequence[Path], split: str) -> list[Path]:
    """``dev``: the first ``DEV_PALACES`` of ``files``; ``heldout``: the rest."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid options: {', '.join(SPLITS)}")
    cut = DEV_PALACES
    return list(files) if split == "all" else list(files[:cut] if split == "dev" else files[cut:])


def validate(palace: EverydayPalace) -> list[str]:
    """What is wrong with one palace (empty when it is sound)."""
    errors: list[str] = []
    keys = [f.key for f in palace.facts] + [t.key for c in palace.conversations for t in c.turns]
    for key, n in Counter(keys).items():
        if n > 1:
            errors.append(f"key {key} used {n} times")
    known = set(keys)
    texts = [f.content for f in palace.facts] + [
        t.text for c in palace.conversations for t in c.turns
    ]
    if len(set(texts)) != len(texts):
        errors.append("two memories have the same text (remember would keep one)")
    if not 25 <= len(palace.facts) <= 45:
        errors.append(f"{len(palace.facts)} facts (want 25-45)")
    fact_by_key = {f.key: f for f in palace.facts}
    replaced = {f.replaces for f in palace.facts if f.replaces}
    if len(replaced) < 4:
        errors.append(f"{len(replaced)} replaced facts (want at least 4)")
    for fact in palace.facts:
        if fact.category not in CATEGORIES:
            errors.append(f"fact {fact.key}: category {fact.category!r}")
        if fact.created > palace.now:
            errors.append(f"fact {fact.key}: written after the palace's now")
        if fact.replaces:
            old = fact_by_key.get(fact.replaces)
            if old is None:
                errors.append(f"fact {fact.key} replaces unknown fact {fact.replaces}")
            elif old.created >= fact.created:
                errors.append(f"fact {fact.key} is not newer than {fact.replaces}")
    if not 2 <= len(palace.conversations) <= 4:
        errors.append(f"{len(palace.conversations)} conversations (want 2-4)")
    for conversation in palace.conversations:
        if not 6 <= len(conversation.turns) <= 20:
            errors.append(f"session {conversation.session}: {len(conversation.turns)} turns")
        if conversation.date > palace.now:
            errors.append(f"session {conversation.session}: after the palace's now")
    for qid, n in Counter(q.id for q in palace.questions).items():
        if n > 1:
            errors.append(f"question id {qid} used {n} times")
    if len(palace.questions) < 35:
        errors.append(f"{len(palace.questions)} questions (want at least 35)")
    for q in palace.questions:
        if q.type not in TYPES:
            errors.append(f"question {q.id}: type {q.type!r}")
        if q.answerable != bool(q.evidence):
            errors.append(f"question {q.id}: evidence {list(q.evidence)} for type {q.type}")
        if q.type == "multi_evidence" and len(q.evidence) < 2:
            errors.append(f"question {q.id}: multi_evidence needs two evidence keys")
        if q.type == "decision_latest" and not q.stale:
            errors.append(f"question {q.id}: decision_latest without stale keys")
        for key in q.evidence + q.stale:
            if key not in known:
                errors.append(f"question {q.id}: unknown key {key}")
        for key in q.stale:
            if key not in replaced:
                errors.append(f"question {q.id}: stale key {key} is replaced by no fact")
            if key in q.evidence:
                errors.append(f"question {q.id}: {key} is both evidence and stale")
    return errors


# --- the plain BM25 baseline ---

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a about above after again all am an and any are as at be been before being below between"
    " both but by can could did do does doing down during each few for from further had has"
    " have having he her here hers him his how i if in into is it its itself just me more most"
    " my no nor not now of off on once only or other our ours out over own same she should so"
    " some such than that the their theirs them then there these they this those through to"
    " too under until up us very was we were what when where which while who whom why will"
    " with would you your yours".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased ASCII-folded words, stopwords dropped."""
    folded = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode()
    return [w for w in _WORD.findall(folded) if w not in _STOPWORDS]


class Bm25:
    """Okapi BM25 over a fixed set of documents (Robertson and Zaragoza,
    "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)::

        score(D, Q) = sum over t in Q of
            idf(t) * f(t, D) * (k1 + 1) / (f(t, D) + k1 * (1 - b + b * |D| / avgdl))
        idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

    f(t, D) the count of t in D, |D| its length in tokens, avgdl the mean
    length, N the documents, n(t) those containing t; the idf is Lucene's
    non-negative form. k1 = 1.2, b = 0.75.
    """

    def __init__(self, documents: dict[str, str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.keys = list(documents)
        self.counts = [Counter(tokens(documents[k])) for k in self.keys]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.avgdl = statistics.fmean(self.lengths) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for c in self.counts:
            df.update(c.keys())
        n = len(self.keys)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def score(self, query: str) -> dict[str, float]:
        """Every document's score for ``query`` (those with a query term only)."""
        terms = set(tokens(query))
        out: dict[str, float] = {}
        for key, counts, length in zip(self.keys, self.counts, self.lengths, strict=True):
            total = 0.0
            for t in terms & counts.keys():
                f = counts[t]
                norm = self.k1 * (1 - self.b + self.b * length / self.avgdl)
                total += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            if total > 0:
                out[key] = total
        return out

    def rank(self, query: str, depth: int = DEPTH) -> list[tuple[str, float]]:
        """The best ``depth`` documents, best first (ties in document order)."""
        scores = self.score(query)
        order = sorted(scores, key=lambda k: (-scores[k], self.keys.index(k)))
        return [(k, scores[k]) for k in order[:depth]]


# --- the rows of one run ---


@dataclass(frozen=True)
class Config:
    """A row of the tables: the product's recall with ``options``, or the
    plain BM25 of this module (``options`` None)."""

    name: str
    options: RecallOptions | None = None


DEFAULT = RecallOptions()
STAGES = replace(DEFAULT, rerank=False)
# The fused lists with everything after fusion off (date awareness too).
BARE = RecallOptions(
    neighbour_weight=0.0,
    session_weight=0.0,
    unknown_entity_gate=False,
    dense_floor=-1.0,
    expand=False,
    rerank=False,
    newer_first=False,
    answer_support=False,
    time_window_weight=0.0,
    time_when_weight=0.0,
)
CONFIGS = [
    Config("bm25 (plain, this module)"),
    Config("keyword stage alone", replace(BARE, dense_weight=0.0)),
    Config("dense stage alone", replace(BARE, sparse_weight=0.0)),
    Config("fused, nothing after", BARE),
    # Facts have no session: how much do chat turns gain from theirs?
    Config(
        "stages, session support off", replace(STAGES, neighbour_weight=0.0, session_weight=0.0)
    ),
    Config("stages, re-ranker off", STAGES),
    Config("default", DEFAULT),
]
DEFAULT_NAME = "default"


class _Clock:
    """The palace clock, moved as the palace is written."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def build_palace(
    palace: EverydayPalace, path: Path, embedder: Embedder
) -> tuple[Palace, dict[str, str]]:
    """Write ``palace`` into a fresh SQLite file, oldest first; the palace
    (its clock at the palace's now) and each fact's memory id."""
    clock = _Clock(palace.now)
    ids: dict[str, str] = {}
    p = Palace(path, embedder=embedder, clock=clock, settings=Settings(index="process"))
    writes: list[tuple[datetime, int, Fact | Conversation]] = [
        (f.created, i, f) for i, f in enumerate(palace.facts)
    ]
    writes += [(c.date, len(writes) + i, c) for i, c in enumerate(palace.conversations)]
    for when, _, item in sorted(writes, key=lambda w: (w[0], w[1])):
        clock.at = when
        if isinstance(item, Fact):
            ids[item.key] = p.remember(
                item.content,
                title=item.title,
                category=item.category,
                tags=list(item.tags) or None,
                metadata={"key": item.key},
            ).id
        else:
            messages = [
                Message(
                    content=t.content,
                    role=t.role,
                    speaker=t.speaker,
                    session=item.session,
                    created_at=item.date + timedelta(minutes=i),
                    metadata={"key": t.key},
                )
                for i, t in enumerate(item.turns)
            ]
            clock.at = messages[-1].created_at or when
            p.add_messages(messages)
    p.wait_for_vectors()  # a slow model's bulk write is embedded after it
    # Asked of a palace in use: its warm indexes built (else the questions
    # race their background build).
    p.semantic.wait_for_warm()
    clock.at = palace.now
    return p, ids


def _ranked(hits: Iterable[Hit]) -> list[dict[str, Any]]:
    """Each hit's palace key (its memory id when it has none) and relevance."""
    return [
        {"key": h.memory.metadata.get("key", h.memory.id), "relevance": round(h.score, 4)}
        for h in hits
    ]


def measure_palace(
    palace: EverydayPalace,
    embedder: Embedder,
    configs: Sequence[Config] = CONFIGS,
    *,
    scratch: Path,
) -> list[dict[str, Any]]:
    """Every question of ``palace`` under every configuration: one row per
    question with each configuration's ranking (key and relevance, best
    first, at most ``DEPTH``), its notice and its metrics."""
    texts = palace.texts()
    rankings: dict[str, dict[str, list[dict[str, Any]]]] = {q.id: {} for q in palace.questions}
    notices: dict[str, dict[str, str | None]] = {q.id: {} for q in palace.questions}
    if any(c.options is None for c in configs):
        bm25 = Bm25(texts)
        for config in (c for c in configs if c.options is None):
            for q in palace.questions:
                rankings[q.id][config.name] = [
                    {"key": k, "score": round(s, 4)} for k, s in bm25.rank(q.text)
                ]
                notices[q.id][config.name] = None
    product = [c for c in configs if c.options is not None]
    closed: set[str] = set()  # replaced facts the palace's own supersession closed
    links: dict[str, Any] = {}
    if product:
        p, ids = build_palace(palace, scratch / f"{palace.name}.db", embedder)
        try:
            replaced = {f.replaces for f in palace.facts if f.replaces}
            closed = {k for k in replaced if k and p.get(ids[k]).superseded_by}
            links = supersession_links(palace, p, ids)
            for config in product:
                assert config.options is not None
                p.recall_options = config.options
                for q in palace.questions:
                    hits = p.recall(q.text, limit=DEPTH)
                    rankings[q.id][config.name] = _ranked(hits)
                    notices[q.id][config.name] = hits.notice
        finally:
            p.close()
    rows = []
    for q in palace.questions:
        results = {}
        for config in configs:
            ranked = rankings[q.id][config.name]
            results[config.name] = {
                "metrics": question_metrics(q, ranked, relevance=config.options is not None),
                "top": [{**r, "text": texts.get(r["key"], "")[:100]} for r in ranked[:5]],
                "notice": notices[q.id][config.name],
            }
        rows.append(
            {
                "palace": palace.name,
                "id": q.id,
                "type": q.type,
                "question": q.text,
                "evidence": list(q.evidence),
                "stale": list(q.stale),
                "stale_closed": sorted(set(q.stale) & closed),
                "links": links,
                "results": results,
            }
        )
    return rows


def supersession_links(palace: EverydayPalace, p: Palace, ids: dict[str, str]) -> dict[str, Any]:
    """How the palace's own supersession linked its facts: of the facts
    labelled as replacing another, how many closed it (``linked``), and
    every other link it made (``wrong``: old key, the key that closed it)."""
    keys = {memory_id: key for key, memory_id in ids.items()}
    labelled = {(f.replaces, f.key) for f in palace.facts if f.replaces}
    made = set()
    for key, memory_id in ids.items():
        by = p.get(memory_id).superseded_by
        if by is not None:
            made.add((key, keys.get(by, by)))
    return {
        "replaced": len(labelled),
        "linked": len(made & labelled),
        "wrong": sorted(made - labelled),
    }


def question_metrics(
    question: Question, ranked: Sequence[dict[str, Any]], *, relevance: bool = True
) -> dict[str, Any]:
    """One question's metrics from its ranking (dicts with ``key`` and, when
    ``relevance``, a 0-1 ``relevance``). Answerable: ``rank`` (1-based, None
    when no evidence is in the list), hit@1, hit@5, rr, recall_all@5 (multi
    evidence), ``stale_first`` (questions with stale keys), ``low`` (the first
    evidence hit's relevance under ``FLOOR``: labelled as probably not an
    answer; None without relevance or evidence). Never mentioned:
    ``empty``, ``below_floor`` (every hit's relevance under ``FLOOR``; None
    without relevance). Both: ``top_relevance`` (None without hits or
    relevance)."""
    keys = [r["key"] for r in ranked[:DEPTH]]
    top = ranked[0].get("relevance") if ranked and relevance else None
    out: dict[str, Any] = {"top_relevance": top}
    if not question.answerable:
        out["empty"] = not keys
        out["below_floor"] = all(r["relevance"] < FLOOR for r in ranked) if relevance else None
        return out
    evidence = set(question.evidence)
    rank = next((i for i, k in enumerate(keys, start=1) if k in evidence), None)
    out.update(
        rank=rank,
        hit1=float(rank == 1),
        hit5=float(rank is not None and rank <= 5),
        rr=1.0 / rank if rank else 0.0,
        low=ranked[rank - 1]["relevance"] < FLOOR if relevance and rank else None,
    )
    if question.type == "multi_evidence":
        out["recall_all5"] = float(evidence <= set(keys[:5]))
    if question.stale:
        stale_rank = next((i for i, k in enumerate(keys, start=1) if k in question.stale), None)
        out["stale_rank"] = stale_rank
        out["stale_first"] = stale_rank is not None and (rank is None or stale_rank < rank)
    return out


# --- summaries and tables ---


def _share(values: Sequence[float | bool]) -> float | None:
    return statistics.fmean(float(v) for v in values) if values else None


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _summary(metrics: Sequence[dict[str, Any]], types: Sequence[str]) -> dict[str, Any]:
    answerable = [m for m, t in zip(metrics, types, strict=True) if t != "never_mentioned"]
    never = [m for m, t in zip(metrics, types, strict=True) if t == "never_mentioned"]
    multi = [m for m in answerable if "recall_all5" in m]
    stale = [m for m in answerable if "stale_first" in m]
    floor = [m["below_floor"] for m in never if m["below_floor"] is not None]
    low = [m["low"] for m in answerable if m.get("low") is not None]
    return {
        "answerable": len(answerable),
        "hit@1": _share([m["hit1"] for m in answerable]),
        "hit@5": _share([m["hit5"] for m in answerable]),
        "mrr": _share([m["rr"] for m in answerable]),
        "recall_all@5": _share([m["recall_all5"] for m in multi]),
        "stale_first": sum(m["stale_first"] for m in stale),
        "stale_questions": len(stale),
        "never": len(never),
        "abstain_empty": _share([m["empty"] for m in never]),
        "abstain_below_floor": _share(floor) if len(floor) == len(never) else None,
        "answered_low": _share(low),
        "top_relevance_answerable": _median([m["top_relevance"] for m in answerable]),
        "top_relevance_never": _median([m["top_relevance"] for m in never]),
    }


def summarise(rows: Sequence[dict[str, Any]], configs: Sequence[Config]) -> dict[str, Any]:
    """Per configuration, over ``rows``: the figures of the whole set
    (``all``) and per question type (``by_type``)."""
    out: dict[str, Any] = {}
    for config in configs:
        metrics = [r["results"][config.name]["metrics"] for r in rows]
        types = [r["type"] for r in rows]
        by_type = {}
        for t in TYPES:
            chosen = [i for i, kind in enumerate(types) if kind == t]
            if chosen:
                by_type[t] = _summary([metrics[i] for i in chosen], [t] * len(chosen))
        out[config.name] = {"all": _summary(metrics, types), "by_type": by_type}
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(summary: dict[str, Any], title: str, questions: int) -> str:
    """The methods table and the default pipeline's by-type table."""
    lines = [f"### {title} ({questions} questions)", ""]
    lines.append(
        "| method | hit@1 | hit@5 | MRR | stale first | abstain: empty | abstain: all < 0.5"
        " | answer found, labelled < 0.5 | top relevance, answerable / never (median) |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name, result in summary.items():
        s = result["all"]
        lines.append(
            f"| {name} | {_cell(s['hit@1'])} | {_cell(s['hit@5'])} | {_cell(s['mrr'])}"
            f" | {s['stale_first']}/{s['stale_questions']} | {_cell(s['abstain_empty'])}"
            f" | {_cell(s['abstain_below_floor'])} | {_cell(s['answered_low'])}"
            f" | {_cell(s['top_relevance_answerable'])} / {_cell(s['top_relevance_never'])} |"
        )
    if DEFAULT_NAME in summary:
        lines += ["", f"{DEFAULT_NAME}, by question type:", ""]
        lines.append(
            "| type | n | hit@1 | hit@5 | MRR | recall_all@5 | stale first"
            " | abstain: empty | abstain: all < 0.5 |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for t, s in summary[DEFAULT_NAME]["by_type"].items():
            n = s["answerable"] or s["never"]
            stale = f"{s['stale_first']}/{s['stale_questions']}" if s["stale_questions"] else "-"
            lines.append(
                f"| {t} | {n} | {_cell(s['hit@1'])} | {_cell(s['hit@5'])} | {_cell(s['mrr'])}"
                f" | {_cell(s['recall_all@5'])} | {stale} | {_cell(s['abstain_empty'])}"
                f" | {_cell(s['abstain_below_floor'])} |"
            )
    return "\n".join(lines)


def run(
    palaces: Sequence[EverydayPalace],
    configs: Sequence[Config] = CONFIGS,
    *,
    embedder: str = "local",
) -> list[dict[str, Any]]:
    """Every question of ``palaces`` under ``configs`` with ``embedder``."""
    model = from_settings(Settings(embedder=embedder))
    if model is None:
        raise ValueError(f"embedder {embedder!r} gives no model")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for palace in palaces:
            start = time.perf_counter()
            rows += measure_palace(palace, model, configs, scratch=Path(scratch))
            print(
                f"  {palace.name}: {len(palace.questions)} questions,"
                f" {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--split", choices=SPLITS, default="all", help="palaces (default all)")
    parser.add_argument(
        "--embedder",
        choices=[name for name in EMBEDDERS if name not in ("http", "none")],
        default="local",
        help="the palaces' model (default local, MiniLM; static is fast)",
    )
    parser.add_argument("--palaces", help="only palaces whose file name contains one of these")
    parser.add_argument("--json", type=Path, help="also write summaries and per-question rows")
    args = parser.parse_args(argv)
    files = palace_files()
    if not files:
        print(f"no palace files in {DATA_DIR}", file=sys.stderr)
        return 2
    splits = {s: {f.stem for f in split_files(files, s)} for s in ("dev", "heldout")}
    chosen = split_files(files, args.split)
    if args.palaces:
        wanted = [w.strip() for w in args.palaces.split(",") if w.strip()]
        chosen = [f for f in chosen if any(w in f.stem for w in wanted)]
        if not chosen:
            parser.error(f"no palace file matches {args.palaces!r}")
    palaces = [load(f) for f in chosen]
    for palace in palaces:
        errors = validate(palace)
        if errors:
            print(f"{palace.name}: " + "; ".join(errors), file=sys.stderr)
            return 2
    start = time.perf_counter()
    rows = run(palaces, embedder=args.embedder)
    for row in rows:
        row["split"] = "dev" if row["palace"] in splits["dev"] else "heldout"
    print(f"{len(rows)} questions, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    summaries: dict[str, Any] = {}
    sections = [s for s in ("dev", "heldout") if any(r["split"] == s for r in rows)]
    if len(sections) > 1:
        sections.append("all")
    for section in sections:
        chosen_rows = [r for r in rows if section in ("all", r["split"])]
        summaries[section] = summarise(chosen_rows, CONFIGS)
        names = sorted({r["palace"] for r in chosen_rows})
        title = f"{section}: {', '.join(names)}; embedder {args.embedder}"
        print(markdown(summaries[section], title, len(chosen_rows)))
        stale = {(r["palace"], k) for r in chosen_rows for k in r["stale"]}
        closed = {(r["palace"], k) for r in chosen_rows for k in r["stale_closed"]}
        print(
            f"\nReplaced facts asked about that the palace's own supersession closed:"
            f" {len(closed)} of {len(stale)}."
        )
        links = {r["palace"]: r["links"] for r in chosen_rows if r.get("links")}
        wrong = [(name, *pair) for name, made in links.items() for pair in made["wrong"]]
        print(
            f"Replacements linked as superseding: {sum(m['linked'] for m in links.values())}"
            f" of {sum(m['replaced'] for m in links.values())}; other links: {len(wrong)}"
            + "".join(f"\n  {name}: {old} closed by {by}" for name, old, by in wrong)
            + "\n"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"embedder": args.embedder, "summary": summaries, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
