"""SQL fragments shared by every backend: the memory row layout, time
conversion, and the WHERE clauses of scope and filters.

Every clause is assembled from fixed column names and ``?`` placeholders;
values are always bound, never formatted into the SQL.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from mindpalace.models import (
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    RecallFilters,
    Scope,
    Source,
    StoreKind,
    Visibility,
)

__all__ = [
    "MEMORY_COLUMNS",
    "SELECT_MEMORY",
    "escape_like",
    "filter_clause",
    "from_epoch",
    "graph_time",
    "in_list",
    "memory_row",
    "row_to_memory",
    "scope_clause",
    "to_epoch",
]

MEMORY_COLUMNS = (
    "id",
    "content",
    "content_hash",
    "agent_id",
    "title",
    "context",
    "session_id",
    "type",
    "store",
    "category",
    "tags",
    "source",
    "visibility",
    "group_name",
    "channel",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "strength",
    "confidence",
    "access_count",
    "archived",
    "is_constraint",
    "metadata",
    "kind",
    "project",
    "completed",
    "stated_times",
)
SELECT_MEMORY = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)


def to_epoch(value: datetime | None) -> float | None:
    """Seconds since the epoch (UTC) as stored; naive datetimes are taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def graph_time(value: datetime) -> float:
    """``to_epoch`` to the whole second below, as the graph's rows (entities
    and their co-occurrence edges) keep their times: SQLite writes an
    integral REAL in 4 bytes of a record, a fractional one in 8 (about 48
    bytes a memory, at two entities and eight edges each)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return float(math.floor(value.timestamp()))


def from_epoch(value: float | None) -> datetime | None:
    """The stored epoch seconds as an aware UTC datetime."""
    if value is None:
        return None
    return datetime.fromtimestamp(value, tz=timezone.utc)


_BY_VALUE: dict[type[Any], dict[str, Any]] = {
    enum: {member.value: member for member in enum}
    for enum in (MemoryType, StoreKind, Category, Source, Visibility, MemoryKind)
}


def _enum(enum: type[Any], value: str) -> Any:
    found = _BY_VALUE[enum].get(value)
    return found if found is not None else enum(value)  # the enum's own error


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A ``Memory`` from a row of ``MEMORY_COLUMNS``.

    Recall reads dozens of rows a call, so the enum values are looked up in
    dicts and the usual empty tags and metadata are not parsed.
    """
    (
        id_, content, content_hash, agent_id, title, context, session_id, type_, store,
        category, tags, source, visibility, group_name, channel, created_at, updated_at,
        last_accessed_at, valid_from, valid_to, superseded_by, strength, confidence,
        access_count, archived, is_constraint, metadata, kind, project, completed,
        stated_times,
    ) = row  # fmt: skip
    created = from_epoch(created_at)
    updated = from_epoch(updated_at)
    assert created is not None and updated is not None  # NOT NULL columns
    return Memory(
        id=id_,
        content=content,
        content_hash=content_hash,
        agent_id=agent_id,
        title=title,
        context=context,
        session=session_id,
        type=_enum(MemoryType, type_),
        store=_enum(StoreKind, store),
        category=_enum(Category, category),
        tags=() if tags == "[]" else tuple(json.loads(tags)),
        source=_enum(Source, source),
        visibility=_enum(Visibility, visibility),
        group=group_name or None,
        channel=channel or None,
        created_at=created,
        updated_at=updated,
        last_accessed_at=from_epoch(last_accessed_at),
        valid_from=from_epoch(valid_from),
        valid_to=from_epoch(valid_to),
        superseded_by=superseded_by,
        strength=float(strength),
        confidence=float(confidence),
        access_count=int(access_count),
        archived=bool(archived),
        constraint=bool(is_constraint),
        metadata={} if metadata == "{}" else json.loads(metadata),
        kind=_enum(MemoryKind, kind),
        project=project or None,
        completed=None if completed is None else bool(completed),
        stated_times=stated_times,
    )


