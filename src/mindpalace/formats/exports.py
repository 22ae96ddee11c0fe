"""Chat exports as people download them: ChatGPT's and Claude's "Export
data" give a ``.zip`` holding ``conversations.json`` (ChatGPT's beside
``chat.html``, ``user.json``, ``message_feedback.json`` and images;
Claude's beside ``users.json`` and ``projects.json``), and people unzip it
into a folder. Both are read here: the ``conversations.json`` at the top
of the archive or folder, or one folder down (some unzip tools wrap the
files in a folder of the archive's name); every other entry is left alone.

A zip is never extracted to disk: its ``conversations.json`` is read from
the archive, and refused when its declared or its actual uncompressed size
is over ``MAX_ENTRY_BYTES`` (a zip bomb: a few kilobytes that inflate to
gigabytes). A damaged or encrypted archive is refused by name.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, TypeVar

from mindpalace.errors import ValidationError
from mindpalace.validation import utf8_lines

__all__ = ["ENTRY", "MAX_ENTRY_BYTES", "Export", "in_folder", "in_zip", "is_zip"]

#: The file of a chat export that holds the conversations.
ENTRY = "conversations.json"
#: The most uncompressed bytes read from an archive's entry (1 GiB): a
#: real export's conversations.json is a few hundred megabytes at most.
MAX_ENTRY_BYTES = 1 << 30
# Folders an unzip tool or a Mac adds beside the export's own files.
_NOT_EXPORTS = ("__MACOSX",)
_CHUNK = 1 << 20
_Found = TypeVar("_Found", Path, zipfile.ZipInfo)


@dataclass(frozen=True, slots=True)
class Export:
    """The ``conversations.json`` of a chat export, read.

    Attributes:
        lines: its text, line by line.
        where: where it is, for error messages (``export.zip/conversations.json``).
        beside: the names of the files beside it (``users.json`` is Claude's,
            ``chat.html`` ChatGPT's), to tell an export of no conversations.
    """

    lines: tuple[str, ...]
    where: str
    beside: frozenset[str]


def is_zip(path: Path) -> bool:
    """Whether ``path`` is a zip archive, by its content (not its name)."""
    try:
        return path.is_file() and zipfile.is_zipfile(path)
    except OSError:
        return False


def in_folder(root: Path) -> Export | None:
    """The export in the folder ``root``: its ``conversations.json`` at the
    top, else in its one subfolder that has one; None when none has.

    Raises:
        ValidationError: several subfolders hold one (several exports
            unzipped side by side: import each folder), or it is not UTF-8.
    """
    top = root / ENTRY
    found = (
        top
        if top.is_file()
        else _one(
            [
                sub / ENTRY
                for sub in sorted(root.iterdir())
                if sub.is_dir() and _wanted(sub.name) and (sub / ENTRY).is_file()
            ],
            str(root),
        )
    )
    if found is None:
        return None
    inside = found.relative_to(root).as_posix()
    where = f"{root.name}/{inside}" if root.name else inside
    with found.open("rb") as raw:
        lines = tuple(utf8_lines(raw, where))
    return Export(lines, where, frozenset(p.name for p in found.parent.iterdir()))


def in_zip(path: Path) -> Export:
    """The export in the zip archive at ``path`` (``in_folder``'s places).

    Raises:
        ValidationError: no ``conversations.json`` in it, one too large
            (``MAX_ENTRY_BYTES``), a damaged or encrypted archive, or text
            that is not UTF-8.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            entries = [i for i in archive.infolist() if not i.is_dir()]
            info = _entry(entries, path.name)
            where = f"{path.name}/{info.filename}"
            if info.file_size > MAX_ENTRY_BYTES:
                raise _too_large(where, info.file_size)
            folder = PurePosixPath(info.filename).parent
            beside = frozenset(
                PurePosixPath(i.filename).name
                for i in entries
                if PurePosixPath(i.filename).parent == folder
            )
            with archive.open(info) as raw:
                lines = tuple(utf8_lines(_capped(raw, where), where))
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ValidationError(
            "file", path.name, reason=f"{path.name} is a damaged zip archive: {exc}"
        ) from None
    except (RuntimeError, NotImplementedError) as exc:  # encrypted; an unknown compression
        raise ValidationError(
            "file", path.name, reason=f"{path.name} is a zip archive we cannot read: {exc}"
        ) from None
    return Export(lines, where, beside)


def _wanted(name: str) -> bool:
    return not name.startswith(".") and name not in _NOT_EXPORTS


def _entry(entries: list[zipfile.ZipInfo], archive: str) -> zipfile.ZipInfo:
    """The archive's ``conversations.json``: at its top, else one folder down."""
    by_depth: dict[int, list[zipfile.ZipInfo]] = {}
    for info in entries:
        parts = PurePosixPath(info.filename).parts
        if parts and parts[-1] == ENTRY and len(parts) <= 2 and all(map(_wanted, parts)):
            by_depth.setdefault(len(parts), []).append(info)
    if 1 in by_depth:
        return by_depth[1][0]
    found = _one(by_depth.get(2, []), archive)
    if found is None:
        raise ValidationError(
            "file",
            archive,
            reason=f"{archive} is a zip archive with no {ENTRY}: we read a ChatGPT or Claude"
            f" data export (its {ENTRY} at the top of the archive or one folder down), and the"
            " other formats as files (unzip it and import the file)",
        )
    return found


def _one(found: list[_Found], where: str) -> _Found | None:
    if len(found) > 1:
        names = ", ".join(_name(f) for f in found)
        raise ValidationError(
            "path",
            where,
            reason=f"{where} holds several exports ({names}): import each one by itself",
        )
    return found[0] if found else None


def _name(found: Path | zipfile.ZipInfo) -> str:
    if isinstance(found, zipfile.ZipInfo):
        return found.filename
    return f"{found.parent.name}/{found.name}"


def _capped(raw: IO[bytes], where: str) -> Iterator[bytes]:
    """The lines of ``raw``, read a chunk at a time and refused once more
    than ``MAX_ENTRY_BYTES`` were read (an entry whose header understates
    its size)."""
    read = 0
    pieces: list[bytes] = []  # of the line not ended yet
    while chunk := raw.read(_CHUNK):
        read += len(chunk)
        if read > MAX_ENTRY_BYTES:
            raise _too_large(where, read)
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pieces.append(chunk[start : end + 1])
            yield b"".join(pieces)
            pieces = []
            start = end + 1
        if start < len(chunk):
            pieces.append(chunk[start:])
    if pieces:
        yield b"".join(pieces)


def _too_large(where: str, size: int) -> ValidationError:
    return ValidationError(
        "file",
        where,
        reason=f"{where} is {size:,} bytes uncompressed, over the {MAX_ENTRY_BYTES:,} we read"
        " from an archive (a damaged archive or a zip bomb): unzip it and import the file",
    )
