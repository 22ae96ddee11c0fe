"""Supersession: when a new fact replaces an older one about the same entity
and attribute.

Both rules below link statements: a new text of at most ``MAX_STATEMENT``
words. A longer one (a chat turn or a document written as a fact) says
many things, and closing an older memory because the two match would hide
what else that memory holds; nor is it searched for what it replaces,
which cost a bulk import of long texts a look at up to 50 facts a write.
(The everyday palaces' replacements have at most 36 words.)

The rule (no LLM), applied to two memories of one scope and one category
among fact, decision, person, goal and rule, the new one written later:

1. Both texts are cut into lower-case words, without change markers such
   as "now", "currently", "no longer", "anymore", "instead".
2. The longest common prefix and suffix of the two word lists are removed;
   what remains on each side (the changed value) must be non-empty and at
   most ``MAX_CHANGE`` words on both sides. One contiguous change only.
3. The common part (prefix + suffix) must hold at least two words and name
   an entity that both memories mention (the subject or object that stays).
4. The statement must be about a single-valued attribute: the common part
   holds a functional word ("leads", "owns", "lives", "works", "uses",
   "prefers", "favourite", "deadline", "status", ...), or the value follows
   a copula directly ("X is <value>", "X's role is <value>"), or the new
   text carries a change marker. "Alice likes tea" does not replace "Alice
   likes coffee"; "Alice now likes tea" does; "Bob thinks Kafka is
   overkill" does not replace "Bob thinks Redis is overkill".

Measured on tests/data/supersession_pairs.jsonl (see tests/graph): the rule's
false merges and misses are asserted there.

A second rule links a replacement said in other words ("From 14 September
the daily standup starts at 10:15" replaces "The daily standup is at
9:30"), which the first cannot see. It needs what a text alone does not
give, so the write operation (``writing.remember``) finds the candidate
before the write and the store checks it inside the transaction:

1. The new memory is written on its own (not a conversation turn), of a
   category in ``RESTATED_CATEGORIES``, and says that something changed
   (``says_change``): a change word ("now", "instead", "no longer", "took
   over", "moved", "switched", "pushed ... back", "brought ... forward",
   "raised ... to", "put ... up to", "change of date", "after all", "went
   up", ...) or an
   onset ("from 2 November", "since 1 May", "as of October", "starting
   next week", "since the break-in"; not the start of a span, "from 8 am
   to 6 pm"); and it does not say that it adds ("also", "as well", "in
   addition").
2. Its best keyword matches among the current memories of its own scope
   part and category, written before it, are the candidates (five).
3. The best keyword match is replaced when it is also the candidate
   whose embedding is nearest the new memory's (both signs agree), and
   that cosine reaches the model's link cosine (``retrieval.currency``:
   0.5 for MiniLM, 0.7 for bge and the static model; a model not measured
   there links nothing by this rule). One memory at most.

On the sixteen everyday palaces (``bench.everyday``: 96 replaced facts)
the second rule links 69 of the 96 with MiniLM and no other pair; the
misses are replacements less like the old text than the cosine asks, or
filed under another category. With the static model it links 45, and 4
other pairs (as it did at 0.7 before the change words and palaces grew).

A pure rule over text, here in the store because the store applies it inside
the write transaction (candidates_sql.py reads the candidates), so a new fact sees
every fact committed before it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mindpalace.models import Category, MemoryKind, NewMemory

__all__ = [
    "FACT_CATEGORIES",
    "MAX_CHANGE",
    "MAX_STATEMENT",
    "RESTATED_CATEGORIES",
    "FactCandidate",
    "changed_statement",
    "may_replace",
    "may_restate",
    "replaced_facts",
    "same_attribute",
    "says_change",
]

FACT_CATEGORIES = (
    Category.FACT,
    Category.DECISION,
    Category.PERSON,
    Category.GOAL,
    Category.RULE,
)
MAX_CHANGE = 6
#: the longest new text (in words) either rule links as a replacement
MAX_STATEMENT = 60
#: the categories the second rule (a replacement in other words) links
RESTATED_CATEGORIES = (*FACT_CATEGORIES, Category.EVENT, Category.WORKFLOW)

_MARKERS = ("no longer", "from now on", "these days", "any more")
_MARKER_WORDS = frozenset("now currently anymore instead nowadays presently".split())
_COPULA = frozenset({"is", "are", "am"})
# Third-person verbs and attribute nouns of single-valued relations (bare
# forms such as "work" or "run" are nouns too often to count).
_FUNCTIONAL = frozenset(
    """
    leads owns manages heads runs lives works reports uses prefers favourite
    favorite deadline status version role title owner leader manager located
    based costs price salary budget address email phone birthday age married
    engaged dating moved switched changed default target due
    """.split()
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = "january february march april may june july august september october november december"
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
_NUMBERS = "one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|fifty|hundred"
# Words that say a statement replaces an earlier one (rule 2).
_CHANGE = re.compile(
    r"\b(?:now|no longer|any ?more|instead|nowadays|these days|from now on"
    r"|t(?:ook|akes|aken) over|hand(?:ed|s)\b[^.;]{0,60}?\bover"
    r"|mov(?:ed|es|ing)|chang(?:ed|es)|switch(?:ed|es|ing)"
    r"|change of (?:plans?|dates?|times?|venue|heart|supplier|owner)"
    r"|dropped|stopped|replaced|renamed|rescheduled|postponed|delayed"
    r"|after all(?!,)"  # "no shower after all"; not "after all, we are small"
    r"|pushed\b[^.;]{0,40}?\bback (?:to|by|until|a|an|one|two|three|\d+)|put back"
    r"|brought\b[^.;]{0,40}?\bforward"
    rf"|(?:raised|lowered|increased|reduced|cut)\b[^.;]{{0,40}}?\bto (?:[£$€]?\d+|{_NUMBERS})"
    # "put seats up to £14", not "can put up to 40 tents" (a capacity)
    rf"|(?:put|puts|putting)\s+\w[^.;]{{0,40}}?\s(?:up|down) to (?:[£$€]?\d+|{_NUMBERS})"
    r"|(?:went|goes|gone|has gone) (?:up|down))\b",
    re.IGNORECASE,
)
# An onset: the time from which it holds ("from 2 November", "since May").
_WHENS = "|".join((_MONTHS + " " + _DAYS + " today tomorrow week month year season term").split())
_ONSET = re.compile(
    r"\b(?:from|since|as of|starting|effective)\s+"
    rf"(?:the\s+|next\s+|this\s+|mid[- ]|early\s+|late\s+)?(?:\d|{_WHENS}|new year)"
    # since an event ("since the break-in", "since the flood"), not a cause
    # ("since the hall is booked, ...": a verb follows its noun)
    r"|\bsince the [\w-]+(?! (?:is|are|was|were|has|have|had|will|would|can|could|does|did)\b)\b",
    re.IGNORECASE,
)
# What follows a span's start ("from 8 am to 6 pm", "from 14 to 25 May").
_SPAN_END = re.compile(r"[^.;:,]{0,16}?\s(?:to|until|till)\s+\d|[^.;:,]{0,16}?\s?[-\u2013]\s?\d")
# Words that say a statement adds to what is known rather than replacing it.
_ADDS = re.compile(r"\b(?:also|as well|in addition|additionally)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """A current fact a new one may replace, and the asked-for names it mentions."""

    id: str
    content: str
    content_hash: str
    norms: set[str]


def _unmarked(text: str) -> tuple[str, bool]:
    """``text`` in lower case without its change-marker phrases, and
    whether it held one."""
    lowered = text.casefold()
    marked = False
    for phrase in _MARKERS:
        if phrase in lowered:
            lowered = lowered.replace(phrase, " ")
            marked = True
    return lowered, marked


# A batch compares each new fact with up to 50 candidates, mostly the same
# few texts again: each text is cut into words once.
@functools.lru_cache(maxsize=4096)
def _words(text: str) -> tuple[tuple[str, ...], bool]:
    lowered, marked = _unmarked(text)
    words = []
    for word in _WORD.findall(lowered):
        if word in _MARKER_WORDS:
            marked = True
            continue
        words.append(word)
    return tuple(words), marked


# How many characters of a text's end are read first for its last word.
_TAIL = 96


@functools.lru_cache(maxsize=8192)
def _ends(text: str) -> tuple[str, str] | None:
    """The first and the last of ``_words(text)``'s words (None when it has
    none), reading only the text's start and end: a candidate shares
    neither with the new text in most comparisons (85% of them writing
    real chat turns as facts), and cutting a long candidate into words
    was most of a comparison's cost."""
    lowered, _ = _unmarked(text)
    first = next(
        (w for w in (m.group() for m in _WORD.finditer(lowered)) if w not in _MARKER_WORDS), None
    )
    if first is None:
        return None
    start = max(0, len(lowered) - _TAIL)
    while True:
        for match in reversed(list(_WORD.finditer(lowered, start))):
            # A match at the cut may be the end of a longer word: read more.
            if match.start() > 0 and match.start() == start and _WORD.match(lowered, start - 1):
                break
            if match.group() not in _MARKER_WORDS:
                return first, match.group()
        start = max(0, start - _TAIL * 4)  # every word seen was a marker, or cut


