"""Entity mentions found without an LLM: names, handles, tags, code, paths,
URLs, quoted titles and dates.

Extraction is a pure function of the text, run before the write transaction;
the store resolves each mention to an entity of the memory's scope inside it.
Pluggable: anything with ``extract(text) -> list[Mention]`` is an extractor
(an LLM extractor may add mentions; it never runs inside the write lock).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Protocol

from mindpalace.models import MemoryType, Mention

__all__ = [
    "Extractor",
    "RuleExtractor",
    "aliases_of",
    "extract_mentions",
    "normalise_name",
]

MAX_MENTIONS = 24


class Extractor(Protocol):
    """Finds entity mentions in a text."""

    def extract(self, text: str) -> list[Mention]:
        """The mentions in ``text``, each once, in order of appearance."""
        ...


# Capitalised words that start sentences or carry no name: never an entity
# on their own.
_COMMON = frozenset(
    """
    a about after again all also although am an and another any anyway are as at
    be because been before being but by can could did do does done during each
    either even ever every first for from good got great had has have he hello
    her here hey hi him his how however i if in into is it its just last let
    like many may maybe me might more most much must my never new next no nor
    not now of off oh ok okay on once one only or other our out over perhaps
    please really same see she should since so some such sure thank thanks that
    the their them then there these they this those though through thus to
    today tomorrow too under until up us very was we well were what whatever
    when where whether which while who whoever why will with without would wow
    yeah yes yesterday yet you your yours absolutely awesome cool definitely
    nice sounds congrats congratulations sorry amazing glad happy wonderful true
    exactly totally haha lol omg btw fyi note remember thing things someone
    something everyone everything nothing anyone anything speaker user assistant
    system check use call run make add fix try go look read write ask tell
    keep find open close start stop send set get put take give later earlier
    soon still finally lastly recently tonight afterwards anyhow besides
    meanwhile otherwise instead unfortunately luckily honestly basically
    apparently hopefully maybe probably certainly suddenly usually sometimes
    often always never already again around almost also back both
    """.split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset(
    """january february march april may june july august september october
    november december""".split()
)
# Words joining a multi-word name ("Bank of America", "Lord of the Rings").
_JOINERS = frozenset({"of", "de", "van", "von", "der", "la", "le", "du", "da", "the", "and", "&"})
# Designators dropped to form a shorter alias ("Project Falcon" -> "falcon").
_DESIGNATORS = frozenset(
    """project team the corp corporation inc ltd llc co company group gmbh plc
    service services app system api mr mrs ms dr prof""".split()
)
_ORG_SUFFIX = frozenset("corp corporation inc ltd llc co company gmbh plc labs".split())
_PROJECT_CUE = frozenset({"project", "initiative", "programme", "program", "epic"})
_SYSTEM_CUE = frozenset(
    """service server database db api cluster pipeline platform backend frontend
    queue cache repo repository app""".split()
)
_TOOL_CUE = frozenset({"tool", "cli", "library", "plugin", "command", "script", "sdk"})
_PERSON_TITLE = frozenset({"mr", "mrs", "ms", "dr", "prof", "sir", "madam", "aunt", "uncle"})
_PERSON_VERB = frozenset(
    """said says told tells asked asks met meets thinks thought wants wanted
    loves likes feels felt leads led owns manages managed joined joins works
    worked lives lived went goes called calls mentioned wrote writes from""".split()
)
_PERSON_BEFORE = frozenset(
    """met meet meeting with told tell asked ask thanked thank called call emailed
    email messaged pinged hired invited married dear hi hey""".split()
)

_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.IGNORECASE)
_HANDLE = re.compile(r"(?<![\w@.])@([A-Za-z0-9_][A-Za-z0-9_.-]{0,38}[A-Za-z0-9_])")
_HASHTAG = re.compile(r"(?<![\w#&])#([A-Za-z][\w-]{1,48})")
_TICKET = re.compile(r"\b([A-Z][A-Z0-9]{1,9}-\d{1,6})\b")
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_PATH = re.compile(
    r"(?<![\w/.:])((?:\.{1,2}/|~/|/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}|(?:\.{1,2}|~)/[\w./-]+)"
)
_CODE = re.compile(
    r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Za-z_][\w]*\(\))"
)
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_WORDY_DATE = re.compile(
    r"\b(\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October"
    r"|November|December),?\s+\d{4}|(?:January|February|March|April|May|June|July|August"
    r"|September|October|November|December)\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\s+\d{4})\b"
)
# What a text must hold for _WORDY_DATE to match (a month's name) and for
# _CODE's camelCase to (a lower-case letter before a capital).
_MONTH_NAMES = tuple(m.capitalize() for m in sorted(_MONTHS))
_LOWER_UPPER = re.compile(r"[a-z][A-Z]")
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d\n]{3,80})[\"\u201d]")
_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][\w'\u2019&.-]*")
_SPEAKER = re.compile(r"^\s*([A-Z][\w.-]*(?: [A-Z][\w.-]*){0,2}):\s")
# What may end the text before a word that opens a sentence.
_OPENS_SENTENCE = (".", "!", "?", ":", ";", "\u201c", '"', "(", "-")
_POSSESSIVE_S = re.compile(r"'s\b")
_TRAILING_POSSESSIVE = re.compile(r"['\u2019]s$")
_SPACES = re.compile(r"\s+")
_SPACES_UNDERSCORES = re.compile(r"[\s_]+")


def normalise_name(text: str, *, code: bool = False) -> str:
    """The key two mentions of one entity share: NFKC, case-folded, without
    possessive "'s", edge punctuation and repeated spaces (underscores kept
    in code identifiers)."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    folded = _POSSESSIVE_S.sub("", folded)
    folded = (_SPACES if code else _SPACES_UNDERSCORES).sub(" ", folded)
    return folded.strip(" .,;:!?\"'()[]{}<>-")


