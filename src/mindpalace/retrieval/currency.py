"""Newer first: of two curated statements about the same thing, the newer
one is the current one.

Facts change: a team moves its deploy window, a new person takes over the
energy account, a meeting moves to Tuesday. The new statement is written
as a new memory, often in other words than the old one, so the supersession
rule of the write path (``store/supersede.py``: one contiguous change in
otherwise equal text) does not link them, and both are recalled. Ranked by
relevance alone, the old one comes first as often as not: it is usually the
fuller text.

The rule, a pure function over the ranked hits (no LLM, no new read):
among the first ``WINDOW`` hits, a memory written on its own (not a
conversation turn) is placed just above the first older such memory of its
category ranked above it whose embedding is at least ``cosine`` close to
its own (the same subject, said again), unless the time prior lifted the
older one more: a query that names a time ("last summer", "before
January") asks what held then. Scores stay with the places; ``explain``
says which memory a hit was placed above. Memories already linked as
replaced (``superseded_by``) are not recalled by default, so this only
orders what the write path could not link.

A question that asks what holds now ("now", "still", "these days",
"currently", "at the moment") or what will happen ("when will the
builders hand the house back?", "going to": what is expected is the plan
that holds now) (``asks_current``) widens the rule for a replacement
that says so. A newer memory that states a change (a change
word or an onset, a statement of a category the write path's second rule
links: ``store/supersede.changed_statement``) is placed above the first
older such memory ranked above it, of any of those categories, that does
not itself state a change and is at least ``changed_cosine`` close: a
replacement in other words is often far less like the old statement than
a restatement ("Marjorie Quinn is playing Madame Arcati" and "Patricia
Lowe has taken on the part of the eccentric medium"), and often filed
under another category (a rule replaced by a decision). An older memory
that states a change itself is left where it is: it is what a still newer
one about something else would otherwise push down. Without a question
about now, the measured cost of the low cosine was higher than its gain
(BENCHMARKS.md).

Whatever the question, a newer statement of a change of the same category
as an older statement of none is placed above it from ``stated_cosine``,
between the two: lower than a restatement asks ("Arrivals now start at 3
pm" and "Guests can arrive between 1 pm and 8 pm", a rule each, 0.45 with
MiniLM), higher than a question about now asks, since the category is
all that says the two are about one thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from mindpalace.models import Category, Hit, HitList, Memory, MemoryKind
from mindpalace.store.supersede import RESTATED_CATEGORIES, changed_statement

__all__ = [
    "WINDOW",
    "asks_current",
    "carried_forward",
    "changed_cosine",
    "link_cosine",
    "newer_first",
    "older_first",
    "reordered",
    "same_subject_cosine",
    "stated_cosine",
]

#: how many of the best hits the rule looks at
WINDOW = 10
#: the cosine from which two statements count as about the same subject,
#: by embedding model: where 75-90% of the everyday palaces' replaced pairs
#: and about 0.5% of their other pairs of facts are as close (BENCHMARKS.md).
#: A model not measured here (an http service, the hashing test model) has
#: no such cosine, and the rule does not run for it.
_COSINES = {
    "all-minilm-l6-v2-int8": 0.6,
    "bge-small-en-v1.5-int8": 0.7,
    "minilm-l6-m2v-256": 0.7,
}


#: the cosine from which the write path links a new memory as replacing an
#: older one it says in other words (``store/supersede.py``, rule 2, which
#: also asks for a change word and that the nearest older memory be the
#: best keyword match). For MiniLM lower than its same-subject cosine: on
#: the everyday palaces 0.5 links more replacements than 0.6 and no other
#: pair of facts, where 0.45 links two other pairs; for the static model
#: 0.58 linked nine other pairs and 0.7 links two, so it keeps 0.7 (bge,
#: not measured lower, too).
_LINK_COSINES = {
    "all-minilm-l6-v2-int8": 0.5,
    "bge-small-en-v1.5-int8": 0.7,
    "minilm-l6-m2v-256": 0.7,
}


#: the cosine from which, for a question about what holds now, a newer
#: memory stating a change counts as replacing an older one that states
#: none (the module docstring). Measured on the everyday palaces by model
#: (BENCHMARKS.md): for MiniLM replaced facts first the fewest from 0.25 to
#: 0.3, more and fewer hits first from 0.35; for the static model the
#: fewest from 0.3 to 0.5, more from 0.55; for bge the fewest from 0.4 to
#: 0.55, more from 0.6.
_CHANGED_COSINES = {
    "all-minilm-l6-v2-int8": 0.3,
    "bge-small-en-v1.5-int8": 0.5,
    "minilm-l6-m2v-256": 0.45,
}

#: the cosine from which, for any question, a newer memory stating a
#: change is placed above an older one of its category that states none.
#: Measured on the everyday palaces by model, all sixteen (BENCHMARKS.md):
#: for MiniLM 0.45 (replaced facts first 9 -> 7 of 128, hit@1 up on both
#: splits; 0.4 the same count, 0.35 fewer answers first, 0.5 no change);
#: for the static model and bge 0.6 (static 14 -> 9, hit@1 held out up
#: three questions and development down one; bge 20 -> 10, up on both;
#: 0.5 and 0.55 put fewer answers first, 0.65 catches fewer replacements).
_STATED_COSINES = {
    "all-minilm-l6-v2-int8": 0.45,
    "bge-small-en-v1.5-int8": 0.6,
    "minilm-l6-m2v-256": 0.6,
}

# Words of a question that asks what holds now.
_CURRENT = re.compile(
    r"\b(?:now|still|these days|currently|current|at the moment|at present|presently"
    r"|nowadays|any ?more|any longer|latest)\b",
    re.IGNORECASE,
)
# A question in the future tense ("when will ...", "what is it going to
# cost"), with the word before it: "will" after an article or a possessive
# is the document ("an original will"), not the tense.
_FUTURE = re.compile(r"\b(?:(\w+)\s+)?(?:will|won't|going to|gonna)\b", re.IGNORECASE)
_NOT_TENSE = frozenset("a an the my your his her its our their this that original last new".split())


def asks_current(query: str) -> bool:
    """Whether ``query`` asks what holds now ("now", "still", "these days"),
    or what will happen ("when will ...", "going to"): what is expected is
    the plan that holds now, and a plan is what a later memory changes."""
    if _CURRENT.search(query):
        return True
    return any((m.group(1) or "").lower() not in _NOT_TENSE for m in _FUTURE.finditer(query))


def _by_model(table: dict[str, float], model: str) -> float | None:
    for name, value in table.items():
        if name in model:
            return value
    return None


def same_subject_cosine(model: str) -> float | None:
    """The same-subject cosine for the vectors' ``model`` (a vector key or
    model name); None for a model it was not measured for."""
    return _by_model(_COSINES, model)


def changed_cosine(model: str) -> float | None:
    """The cosine from which, for a question about now, a newer memory
    stating a change is placed above an older one, for the vectors'
    ``model``; None for a model it was not measured for."""
    return _by_model(_CHANGED_COSINES, model)


def stated_cosine(model: str) -> float | None:
    """The cosine from which, for any question, a newer memory stating a
    change is placed above an older one of its category stating none, for
    the vectors' ``model``; None for a model it was not measured for."""
    return _by_model(_STATED_COSINES, model)


