"""Input checks shared by every entry point. Each failure is a ``ValidationError``
that names the field and, for finite sets, the valid options."""

from __future__ import annotations

import enum
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar

from mindpalace.errors import ValidationError, shown
from mindpalace.models import (
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    Source,
    StoreKind,
    Visibility,
    normalise_tags,
    parse_enum,
)

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_METADATA_BYTES",
    "MAX_QUERY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TITLE_CHARS",
    "check_agent_id",
    "check_content",
    "check_context",
    "check_id",
    "check_identifier",
    "check_kind",
    "check_limit",
    "check_metadata",
    "check_names",
    "check_query",
    "check_tags",
    "check_text",
    "check_title",
    "check_unit",
    "content_hash",
    "json_lines",
    "memory_from_dict",
    "parse_datetime",
    "parse_export",
    "parse_json",
    "parse_many",
    "utf8_lines",
]

EXPORT_FORMAT = "mindpalace-export"
# Version 2: each line's "kind" is the memory's kind (version 1 wrote
# "memory" on every line as a record marker; such lines still import).
# Version 3: lines with a "record" field carry what is not a memory (skills,
# links, the entity graph, signals, scorer weights: store/exchange_rows.py).
EXPORT_VERSION = 3
MAX_TITLE_CHARS = 500
MAX_TAGS = 64
MAX_TAG_CHARS = 64
MAX_IDENTIFIER_CHARS = 128
# A query is a question or a task description, not a document: longer text
# only slows every stage down (and a megabyte "query" is an attack).
MAX_QUERY_CHARS = 10_000
# Metadata is a few fields, not a document tree; a bound keeps every JSON
# encoder and decoder (ours, the database's, a client's) far from its
# recursion limit.
MAX_METADATA_DEPTH = 32
# And a few fields are small: 16 KiB of JSON (UTF-8) a memory. Without a cap
# an importer that copies a field into every turn (or a caller) can grow a
# palace a hundredfold for nothing a search uses.
MAX_METADATA_BYTES = 16 * 1024
# A skill memory's metadata holds its definition: the text of its content
# again, as JSON (at most 6 bytes a character: "\u0001"), on top of the cap.
_SKILL_METADATA_BYTES_PER_CHAR = 6

_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_AGENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@+-]*")
# A lone surrogate is half of a UTF-16 pair (a JSON "\ud800" escape) or an
# undecodable byte smuggled in by surrogateescape (a command-line argument):
# no UTF-8 encoder, so no database, can take it.
_SURROGATE = re.compile("[\ud800-\udfff]")

E = TypeVar("E", bound=enum.Enum)


def content_hash(content: str, chars: int) -> str:
    """SHA-256 of the text with Unicode, case and whitespace differences
    folded: its first ``chars`` hex digits (the palace's key length,
    ``Store.hash_chars``)."""
    folded = _SPACE.sub(" ", unicodedata.normalize("NFKC", content).casefold()).strip()
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()[:chars]


def check_content(content: object, *, max_chars: int) -> str:
    """Content stripped of surrounding whitespace; non-empty and at most ``max_chars``."""
    if not isinstance(content, str):
        raise ValidationError("content", content, reason="content must be a string")
    text = content.strip()
    if not text:
        raise ValidationError("content", content, reason="content must not be empty")
    check_text(text, "content")
    if len(text) > max_chars:
        raise ValidationError(
            "content",
            f"<{len(text)} characters>",
            reason=f"content has {len(text)} characters; the limit is {max_chars}"
            " (set MINDPALACE_MAX_CONTENT to change it)",
        )
    return text


