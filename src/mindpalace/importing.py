"""Importing a file in any format we read (``Palace.import_file`` delegates
here): a palace export is restored as it is (``backup``); chat exports go
through the conversation path (``transcripts``: sessions, speakers, times,
the turn before as context); notes (mem0, Markdown) become memories of
source ``import``. Each import is one transaction: all or nothing.

Text longer than the content limit is stored as parts instead of failing
the import (``splitting``): a turn as ``transcripts`` does it, a note as
parts with the same title, tags and time, whose metadata says ``part`` k
of ``parts`` n, ``part_of`` (where the note came from) and ``gap`` (the
whitespace the cut removed). The summary says how many were split.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindpalace import backup, transcripts, writing
from mindpalace.formats import Loaded, Note, load, load_lines
from mindpalace.models import Source
from mindpalace.retrieval.indexing import Progress, embed_text
from mindpalace.splitting import parts_within
from mindpalace.store.base import AddResult

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["ImportSummary", "import_file", "import_lines"]

# Memories embedded at a time (progress is told after each batch).
_BATCH = 256


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import did.

    Attributes:
        format: the format read (told, or detected).
        inserted: memories written.
        skipped: memories the palace held already (importing again adds nothing).
        split: turns or notes over the content limit, stored as parts.
        ignored: entries the format's reader left out by its rules (system
            and tool messages, other branches of a chat, empty notes, ...).
        sessions: conversation sessions the turns belong to.
    """

    format: str
    inserted: int
    skipped: int
    split: int = 0
    ignored: int = 0
    sessions: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "format": self.format,
            "inserted": self.inserted,
            "skipped": self.skipped,
            "split": self.split,
            "ignored": self.ignored,
            "sessions": self.sessions,
        }


def import_file(
    view: View,
    path: Path | str,
    *,
    format: str,
    session: str | None,
    sections: bool,
    progress: Progress | None,
) -> ImportSummary:
    """See ``Palace.import_file``."""
    loaded = load(path, format=format, session=session, sections=sections)
    return _import(view, loaded, session=session, progress=progress)


def import_lines(
    view: View,
    lines: Iterable[str],
    *,
    where: str,
    format: str,
    session: str | None,
    progress: Progress | None,
) -> ImportSummary:
    """``import_file`` for text that is not a file (standard input)."""
    loaded = load_lines(lines, where=where, format=format, session=session)
    return _import(view, loaded, session=session, progress=progress)


def _import(
    view: View, loaded: Loaded, *, session: str | None, progress: Progress | None
) -> ImportSummary:
    if loaded.format == "export":
        report = backup.import_jsonl(view, loaded.lines, progress=progress)
        return ImportSummary("export", report.inserted, report.skipped)
    if loaded.messages or not loaded.notes:
        added = transcripts.add_turns(
            view,
            loaded.messages,
            session=session,
            batch=_BATCH,
            progress=progress,
            atomic=True,
        )
        return _summary(loaded, added, sessions=len({r.memory.session for r in added}))
    return _summary(loaded, _add_notes(view, loaded.notes, progress))


def _summary(loaded: Loaded, added: list[AddResult], *, sessions: int = 0) -> ImportSummary:
    inserted = sum(1 for r in added if r.created)
    return ImportSummary(
        loaded.format,
        inserted=inserted,
        skipped=len(added) - inserted,
        split=sum(1 for r in added if r.memory.metadata.get("part") == 1),
        ignored=loaded.ignored,
        sessions=sessions,
    )


def _add_notes(view: View, notes: tuple[Note, ...], progress: Progress | None) -> list[AddResult]:
    """Validate every note (a long one into parts), embed them batch by
    batch, then write them all in one transaction."""
    limit = view.engine.settings.max_content_chars
    records: list[dict[str, Any]] = []
    owners: list[str] = []
    for index, note in enumerate(notes):
        origin = note.origin or f"note {index + 1}"
        record: dict[str, Any] = {
            "title": note.title,
            "tags": note.tags,
            "created_at": note.created_at,
            "source": Source.IMPORT,
        }
        if note.category is not None:
            record["category"] = note.category
        text = note.content.strip()
        pieces = parts_within(text, limit, what=origin) if len(text) > limit else []
        if not pieces:
            records.append({**record, "content": text, "metadata": dict(note.metadata)})
            owners.append(origin)
            continue
        for number, piece in enumerate(pieces, start=1):
            metadata = {
                **note.metadata,
                "part": number,
                "parts": len(pieces),
                "part_of": origin,
                "gap": piece.gap,
            }
            # The part's place is part of its identity: two parts with the
            # same text are still two parts.
            identity = f"{origin}|part {number}/{len(pieces)}"
            records.append(
                {**record, "content": piece.text, "metadata": metadata, "identity": identity}
            )
            owners.append(f"{origin} part {number}")
    news = writing.prepare_many(view, records, name=lambda i: owners[i])
    vectors = view.engine.semantic.vectors_in_batches(
        [embed_text(n.title, n.content) for n in news], batch=_BATCH, progress=progress
    )
    return writing.write_results(view, news, vectors)
