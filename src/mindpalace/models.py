"""Values of mindpalace: enums, memories, scopes, filters and hits.

Everything here is an immutable value. Enum parsing lives here too, so every
front end rejects bad values with the same message (one that lists the valid
options).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from mindpalace.errors import ValidationError, shown

__all__ = [
    "DEFAULT_AGENT",
    "ISSUE_NUMBER",
    "Association",
    "Category",
    "EmbeddingConfig",
    "Entity",
    "EntityLink",
    "Erasable",
    "Hit",
    "HitList",
    "Link",
    "Memory",
    "MemoryKind",
    "MemoryType",
    "Mention",
    "MessageMatch",
    "NewMemory",
    "RecallFilters",
    "RelationMention",
    "Scope",
    "Source",
    "Stats",
    "StoreKind",
    "Visibility",
    "issue_number",
    "normalise_tags",
    "parse_enum",
]

DEFAULT_AGENT = "default"
HIGH_CONFIDENCE = 0.8


class MemoryType(str, enum.Enum):
    """Entity taxonomy of a memory."""

    PERSON = "person"
    PROJECT = "project"
    SYSTEM = "system"
    TOOL = "tool"
    CONCEPT = "concept"
    SKILL = "skill"
    TASK = "task"
    UNKNOWN = "unknown"


class StoreKind(str, enum.Enum):
    """Which memory store a memory belongs to."""

    SENSORY = "sensory"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    PROSPECTIVE = "prospective"


class Category(str, enum.Enum):
    """What kind of statement a memory is."""

    DECISION = "decision"
    LESSON = "lesson"
    PERSON = "person"
    RULE = "rule"
    EVENT = "event"
    FACT = "fact"
    GOAL = "goal"
    WORKFLOW = "workflow"
    CONVERSATION = "conversation"


class MemoryKind(str, enum.Enum):
    """Which personal-data kind a memory is.

    Orthogonal to ``category`` (what sort of statement) and ``store`` (which
    memory system): a journal entry may record a decision, an issue may be a
    lesson. ``project`` groups issues and specs (any kind may name one);
    ``completed`` is an issue's state.
    """

    MEMORY = "memory"  # an ordinary memory (the default)
    JOURNAL = "journal"  # a dated journal entry
    NODE = "node"  # a knowledge-graph node: its name is the title
    ISSUE = "issue"  # a project issue, open or completed
    SPEC = "spec"  # a specification of a project
    MESSAGE = "message"  # a conversation turn


# An issue's number in its project lives in its metadata under this key; the
# store gives each new issue without one the next number (store/sql.py).
ISSUE_NUMBER = "issue_number"


def issue_number(metadata: Mapping[str, Any]) -> int | None:
    """An issue's number in its project (``metadata[ISSUE_NUMBER]``), if it has one."""
    value = metadata.get(ISSUE_NUMBER)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Visibility(str, enum.Enum):
    """Who besides the owner agent may read a memory."""

    ISOLATED = "isolated"  # the owner agent only
    SHARED = "shared"  # every agent of the palace
    GROUP = "group"  # agents that belong to the memory's group


class Source(str, enum.Enum):
    """Who or what wrote a memory (a write-source signal)."""

    MANUAL = "manual"
    SKILL = "skill"
    PIPELINE = "pipeline"
    IMPORT = "import"


E = TypeVar("E", bound=enum.Enum)


def parse_enum(cls: type[E], value: object, field_name: str) -> E:
    """Return the member of ``cls`` named by ``value``.

    Raises:
        ValidationError: naming every valid option, when ``value`` is not one.
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls(value.strip().lower())
        except ValueError:
            pass
    raise ValidationError(field_name, value, valid=[str(m.value) for m in cls])


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """Which model made a palace's vectors.

    Vectors of different configs are never compared: a palace records its
    config and refuses another until it is re-indexed.
    """

    provider: str
    model: str
    dimensions: int


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose eyes a read or write goes through.

    A memory is visible to a scope when it is the scope's own agent's memory,
    or it is shared, or it is a group memory of one of the scope's groups; and
    its channel is empty or is the scope's channel. A ``peer`` scope (a call
    made on behalf of one peer, e.g. a client chat) always has a channel and
    sees, besides that channel's memories, only the unchannelled memories that
    were explicitly shared (visibility shared, or group of one of its
    groups): the agent's own isolated notes stay out of every peer's sight.
    ``unscoped`` is the deliberate management read that sees everything; it
    must be asked for.
    """

    agent_id: str = DEFAULT_AGENT
    groups: tuple[str, ...] = ()
    channel: str | None = None
    unscoped: bool = False
    peer: bool = False

    @classmethod
    def management(cls) -> Scope:
        """A deliberately unscoped scope that sees every memory."""
        return cls(agent_id=DEFAULT_AGENT, unscoped=True)