def check_text(text: str, field: str, *, nul: bool = False) -> str:
    """``text`` if every backend can take it as given: no lone surrogate, and
    no NUL unless ``nul`` (a query may hold one: it only splits words). Every
    string an entry point takes passes through here."""
    # PostgreSQL text cannot hold NUL, and no writer means one: refuse it on
    # every backend alike rather than store different text per backend.
    if not nul and "\x00" in text:
        raise ValidationError(
            field,
            text.replace("\x00", "\\x00")[:80],
            reason=f"{field} must not contain NUL (\\x00)",
        )
    bad = _SURROGATE.search(text)
    if bad is not None:
        code = ord(bad.group())
        raise ValidationError(
            field,
            ascii(text[:80]),
            reason=f"{field} is not valid Unicode text: it has a lone surrogate"
            f" (U+{code:04X}) at character {bad.start()}"
            + (
                f", the mark of byte 0x{code - 0xDC00:02X} that is not UTF-8"
                if 0xDC80 <= code <= 0xDCFF
                else ""
            ),
        )
    return text


def check_context(context: object, *, max_chars: int) -> str | None:
    """Optional search context: a string of at most ``max_chars`` (empty means none)."""
    if context is None:
        return None
    if not isinstance(context, str):
        raise ValidationError("context", context, reason="context must be a string")
    text = check_text(context.strip(), "context")
    if len(text) > max_chars:
        raise ValidationError(
            "context", f"<{len(text)} characters>", reason=f"context is longer than {max_chars}"
        )
    return text or None


def check_id(value: object, field: str = "id") -> str:
    """A memory id: a non-empty string (whether it exists is the store's to say)."""
    if not isinstance(value, str) or not value:
        raise ValidationError(field, value, reason=f"{field} must be a non-empty string")
    return check_text(value, field)


def check_query(query: object, field: str = "query") -> str:
    """A search text of at most ``MAX_QUERY_CHARS`` characters (may be
    blank), with any NUL as a space: in a query it only splits words, and
    PostgreSQL takes no NUL even as a parameter."""
    if not isinstance(query, str):
        raise ValidationError(field, query, reason=f"{field} must be a string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(
            field,
            f"<{len(query)} characters>",
            reason=f"{field} has {len(query)} characters; it must have 0-{MAX_QUERY_CHARS}",
        )
    return check_text(query, field, nul=True).replace("\x00", " ")


def check_title(title: object) -> str | None:
    """An optional one-line title of at most ``MAX_TITLE_CHARS``."""
    if title is None:
        return None
    if not isinstance(title, str):
        raise ValidationError("title", title, reason="title must be a string")
    text = check_text(_SPACE.sub(" ", title).strip(), "title")
    if len(text) > MAX_TITLE_CHARS:
        raise ValidationError(
            "title", title, reason=f"title is longer than {MAX_TITLE_CHARS} characters"
        )
    return text or None


def check_identifier(value: object, field: str, *, optional: bool = False) -> str | None:
    """An agent, group or channel name: 1-128 printable characters."""
    if value is None or value == "":
        if optional:
            return None
        raise ValidationError(field, value, reason=f"{field} must not be empty")
    if not isinstance(value, str):
        raise ValidationError(field, value, reason=f"{field} must be a string")
    text = value.strip()
    if not text or len(text) > MAX_IDENTIFIER_CHARS or _CONTROL.search(text):
        raise ValidationError(
            field,
            value,
            reason=f"{field} must be 1-{MAX_IDENTIFIER_CHARS} printable characters",
        )
    return check_text(text, field)


