"""Who someone is: a question asking who a named person is ("who is
Nell?", "who's Geoffrey?") is answered by the memory that says so.

Several memories name a person: what they do, what they prefer, a chat
turn they wrote. Ranked by relevance alone, a turn signed "Becca:" or a
fact about someone the person works for can come first; the statement
that introduces them ("Rebecca Thwaite farms Low Garth next door",
"Eleanor Hartwell is the senior partner ...; everyone calls her Nell")
is what the question asks for.

The rule, a pure function over the ranked hits (no new read): among the
first ``WINDOW`` hits, the memories written on their own (not
conversation turns) that introduce the asked name are found. One
introduces it when one of its clauses opens with a full name (two or more
capitalised words, or the asked name alone) that holds the asked name (a
word of it, or a short form: "Becca" in "Rebecca"), or gives it as
that name's other name ("Eleanor Marsh, Nell to friends", "calls her
Nell", "known as Nell"). An introduction that says what the person is
("X is ...", "X, ..., is ...") comes before one that says what they do.
The first such memory is placed first; scores stay with the places, and
``explain`` says so. A question whose name starts in lower case ("who is
the treasurer?") is not asked about a name, and nothing moves.
"""

from __future__ import annotations

import re

from mindpalace.models import Category, HitList, Memory, MemoryKind
from mindpalace.retrieval.currency import WINDOW, reordered

__all__ = ["asked_name", "introduces", "introduction_first"]

_APOSTROPHE = "'\u2019"
_ASKED = re.compile(
    rf"^\s*(?:who(?:[{_APOSTROPHE}]s|\s+is|\s+was)|tell me about"
    r"|what do (?:you|we|i) know about)\s+"
    rf"(?P<name>[A-Z][\w{_APOSTROPHE}.-]*(?:\s+[A-Z][\w{_APOSTROPHE}.-]*){{0,2}})\s*\??\s*$",
    re.IGNORECASE,
)
# A clause's opening name: capitalised words in a row.
_NAME = re.compile(rf"[A-Z][\w{_APOSTROPHE}-]*(?:\s+[A-Z][\w{_APOSTROPHE}-]*){{0,3}}")
# Capitalised words that open a sentence without naming anyone ("On Monday
# Nell ...", "The Nell account ..."): an opening name holds none of them.
_NOT_NAMES = frozenset(
    """
    a an the this that these those our my your their his her its we i you they he she it
    on in at from since while when after before during until by for to of with as if every
    each any all only no not some there here then now today yesterday tomorrow
    monday tuesday wednesday thursday friday saturday sunday
    """.split()
)
_CLAUSE = re.compile(r"(?:^|[.;:!?]\s+|\n\s*)")
# Said of the name just read: it is / was someone ("X is", "X, the ..., is").
_COPULA = re.compile(r"\s*(?:,[^,;.]{1,80},\s*)?(?:is|was)\b")


def asked_name(query: str) -> str | None:
    """The name a question asks about ("who is Nell?" -> "Nell"); None for
    any other question, or a name in lower case."""
    found = _ASKED.match(query)
    if found is None:
        return None
    name = found.group("name").strip(".")
    if not name[:1].isupper():
        return None
    return name


def _other_name(text: str, subject: str, asked: str) -> bool:
    """Whether ``text`` gives ``asked`` as another name of ``subject`` (the
    clause's opening name): right after it, or as what people call them."""
    name = re.escape(asked)
    after = rf"^{re.escape(subject)}\s*(?:,|\()\s*{name}\b"
    called = (
        rf"\b(?:calls?|called|call(?:ing)?|known|goes by|nicknamed)\s+"
        rf"(?:her|him|them|as)?\s*{name}\b"
    )
    to = rf"\b{name}\s+to\s+(?:her\s+|his\s+|their\s+)?(?:friends|family|everyone|colleagues)"
    return any(re.search(p, text, re.IGNORECASE) for p in (after, called, to))


def _holds(subject: str, asked: str) -> bool:
    """Whether the name ``subject`` holds ``asked`` (a word of it, or a
    short form of one: "Becca" in "Rebecca")."""
    words = [w.strip(_APOSTROPHE).lower() for w in subject.split()]
    for part in (w.lower() for w in asked.split()):
        if part in words:
            continue
        if len(part) < 4 or not any(part in w for w in words):
            return False
    return True


def introduces(memory: Memory, asked: str) -> int:
    """How well ``memory`` introduces the person named ``asked``: 2 when
    a clause opens with their name and says what they are, 1 when it says
    what they do, 0 when it does not introduce them (or is a turn)."""
    if memory.kind is MemoryKind.MESSAGE or memory.category is Category.CONVERSATION:
        return 0
    text = memory.content
    lowered = text.lower()
    if not all(part in lowered for part in asked.lower().split()):
        return 0  # every way of introducing the name writes each of its words
    best = 0
    single = len(asked.split()) == 1
    # Another name is given only where the asked one is written out.
    named = re.search(rf"\b{re.escape(asked)}\b", text, re.IGNORECASE) is not None
    for clause in _CLAUSE.finditer(text):
        opening = _NAME.match(text, clause.end())
        if opening is None:
            continue
        subject = opening.group(0)
        if any(w.lower() in _NOT_NAMES for w in subject.split()):
            continue
        whole = subject.lower() == asked.lower()
        if len(subject.split()) < 2 and not (whole and single):
            continue
        if not _holds(subject, asked) and not (
            named and _other_name(text[clause.end() :], subject, asked)
        ):
            continue
        best = max(best, 2 if _COPULA.match(text, opening.end()) else 1)
        if best == 2:
            break
    return best


def introduction_first(hits: HitList, query: str, *, window: int = WINDOW) -> HitList:
    """``hits`` with, for a question asking who someone is, the memory
    among the first ``window`` that best introduces them placed first (the
    module's rule); any other question's hits unchanged."""
    asked = asked_name(query)
    if asked is None or not hits:
        return hits
    head = list(hits[:window])
    scored = [(introduces(h.memory, asked), place) for place, h in enumerate(head)]
    strength, place = max(scored, key=lambda s: (s[0], -s[1]))
    if strength == 0 or place == 0:
        return hits
    first = head.pop(place)
    head.insert(0, first)
    moved = {first.memory.id: head[1].memory.id}
    return reordered(hits, head, moved, f"introduces {asked}: placed above")
