"""Reading a file in any format we know, the format told or detected.

Detection looks at the content, never at the file's name alone: a zip
archive, or a folder, holding a ``conversations.json`` (at its top or one
folder down) is a ChatGPT or Claude data export as downloaded or unzipped
(``exports``), told apart by that file's shape; another folder (or a
``.md`` file) is Markdown notes; a JSON document is told by its
shape (``mapping`` trees: ChatGPT; ``chat_messages``: Claude; ``results``
of ``memory`` items: mem0; ``session_1`` and ``speaker_a``: LoCoMo;
messages with ``role`` and ``content``: OpenAI); JSON lines are a palace
export when the first names the export format (or is a whole memory
record), else chat messages. Anything else is an error naming the formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.formats.base import Loaded
from mindpalace.formats.chatgpt import looks_like_chatgpt, read_chatgpt
from mindpalace.formats.claude import looks_like_claude, read_claude
from mindpalace.formats.exports import ENTRY, Export, in_folder, in_zip, is_zip
from mindpalace.formats.locomo import looks_like_locomo, read_locomo
from mindpalace.formats.markdown import SUFFIXES, note_files, read_markdown
from mindpalace.formats.mem0 import looks_like_mem0, read_mem0
from mindpalace.formats.messages import (
    looks_like_message,
    looks_like_openai,
    read_jsonl,
    read_openai,
)
from mindpalace.validation import EXPORT_FORMAT, parse_json, utf8_lines

__all__ = [
    "CONVERSATION_FORMATS",
    "FORMATS",
    "load",
    "load_lines",
    "read_conversation",
    "read_messages",
]

#: Chat formats: read as conversation turns (sessions, speakers, times).
CONVERSATION_FORMATS = ("auto", "jsonl", "openai", "locomo", "chatgpt", "claude")
#: Every format ``load`` reads; ``export`` is a palace's own export.
FORMATS = (*CONVERSATION_FORMATS, "mem0", "markdown", "export")

_KNOWN = (
    "export (a palace export), jsonl (chat messages, one a line), openai (a list of chat"
    " messages), locomo, chatgpt (its export: the .zip, its folder or conversations.json),"
    " claude (the same), mem0 (get_all output), markdown (a folder of notes)"
)
# The formats a chat export (a zip or a folder holding conversations.json) is read as.
_EXPORTS = ("auto", "chatgpt", "claude")
# Whole JSON documents, in the order their shapes are tried.
_DOCUMENTS = (
    ("chatgpt", looks_like_chatgpt),
    ("claude", looks_like_claude),
    ("mem0", looks_like_mem0),
    ("locomo", looks_like_locomo),
    ("openai", looks_like_openai),
)
_NAMES = {
    "export": "a palace export",
    "mem0": "mem0 memories",
    "markdown": "Markdown notes",
}
_EXPORT_FIELDS = frozenset({"id", "content", "agent_id", "created_at"})


def load(
    path: Path | str,
    *,
    format: str = "auto",
    session: str | None = None,
    sections: bool = False,
) -> Loaded:
    """Read the file or folder at ``path``.

    Args:
        path: a file; a ChatGPT or Claude data export, as downloaded (a zip
            archive) or unzipped (a folder); or a folder of Markdown notes.
        format: one of ``FORMATS``; ``auto`` detects it from the content.
        session: the session of turns that name none (default: the file's
            name; a LoCoMo file's sessions are ``NAME:N``).
        sections: Markdown: a memory per section instead of per note.

    Raises:
        ValidationError: an unknown format, a file in none we read, or a
            malformed one (naming where).
    """
    _check_format(format, FORMATS)
    source = Path(path).expanduser()
    where = str(path)
    name = session or source.stem
    if source.is_dir():
        return _folder(source, where, format=format, name=name, sections=sections)
    if format in ("auto", "markdown") and source.suffix.lower() in SUFFIXES:
        notes, empty = read_markdown(source, sections=sections)
        return Loaded("markdown", notes=tuple(notes), ignored=empty)
    if format == "markdown":
        raise ValidationError(
            "path", where, reason=f"{where} is not a folder or a Markdown (.md) file"
        )
    if is_zip(source):
        if format not in _EXPORTS:
            raise ValidationError(
                "format",
                format,
                reason=f"{where} is a zip archive: one is read as a ChatGPT or Claude data"
                f" export (--format {', '.join(_EXPORTS)}); unzip it to import a file in it",
            )
        return _export(in_zip(source), format=format, name=name)
    with source.open("rb") as raw:
        lines = list(utf8_lines(raw, where))
    # Entries are named by the file's name ("chat.jsonl line 7"), short
    # enough to read in an error message.
    return _read(lines, where=source.name, name=name, format=format, session=session)


def _folder(source: Path, where: str, *, format: str, name: str, sections: bool) -> Loaded:
    """A folder: an unzipped chat export, else Markdown notes."""
    export = in_folder(source) if format in _EXPORTS else None
    if export is not None:
        return _export(export, format=format, name=name)
    if format in ("auto", "markdown") and (format == "markdown" or note_files(source)):
        notes, empty = read_markdown(source, sections=sections)
        return Loaded("markdown", notes=tuple(notes), ignored=empty)
    if format == "auto":
        reason = (
            f"{where} is a folder of no Markdown notes (.md, .markdown) and no {ENTRY} (a"
            " ChatGPT or Claude data export, unzipped): name a file in it"
        )
    elif format in _EXPORTS:
        reason = (
            f"{where} holds no {ENTRY}, at its top or one folder down: it is no {format} export"
        )
    else:
        reason = f"{where} is a folder: a {format} file is read by its path"
    raise ValidationError("path", where, reason=reason)


def _export(export: Export, *, format: str, name: str) -> Loaded:
    """The conversations of a chat export's ``conversations.json``: ChatGPT's
    or Claude's, told by its shape unless ``format`` names one."""
    data = parse_json("".join(export.lines), export.where, "file")
    if format == "auto":
        if looks_like_chatgpt(data):
            format = "chatgpt"
        elif looks_like_claude(data):
            format = "claude"
        elif data == []:  # an account with no conversations: told by the files beside it
            format = "claude" if "users.json" in export.beside else "chatgpt"
        else:
            raise ValidationError(
                "format",
                "auto",
                reason=f"{export.where} is neither a ChatGPT export (conversations with a"
                " 'mapping' of messages) nor a Claude one (conversations with 'chat_messages')",
            )
    reader = read_chatgpt if format == "chatgpt" else read_claude
    turns, ignored = reader(data, name=name, file=export.where)
    return Loaded(format, messages=tuple(turns), ignored=ignored)


def load_lines(
    lines: Iterable[str],
    *,
    where: str = "standard input",
    format: str = "auto",
    session: str | None = None,
) -> Loaded:
    """``load`` for text that is not a file (standard input): any format but
    Markdown notes. Turns naming no session get ``session`` (default
    "import")."""
    _check_format(format, FORMATS)
    if format == "markdown":
        raise ValidationError(
            "format", format, reason="Markdown notes are read from a folder or a file, by path"
        )
    return _read(list(lines), where=where, name=session or "import", format=format, session=session)


def read_conversation(
    path: Path | str, *, format: str = "auto", session: str | None = None
) -> Loaded:
    """A conversation file (``CONVERSATION_FORMATS``), read by ``load``.

    Raises:
        ValidationError: an unknown format, a file that is not a
            conversation (such files are imported instead), or a malformed
            one (naming where).
    """
    _check_format(format, CONVERSATION_FORMATS)
    loaded = load(path, format=format, session=session)
    if loaded.format not in CONVERSATION_FORMATS:
        raise ValidationError(
            "format",
            loaded.format,
            reason=f"{path} holds {_NAMES[loaded.format]}, not a conversation: import it"
            " instead (`mindpalace import`, Palace.import_file)",
        )
    return loaded


def read_messages(
    path: Path | str, *, format: str = "auto", session: str | None = None
) -> list[Message]:
    """The turns of a conversation file (``read_conversation``)."""
    return list(read_conversation(path, format=format, session=session).messages)


def _check_format(format: str, known: tuple[str, ...]) -> None:
    if format not in known:
        raise ValidationError("format", format, valid=known)


def _read(lines: list[str], *, where: str, name: str, format: str, session: str | None) -> Loaded:
    text = "".join(lines)
    data: Any = None
    if format == "auto":
        format, data = _detect(text, where)
    if format == "export":
        return Loaded("export", lines=tuple(lines))
    if format == "jsonl":
        messages, ignored = read_jsonl(lines, file=where, session=session or name)
        return Loaded("jsonl", messages=tuple(messages), ignored=ignored)
    if data is None:
        data = parse_json(text, where, "file")
    if format == "mem0":
        notes, ignored = read_mem0(data, file=where)
        return Loaded("mem0", notes=tuple(notes), ignored=ignored)
    if format == "openai":
        messages, ignored = read_openai(data, file=where, session=name)
        return Loaded("openai", messages=tuple(messages), ignored=ignored)
    if format == "locomo":
        return Loaded("locomo", messages=tuple(read_locomo(data, name=name, file=where)))
    reader = read_chatgpt if format == "chatgpt" else read_claude
    turns, ignored = reader(data, name=name, file=where)
    return Loaded(format, messages=tuple(turns), ignored=ignored)


def _detect(text: str, where: str) -> tuple[str, Any]:
    """The format of ``text``, and its JSON document when it was parsed whole."""
    body = text.strip()
    if not body:
        raise ValidationError("file", where, reason=f"{where} is empty: nothing to import")
    first_line = body.split("\n", 1)[0]
    first: Any = None
    if body.startswith("{"):
        try:
            first = json.loads(first_line)
        except (json.JSONDecodeError, RecursionError):
            first = None  # a JSON document over several lines
    if isinstance(first, Mapping):
        if first.get("format") == EXPORT_FORMAT or first.keys() >= _EXPORT_FIELDS:
            return "export", None
        if first_line == body:  # one line: a whole document, or one message
            found = _document(first)
            if found is not None:
                return found, first
        if looks_like_message(first):
            return "jsonl", None
    elif body.startswith(("{", "[")):
        data = parse_json(text, where, "file")
        found = _document(data)
        if found is not None:
            return found, data
    raise ValidationError(
        "format",
        "auto",
        reason=f"{where} is in none of the formats we read: {_KNOWN} (name one with --format)",
    )


def _document(data: Any) -> str | None:
    return next((name for name, looks in _DOCUMENTS if looks(data)), None)
