"""Answer support: whether a question's best hits hold what it asks.

Relevance from the stages is relative (keyword scores to the best visible
match, cosines among the candidates), so the best hit of a question about
something never stored scores like the best hit of one the palace answers:
"what's our parental leave policy?" finds "any other leave is booked in the
HR calendar" at relevance 0.88. This rule judges the question as a whole,
after ranking, from two absolute signs that its best hits answer it:

* **words**: how much of the question the best of the first ``HEAD`` hits
  says. Each content word of the question (not a stopword, a question word
  or a number) counts by its weight in the bundled static model's table
  (``embed.static.WordTable``: frequent, vague words weigh little); a hit
  carries it when the hit has the word (same stem) or, partly, a word whose
  vector is at least ``CLOSE`` to it ("toggles" ~ "flags"). The question's
  share is the carried weight over the whole weight.
* **cosine**: the best hit's embedding cosine to the question.

When neither reaches its mark (per embedding model, measured on the
everyday palaces: ``_MARKS``), the question is judged not answered by the
palace: every hit's relevance is halved and scaled by how near the better
of the two signs came to its mark, so all fall below 0.5 and a caller can
tell "probably not here" from a match. A best hit whose time falls in a
window the question names ("last week", "in October") answers it
whatever its words: the time is what such a question asks about. The
question counts as not answered, whatever the signs, when it
asks for a kind of value the best hit does not state
(``answer_kind.py``: a price question and no amount of money; an amount
in a lower hit is another thing's price): the hits are about its
subject, not about what it asks. The order is unchanged; ``explain``
shows the rule's reading. A model not measured here (an http service, the
test model) has no marks, and the rule does not run for it. The weights are
the model's own and the words are the hits' own: nothing depends on
memories the caller may not see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from mindpalace.embed import word_table
from mindpalace.models import HitList
from mindpalace.retrieval.answer_kind import missing_kind
from mindpalace.retrieval.sparse import STOPWORDS
from mindpalace.store.words import stem, tokens

__all__ = [
    "CLOSE",
    "HEAD",
    "MISSING_SUPPORT",
    "Reading",
    "Word",
    "asked_words",
    "head_texts",
    "judged",
    "marks_for",
    "read",
]

#: how many of the best hits may carry the question's words
HEAD = 3
#: the word cosine from which a hit's word partly carries a question's word
CLOSE = 0.5
#: the most support a question gets whose head hits lack the kind of value
#: it asks for (its hits' relevance is at most half of this)
MISSING_SUPPORT = 0.9
#: (words share, best cosine) marks by embedding model: below both, the
#: question counts as not answered. Chosen on the everyday palaces' recall
#: windows per model, for about the same cost: 10-13% of answerable
#: questions labelled low (BENCHMARKS.md).
_MARKS = {
    "all-minilm-l6-v2-int8": (0.44, 0.44),
    "bge-small-en-v1.5-int8": (0.42, 0.58),
    "minilm-l6-m2v-256": (0.42, 0.54),
}
# Words that ask rather than say what is asked about.
_ASKING = frozenset({"much", "many", "whose", "ever", "anything", "something", "one"})


@dataclass(frozen=True, slots=True)
class Reading:
    """The rule's reading of one question.

    Attributes:
        words: the share of the question's word weight the best head hit carries.
        cosine: the best hit's cosine to the question (-1 without one).
        support: how near the better sign came to its mark (1 = reached),
            at most ``MISSING_SUPPORT`` when ``missing`` is set.
        missing: the kind of value the question asks for that no head hit
            states (``answer_kind.AMOUNT``), or None.
    """

    words: float
    cosine: float
    support: float
    missing: str | None = None

    @property
    def answered(self) -> bool:
        """Whether a sign reached its mark and the head holds what is asked."""
        return self.support >= 1.0


def marks_for(model: str) -> tuple[float, float] | None:
    """The (words, cosine) marks for the vectors' ``model`` (a vector key or
    model name); None for a model they were not measured for."""
    for name, marks in _MARKS.items():
        if name in model:
            return marks
    return None


def _content_words(text: str) -> list[str]:
    return [
        w
        for w in dict.fromkeys(tokens(text))
        if w not in STOPWORDS and w not in _ASKING and not w.isdigit() and len(w) > 1
    ]


@dataclass(frozen=True, slots=True)
class Word:
    """One content word of a question, as the head hits say it.

    Attributes:
        word: the word (lower-cased).
        weight: its weight in the word table (0 for a word it has no piece of).
        said: 1.0 when a head hit has the word (same stem), else the best
            cosine of a head hit's word to it (0 when none is near).
    """

    word: str
    weight: float
    said: float


def asked_words(question: str, texts: Sequence[str]) -> list[Word]:
    """``question``'s content words, each with how well one of ``texts`` says it."""
    asked = _content_words(question)
    if not asked:
        return []
    table = word_table()
    asked_vectors, weights = table.vectors(asked)
    stems = [stem(w) for w in asked]
    said = [0.0] * len(asked)
    for text in texts:
        words = [w for w in dict.fromkeys(tokens(text)) if w not in STOPWORDS]
        if not words:
            continue
        text_stems = {stem(w) for w in words}
        closeness = (table.vectors(words)[0] @ asked_vectors.T).max(axis=0)
        for i in range(len(asked)):
            near = 1.0 if stems[i] in text_stems else max(0.0, float(closeness[i]))
            said[i] = max(said[i], near)
    return [Word(w, weights[i], said[i]) for i, w in enumerate(asked)]