def same_attribute(old_text: str, new_text: str, shared_entities: Sequence[str]) -> bool:
    """Whether ``new_text`` restates ``old_text``'s attribute with a new value
    (the module docstring states the rule); ``shared_entities`` are the
    normalised names both texts mention."""
    b, marked = _words(new_text)
    # One changed span leaves a common prefix or suffix (the rule asks for
    # two common words): the first or the last words agree.
    ends = _ends(old_text)
    if ends is None or not b or (ends[0] != b[0] and ends[1] != b[-1]):
        return False
    a, _ = _words(old_text)
    # Two changed spans of 1 to MAX_CHANGE words: the lengths differ by less.
    if abs(len(a) - len(b)) >= MAX_CHANGE:
        return False
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]
    ):
        suffix += 1
    old_change = a[prefix : len(a) - suffix]
    new_change = b[prefix : len(b) - suffix]
    if not old_change or not new_change:
        return False
    if len(old_change) > MAX_CHANGE or len(new_change) > MAX_CHANGE:
        return False
    common = a[:prefix] + a[len(a) - suffix :]
    if len(common) < 2:
        return False
    common_text = " " + " ".join(common) + " "
    if not any(
        f" {' '.join(_WORD.findall(name.casefold()))} " in common_text for name in shared_entities
    ):
        return False
    copula_value = prefix > 0 and a[prefix - 1] in _COPULA
    return marked or copula_value or any(word in _FUNCTIONAL for word in common)