def check_names(values: object, field: str) -> tuple[str, ...]:
    """Names (projects, sessions) from one name or an iterable of them."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    elif not isinstance(values, Iterable):
        raise ValidationError(field, values, reason=f"{field} must be a list of names")
    return tuple(check_identifier(v, field) or "" for v in values)


def check_agent_id(value: object, field: str = "agent_id") -> str:
    """An agent id: 1-128 ASCII letters, digits and ``_ . : @ + -``, not
    starting with ``. : @ + -``.

    Agent ids are printed in the headers of context blocks and provenance
    lines, where another agent reads them: no space, line break, markup or
    look-alike letter may pass (an id stored before this rule is printed
    inert, ``safety.inert_id``).
    """
    text = check_identifier(value, field)
    assert text is not None
    if not _AGENT_ID.fullmatch(text):
        raise ValidationError(
            field,
            value,
            reason=f"{field} must be 1-{MAX_IDENTIFIER_CHARS} ASCII letters, digits, '_', '.',"
            " ':', '@', '+' or '-', starting with a letter, digit or '_'",
        )
    return text


def check_kind(
    kind: object, *, category: Category, project: object = None, completed: object = None
) -> tuple[MemoryKind, str | None, bool | None]:
    """A memory's kind, project and completed flag, checked together.

    No kind means ``message`` for a conversation turn (category
    conversation) and ``memory`` otherwise. ``completed`` belongs to issues
    alone (an issue is open unless it says otherwise); ``project`` is a name
    of 1-128 printable characters, on any kind.
    """
    chosen = (
        (MemoryKind.MESSAGE if category is Category.CONVERSATION else MemoryKind.MEMORY)
        if kind is None
        else parse_enum(MemoryKind, kind, "kind")
    )
    name = check_identifier(project, "project", optional=True)
    if chosen is not MemoryKind.ISSUE:
        if completed is not None:
            raise ValidationError(
                "completed",
                completed,
                reason=f"completed belongs to kind 'issue', not {chosen.value!r}",
            )
        return chosen, name, None
    if completed is None:
        return chosen, name, False
    if not isinstance(completed, bool):
        raise ValidationError("completed", completed, valid=["true", "false"])
    return chosen, name, completed


def check_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Normalised tags: at most ``MAX_TAGS``, each at most ``MAX_TAG_CHARS``."""
    result = normalise_tags(tags)
    if len(result) > MAX_TAGS:
        raise ValidationError(
            "tags", len(result), reason=f"{len(result)} tags given; a memory has 0-{MAX_TAGS} tags"
        )
    for tag in result:
        if len(tag) > MAX_TAG_CHARS or _CONTROL.search(tag):
            raise ValidationError(
                "tags", tag, reason=f"tags must be 1-{MAX_TAG_CHARS} printable characters"
            )
        check_text(tag, "tags")
    return result


def check_limit(limit: object, *, low: int, high: int, field: str = "limit") -> int:
    """An integer in ``[low, high]``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not low <= limit <= high:
        raise ValidationError(
            field,
            limit,
            reason=f"{field} must be an integer from {low} to {high}, got {shown(limit)}",
        )
    return limit


def check_unit(value: object, field: str) -> float:
    """A number in 0-1."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, value, reason=f"{field} must be a number from 0 to 1")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(field, value, reason=f"{field} must be a number from 0 to 1")
    return number


