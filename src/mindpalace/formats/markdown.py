"""A folder of Markdown notes (``markdown``), or one note.

Every ``.md`` / ``.markdown`` file under the folder (hidden folders such as
``.obsidian`` or ``.git`` aside), in path order, is one memory; with
``sections``, each part under a heading is one (its title: the note's
title, then the headings above it, joined by " / "; a heading with no
text under it adds none). Front matter (``front_matter``) gives the
title (``title``), the tags (``tags`` or ``tag``: a list, or names
separated by commas or spaces, a leading ``#`` dropped), the category
(``category``) and the date (``date``, ``created`` or ``created_at``, ISO
8601); the note's other front matter keys are kept in its metadata under
``front_matter``, beside its ``path``. Without a ``title``, a note's first
level-one heading is its title (and leaves its text), else its file name.
Notes with no text are counted as ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.formats.base import Note
from mindpalace.formats.front_matter import split_front_matter
from mindpalace.validation import parse_datetime, utf8_lines

__all__ = ["SUFFIXES", "note_files", "read_markdown"]

SUFFIXES = (".md", ".markdown")
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_TAKEN = frozenset({"title", "tags", "tag", "category", "date", "created", "created_at"})


def note_files(root: Path) -> list[Path]:
    """The Markdown files at ``root`` (a file, or a folder searched
    recursively, hidden folders aside), in path order."""
    if root.is_file():
        return [root]
    found = [
        path
        for path in root.rglob("*")
        if path.suffix.lower() in SUFFIXES
        and path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
    ]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def read_markdown(root: Path, *, sections: bool = False) -> tuple[list[Note], int]:
    """The notes under ``root`` (one per file, or per section), and how many
    files held no text.

    Raises:
        ValidationError: no Markdown file there, a file that is not UTF-8
            text, or front matter with a date that is not ISO 8601.
    """
    files = note_files(root)
    if not files:
        raise ValidationError(
            "path", str(root), reason=f"no Markdown notes (.md, .markdown) under {root}"
        )
    base = root if root.is_dir() else root.parent
    notes: list[Note] = []
    empty = 0
    for path in files:
        name = path.relative_to(base).as_posix()
        with path.open("rb") as raw:
            text = "".join(utf8_lines(raw, name)).replace("\r\n", "\n")
        found = list(_notes(text, name, path.stem, sections=sections))
        notes += found
        empty += not found
    return notes, empty


@dataclass(frozen=True, slots=True)
class _Section:
    headings: tuple[str, ...]
    text: str


def _notes(text: str, name: str, stem: str, *, sections: bool) -> Iterator[Note]:
    front, body = split_front_matter(text)
    title = _one(front.get("title"))
    if title is None:
        title, body = _first_heading(body, stem)
    where = f"{name} front matter"
    stamp = next((front[k] for k in ("created_at", "created", "date") if front.get(k)), None)
    try:
        when = parse_datetime(_one(stamp), "date")
    except ValidationError as exc:
        raise ValidationError("date", stamp, reason=f"{where}: {exc}") from None
    metadata: dict[str, Any] = {"path": name}
    extra = {k: v for k, v in front.items() if k not in _TAKEN}
    if extra:
        metadata["front_matter"] = extra
    tags = _tags(front.get("tags") or front.get("tag"))
    category = _one(front.get("category"))
    parts = _sections(body) if sections else [_Section((), body.strip())]
    for part in parts:
        if not part.text:
            continue
        section = " / ".join(part.headings)
        yield Note(
            content=part.text,
            title=" / ".join((title, *part.headings)),
            tags=tags,
            category=category,
            created_at=when,
            metadata={**metadata, "section": section} if section else metadata,
            origin=f"{name}#{section}" if section else name,
        )


def _one(value: str | list[str] | None) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return (value.strip() or None) if isinstance(value, str) else None


def _tags(value: str | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = value if isinstance(value, list) else re.split(r"[,\s]+", value)
    return tuple(n.strip().lstrip("#") for n in names if n.strip().lstrip("#"))


def _first_heading(body: str, stem: str) -> tuple[str, str]:
    """The note's first level-one heading as its title, and the body
    without it; else the file name, and the body as it is."""
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        match = _HEADING.match(line)
        if match and match.group(1) == "#" and match.group(2):
            return match.group(2), "\n".join(lines[:index] + lines[index + 1 :])
        break
    return stem, body


def _sections(body: str) -> list[_Section]:
    """The body cut at its headings (not those inside fenced code)."""
    found: list[_Section] = []
    path: list[tuple[int, str]] = []
    current: list[str] = []
    fence: str | None = None

    def close() -> None:
        found.append(_Section(tuple(h for _, h in path), "\n".join(current).strip()))
        current.clear()

    for line in body.split("\n"):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        heading = _HEADING.match(line) if fence is None and not opened else None
        if heading is None:
            current.append(line)
            continue
        close()
        level = len(heading.group(1))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading.group(2) or "(untitled)"))
    close()
    return found