def link_cosine(model: str) -> float | None:
    """The cosine from which the write path links a replacement said in
    other words, for the vectors' ``model``; None for a model it was not
    measured for (the rule does not run)."""
    return _by_model(_LINK_COSINES, model)


def _curated(memory: Memory) -> bool:
    """Whether a memory was written on its own (not a conversation turn)."""
    return memory.kind is not MemoryKind.MESSAGE and memory.category is not Category.CONVERSATION


def newer_first(
    hits: HitList,
    vector_of: Callable[[str], npt.NDArray[np.float32] | None],
    *,
    cosine: float,
    changed: float | None = None,
    stated: float | None = None,
    window: int = WINDOW,
) -> HitList:
    """``hits`` with each memory written on its own among the first
    ``window`` placed above the first older one of its category it restates
    (``vector_of`` gives a memory's vector, None when it has none), or,
    when it states a change itself, above the first older one stating no
    change that is ``stated`` close and of its category, or ``changed``
    close (a question about now) and of any category the rule reads; the
    rest unchanged. Scores stay with the places, as the re-ranker leaves
    them."""
    head = list(hits[:window])
    vectors = {h.memory.id: vector_of(h.memory.id) for h in head if _curated(h.memory)}
    timed = {h.memory.id: h.stage_scores.get("time", 1.0) for h in head}  # the time prior's factor
    if len(vectors) < 2:
        return hits
    # Which of them state a change (read only when a rule asks).
    changes = (
        {
            h.memory.id: changed_statement(h.memory.category, h.memory.content)
            for h in head
            if h.memory.id in vectors
        }
        if changed is not None or stated is not None
        else {}
    )
    placed_above: dict[str, str] = {}
    # Newest first: each is lifted over the older ones it restates, so a
    # chain v1, v2, v3 ends v3, v2, v1.
    for newer in sorted(
        (h for h in head if h.memory.id in vectors), key=lambda h: h.memory.created_at, reverse=True
    ):
        mine = vectors[newer.memory.id]
        if mine is None:
            continue
        at = next(i for i, h in enumerate(head) if h.memory.id == newer.memory.id)
        for j in range(at):
            older = head[j].memory
            theirs = vectors.get(older.id)
            if theirs is None:
                continue
            similarity = float(theirs @ mine)
            restates = older.category is newer.memory.category and similarity >= cosine
            near = (changed is not None and similarity >= changed) or (
                stated is not None
                and similarity >= stated
                and older.category is newer.memory.category
            )
            replaces = (
                near
                and changes[newer.memory.id]
                and not changes[older.id]
                and older.category in RESTATED_CATEGORIES
            )
            if (
                (restates or replaces)
                and older.created_at < newer.memory.created_at
                and timed[older.id] <= timed[newer.memory.id]
            ):
                head.insert(j, head.pop(at))
                placed_above[newer.memory.id] = older.id
                break
    return reordered(hits, head, placed_above, "newer: placed above")


