"""Personal data: journal entries, knowledge nodes, project issues,
specifications and conversation messages, and one search across them.

Each is a memory with a ``kind`` (``models.MemoryKind``) and the kind's own
fields: a node's name is its title, issues and specs belong to a ``project``,
an issue is open or ``completed`` and numbered within its project
(``metadata["issue_number"]``). They are written and read through the same
pipeline, scope rules, export and migration as every memory; this module only
adds the convenient writers and the search that attributes each result to
its source with its date ("From your journal on 15 Jan 2026: ...").

``Palace.search`` and ``Palace.personal`` delegate here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mindpalace.errors import NotFoundError, ValidationError
from mindpalace.models import (
    ISSUE_NUMBER,
    Hit,
    HitList,
    Memory,
    MemoryKind,
    StoreKind,
    issue_number,
)
from mindpalace.retrieval import stages
from mindpalace.retrieval.pipeline import TEXT_ONLY_NOTICE
from mindpalace.retrieval.sparse import query_terms
from mindpalace.scoping import check_change, write_owner
from mindpalace.validation import check_identifier, check_limit, check_query, parse_many

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = [
    "ISSUE_NUMBER",
    "Personal",
    "PersonalHit",
    "SearchResults",
    "Target",
    "attribution",
    "read_target",
]

MAX_SEARCH_LIMIT = 100
SUMMARY_CHARS = 200
# How many matches the text fallback gathers before ordering them by date.
RECENCY_POOL = 100

# Where each kind comes from, as the user would say it.
SOURCE_NAMES = {
    MemoryKind.MEMORY: "your memories",
    MemoryKind.JOURNAL: "your journal",
    MemoryKind.NODE: "your knowledge graph",
    MemoryKind.ISSUE: "project issues",
    MemoryKind.SPEC: "specifications",
    MemoryKind.MESSAGE: "your conversations",
}


def _date(moment: datetime) -> str:
    return f"{moment.day} {moment:%b %Y}"


def attribution(memory: Memory) -> str:
    """Where a memory comes from and when, in words a person reads, e.g.
    ``From your journal on 15 Jan 2026`` or ``From project X, issue #3
    (open, 2 Feb 2026)``."""
    when = _date(memory.created_at)
    kind = memory.kind
    if kind is MemoryKind.JOURNAL:
        return f"From your journal on {when}"
    if kind is MemoryKind.NODE:
        name = f" — {memory.title}" if memory.title else ""
        return f"From your knowledge graph{name} ({when})"
    if kind is MemoryKind.ISSUE:
        number = issue_number(memory.metadata)
        which = f"issue #{number}" if number is not None else "an issue"
        state = "completed" if memory.completed else "open"
        where = f"From project {memory.project}, {which}" if memory.project else f"From {which}"
        return f"{where} ({state}, {when})"
    if kind is MemoryKind.SPEC:
        where = f" in project {memory.project}" if memory.project else ""
        return f"From a specification{where} ({when})"
    if kind is MemoryKind.MESSAGE:
        return f"From a conversation on {when}"
    project = f" (project {memory.project})" if memory.project else ""
    return f"From your memories on {when}{project}"


def summary(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The text on one line, cut at a word boundary near ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] or flat[:limit]
    return cut.rstrip(" ,;:.") + " …"


@dataclass(frozen=True, slots=True)
class PersonalHit:
    """One search result: the recall hit, where it comes from and when.

    ``line`` is what to show a person: ``"{attribution}: {summary}"``.
    """

    hit: Hit
    attribution: str
    summary: str

    @property
    def memory(self) -> Memory:
        """The memory found."""
        return self.hit.memory

    @property
    def kind(self) -> MemoryKind:
        """Its personal-data kind."""
        return self.hit.memory.kind

    @property
    def date(self) -> datetime:
        """When it was written or happened (its ``created_at``)."""
        return self.hit.memory.created_at

    @property
    def score(self) -> float:
        """Relevance to the query, 0-1."""
        return self.hit.score

    @property
    def confidence(self) -> float:
        """The memory's confidence, 0-1 (as ``get`` shows it)."""
        return self.hit.memory.confidence

    @property
    def line(self) -> str:
        """``"{attribution}: {summary}"``."""
        return f"{self.attribution}: {self.summary}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the hit's fields plus ``date``, ``attribution``,
        ``summary`` and ``line``."""
        out = self.hit.to_dict()
        out["date"] = self.date.date().isoformat()
        out["attribution"] = self.attribution
        out["summary"] = self.summary
        out["line"] = self.line
        number = issue_number(self.memory.metadata) if self.kind is MemoryKind.ISSUE else None
        if number is not None:
            out["issue_number"] = number
        return out


@dataclass(frozen=True, slots=True)
class Target:
    """What a query asks for besides its words: the kinds, project and issue
    state it names ("my journal entries about X", "open issues in project
    Y"), the words left to search for, and the phrases that said so."""

    text: str
    kinds: tuple[MemoryKind, ...] = ()
    project: str | None = None
    completed: bool | None = None
    phrases: tuple[str, ...] = ()
    unknown_project: str | None = None  # named, but no such project exists


_DET = r"(?:(?:in|from|on)\s+)?(?:my|our|the|a|any|all)\s+"
_KIND_PATTERNS: tuple[tuple[MemoryKind, re.Pattern[str]], ...] = (
    (
        MemoryKind.JOURNAL,
        re.compile(
            rf"\b{_DET}(?:journal|diary)(?:\s+(?:entr(?:y|ies)|notes?))?\b"
            r"|\b(?:journal|diary)\s+(?:entr(?:y|ies)|notes?)\b|^\s*(?:journal|diary)\b",
            re.I,
        ),
    ),
    (
        MemoryKind.NODE,
        re.compile(
            rf"\b(?:{_DET})?knowledge\s+(?:graph|base)(?:\s+nodes?)?\b"
            r"|\bknowledge\s+nodes?\b",
            re.I,
        ),
    ),
    (
        MemoryKind.ISSUE,
        re.compile(
            r"\b(?:(?:in|from|on)\s+)?(?:(?:my|our|the|any|all|open|closed|completed|done"
            r"|finished|unfinished|resolved|unresolved)\s+)+(?:issues?|tickets?|bugs?)\b"
            r"|^\s*(?:issues?|tickets?)\b",
            re.I,
        ),
    ),
    (
        MemoryKind.SPEC,
        re.compile(rf"\b(?:{_DET})?(?:specifications?|specs?)\b", re.I),
    ),
    (
        MemoryKind.MESSAGE,
        re.compile(
            rf"\b{_DET}(?:conversations?|chats?|messages?)\b"
            r"|\bwhat\s+(?:did\s+)?(?:i|we|you)\s+(?:say|said|tell|told|discuss(?:ed)?|talk(?:ed)?)"
            r"(?:\s+about)?\b"
            r"|\b(?:we|i)\s+(?:talked|discussed|chatted)(?:\s+about)?\b",
            re.I,
        ),
    ),
)
# Once a project is named, a bare "issues" or "specs" names the kind too.
_BARE = {
    MemoryKind.ISSUE: re.compile(r"\b(?:issues?|tickets?|bugs?)\b", re.I),
    MemoryKind.SPEC: re.compile(r"\b(?:specifications?|specs?)\b", re.I),
}
_PROJECT = re.compile(
    r"\b(?:(?:in|for|of|from|on|about)\s+)?(?:the\s+)?project\s+"
    r"(?:\"([^\"]+)\"|'([^']+)'|([A-Za-z0-9][\w.\-/]*))",
    re.I,
)
_OPEN = re.compile(r"\b(?:open|unfinished|unresolved)\s+(?:issues?|tickets?|bugs?)\b", re.I)
_DONE = re.compile(
    r"\b(?:closed|completed|done|finished|resolved)\s+(?:issues?|tickets?|bugs?)\b", re.I
)
# Words left at the edges once the kind phrases are gone ("find ... about");
# requests ("find", "show me") only lead, so a trailing "search" is kept.
_TRAILING = frozenset(
    "a about all an and any are concerning entries entry for from in is mentioning of on or"
    " regarding related the to with".split()
)
_TOPIC = frozenset({"about", "concerning", "mentioning", "regarding", "on"})
_LEADING = _TRAILING | frozenset(
    "anything did do everything find have i list look me my our search show up what where"
    " which".split()
)


def read_target(query: str, projects: Iterable[str] | None = None) -> Target:
    """The kinds, project and issue state ``query`` names, and its other words.

    Only phrases that name a kind as a source count ("my journal", "journal
    entries", "open issues", "in project X", "what did I say about"), so
    "health issues in my journal" searches the journal for "health issues".
    Given the existing ``projects``, a project phrase counts only when it
    names one of them (case aside; the result has its stored spelling):
    "project management tips" stays a query about project management.
    """
    text = query
    phrases: list[str] = []
    project: str | None = None
    unknown: str | None = None
    found = _PROJECT.search(text)
    if found:
        named = next(g for g in found.groups() if g).strip()
        if projects is None:
            project = named
        else:
            project = next((p for p in projects if p.casefold() == named.casefold()), None)
            unknown = None if project is not None else named
    if found and project is not None:
        phrases.append(found.group(0).strip())
    if found and project is None and not any(p.search(text) for p in _BARE.values()):
        unknown = None  # "project management": a topic, not a project
    if found and (project is not None or unknown is not None):
        # An unknown project named beside issues or specs ("issues in
        # project X") is still a project, not words to search for.
        text = text[: found.start()] + " " + text[found.end() :]
    completed: bool | None = None
    if _OPEN.search(text):
        completed = False
    elif _DONE.search(text):
        completed = True
    kinds: list[MemoryKind] = []
    for kind, pattern in _KIND_PATTERNS:
        match = pattern.search(text)
        if match is None and project is not None and kind in _BARE:
            match = _BARE[kind].search(text)
        if match is None:
            continue
        kinds.append(kind)
        phrases.append(match.group(0).strip())
        text = text[: match.start()] + " " + text[match.end() :]
    if MemoryKind.ISSUE not in kinds:
        completed = None
    words = text.split()
    while words and words[0].lower().strip(",.?!:;") in _LEADING:
        if words.pop(0).lower().strip(",.?!:;") in _TOPIC:
            break  # what follows "about" is the topic, whatever its words
    while words and words[0].lower() in ("a", "an", "the"):
        words.pop(0)

    while words and words[-1].lower().strip(",.?!:;") in _TRAILING:
        words.pop()
    return Target(
        text=" ".join(words).strip(" ,.?!:;") if text != query else query,
        kinds=tuple(kinds),
        project=project,
        completed=completed,
        phrases=tuple(phrases),
        unknown_project=unknown,
    )


class SearchResults(list[PersonalHit]):
    """The results of one search, best first, and how it ran.

    Attributes:
        query: the words searched for (the query less the phrases that
            narrowed it).
        kinds: the kinds searched (empty: every kind).
        project: the project searched, if any.
        completed: the issue state searched, if any.
        narrowed_by: the phrases of the query that chose kinds, project or
            state (empty when ``kinds`` was given explicitly or none was named).
        mode: ``hybrid`` (semantic and keywords, ranked by relevance),
            ``text`` (keywords only, newest first) or ``list`` (no words left
            to search: the newest memories of the kinds named).
        notice: how the search ran, e.g. "Using text search (semantic search
            is not available)."
        hint: when nothing was found, what to try instead (else None).
        suggestions: alternative queries, when nothing was found.
    """

    __slots__ = (
        "completed",
        "hint",
        "kinds",
        "mode",
        "narrowed_by",
        "notice",
        "project",
        "query",
        "suggestions",
    )

    def __init__(
        self,
        results: Iterable[PersonalHit] = (),
        *,
        query: str,
        kinds: tuple[MemoryKind, ...] = (),
        project: str | None = None,
        completed: bool | None = None,
        narrowed_by: tuple[str, ...] = (),
        mode: str = "hybrid",
        notice: str | None = None,
    ) -> None:
        super().__init__(results)
        self.query = query
        self.kinds = kinds
        self.project = project
        self.completed = completed
        self.narrowed_by = narrowed_by
        self.mode = mode
        self.notice = notice
        self.hint: str | None = None
        self.suggestions: tuple[str, ...] = ()

    @property
    def lines(self) -> list[str]:
        """Each result's attribution line, best first."""
        return [r.line for r in self]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "query": self.query,
            "kinds": [k.value for k in self.kinds],
            "project": self.project,
            "completed": self.completed,
            "narrowed_by": list(self.narrowed_by),
            "mode": self.mode,
            "notice": self.notice,
            "count": len(self),
            "results": [r.to_dict() for r in self],
            "hint": self.hint,
            "suggestions": list(self.suggestions),
        }