def _statement(text: str) -> bool:
    """Whether ``text`` is short enough for either rule to link it."""
    return len(_WORD.findall(text)) <= MAX_STATEMENT


def may_replace(new: NewMemory) -> bool:
    """Whether ``new`` could replace any fact at all: what the rule asks of
    the new memory alone (a fact-like category, a mention, a statement of
    at most ``MAX_STATEMENT`` words, and a change marker, a copula or a
    functional word in its text: the common part and the word before the
    value are words of both texts), so that a write that cannot replace
    anything reads no candidates."""
    if new.category not in FACT_CATEGORIES or not new.mentions or not _statement(new.content):
        return False
    words, marked = _words(new.content)
    return len(words) >= 3 and (marked or any(w in _COPULA or w in _FUNCTIONAL for w in words))


def says_change(text: str) -> bool:
    """Whether ``text`` says that something changed (rule 2.1): a change
    word or an onset, and no word that says it only adds."""
    if _ADDS.search(text):
        return False
    return bool(_CHANGE.search(text)) or any(
        not _SPAN_END.match(text, onset.end()) for onset in _ONSET.finditer(text)
    )


def changed_statement(category: Category, content: str) -> bool:
    """Whether a memory of ``category`` saying ``content`` is a statement
    (at most ``MAX_STATEMENT`` words) of a category the second rule links,
    saying that something changed (rule 2.1)."""
    return category in RESTATED_CATEGORIES and _statement(content) and says_change(content)


def may_restate(new: NewMemory) -> bool:
    """Whether ``new`` may replace a memory it says in other words (rule
    2.1): written on its own, of a category the rule links, a statement
    (at most ``MAX_STATEMENT`` words) saying that something changed."""
    return new.kind is not MemoryKind.MESSAGE and changed_statement(new.category, new.content)


def replaced_facts(
    new: NewMemory,
    candidates: Sequence[FactCandidate],
    *,
    extra_names: Iterable[str] = (),
) -> list[str]:
    """Ids of the ``candidates`` (current memories of the new one's scope and
    category, each with the names it shares) that ``new`` supersedes;
    ``extra_names`` are more names of the new memory's entities (what its
    mentions resolved to)."""
    if new.category not in FACT_CATEGORIES:
        return []
    names = {m.norm for m in new.mentions} | {a for m in new.mentions for a in m.aliases}
    names |= set(extra_names)
    out = []
    for old in candidates:
        if old.content_hash == new.content_hash:
            continue
        shared = sorted(names & old.norms)
        if shared and same_attribute(old.content, new.content, shared):
            out.append(old.id)
    return out