@dataclass(frozen=True, slots=True)
class Mention:
    """A name in a text that refers to an entity.

    ``norm`` is the key mentions of one entity share (case-folded, trimmed);
    ``kind`` says how it was found (name, handle, hashtag, code, path, url,
    title, date, ticket); ``type`` is the taxonomy type the evidence
    suggests (``unknown`` when it suggests none); ``aliases`` are shorter
    names it answers to.
    """

    surface: str
    norm: str
    kind: str
    type: MemoryType = MemoryType.UNKNOWN
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationMention:
    """A typed relation a text states between two of its mentions
    (``graph.relations``): ``subject`` and ``object`` are mention keys
    (``Mention.norm``), ``kind`` one of owns, maintains, leads, manages,
    depends_on, and ``sentence`` the text that states it."""

    kind: str
    subject: str
    object: str
    sentence: str


@dataclass(frozen=True, slots=True)
class EntityLink:
    """A short name the same entity as a full one in one scope ("Maria" as
    "Maria Lopez"): ``link`` says why, ``first_name`` (the rule) or
    ``joined`` (by hand); ``mentions`` counts the short name's own."""

    name: str
    norm: str
    same_as: str
    same_as_name: str
    link: str
    mentions: int
    agent_id: str
    visibility: Visibility
    group: str | None
    channel: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "norm": self.norm,
            "same_as": self.same_as,
            "same_as_name": self.same_as_name,
            "link": self.link,
            "mentions": self.mentions,
            "agent_id": self.agent_id,
            "visibility": self.visibility.value,
            "group": self.group,
            "channel": self.channel,
        }


@dataclass(frozen=True, slots=True)
class Entity:
    """Something memories mention, in one scope: a person, project, system...

    ``linked`` are the shorter names that are the same entity (their
    mentions are counted in ``mentions``); ``same_as`` is the key of the
    entity this one is the same as, when it is such a short name."""

    id: str
    name: str
    norm: str
    type: MemoryType
    kind: str
    mentions: int
    agent_id: str
    visibility: Visibility
    group: str | None
    channel: str | None
    aliases: tuple[str, ...] = ()
    linked: tuple[EntityLink, ...] = ()
    same_as: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "id": self.id,
            "name": self.name,
            "norm": self.norm,
            "type": self.type.value,
            "kind": self.kind,
            "mentions": self.mentions,
            "aliases": list(self.aliases),
            "linked": [link.to_dict() for link in self.linked],
            "same_as": self.same_as,
            "agent_id": self.agent_id,
            "visibility": self.visibility.value,
            "group": self.group,
            "channel": self.channel,
        }


@dataclass(frozen=True, slots=True)
class Association:
    """A memory that graph propagation reached from a hit.

    ``path`` runs from the hit to the memory through entity names, e.g.
    ``("mem_a", "Bob", "mem_b")``; ``weight`` is the propagated score.
    """

    memory_id: str
    weight: float
    path: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "memory_id": self.memory_id,
            "weight": round(self.weight, 6),
            "path": list(self.path),
        }