def aliases_of(norm: str, kind: str, type_: MemoryType = MemoryType.UNKNOWN) -> tuple[str, ...]:
    """Shorter names the entity answers to: without designators ("project
    falcon" -> "falcon", "acme corp" -> "acme") and, for people, the first
    name ("alice chen" -> "alice")."""
    if kind not in ("name", "title"):
        return ()
    words = norm.split()
    out: list[str] = []
    core = [w for w in words if w.rstrip(".") not in _DESIGNATORS]
    if core and len(core) < len(words):
        out.append(" ".join(core))
    if type_ is MemoryType.PERSON and len(core) == 2 and all(w.isalpha() for w in core):
        out.append(core[0])
    return tuple(a for a in dict.fromkeys(out) if a and a != norm and a not in _COMMON)


def _type_of_name(words: list[str], before: str, after: str, speaker: bool) -> MemoryType:
    lowered = [w.lower().rstrip(".") for w in words]
    last = before.rsplit(maxsplit=1)
    prev = last[-1].lower().rstrip(".") if last else ""
    first = after.split(maxsplit=1)
    nxt = first[0].lower().strip(".,;:!?") if first else ""
    if speaker or prev in _PERSON_TITLE or lowered[0] in _PERSON_TITLE:
        return MemoryType.PERSON
    if prev in ("from", "at", "in", "for"):  # an organisation or a place
        return MemoryType.UNKNOWN
    if lowered[0] in _PROJECT_CUE or prev in _PROJECT_CUE or nxt in _PROJECT_CUE:
        return MemoryType.PROJECT
    if lowered[-1] in _SYSTEM_CUE or nxt in _SYSTEM_CUE:
        return MemoryType.SYSTEM
    if lowered[-1] in _TOOL_CUE or nxt in _TOOL_CUE:
        return MemoryType.TOOL
    if lowered[-1] in _ORG_SUFFIX:
        return MemoryType.UNKNOWN
    if (
        len(words) <= 2
        and all(w.isalpha() for w in lowered)
        and (nxt in _PERSON_VERB or prev in _PERSON_BEFORE)
    ):
        return MemoryType.PERSON
    return MemoryType.UNKNOWN


