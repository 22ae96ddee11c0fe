"""Readers for the files people bring: chat exports, other memory tools'
output, notes, and the palace's own export (``load`` detects which).

Conversation formats (``CONVERSATION_FORMATS``) give turns with sessions,
speakers and times for the conversation ingest path: ``jsonl``,
``openai``, ``locomo``, ``chatgpt``, ``claude``. ``mem0`` and ``markdown``
give memories; ``export`` is a palace export, imported as it is. One
module per format; each says what it reads and what it leaves out.
ChatGPT's and Claude's exports are also read as downloaded (a zip) or
unzipped (a folder): ``exports``. The rules every reader follows (system
prompts left out, entries numbered from 1, sessions named by their
conversation's title) are in ``base``.
"""

from mindpalace.formats.base import Loaded, Note
from mindpalace.formats.reading import (
    CONVERSATION_FORMATS,
    FORMATS,
    load,
    load_lines,
    read_conversation,
    read_messages,
)

__all__ = [
    "CONVERSATION_FORMATS",
    "FORMATS",
    "Loaded",
    "Note",
    "load",
    "load_lines",
    "read_conversation",
    "read_messages",
]
