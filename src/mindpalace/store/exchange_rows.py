"""The records an export carries besides memories (store/exchange_sql.py
writes and reads them): skills, links between memories, the entity graph,
signals, the learned scorer, the erasure log and the embedding configuration;
and what an import of them did (``ImportReport``).

Each record is one JSON object ``{"record": NAME, ...fields}``; rows refer to
memories by id and to entities by id, never by a palace's own row numbers,
and timestamps are epoch seconds as stored (exact, no rounding).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.models import MemoryType, Visibility

__all__ = [
    "LINK_KINDS",
    "RECORD_NAMES",
    "EdgeRecord",
    "EmbeddingRecord",
    "EntityLinkRecord",
    "EntityRecord",
    "ErasureRecord",
    "ImportReport",
    "LinkRecord",
    "MentionRecord",
    "PalaceRecords",
    "RelationRecord",
    "ScorerRecord",
    "SignalRecord",
    "SkillRecord",
    "parse_records",
]

# supersedes: src replaced dst; merged: dst merged into src; correlates and
# coactivated: skill correlations (from the files / learned from usage).
LINK_KINDS = ("coactivated", "correlates", "merged", "supersedes")


@dataclass(frozen=True, slots=True)
class SkillRecord:
    """The ``skills`` row of a skill memory (its owner is the memory's scope)."""

    memory_id: str
    name: str
    digest: str
    origin: str | None


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """A directed link between two memories."""

    src: str
    dst: str
    kind: str
    weight: float
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """An entity of one scope, with the other names it answers to."""

    id: str
    agent_id: str
    visibility: str
    group_name: str
    channel: str
    name: str
    norm: str
    type: str
    kind: str
    mentions: int
    created_at: float
    updated_at: float
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EntityLinkRecord:
    """A short name's entity the same as a full one's (``link``:
    first_name, joined), or kept apart from it for good (``apart``)."""

    entity: str
    other: str
    link: str


@dataclass(frozen=True, slots=True)
class MentionRecord:
    """A memory mentioning an entity."""

    memory_id: str
    entity_id: str
    surface: str
    count: int


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    """Co-occurrence between two entities (``src`` < ``dst`` as stored)."""

    src: str
    dst: str
    count: int
    weight: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class RelationRecord:
    """A typed relation between two entities, stated by a memory."""

    memory_id: str
    src: str
    dst: str
    kind: str
    sentence: str


@dataclass(frozen=True, slots=True)
class SignalRecord:
    """One event of the signals table (its place in the file is its order)."""

    at: float
    kind: str
    agent_id: str
    channel: str
    memory_id: str | None
    query: str | None
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ScorerRecord:
    """The learned scorer's weights of one agent and channel."""

    agent_id: str
    channel: str
    trained_at: float
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    """A receipt of the erasure log (receipts.py): counts and digests, never
    the erased text."""

    id: str
    at: float
    agent_id: str
    channel: str
    selection: Mapping[str, Any]
    counts: Mapping[str, Any]
    digest: str


@dataclass(frozen=True, slots=True)
class EmbeddingRecord:
    """The model the palace's vectors come from."""

    provider: str
    model: str
    dimensions: int


@dataclass(frozen=True, slots=True)
class ImportReport:
    """Outcome of an import: rows written and rows already present."""

    inserted: int
    skipped: int


@dataclass(frozen=True, slots=True)
class PalaceRecords:
    """Everything of a palace besides its memories, in export order."""

    skills: tuple[SkillRecord, ...] = ()
    links: tuple[LinkRecord, ...] = ()
    entities: tuple[EntityRecord, ...] = ()
    mentions: tuple[MentionRecord, ...] = ()
    edges: tuple[EdgeRecord, ...] = ()
    entity_links: tuple[EntityLinkRecord, ...] = ()
    relations: tuple[RelationRecord, ...] = ()
    signals: tuple[SignalRecord, ...] = ()
    scorers: tuple[ScorerRecord, ...] = ()
    erasures: tuple[ErasureRecord, ...] = ()
    embedding: tuple[EmbeddingRecord, ...] = field(default=())

    def lines(self) -> Iterable[dict[str, Any]]:
        """Each record as a JSON-ready object, ``record`` naming its type."""
        for name, group in _GROUPS:
            for row in getattr(self, group):
                out = asdict(row)
                if "aliases" in out:
                    out["aliases"] = list(out["aliases"])
                for key in _OBJECTS & set(out):
                    out[key] = dict(out[key])
                yield {"record": name, **out}


# Record name -> the PalaceRecords field holding it, in the order written.
_GROUPS = (
    ("embedding", "embedding"),
    ("skill", "skills"),
    ("link", "links"),
    ("entity", "entities"),
    ("mention", "mentions"),
    ("entity_edge", "edges"),
    ("entity_link", "entity_links"),
    ("relation", "relations"),
    ("signal", "signals"),
    ("scorer", "scorers"),
    ("erasure", "erasures"),
)
_TYPES: dict[str, type[Any]] = {
    "embedding": EmbeddingRecord,
    "skill": SkillRecord,
    "link": LinkRecord,
    "entity": EntityRecord,
    "mention": MentionRecord,
    "entity_edge": EdgeRecord,
    "entity_link": EntityLinkRecord,
    "relation": RelationRecord,
    "signal": SignalRecord,
    "scorer": ScorerRecord,
    "erasure": ErasureRecord,
}
RECORD_NAMES = tuple(sorted(_TYPES))
ENTITY_LINKS = ("first_name", "joined", "apart")
_OPTIONAL = frozenset({"origin", "memory_id:signal", "query"})
_FLOATS = frozenset({"weight", "created_at", "updated_at", "at", "trained_at"})
_INTS = frozenset({"mentions", "count", "dimensions"})
_OBJECTS = frozenset({"data", "selection", "counts"})
_ENUMS: dict[str, tuple[str, ...]] = {
    "visibility": tuple(v.value for v in Visibility),
    "type": tuple(t.value for t in MemoryType),
}


def _value(name: str, key: str, value: Any) -> Any:
    """``value`` of field ``key`` of a ``name`` record, checked."""
    if value is None and (key in _OPTIONAL or f"{key}:{name}" in _OPTIONAL):
        return None
    if key in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(key, value, reason=f"{key} must be a number")
        return float(value)
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError(key, value, reason=f"{key} must be an integer >= 0")
        return value
    if key in _OBJECTS:
        if not isinstance(value, dict):
            raise ValidationError(key, value, reason=f"{key} must be an object")
        return value
    if key == "aliases":
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            raise ValidationError(key, value, reason="aliases must be a list of strings")
        return tuple(value)
    if not isinstance(value, str) or "\x00" in value:
        raise ValidationError(key, value, reason=f"{key} must be a string")
    if name == "link" and key == "kind" and value not in LINK_KINDS:
        raise ValidationError(key, value, valid=list(LINK_KINDS))
    if name == "entity_link" and key == "link" and value not in ENTITY_LINKS:
        raise ValidationError(key, value, valid=list(ENTITY_LINKS))
    if name == "entity" and key in _ENUMS and value not in _ENUMS[key]:
        raise ValidationError(key, value, valid=list(_ENUMS[key]))
    return value


def _record(number: int, data: Mapping[str, Any]) -> tuple[str, Any]:
    name = data.get("record")
    if name not in _TYPES:
        raise ValidationError(
            "record", name, reason=f"line {number}: unknown record", valid=list(RECORD_NAMES)
        )
    kind = _TYPES[str(name)]
    names = [f.name for f in fields(kind)]
    extra = sorted(set(data) - {"record", *names})
    try:
        if extra:
            raise ValidationError(extra[0], data[extra[0]], reason="unknown field", valid=names)
        missing = [key for key in names if key not in data]
        if missing:
            raise ValidationError(missing[0], None, reason=f"{missing[0]} is required")
        return str(name), kind(**{key: _value(str(name), key, data[key]) for key in names})
    except ValidationError as exc:
        raise ValidationError(
            exc.field, exc.value, reason=f"line {number}: {name} record: {exc}"
        ) from None


def parse_records(lines: Iterable[tuple[int, Mapping[str, Any]]]) -> PalaceRecords:
    """``PalaceRecords`` from numbered ``{"record": ...}`` objects, validated.

    Raises:
        ValidationError: naming the line number of the first bad record.
    """
    groups: dict[str, list[Any]] = {group: [] for _, group in _GROUPS}
    by_name = dict(_GROUPS)
    for number, data in lines:
        name, row = _record(number, data)
        groups[by_name[name]].append(row)
    if len(groups["embedding"]) > 1:
        raise ValidationError("record", "embedding", reason="at most one embedding record")
    return PalaceRecords(**{group: tuple(rows) for group, rows in groups.items()})