def check_metadata(metadata: object, *, max_bytes: int = MAX_METADATA_BYTES) -> dict[str, Any]:
    """A JSON-serialisable mapping with string keys, of at most ``max_bytes``
    bytes as JSON (UTF-8)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise ValidationError(
            "metadata", metadata, reason="metadata must be a mapping with string keys"
        )
    _check_depth(metadata, "metadata", MAX_METADATA_DEPTH)
    try:
        encoded = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            "metadata", metadata, reason=f"metadata must be JSON-serialisable: {exc}"
        ) from None
    check_text(encoded, "metadata")
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        limit = f"{max_bytes} bytes"
        if max_bytes % 1024 == 0:
            limit = f"{max_bytes // 1024} KiB ({limit})"
        raise ValidationError(
            "metadata",
            f"<{size} bytes of JSON>",
            reason=f"metadata is {size} bytes of JSON; a memory's metadata is at most {limit}",
        )
    return dict(metadata)


def _check_depth(value: object, field: str, limit: int) -> None:
    """Refuse containers nested more than ``limit`` deep (without recursing:
    the point is to be safe on values too deep for recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            raise ValidationError(
                field, f"<nested {depth}+ deep>", reason=f"{field} is nested more than {limit} deep"
            )
        stack.extend((child, depth + 1) for child in children)


_ISO_FORMS = "an ISO 8601 date or time (2026-03-02, 2026-03-02T09:30, 2026-03-02T09:30+01:00)"


def parse_datetime(value: object, field: str) -> datetime | None:
    """A timezone-aware UTC datetime from a datetime or an ISO 8601 string.

    Naive values are taken as UTC; a bare date means its midnight UTC.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                field, value, reason=f"{field} must be {_ISO_FORMS}, got {shown(value)}"
            ) from None
    else:
        raise ValidationError(field, value, reason=f"{field} must be {_ISO_FORMS}")
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def parse_many(cls: type[E], values: object, field: str) -> tuple[E, ...]:
    """Enum members from one value, a comma-separated string, or an iterable."""
    if values is None:
        return ()
    items: Iterable[object]
    if isinstance(values, str):
        items = [v for v in values.split(",") if v.strip()]
    elif isinstance(values, enum.Enum):
        items = [values]
    elif isinstance(values, Iterable):
        items = values
    else:
        raise ValidationError(field, values, valid=[str(m.value) for m in cls])
    return tuple(dict.fromkeys(parse_enum(cls, v, field) for v in items))


def parse_json(text: str | bytes, where: str, field: str = "line") -> Any:
    """``text`` parsed as JSON.

    Raises:
        ValidationError: naming ``where`` when it is not JSON, not UTF-8,
            nested too deep for the parser, or holds an integer too long to
            read (over 4,300 digits).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"{where} is not JSON: {exc.msg} (character {exc.pos})"
    except RecursionError:
        reason = f"{where} is not JSON we read: it is nested too deeply"
    except ValueError as exc:  # not UTF-8, or an integer of over 4,300 digits
        reason = f"{where} is not JSON we read: {str(exc).split(';')[0]}"
    raise ValidationError(field, where, reason=reason)


def utf8_lines(stream: Iterable[bytes], where: str) -> Iterator[str]:
    """The lines of a binary stream, decoded from UTF-8 one by one (a
    leading byte-order mark is dropped).

    Raises:
        ValidationError: naming the line (and byte) of ``where`` that is not UTF-8.
    """
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                "line",
                number,
                reason=f"{where} line {number} is not UTF-8 text: byte"
                f" 0x{raw[exc.start]:02X} at column {exc.start + 1} ({exc.reason})",
            ) from None
        yield line.removeprefix("\ufeff") if number == 1 else line


