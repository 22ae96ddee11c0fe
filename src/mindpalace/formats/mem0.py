"""mem0's ``get_all`` output (``mem0``), saved as JSON.

``{"results": [{"id", "memory", "hash", "metadata", "created_at",
"updated_at", "user_id"?, "agent_id"?, "run_id"?, "actor_id"?, "role"?,
"categories"?}], "relations"?: [...]}``, or a bare list of such items
(mem0's older output). Each item becomes one memory: its ``memory`` text,
its ``categories`` as tags, its ``created_at``; its own metadata is kept,
and mem0's ids (``user_id``, ``agent_id``, ``run_id``, ...) and update time
go under the ``mem0`` key of the metadata. Everything is imported for the
importing agent, unless the import maps one of mem0's ids to agents
(``agent_from``: ``user_id`` or ``agent_id``; ``owners`` checks each is an
agent id). ``relations`` (mem0's graph) are not imported, and are counted
as ignored: the palace links the memories' entities itself. Results are
numbered from 1 in error messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.formats.base import Note, mapping
from mindpalace.validation import check_agent_id, parse_datetime

__all__ = ["AGENT_FROM", "looks_like_mem0", "owners", "read_mem0"]

_IDS = ("id", "hash", "user_id", "agent_id", "run_id", "actor_id", "role", "updated_at")
#: mem0's ids that may name the agent each memory is imported for.
AGENT_FROM = ("user_id", "agent_id")


def _items(data: object) -> object:
    return data.get("results") if isinstance(data, Mapping) else data


def looks_like_mem0(data: object) -> bool:
    """Whether a whole JSON document is mem0 ``get_all`` output."""
    items = _items(data)
    if not isinstance(items, list):
        return False
    if not items:  # an empty result: {"results": []}
        return isinstance(data, Mapping) and "results" in data
    return isinstance(items[0], Mapping) and "memory" in items[0]


def read_mem0(data: Any, *, file: str) -> tuple[list[Note], int]:
    """The memories of parsed mem0 output, and how many relations were left out."""
    items = _items(data)
    if not isinstance(items, list):
        raise ValidationError(
            "file", file, reason=f"{file}: mem0 output is {{'results': [...]}} or a list"
        )
    notes = [_note(item, f"{file} result {i}") for i, item in enumerate(items, start=1)]
    relations = data.get("relations") if isinstance(data, Mapping) else None
    return notes, len(relations) if isinstance(relations, list) else 0


def _note(raw: object, where: str) -> Note:
    item = mapping(raw, where, "a memory")
    text = item.get("memory")
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("memory", text, reason=f"{where}: 'memory' must be text")
    stamp = item.get("created_at")
    try:
        when = parse_datetime(stamp, "created_at")
    except ValidationError as exc:
        raise ValidationError("created_at", stamp, reason=f"{where}: {exc}") from None
    own = item.get("metadata")
    if own is not None and not isinstance(own, Mapping):
        raise ValidationError("metadata", own, reason=f"{where}: 'metadata' must be an object")
    metadata: dict[str, Any] = dict(own or {})
    metadata["mem0"] = {key: item[key] for key in _IDS if item.get(key) is not None}
    categories = item.get("categories")
    if categories is not None and not (
        isinstance(categories, list) and all(isinstance(c, str) for c in categories)
    ):
        raise ValidationError(
            "categories", categories, reason=f"{where}: 'categories' must be a list of names"
        )
    return Note(
        content=text,
        tags=tuple(categories or ()),
        created_at=when,
        metadata=metadata,
        origin=where,
    )


def owners(notes: Sequence[Note], field: str) -> list[str | None]:
    """The agent each memory of mem0 output is imported for: its mem0
    ``field`` (one of ``AGENT_FROM``), None where it has none (the
    importing agent's).

    Raises:
        ValidationError: ``field`` not in ``AGENT_FROM``, or a value that is
            not an agent id (naming the result and the rule).
    """
    if field not in AGENT_FROM:
        raise ValidationError("agent_from", field, valid=AGENT_FROM)
    found: list[str | None] = []
    for index, note in enumerate(notes, start=1):
        ids = note.metadata.get("mem0")
        value = ids.get(field) if isinstance(ids, Mapping) else None
        if value is None:
            found.append(None)
            continue
        try:
            found.append(check_agent_id(value, field))
        except ValidationError as exc:
            where = note.origin or f"result {index}"
            raise ValidationError(
                "agent_from", value, reason=f"{where}: {field} is not an agent id: {exc}"
            ) from None
    return found