class RuleExtractor:
    """The default extractor: regular expressions and capitalisation, no model."""

    def extract(self, text: str) -> list[Mention]:
        """The mentions in ``text``, each entity once, in order of appearance."""
        found: list[tuple[int, Mention]] = []
        taken: list[tuple[int, int]] = []

        def add(start: int, end: int, surface: str, kind: str, type_: MemoryType) -> None:
            if any(s < end and start < e for s, e in taken):
                return
            norm = normalise_name(surface, code=kind in ("code", "path", "url", "handle"))
            if not norm or (kind == "name" and norm in _COMMON):
                return
            if kind in ("handle", "hashtag"):
                norm = norm.lstrip("@#")
            taken.append((start, end))
            found.append(
                (start, Mention(surface, norm, kind, type_, aliases=aliases_of(norm, kind, type_)))
            )

        # Each pattern runs only over a text holding what every match of it
        # holds (a character, a month's name): most texts hold no URL, path
        # or handle, and a scan of a long text costs more than the check.
        if "://" in text:
            for m in _URL.finditer(text):
                add(m.start(), m.end(), m.group(0).rstrip(".,;:"), "url", MemoryType.SYSTEM)
        if "@" in text:
            for m in _HANDLE.finditer(text):
                add(m.start(), m.end(), m.group(0), "handle", MemoryType.PERSON)
        if "#" in text:
            for m in _HASHTAG.finditer(text):
                add(m.start(), m.end(), m.group(0), "hashtag", MemoryType.CONCEPT)
        dashed = "-" in text
        if dashed:
            for m in _TICKET.finditer(text):
                add(m.start(), m.end(), m.group(1), "ticket", MemoryType.TASK)
        if "`" in text:
            for m in _BACKTICK.finditer(text):
                inner = m.group(1).strip()
                if len(inner.split()) <= 4:
                    add(m.start(), m.end(), inner, "code", MemoryType.TOOL)
        if "/" in text:
            for m in _PATH.finditer(text):
                add(m.start(1), m.end(1), m.group(1), "path", MemoryType.UNKNOWN)
        if dashed:
            for m in _ISO_DATE.finditer(text):
                add(m.start(), m.end(), m.group(1), "date", MemoryType.UNKNOWN)
        if any(month in text for month in _MONTH_NAMES):
            for m in _WORDY_DATE.finditer(text):
                add(m.start(), m.end(), m.group(1), "date", MemoryType.UNKNOWN)
        for m in _QUOTED.finditer(text):
            inner = m.group(1).strip()
            words = inner.split()
            if 1 <= len(words) <= 8 and sum(w[:1].isupper() for w in words) * 2 >= len(words):
                add(m.start(), m.end(), inner, "title", MemoryType.CONCEPT)
        if "_" in text or "()" in text or _LOWER_UPPER.search(text):
            for m in _CODE.finditer(text):
                add(m.start(), m.end(), m.group(1), "code", MemoryType.TOOL)
        self._names(text, add)
        found.sort(key=lambda item: item[0])
        out: dict[str, Mention] = {}
        for _, mention in found:
            if mention.norm not in out:
                out[mention.norm] = mention
        return list(out.values())[:MAX_MENTIONS]

    @staticmethod
    def _names(text: str, add: _Adder) -> None:
        speaker = _SPEAKER.match(text)
        if speaker:
            add(speaker.start(1), speaker.end(1), speaker.group(1), "name", MemoryType.PERSON)
        words = list(_WORD.finditer(text))
        # A word starts with a letter, which rstrip never removes: only
        # words starting with a capital can open a name.
        capitals = [k for k, w in enumerate(words) if w.group(0)[0].isupper()]
        i = 0
        for k in capitals:
            if k < i:  # inside the run before
                continue
            if not _is_capitalised(words[k].group(0).rstrip(".'\u2019-")):
                continue
            run, j = _capitalised_run(text, words, k)
            i = j
            start = run[0].start()
            # Read from the last character before the name (a regex search
            # of the whole prefix at every name was quadratic in the length).
            tail = text[:start].rstrip()
            sentence_start = not tail or tail.endswith(_OPENS_SENTENCE)
            # A capitalised common word opening a sentence is no name.
            while run and run[0].group(0).lower().rstrip(".'\u2019-") in _COMMON:
                run = run[1:]
                sentence_start = False
            while run and run[-1].group(0).lower().rstrip(".'\u2019-") in _JOINERS:
                run = run[:-1]
            if not run:
                continue
            names = [w.group(0).rstrip(".,'\u2019-") for w in run]
            names = [_TRAILING_POSSESSIVE.sub("", n) for n in names]
            lowered = [n.lower() for n in names]
            if len(run) == 1 and (lowered[0] in _WEEKDAYS or lowered[0] in _MONTHS):
                add(run[0].start(), run[0].end(), names[0], "date", MemoryType.UNKNOWN)
                continue
            if len(run) == 1 and sentence_start and len(names[0]) <= 2:
                continue
            surface = text[run[0].start() : run[-1].end()].rstrip(".,'\u2019-")
            surface = _TRAILING_POSSESSIVE.sub("", surface)
            type_ = _type_of_name(names, text[: run[0].start()], text[run[-1].end() :], False)
            add(run[0].start(), run[0].start() + len(surface), surface, "name", type_)