def json_lines(lines: Iterable[str], *, source: str | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank JSON line.

    Raises:
        ValidationError: naming the first line that is not JSON (and
            ``source``, the file, when given).
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        yield number, parse_json(line, f"{source} line {number}" if source else f"line {number}")


def _required(data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise ValidationError(key, None, reason=f"record has no {key!r} field")
    return data[key]


_HASH = re.compile(r"[0-9a-f]{32,64}")
#: the length of a content hash computed for a record without one (the
#: importer cuts it to its palace's, ``Store.hash_chars``)
_FULL_HASH = 64


def _stored_hash(value: object, identity: str) -> str:
    """The exported content hash, kept: a skill's or a message's hash folds
    in its name or place (``skills.facade``, ``writing``), which the record
    does not repeat; computed from the text when absent or malformed. It
    only decides de-duplication within the importer's own scope."""
    if isinstance(value, str) and _HASH.fullmatch(value):
        return value
    return content_hash(identity, _FULL_HASH)


def memory_from_dict(data: Mapping[str, Any], *, max_chars: int) -> Memory:
    """A complete memory from its ``Memory.to_dict`` form (import), validated."""
    created = parse_datetime(_required(data, "created_at"), "created_at")
    updated = parse_datetime(data.get("updated_at") or created, "updated_at")
    assert created is not None and updated is not None
    content = check_content(_required(data, "content"), max_chars=max_chars)
    memory_type = parse_enum(MemoryType, data.get("type", "unknown"), "type")
    allowance = (
        _SKILL_METADATA_BYTES_PER_CHAR * len(content) if memory_type is MemoryType.SKILL else 0
    )
    metadata = check_metadata(data.get("metadata"), max_bytes=MAX_METADATA_BYTES + allowance)
    # A conversation turn is identified by its place as well as its text.
    turn = metadata.get("turn")
    identity = f"{turn}\x1f{content}" if isinstance(turn, str) and turn else content
    visibility = parse_enum(Visibility, data.get("visibility", "isolated"), "visibility")
    group = check_identifier(data.get("group"), "group", optional=True)
    if (visibility is Visibility.GROUP) != (group is not None):
        raise ValidationError(
            "group", group, reason="group is required exactly when visibility is group"
        )
    memory_id = _required(data, "id")
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationError("id", memory_id, reason="id must be a non-empty string")
    access_count = data.get("access_count", 0)
    if isinstance(access_count, bool) or not isinstance(access_count, int) or access_count < 0:
        raise ValidationError("access_count", access_count, reason="access_count must be >= 0")
    agent = check_agent_id(_required(data, "agent_id"))
    category = parse_enum(Category, data.get("category", "fact"), "category")
    kind, project, completed = check_kind(
        data.get("kind"),
        category=category,
        project=data.get("project"),
        completed=data.get("completed"),
    )
    return Memory(
        id=memory_id,
        content=content,
        content_hash=_stored_hash(data.get("content_hash"), identity),
        agent_id=agent,
        title=check_title(data.get("title")),
        context=check_context(data.get("context"), max_chars=max_chars),
        session=check_identifier(data.get("session"), "session", optional=True),
        type=memory_type,
        store=parse_enum(StoreKind, data.get("store", "semantic"), "store"),
        category=category,
        tags=check_tags(data.get("tags")),
        source=parse_enum(Source, data.get("source", "import"), "source"),
        visibility=visibility,
        group=group,
        channel=check_identifier(data.get("channel"), "channel", optional=True),
        created_at=created,
        updated_at=updated,
        last_accessed_at=parse_datetime(data.get("last_accessed_at"), "last_accessed_at"),
        valid_from=parse_datetime(data.get("valid_from"), "valid_from"),
        valid_to=parse_datetime(data.get("valid_to"), "valid_to"),
        superseded_by=data.get("superseded_by") or None,
        strength=check_unit(data.get("strength", 0.5), "strength"),
        confidence=check_unit(data.get("confidence", 1.0), "confidence"),
        access_count=access_count,
        archived=bool(data.get("archived", False)),
        constraint=bool(data.get("constraint", False)),
        metadata=metadata,
        kind=kind,
        project=project,
        completed=completed,
    )


def parse_export(
    lines: Iterable[str],
    *,
    max_chars: int,
    records: list[tuple[int, dict[str, Any]]] | None = None,
) -> Iterator[Memory]:
    """The memories of ``Palace.export_jsonl`` output (any version), validated;
    lines that are other records (``"record"``) go to ``records``, numbered.

    Raises:
        ValidationError: naming the line number of the first bad record.
    """
    version = EXPORT_VERSION
    for number, record in json_lines(lines):
        if not isinstance(record, dict):
            raise ValidationError("line", number, reason=f"line {number} is not an object")
        if "format" in record:
            if record["format"] != EXPORT_FORMAT:
                raise ValidationError("format", record["format"], valid=[EXPORT_FORMAT])
            version = record.get("version", 1)
            continue
        if "record" in record and version >= 3 and records is not None:
            records.append((number, record))
            continue
        if version == 1:  # "kind" marked the record, not the memory's kind
            kind = record.pop("kind", "memory")
            if kind != "memory":
                raise ValidationError("kind", kind, valid=["memory"])
        elif "kind" in record:  # a line of another sort is refused before its fields
            try:
                parse_enum(MemoryKind, record["kind"], "kind")
            except ValidationError as exc:
                raise ValidationError(
                    "kind", record["kind"], reason=f"line {number}: {exc}"
                ) from None
        try:
            yield memory_from_dict(record, max_chars=max_chars)
        except ValidationError as exc:
            raise ValidationError(exc.field, exc.value, reason=f"line {number}: {exc}") from None
