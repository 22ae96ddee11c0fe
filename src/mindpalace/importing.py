"""Importing a file in any format we read (``Palace.import_file`` delegates
here): a palace export is restored as it is (``backup``); chat exports go
through the conversation path (``transcripts``: sessions, speakers, times,
the turn before as context); notes (mem0, Markdown) become memories of
source ``import``. Each import is one transaction: all or nothing.

mem0 output may be imported for the agents it names (``agent_from``:
``user_id`` or ``agent_id``, each value checked as an agent id): the
memories of a user go to the agent of that name, those naming none to the
importing agent. Writing for another agent needs the management view
(``management=True``, ``--all-agents``), as importing another agent's
export does.

Text longer than the content limit is stored as parts instead of failing
the import (``splitting``): a turn as ``transcripts`` does it, a note as
parts with the same title, tags and time, whose metadata says ``part`` k
of ``parts`` n, ``part_of`` (where the note came from) and ``gap`` (the
whitespace the cut removed). The summary says how many were split.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindpalace import backup, transcripts, writing
from mindpalace.embed.texts import Progress, embed_text
from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.formats import Loaded, Note, load, load_lines
from mindpalace.formats.mem0 import AGENT_FROM, owners
from mindpalace.models import Source
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
            prompts, ChatGPT's tool messages, other branches of a chat, empty
            notes, ...).
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
    agent_from: str | None = None,
) -> ImportSummary:
    """See ``Palace.import_file``."""
    _check_agent_from(agent_from)
    loaded = load(path, format=format, session=session, sections=sections)
    return _import(view, loaded, session=session, progress=progress, agent_from=agent_from)


def import_lines(
    view: View,
    lines: Iterable[str],
    *,
    where: str,
    format: str,
    session: str | None,
    progress: Progress | None,
    agent_from: str | None = None,
) -> ImportSummary:
    """``import_file`` for text that is not a file (standard input)."""
    _check_agent_from(agent_from)
    loaded = load_lines(lines, where=where, format=format, session=session)
    return _import(view, loaded, session=session, progress=progress, agent_from=agent_from)


def _check_agent_from(agent_from: str | None) -> None:
    if agent_from is not None and agent_from not in AGENT_FROM:
        raise ValidationError("agent_from", agent_from, valid=AGENT_FROM)


def _import(
    view: View,
    loaded: Loaded,
    *,
    session: str | None,
    progress: Progress | None,
    agent_from: str | None,
) -> ImportSummary:
    if agent_from is not None and loaded.format != "mem0":
        raise ValidationError(
            "agent_from",
            agent_from,
            reason=f"agent_from (--agent-from) maps mem0 output's ids to agents; this is a"
            f" {loaded.format} file, imported for the importing agent: leave it out",
        )
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
    agents = owners(loaded.notes, agent_from) if agent_from is not None else None
    return _summary(loaded, _add_notes(view, loaded.notes, progress, agents))


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


def _add_notes(
    view: View,
    notes: tuple[Note, ...],
    progress: Progress | None,
    agents: Sequence[str | None] | None,
) -> list[AddResult]:
    """Validate every note (a long one into parts), embed them batch by
    batch, then write them all in one transaction; ``agents``: the agent
    of each note (None: the view's)."""
    if agents is not None:
        _check_agents(view, notes, agents)
    limit = view.engine.settings.max_content_chars
    records: list[dict[str, Any]] = []
    names: list[str] = []  # of each record, for error messages
    of_note: list[int] = []  # the note of each record (a long note gives several)
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
            names.append(origin)
            of_note.append(index)
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
            names.append(f"{origin} part {number}")
            of_note.append(index)
    news = writing.prepare_many(view.seat, records, name=lambda i: names[i])
    if agents is not None:
        news = [
            replace(new, agent_id=agent) if (agent := agents[of_note[i]]) is not None else new
            for i, new in enumerate(news)
        ]
    vectors = view.engine.semantic.vectors_in_batches(
        [embed_text(n.title, n.content) for n in news], batch=_BATCH, progress=progress
    )
    return writing.write_results(view.seat, news, vectors)


def _check_agents(view: View, notes: Sequence[Note], agents: Sequence[str | None]) -> None:
    """Notes go to other agents only through the management view.

    Raises:
        PermissionDenied: naming the first note of another agent.
    """
    if view.scope.unscoped:
        return
    for index, (note, agent) in enumerate(zip(notes, agents, strict=True), start=1):
        if agent is not None and agent != view.scope.agent_id:
            raise PermissionDenied(
                note.origin or f"note {index}",
                agent,
                action="import",
                reason=f"it is for agent {agent!r}, and this palace writes only for"
                f" {view.scope.agent_id!r}: importing for other agents needs the management"
                " view (--all-agents; Palace(management=True))",
            )