def _capitalised_run(
    text: str, words: list[re.Match[str]], i: int
) -> tuple[list[re.Match[str]], int]:
    """The run of capitalised words starting at ``words[i]`` (joined by
    "of", "de"... between two of them), and the index after it."""
    run = [words[i]]
    j = i + 1
    while j < len(words):
        last = run[-1].group(0)
        if last.endswith(".") and last[:-1].lower() not in _PERSON_TITLE:
            break  # "Alice. Later": a sentence ended
        gap = text[run[-1].end() : words[j].start()]
        if gap.strip() or "\n" in gap:
            break
        nxt = words[j].group(0).rstrip(".'\u2019-")
        if _is_capitalised(nxt):
            run.append(words[j])
            j += 1
            continue
        # "Bank of America": a joiner between two capitalised words.
        if (
            nxt.lower() in _JOINERS
            and j + 1 < len(words)
            and _is_capitalised(words[j + 1].group(0))
            and text[words[j].end() : words[j + 1].start()].strip() == ""
        ):
            run += [words[j], words[j + 1]]
            j += 2
            continue
        break
    return run, j


class _Adder(Protocol):
    def __call__(
        self, start: int, end: int, surface: str, kind: str, type_: MemoryType
    ) -> None: ...


def _is_capitalised(token: str) -> bool:
    if not token or not token[0].isupper():
        return False
    # "I" and single capitals are no names; "NASA" and "Alice" are.
    return len(token) > 1 and not token.isdigit()


_DEFAULT = RuleExtractor()


def extract_mentions(
    texts: Iterable[str | None], extra: Extractor | None = None
) -> tuple[Mention, ...]:
    """Mentions of the rule extractor over several texts (title, content),
    then of ``extra`` (e.g. an LLM extractor), each entity once."""
    out: dict[str, Mention] = {}
    present = [t for t in texts if t]
    for extractor in (_DEFAULT, extra) if extra is not None else (_DEFAULT,):
        for text in present:
            for mention in extractor.extract(text):
                out.setdefault(mention.norm, mention)
    return tuple(out.values())[:MAX_MENTIONS]
