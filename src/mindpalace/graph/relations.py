"""Typed relations between entities, found by rules when a memory is written.

A sentence such as "Alice owns the Billing service", "Billing is owned by
Alice", "the API depends on Redis" or "Checkout requires Redis and
Postgres" states a relation between two names the entity extractor found.
The rule, per sentence (no LLM):

1. A relation phrase is matched: an active one ("owns", "maintains",
   "leads", "heads", "manages", "depends on", "relies on", "requires",
   "is built on", "runs on", "is the owner of"...) puts the subject on its
   left, a passive one ("is owned by", "is maintained by", "is led by",
   "is required by", "is a dependency of"...) on its right.
2. The subject is the nearest mention on the subject side and the objects
   the nearest mention on the other side, each at most ``MAX_GAP`` words
   away, not across a clause break (a comma before a new clause, "but",
   "because", "which", ...). Objects joined by "and", "or" or commas are all
   kept ("requires Redis and Postgres" gives two relations; a name the
   extractor read as one, "Redis and Postgres", is split into its parts).
3. A negated phrase ("does not depend on", "no longer owns", "never
   maintained") states nothing.

Kinds, always stored in the active direction (subject -> object):
``owns``, ``maintains``, ``leads``, ``manages`` (ownership: who answers
for a thing) and ``depends_on`` (what a thing needs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mindpalace.graph.extract import Extractor, aliases_of, extract_mentions, normalise_name
from mindpalace.models import MemoryType, Mention, RelationMention

__all__ = [
    "DEPENDS_ON",
    "OWNERSHIP_KINDS",
    "RELATION_KINDS",
    "extract_graph",
    "extract_relations",
]

DEPENDS_ON = "depends_on"
OWNERSHIP_KINDS = ("owns", "maintains", "leads", "manages")
RELATION_KINDS = (*OWNERSHIP_KINDS, DEPENDS_ON)
MAX_GAP = 4  # words between a name and the relation phrase

_BE = r"(?:is|are|was|were|has been|have been|had been)"
_ADVERB = r"(?:(?:now|also|still|currently|directly|heavily|officially|mainly|primarily)\s+)?"
# (phrase, kind, active): active phrases have the subject on the left.
_PHRASES: tuple[tuple[str, str, bool], ...] = (
    (rf"{_BE}\s+{_ADVERB}owned\s+by", "owns", False),
    (rf"{_BE}\s+{_ADVERB}maintained\s+by", "maintains", False),
    (rf"{_BE}\s+{_ADVERB}(?:led|headed)\s+by", "leads", False),
    (rf"{_BE}\s+{_ADVERB}(?:managed|run)\s+by", "manages", False),
    (rf"{_BE}\s+{_ADVERB}(?:required|needed)\s+by", DEPENDS_ON, False),
    (rf"{_BE}\s+(?:a\s+)?(?:hard\s+)?dependency\s+of", DEPENDS_ON, False),
    (rf"{_BE}\s+{_ADVERB}(?:the\s+)?owners?\s+of", "owns", True),
    (rf"{_BE}\s+{_ADVERB}(?:the\s+)?maintainers?\s+of", "maintains", True),
    (rf"{_BE}\s+{_ADVERB}(?:the\s+)?(?:lead|leader|head)s?\s+(?:of|for|on)", "leads", True),
    (rf"{_BE}\s+{_ADVERB}(?:the\s+)?managers?\s+of", "manages", True),
    (rf"{_BE}\s+{_ADVERB}built\s+(?:on\s+top\s+of|on|upon)", DEPENDS_ON, True),
    (rf"{_ADVERB}(?:owns|own|took\s+ownership\s+of|takes\s+ownership\s+of)", "owns", True),
    (rf"{_ADVERB}(?:maintains|maintain)", "maintains", True),
    (rf"{_ADVERB}(?:leads|lead|heads|head\s+up|heads\s+up)", "leads", True),
    (rf"{_ADVERB}(?:manages|manage)", "manages", True),
    (
        rf"{_ADVERB}(?:depends\s+on|depend\s+on|relies\s+on|rely\s+on|requires|require"
        r"|runs\s+on|run\s+on|has\s+a\s+dependency\s+on|needs)",
        DEPENDS_ON,
        True,
    ),
)
_PATTERN = re.compile(
    "|".join(f"(?P<p{i}>\\b{phrase}\\b)" for i, (phrase, _, _) in enumerate(_PHRASES)),
    re.IGNORECASE,
)
# A cheap first look: a text (or sentence) without one of these stems
# states no relation; every phrase of ``_PHRASES`` holds one.
_CUE = re.compile(
    r"\b(?:own|maintain|lead|led|head|manag|run|depend|reli|rely|requir|need|built)", re.I
)
_NEGATION = re.compile(
    r"\b(?:not|never|no\s+longer|n't|nobody|no\s+one)\s+(?:\w+\s+){0,2}$", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# What may stand between a name and the phrase: a few plain words, no clause break.
_CLAUSE_BREAK = re.compile(
    r"[,;:()]|\b(?:but|because|while|whereas|which|who|that|so|then|although|if|when)\b",
    re.IGNORECASE,
)
_LIST_JOIN = re.compile(r"^\s*(?:,|,?\s*(?:and|or|&|as well as|plus))?\s*(?:the\s+)?$", re.I)
_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b|&)\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    norm: str


_LISTED = re.compile(r"\band\b|&|,")


def _spans(sentence: str, mentions: Sequence[Mention]) -> list[_Span]:
    """Where each mention occurs in the sentence (longest first wins overlaps)."""
    found: list[_Span] = []
    for mention in sorted(mentions, key=lambda m: -len(m.surface)):
        if len(mention.surface) < 2:
            continue
        for start, end in _whole_words(mention.surface, sentence):
            if not any(s.start < end and start < s.end for s in found):
                found.append(_Span(start, end, mention.norm))
    return sorted(found, key=lambda s: s.start)


def _word_char(ch: str) -> bool:
    """Whether ``re``'s ``\\w`` matches ``ch`` (a str pattern's word character)."""
    return ch.isalnum() or ch == "_"


def _whole_words(surface: str, sentence: str) -> list[tuple[int, int]]:
    """Where ``surface`` occurs in ``sentence`` as a whole word, left to
    right and not overlapping: what ``re.finditer`` of ``(?<!\\w)surface(?!\\w)`` finds,
    without compiling a pattern per name (a batch of real turns names more
    things than any pattern cache holds)."""
    out: list[tuple[int, int]] = []
    size = len(surface)
    at = sentence.find(surface)
    while at >= 0:
        end = at + size
        if (at == 0 or not _word_char(sentence[at - 1])) and (
            end == len(sentence) or not _word_char(sentence[end])
        ):
            out.append((at, end))
            at = sentence.find(surface, end)
        else:
            at = sentence.find(surface, at + 1)
    return out


def _close(gap: str) -> bool:
    return len(gap.split()) <= MAX_GAP and not _CLAUSE_BREAK.search(gap)


def _left(spans: list[_Span], sentence: str, at: int) -> list[_Span]:
    """The names ending just before ``at``: the nearest, and those listed with it."""
    before = [s for s in spans if s.end <= at]
    if not before or not _close(sentence[before[-1].end : at]):
        return []
    out = [before[-1]]
    for span in reversed(before[:-1]):
        if not _LIST_JOIN.match(sentence[span.end : out[-1].start]):
            break
        out.append(span)
    return out


def _right(spans: list[_Span], sentence: str, at: int) -> list[_Span]:
    """The names starting just after ``at``: the nearest, and those listed with it."""
    after = [s for s in spans if s.start >= at]
    if not after or not _close(sentence[at : after[0].start]):
        return []
    out = [after[0]]
    for span in after[1:]:
        if not _LIST_JOIN.match(sentence[out[-1].end : span.start]):
            break
        out.append(span)
    return out


def _parts(mention: Mention) -> list[Mention]:
    """A name the extractor joined ("Redis and Postgres") as its parts."""
    if mention.kind != "name" or not _LISTED.search(mention.surface):
        return [mention]
    parts = [p for p in _SPLIT.split(mention.surface) if p]
    if len(parts) < 2 or not all(p[:1].isupper() for p in parts):
        return [mention]
    out = []
    for part in parts:
        norm = normalise_name(part)
        out.append(Mention(part, norm, "name", MemoryType.UNKNOWN, aliases_of(norm, "name")))
    return out


def extract_relations(
    text: str, mentions: Sequence[Mention]
) -> tuple[tuple[RelationMention, ...], tuple[Mention, ...]]:
    """The relations ``text`` states between its ``mentions`` (the module
    docstring states the rule), and the mentions to link: ``mentions``
    plus the parts of joined names a relation needs."""
    if len(mentions) < 2 or not _CUE.search(text):  # most texts state no relation
        return (), tuple(mentions)
    split: dict[str, list[Mention]] = {m.norm: _parts(m) for m in mentions}
    usable = [part for parts in split.values() for part in parts]
    relations: dict[tuple[str, str, str], RelationMention] = {}
    for sentence in _SENTENCE.split(text):
        # Every phrase holds a cue: a sentence without one has no match, and
        # finding where each name occurs in it would be wasted (long turns
        # run to dozens of sentences).
        if not _CUE.search(sentence):
            continue
        spans = _spans(sentence, usable)
        if len(spans) < 2:
            continue
        for match in _PATTERN.finditer(sentence):
            index = int(next(k for k, v in match.groupdict().items() if v)[1:])
            _, kind, active = _PHRASES[index]
            if _NEGATION.search(sentence[: match.start()]):
                continue
            left = _left(spans, sentence, match.start())
            right = _right(spans, sentence, match.end())
            subjects, objects = (left, right) if active else (right, left)
            for subject in subjects:
                for obj in objects:
                    if subject.norm == obj.norm:
                        continue
                    key = (kind, subject.norm, obj.norm)
                    relations.setdefault(
                        key,
                        RelationMention(kind, subject.norm, obj.norm, " ".join(sentence.split())),
                    )
    if not relations:
        return (), tuple(mentions)
    needed = {r.subject for r in relations.values()} | {r.object for r in relations.values()}
    linked: dict[str, Mention] = {m.norm: m for m in mentions}
    for part in usable:
        if part.norm in needed:
            linked.setdefault(part.norm, part)
    return tuple(relations.values()), tuple(linked.values())


def extract_graph(
    texts: Sequence[str | None], extra: Extractor | None = None
) -> tuple[tuple[Mention, ...], tuple[RelationMention, ...]]:
    """The mentions of ``texts`` (``extract_mentions``) and the relations
    they state: what a write links."""
    mentions = extract_mentions(texts, extra)
    found: dict[tuple[str, str, str], RelationMention] = {}
    for text in texts:
        if not text or not mentions:
            continue
        relations, mentions = extract_relations(text, mentions)
        for relation in relations:
            found.setdefault((relation.kind, relation.subject, relation.object), relation)
    return mentions, tuple(found.values())