@dataclass(frozen=True, slots=True)
class Link:
    """Why the graph brought a hit into a recall or lifted it: the memory it
    was reached from and the entities between them.

    ``path`` runs from that memory to the hit, e.g. ``("mem_a", "Bob",
    "mem_b")`` (never through a date or a name most of the palace mentions);
    ``entities`` are the names on it; ``snippet`` is the start of that
    memory's content on one line (None when it was not read); ``weight`` is the
    propagated score.
    """

    memory_id: str
    weight: float
    path: tuple[str, ...]
    snippet: str | None = None

    @property
    def entities(self) -> tuple[str, ...]:
        """The entity names the path goes through, in order."""
        return self.path[1:-1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "memory_id": self.memory_id,
            "weight": round(self.weight, 6),
            "path": list(self.path),
            "entities": list(self.entities),
            "snippet": self.snippet,
        }


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A validated memory about to be written (no id or timestamps yet)."""

    content: str
    content_hash: str
    agent_id: str
    title: str | None = None
    context: str | None = None
    session: str | None = None
    embed_hash: str | None = None
    type: MemoryType = MemoryType.UNKNOWN
    store: StoreKind = StoreKind.SEMANTIC
    category: Category = Category.FACT
    tags: tuple[str, ...] = ()
    source: Source = Source.MANUAL
    visibility: Visibility = Visibility.ISOLATED
    group: str | None = None
    channel: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    created_at: datetime | None = None  # None: the time of writing
    strength: float = 0.5
    confidence: float = 1.0
    constraint: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    mentions: tuple[Mention, ...] = ()  # entities to link, found before the write
    relations: tuple[RelationMention, ...] = ()  # typed relations between those entities
    kind: MemoryKind = MemoryKind.MEMORY
    project: str | None = None
    completed: bool | None = None  # issues only: None for every other kind
    #: current memories of its own scope part it replaces, found before the
    #: write (store/supersede.py, rule 2); the store checks them again
    restates: tuple[str, ...] = ()
    #: the times its content states, read by the write (``Memory.stated_times``)
    stated_times: str | None = None

    def stored(self, memory_id: str, now: datetime) -> Memory:
        """The memory this becomes when first written as ``memory_id`` at ``now``."""
        return Memory(
            id=memory_id,
            content=self.content,
            content_hash=self.content_hash,
            agent_id=self.agent_id,
            title=self.title,
            context=self.context,
            session=self.session,
            type=self.type,
            store=self.store,
            category=self.category,
            tags=self.tags,
            source=self.source,
            visibility=self.visibility,
            group=self.group,
            channel=self.channel,
            created_at=self.created_at or now,
            updated_at=now,
            last_accessed_at=None,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
            superseded_by=None,
            strength=self.strength,
            confidence=self.confidence,
            access_count=0,
            archived=False,
            constraint=self.constraint,
            metadata=dict(self.metadata),
            kind=self.kind,
            project=self.project,
            completed=self.completed,
            stated_times=self.stated_times,
        )


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory.

    ``context`` is text that helps find the memory (for a conversation turn,
    the turn before it and the session date) without being part of it: it is
    indexed for keyword search, never shown as the memory's content.
    ``session`` groups memories that belong together in time (the turns of
    one conversation session): recall lets neighbours in a session lend each
    other relevance. ``kind`` is the personal-data kind (journal, node,
    issue, spec, message, or an ordinary memory), ``project`` the project it
    belongs to and ``completed`` an issue's state (None for other kinds).
    ``stated_times`` is not part of its value: the times its content states,
    as the write read them, kept for recall's time prior
    (``retrieval/time/stored.py``; None: not kept, recall reads the text).
    """

    id: str
    content: str
    content_hash: str
    agent_id: str
    title: str | None
    context: str | None
    session: str | None
    type: MemoryType
    store: StoreKind
    category: Category
    tags: tuple[str, ...]
    source: Source
    visibility: Visibility
    group: str | None
    channel: str | None
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    superseded_by: str | None
    strength: float
    confidence: float
    access_count: int
    archived: bool
    constraint: bool
    metadata: Mapping[str, Any]
    kind: MemoryKind = MemoryKind.MEMORY
    project: str | None = None
    completed: bool | None = None
    stated_times: str | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (enums as strings, times as ISO 8601)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name == "stated_times":  # derived from the content, not shown
                continue
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class Erasable:
    """What an erasure reads of each memory it reaches: whose it is (its
    agent and channel: who may change it) and the text its vectors are
    keyed by. An agent's erasure at a million memories reads 100,000 of
    them; a whole ``Memory`` each cost a twentieth of the time allowed."""

    id: str
    agent_id: str
    channel: str | None
    title: str | None
    content: str

    @classmethod
    def of(cls, memory: Memory) -> Erasable:
        return cls(memory.id, memory.agent_id, memory.channel, memory.title, memory.content)