def _suggestions(
    results: SearchResults, original: str, known_projects: Sequence[str], wanted: str | None
) -> tuple[str, tuple[str, ...]]:
    """A hint and alternative queries for an empty answer."""
    where = (
        " or ".join(SOURCE_NAMES[k] for k in results.kinds) if results.kinds else "any of your data"
    )
    if results.project:
        where += f" of project {results.project}"
    said = f" for {results.query!r}" if results.query else ""
    tips: list[str] = []
    alternatives: list[str] = []
    if wanted is not None and results.project is None:
        names = ", ".join(known_projects) or "none yet"
        tips.append(f"another project: none is named {wanted!r} (projects: {names})")
    if results.narrowed_by:
        left_out = ", ".join(repr(p) for p in results.narrowed_by)
        tips.append(f"searching every kind (leave out {left_out})")
        if results.query:
            alternatives.append(results.query)
    words = [w for w in query_terms(results.query or original) if len(w) > 2]
    if len(words) > 1:
        tips.append("fewer words")
        alternatives += sorted(set(words), key=len, reverse=True)[:3]
    if results.mode == "text":
        tips.append("another form of a word (text search matches words literally)")
        for word in words:
            stem = re.sub(r"(?:ments?|ings?|ions?|ed|es|s)$", "", word)
            if len(stem) >= 3 and stem != word:
                alternatives.append(stem)
    if not tips:
        tips.append("a synonym or a broader phrase")
    hint = f"Nothing found{said} in {where}. Try " + "; or ".join(tips) + "."
    return hint, tuple(dict.fromkeys(a for a in alternatives if a and a != original))