def carried_forward(
    hits: HitList,
    current: Mapping[str, Memory],
    *,
    confidence: Callable[[Memory], float],
) -> HitList:
    """``hits`` with each replaced memory's place given to the memory that
    holds now (``current``: a replaced memory's id -> the last of its chain
    the caller may see), which is dropped from a lower place: what the old
    statement matched, its replacement answers. A replaced memory whose
    replacement the caller cannot see is dropped. Scores stay with the
    places; ``explain`` says which memory a hit took the place of."""
    if not any(h.memory.superseded_by is not None for h in hits):
        return hits
    own = {h.memory.id: h for h in hits}
    out: list[Hit] = []
    placed: set[str] = set()
    notes: dict[str, str] = {}
    for hit in hits:
        now = hit.memory if hit.memory.superseded_by is None else current.get(hit.memory.id)
        if now is None or now.id in placed:
            continue
        placed.add(now.id)
        if now is hit.memory:
            out.append(hit)
            continue
        out.append(own.get(now.id) or Hit(memory=now, score=hit.score, confidence=confidence(now)))
        notes[now.id] = f"current: replaces {hit.memory.id}, which matched"
    return _placed(hits, out, notes)


def older_first(hits: HitList, *, window: int = WINDOW) -> HitList:
    """``hits`` with each replaced memory among the first ``window`` placed
    just above the memory that replaced it, where that one ranks above it:
    a question about what held before a change is answered by the old
    statement first. Scores stay with the places; ``explain`` says so."""
    head = list(hits[:window])
    placed_above: dict[str, str] = {}
    for old in sorted(
        (h for h in head if h.memory.superseded_by is not None),
        key=lambda h: h.memory.created_at,
    ):
        at = next(i for i, h in enumerate(head) if h.memory.id == old.memory.id)
        above = next((j for j in range(at) if head[j].memory.id == old.memory.superseded_by), None)
        if above is not None:
            head.insert(above, head.pop(at))
            placed_above[old.memory.id] = head[above + 1].memory.id
    return reordered(hits, head, placed_above, "older: placed above")


def reordered(hits: HitList, head: list[Hit], placed_above: dict[str, str], why: str) -> HitList:
    """``hits`` with its first ``len(head)`` in ``head``'s order, each hit
    moved above another saying so (``why`` and the other's id)."""
    if not placed_above:
        return hits
    notes = {key: f"{why} {over}" for key, over in placed_above.items()}
    return _placed(hits, [*head, *hits[len(head) :]], notes)


def _placed(hits: HitList, ordered: list[Hit], notes: Mapping[str, str]) -> HitList:
    """``ordered`` (``hits`` reordered, some perhaps left out) in the places
    of ``hits``: the scores stay with the places, and a hit ``notes`` names
    says why it is where it is."""
    out = []
    for place, (hit, score) in enumerate(zip(ordered, (h.score for h in hits), strict=False), 1):
        note = notes.get(hit.memory.id)
        gates = hit.gates if note is None else (*hit.gates, note)
        out.append(replace(hit, score=score, ranks={**hit.ranks, "final": place}, gates=gates))
    result = HitList(out, mode=hits.mode, notice=hits.notice)
    result.timings = hits.timings
    return result
