"""What each value of each fixed set means, in words a model can act on.

One table for every surface that describes values to a caller: the MCP
tools' argument descriptions and the OpenAPI document (both built from
``server.schema``). Recall modes describe themselves (``MODES``); every
other set is here, one line per value, and a test holds each table to its
enum (no value missing, none extra).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from mindpalace.family import DIRECTIONS
from mindpalace.models import Category, MemoryKind, MemoryType, Source, StoreKind, Visibility
from mindpalace.retrieval.modes import MODES
from mindpalace.selection import SELECTION_KINDS

__all__ = ["MEANINGS", "meanings"]

_TYPE = {
    "person": "a person",
    "project": "a project",
    "system": "a system or service",
    "tool": "a tool or library",
    "concept": "an idea or term",
    "skill": "a procedure",
    "task": "a piece of work to do",
    "unknown": "none of these (default)",
}
_STORE = {
    "semantic": "lasting facts and knowledge (default)",
    "episodic": "what happened when: events, conversations",
    "procedural": "how to do things",
    "prospective": "plans and reminders for later",
    "sensory": "raw observations, not yet digested",
}
_CATEGORY = {
    "fact": "how things are (default)",
    "decision": "a choice made, with its reason",
    "lesson": "learned from experience",
    "rule": "a constraint to follow",
    "person": "about a person",
    "event": "something that happened",
    "goal": "something to achieve",
    "workflow": "steps to follow",
    "conversation": "a conversation turn",
}
_SOURCE = {
    "manual": "the user or agent directly (default)",
    "skill": "a skill",
    "pipeline": "an automated pipeline",
    "import": "an import",
}
_VISIBILITY = {
    "isolated": "the writing agent only (default)",
    "shared": "every agent",
    "group": "agents of group",
}
_KIND = {
    "memory": "an ordinary memory (default)",
    "journal": "a dated journal entry",
    "node": "a knowledge node named by its title",
    "issue": "a project issue (give project)",
    "spec": "a project specification (give project)",
    "message": "a conversation message",
}
_SELECTION = {
    "memory": "one memory and its older versions (value: its memory_id)",
    "agent": "every memory of the acting agent",
    "channel": "every memory written through one channel (value: the channel)",
    "session": "every turn of one conversation session (value: the session)",
    "entity": "every memory that names a person or thing (value: the name)",
    "filter": "memories matching types, stores, categories and created_before",
}
_DIRECTION = {
    "dependents": "what needs the entity",
    "dependencies": "what the entity needs",
}

#: The meaning of each value, by the enum (or the name of a fixed set).
MEANINGS: Mapping[type[enum.Enum] | str, Mapping[str, str]] = {
    **{
        values: {member.value: table[member.value] for member in values}  # the enum's order
        for values, table in (
            (MemoryType, _TYPE),
            (StoreKind, _STORE),
            (Category, _CATEGORY),
            (Source, _SOURCE),
            (Visibility, _VISIBILITY),
            (MemoryKind, _KIND),
        )
    },
    "mode": {name: prior.description for name, prior in MODES.items()},
    "direction": {name: _DIRECTION[name] for name in DIRECTIONS},
    "selection": {name: _SELECTION[name] for name in SELECTION_KINDS},
}


def meanings(values: type[enum.Enum] | str) -> str:
    """``"a: what a means; b: ..."``, the values in their table's order."""
    return "; ".join(f"{value}: {meaning}" for value, meaning in MEANINGS[values].items())