class Personal:
    """Writers for each personal-data kind, and the search across them.

    Reached as ``palace.personal``; ``palace.search`` is its ``search``.
    """

    def __init__(self, palace: View) -> None:
        self._palace = palace

    # -- writing ------------------------------------------------------------------

    def journal(
        self,
        text: str,
        *,
        date: datetime | str | None = None,
        title: str | None = None,
        tags: Iterable[str] | str | None = None,
        project: str | None = None,
        **options: Any,
    ) -> Memory:
        """Write a journal entry (an episodic memory of kind ``journal``).

        Args:
            text: the entry.
            date: the day it is about (ISO 8601 or datetime); now by default.
            title / tags / project: as ``Palace.remember``.
            **options: any other ``Palace.remember`` argument (visibility...).
        """
        options.setdefault("store", StoreKind.EPISODIC)
        return self._palace.remember(
            text,
            kind=MemoryKind.JOURNAL,
            created_at=date,
            title=title,
            tags=tags,
            project=project,
            **options,
        )

    def add_node(self, name: str, note: str, **options: Any) -> Memory:
        """Write a knowledge-graph node: ``name`` (its title) and a note about it.

        Raises:
            ValidationError: an empty name or note.
        """
        label = check_identifier(name, "name")
        return self._palace.remember(note, kind=MemoryKind.NODE, title=label, **options)

    def add_issue(
        self, note: str, *, project: str, completed: bool = False, **options: Any
    ) -> Memory:
        """Write an issue of ``project``, numbered after the project's last
        issue (``metadata["issue_number"]``), inside the write transaction:
        two writers adding issues to one project at once draw two numbers.

        Raises:
            ValidationError: no project, or a bad ``completed``.
        """
        if project is None or (isinstance(project, str) and not project.strip()):
            raise ValidationError("project", project, reason="an issue needs a project")
        options.setdefault("store", StoreKind.PROSPECTIVE)
        return self._palace.remember(
            note, kind=MemoryKind.ISSUE, project=project, completed=completed, **options
        )

    def add_spec(self, note: str, *, project: str, **options: Any) -> Memory:
        """Write a specification of ``project``.

        Raises:
            ValidationError: no project.
        """
        if project is None or (isinstance(project, str) and not project.strip()):
            raise ValidationError("project", project, reason="a specification needs a project")
        return self._palace.remember(note, kind=MemoryKind.SPEC, project=project, **options)

    def complete_issue(self, memory_id: str, *, completed: bool = True) -> Memory:
        """Mark an issue completed (or, with ``completed=False``, open again).

        Returns:
            The issue as it is now.

        Raises:
            NotFoundError: no such memory in this scope.
            PermissionDenied: another agent's issue, or (through a
                peer-facing view) one outside the view's channel
                (``scoping.check_change``).
            ValidationError: it is not an issue, or ``completed`` is not a bool.
        """
        if not isinstance(completed, bool):
            raise ValidationError("completed", completed, valid=["true", "false"])
        palace = self._palace
        memory = palace.get(memory_id)
        if memory.kind is not MemoryKind.ISSUE:
            raise ValidationError(
                "id", memory_id, reason=f"{memory_id} is a {memory.kind.value}, not an issue"
            )
        check_change(palace.scope, memory, "complete")
        if not palace.engine.store.set_completed(
            memory_id, completed, owner=write_owner(palace.scope), now=palace.now()
        ):
            raise NotFoundError(memory_id)  # deleted by someone else in between
        return palace.get(memory_id)

    def projects(self) -> dict[str, int]:
        """The projects this palace's scope can see, with how many live
        memories each has."""
        return dict(self._palace.engine.store.projects(self._palace.scope))

    # -- searching ----------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        project: str | None = None,
        limit: int = 10,
        include_archived: bool = False,
    ) -> SearchResults:
        """Search personal data (journal entries, knowledge
        nodes, project issues, specifications, conversation messages and
        memories, each result attributed to its source with its date.

        Ranked by relevance with semantic search; without it, text search
        ranked newest first, with the notice "Using text search (semantic
        search is not available)." A query that names kinds, a project or an
        issue state ("my journal entries about X", "open issues in project
        Y") searches only those, and the result says so (``narrowed_by``);
        ``kinds`` given explicitly (even empty: every kind) overrides that,
        and ``project`` overrides the query's project. Project names match
        case-insensitively. A query of nothing but such phrases ("my open
        issues") lists the newest matching entries. An empty result carries a
        ``hint`` and ``suggestions``. Nothing is written (recall signals aside).

        Args:
            query: what to look for, in plain words.
            kinds: search only these kinds (a list or comma-separated).
            project: search only this project.
            limit: how many results, 1-100.
            include_archived: also search archived memories.

        Raises:
            ValidationError: an invalid kind, project or limit.
        """
        from_query = kinds is None  # an explicit kinds (even empty) overrides the query
        check_query(query)
        check_limit(limit, low=1, high=MAX_SEARCH_LIMIT)
        palace = self._palace
        chosen = parse_many(MemoryKind, kinds, "kind")
        if project is not None:
            check_identifier(project, "project")
        known = self.projects()
        target = read_target(query, known) if from_query else Target(text=query)
        kinds_ = target.kinds if from_query else chosen
        wanted = project if project is not None else target.project
        resolved = None
        if wanted is not None:
            folded = wanted.strip().casefold()
            resolved = next((name for name in known if name.casefold() == folded), None)
        results = SearchResults(
            query=target.text,
            kinds=kinds_,
            project=resolved,
            completed=target.completed,
            narrowed_by=target.phrases,
        )
        if wanted is None or resolved is not None:
            self._run(results, limit=limit, include_archived=include_archived)
        else:
            results.mode = "hybrid" if palace.engine.semantic.available else "text"
        missing = wanted if resolved is None and wanted is not None else None
        if project is None and target.unknown_project is not None:
            missing = target.unknown_project
            names = ", ".join(known) or "none yet"
            said = f"No project is named {missing!r} (projects: {names}): searched them all."
            results.notice = f"{results.notice} {said}" if results.notice else said
        if not results:
            results.hint, results.suggestions = _suggestions(results, query, list(known), missing)
        return results

    def _run(self, results: SearchResults, *, limit: int, include_archived: bool) -> None:
        palace = self._palace
        now = palace.now()
        projects = [results.project] if results.project else None
        if not query_terms(results.query) and results.narrowed_by:
            # "my open issues": nothing to match, so the newest of what was named.
            listed = palace.memories(
                limit=limit,
                kinds=results.kinds or None,
                projects=projects,
                completed=results.completed,
                include_archived=include_archived,
            )
            hits = [Hit(m, score=0.0, confidence=stages.confidence(m, now)) for m in listed]
            results.mode = "list"
            results.notice = "No words to search for: the newest entries are listed."
        else:
            semantic = palace.engine.semantic.available
            found: HitList = palace.recall(
                results.query,
                limit=limit if semantic else RECENCY_POOL,
                kinds=results.kinds or None,
                projects=projects,
                completed=results.completed,
                include_archived=include_archived,
            )
            results.mode, results.notice = found.mode, found.notice
            hits = list(found)
            if found.mode == "text":
                # The text fallback ranks by recency, and says so.
                hits.sort(key=lambda h: (h.memory.created_at, h.memory.id), reverse=True)
                if not (found.notice or "").startswith(TEXT_ONLY_NOTICE):
                    results.notice = TEXT_ONLY_NOTICE + (f" {found.notice}" if found.notice else "")
            hits = hits[:limit]
        results.extend(
            PersonalHit(hit=h, attribution=attribution(h.memory), summary=summary(h.memory.content))
            for h in hits
        )