def memory_row(m: Memory) -> tuple[Any, ...]:
    """The values of ``MEMORY_COLUMNS`` for a memory."""
    values = {
        "id": m.id,
        "content": m.content,
        "content_hash": m.content_hash,
        "agent_id": m.agent_id,
        "title": m.title,
        "context": m.context,
        "session_id": m.session,
        "type": m.type.value,
        "store": m.store.value,
        "category": m.category.value,
        "tags": json.dumps(list(m.tags), ensure_ascii=False),
        "source": m.source.value,
        "visibility": m.visibility.value,
        "group_name": m.group or "",
        "channel": m.channel or "",
        "created_at": to_epoch(m.created_at),
        "updated_at": to_epoch(m.updated_at),
        "last_accessed_at": to_epoch(m.last_accessed_at),
        "valid_from": to_epoch(m.valid_from),
        "valid_to": to_epoch(m.valid_to),
        "superseded_by": m.superseded_by,
        "strength": m.strength,
        "confidence": m.confidence,
        "access_count": m.access_count,
        "archived": int(m.archived),
        "is_constraint": int(m.constraint),
        "metadata": json.dumps(dict(m.metadata), ensure_ascii=False, sort_keys=True),
        "kind": m.kind.value,
        "project": m.project or "",
        "completed": None if m.completed is None else int(m.completed),
        "stated_times": m.stated_times,
    }
    return tuple(values[c] for c in MEMORY_COLUMNS)


def escape_like(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern with ``ESCAPE '!'``."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def scope_clause(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    """WHERE fragment admitting exactly what ``scope`` may see, over a table
    with the scope columns (``memories m`` by default; ``entities e`` too)."""
    if scope.unscoped:
        return "1 = 1", []
    a = alias
    params: list[Any] = [scope.agent_id, Visibility.SHARED.value]
    sql = f"({a}.agent_id = ? OR {a}.visibility = ?"
    if scope.groups:
        marks = ", ".join("?" for _ in scope.groups)
        sql += f" OR ({a}.visibility = ? AND {a}.group_name IN ({marks}))"
        params += [Visibility.GROUP.value, *scope.groups]
    sql += ")"
    # A channel's memories are seen only through that channel (fail closed).
    if scope.peer:
        # A peer sees its channel, and of the rest only what was explicitly
        # shared; a peer scope without a channel sees nothing at all.
        if not scope.channel:
            return "1 = 0", []
        sql += f" AND ({a}.channel = ? OR ({a}.channel = '' AND ({a}.visibility = ?"
        params += [scope.channel, Visibility.SHARED.value]
        if scope.groups:
            marks = ", ".join("?" for _ in scope.groups)
            sql += f" OR ({a}.visibility = ? AND {a}.group_name IN ({marks}))"
            params += [Visibility.GROUP.value, *scope.groups]
        sql += ")))"
    elif scope.channel:
        sql += f" AND {a}.channel IN ('', ?)"
        params.append(scope.channel)
    else:
        sql += f" AND {a}.channel = ''"
    return sql, params


def in_list(column: str, values: Sequence[object]) -> str:
    """``column IN (?, ?, ...)`` with one placeholder per value."""
    return f"{column} IN ({', '.join('?' for _ in values)})"


def filter_clause(filters: RecallFilters) -> tuple[str, list[Any]]:
    """WHERE fragment (over ``memories m``) for ``filters``."""
    parts: list[str] = []
    params: list[Any] = []
    for column, members in (
        ("m.type", filters.types),
        ("m.store", filters.stores),
        ("m.category", filters.categories),
        ("m.visibility", filters.visibilities),
        ("m.source", filters.sources),
        ("m.kind", filters.kinds),
    ):
        if members:
            parts.append(in_list(column, members))
            params += [member.value for member in members]
    if filters.sessions:
        parts.append(in_list("m.session_id", filters.sessions))
        params += list(filters.sessions)
    if filters.agents:
        parts.append(in_list("m.agent_id", filters.agents))
        params += list(filters.agents)
    if filters.projects:
        parts.append(in_list("m.project", filters.projects))
        params += list(filters.projects)
    if filters.completed is not None:
        parts.append("m.completed = ?")
        params.append(int(filters.completed))
    if filters.tags:
        parts.append(
            "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_seq = m.seq AND "
            + in_list("t.tag", filters.tags)
            + ")"
        )
        params += list(filters.tags)
    if not filters.include_archived:
        parts.append("m.archived = 0")
    if not filters.include_superseded:
        parts.append("m.superseded_by IS NULL")
    if filters.created_after is not None:
        parts.append("m.created_at >= ?")
        params.append(to_epoch(filters.created_after))
    if filters.created_before is not None:
        parts.append("m.created_at < ?")
        params.append(to_epoch(filters.created_before))
    return (" AND ".join(parts) or "1 = 1"), params