@dataclass(frozen=True, slots=True)
class RecallFilters:
    """Narrowing of a recall or list; empty tuples mean "any"."""

    types: tuple[MemoryType, ...] = ()
    stores: tuple[StoreKind, ...] = ()
    categories: tuple[Category, ...] = ()
    visibilities: tuple[Visibility, ...] = ()
    tags: tuple[str, ...] = ()  # match any
    sources: tuple[Source, ...] = ()
    sessions: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # owned by one of these agents
    kinds: tuple[MemoryKind, ...] = ()
    projects: tuple[str, ...] = ()
    completed: bool | None = None  # issues in this state (None: any memory)
    include_archived: bool = False
    include_superseded: bool = False
    created_after: datetime | None = None
    created_before: datetime | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled memory with its relevance.

    ``score`` is relevance to the query in 0-1, higher is better. The
    memory's own ``confidence`` (0-1, as written) is what a hit shows and
    marks ``high_confidence``; ``confidence`` here is that confidence
    weighed by the memory's strength, use and age, a ranking feature.
    ``ranks`` names the rank (1-based) the memory had in each pipeline stage
    that saw it, ``stage_scores`` its score there, and ``gates`` the relevance
    gates it passed (and why), for ``explain``. ``associative_context`` lists
    the memories the graph reached from this one; ``reached_via`` says why
    the graph brought this hit in or lifted it (empty when it did not).
    """

    memory: Memory
    score: float
    confidence: float = 1.0
    ranks: Mapping[str, int] = field(default_factory=dict)
    stage_scores: Mapping[str, float] = field(default_factory=dict)
    gates: tuple[str, ...] = ()
    associative_context: tuple[Association, ...] = ()
    reached_via: tuple[Link, ...] = ()

    @property
    def high_confidence(self) -> bool:
        """The ``[HIGH CONFIDENCE]`` mark: the memory's confidence is at least
        0.8 (whatever its relevance to this query)."""
        return self.memory.confidence >= HIGH_CONFIDENCE

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        """JSON-ready form: the memory's fields (its ``confidence`` as
        ``get`` shows it) plus ``score`` (relevance) and ``high_confidence``;
        with ``explain``, how ``score`` was reached (``score`` there is the
        same number, ``scores.final`` the ranking value it was scaled from)."""
        out = self.memory.to_dict()
        out["score"] = round(self.score, 6)
        out["high_confidence"] = self.high_confidence
        out["associative_context"] = [a.to_dict() for a in self.associative_context]
        out["reached_via"] = [link.to_dict() for link in self.reached_via]
        if explain:
            out["explain"] = {
                "score": round(self.score, 6),
                "ranks": dict(self.ranks),
                "scores": {k: round(v, 6) for k, v in self.stage_scores.items()},
                "gates": list(self.gates),
            }
        return out


@dataclass(frozen=True, slots=True)
class MessageMatch:
    """A conversation turn that contains a searched phrase, with the turns
    around it in its session (oldest first)."""

    memory: Memory
    before: tuple[Memory, ...] = ()
    after: tuple[Memory, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the turn, plus ``before`` and ``after`` lists."""
        out = self.memory.to_dict()
        out["before"] = [m.to_dict() for m in self.before]
        out["after"] = [m.to_dict() for m in self.after]
        return out


class HitList(list[Hit]):
    """The hits of one recall, best first, and how they were found.

    A plain list of ``Hit`` with two more attributes:

    Attributes:
        mode: ``"hybrid"`` (keywords and embeddings) or ``"text"`` (keywords
            only, when no embedder is available).
        notice: a sentence to show the user about how the search ran, e.g.
            "Using text search (semantic search is not available)."
        timings: milliseconds per pipeline stage, for benchmarks and explain.
    """

    __slots__ = ("mode", "notice", "timings")

    def __init__(
        self, hits: Iterable[Hit] = (), *, mode: str = "hybrid", notice: str | None = None
    ) -> None:
        super().__init__(hits)
        self.mode = mode
        self.notice = notice
        # Milliseconds each pipeline stage took (sparse, dense, fusion, graph, ...).
        self.timings: dict[str, float] = {}


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts over what a scope can see."""

    memories: int
    archived: int
    superseded: int
    by_type: Mapping[str, int]
    by_store: Mapping[str, int]
    by_category: Mapping[str, int]
    by_agent: Mapping[str, int]
    schema_version: int
    path: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "memories": self.memories,
            "archived": self.archived,
            "superseded": self.superseded,
            "by_type": dict(self.by_type),
            "by_store": dict(self.by_store),
            "by_category": dict(self.by_category),
            "by_agent": dict(self.by_agent),
            "schema_version": self.schema_version,
            "path": self.path,
        }


def normalise_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Lower-cased, stripped, de-duplicated tags in first-seen order.

    A string is split on commas, so ``"a, b"`` and ``["a", "b"]`` agree.
    """
    if tags is None:
        return ()
    if not isinstance(tags, str | Iterable):
        raise ValidationError(
            "tags", tags, reason="tags must be a list of strings or a comma-separated string"
        )
    items = tags.split(",") if isinstance(tags, str) else list(tags)
    seen: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            raise ValidationError("tags", item, reason=f"tags must be strings, got {shown(item)}")
        tag = item.strip().lower()
        if tag:
            seen.setdefault(tag, None)
    return tuple(seen)