def words_share(question: str, texts: Sequence[str]) -> float:
    """The largest share of ``question``'s word weight one of ``texts``
    carries (1.0 for a question without content words)."""
    asked = _content_words(question)
    if not asked:
        return 1.0
    table = word_table()
    asked_vectors, weights = table.vectors(asked)
    total = sum(weights)
    if total <= 0:
        return 1.0
    stems = [stem(w) for w in asked]
    best = 0.0
    for text in texts:
        said = [w for w in dict.fromkeys(tokens(text)) if w not in STOPWORDS]
        if not said:
            continue
        said_stems = {stem(w) for w in said}
        said_vectors, _ = table.vectors(said)
        closeness = (said_vectors @ asked_vectors.T).max(axis=0)
        carried = 0.0
        for i, weight in enumerate(weights):
            if stems[i] in said_stems:
                carried += weight
            elif closeness[i] >= CLOSE:
                carried += weight * float(closeness[i])
        best = max(best, carried / total)
    return best


def _said(title: str | None, content: str, speaker: object) -> str:
    """What a hit says, with who said it (a question names the speaker)."""
    who = speaker if isinstance(speaker, str) else ""
    return " ".join(p for p in (title, content, who) if p)


def head_texts(hits: HitList) -> list[str]:
    """What the first ``HEAD`` hits say (title, content, speaker)."""
    return [
        _said(h.memory.title, h.memory.content, h.memory.metadata.get("speaker"))
        for h in hits[:HEAD]
    ]


def read(question: str, hits: HitList, marks: tuple[float, float]) -> Reading | None:
    """The rule's reading of ``hits`` for ``question``; None without hits."""
    if not hits:
        return None
    texts = head_texts(hits)
    words = words_share(question, texts)
    cosine = float(hits[0].stage_scores.get("dense", -1.0))
    words_mark, cosine_mark = marks
    support = max(words / words_mark, cosine / cosine_mark, 0.0)
    # The value asked for is stated by the best hit, which is about what is
    # asked: "the loan analyser" with no price, above another service's
    # fee, does not say what the loan costs.
    missing = missing_kind(question, texts[:1])
    if missing is not None:
        support = min(support, MISSING_SUPPORT)
    elif hits[0].stage_scores.get("window", 0.0) >= 1.0:
        # Written (or saying a time) in the window the question names: the
        # time is what it asks about ("what went wrong last week?" is
        # answered by the week's fault, whatever its words).
        support = max(support, 1.0)
    return Reading(words=words, cosine=cosine, support=support, missing=missing)


def judged(question: str, hits: HitList, model: str) -> HitList:
    """``hits`` with their relevance lowered below 0.5 when the question is
    not answered by them (see the module), each hit's ``explain`` saying so;
    unchanged for an unmeasured ``model`` or an answered question."""
    marks = marks_for(model)
    if marks is None:
        return hits
    reading = read(question, hits, marks)
    if reading is None or reading.answered:
        return hits
    factor = 0.5 * min(1.0, reading.support)
    if reading.missing is not None:
        gate = (
            f"answer-support: low (the question asks for {reading.missing};"
            " the best hit states none)"
        )
    else:
        gate = (
            f"answer-support: low (question words carried {reading.words:.2f} < {marks[0]},"
            f" best cosine {reading.cosine:.2f} < {marks[1]})"
        )
    out = HitList(
        [
            replace(
                h,
                score=h.score * factor,
                stage_scores={**h.stage_scores, "support": reading.support},
                gates=(*h.gates, gate),
            )
            for h in hits
        ],
        mode=hits.mode,
        notice=hits.notice,
    )
    out.timings = hits.timings
    return out
