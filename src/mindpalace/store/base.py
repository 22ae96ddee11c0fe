"""The storage protocol every backend implements: ``Store``, the
composition of the role-sized protocols a function may ask for instead
(roles.py: ``Handle``, ``MemoryRows``, ``TextIndex``, ``VectorRows``,
``GraphRows``; roles_palace.py: ``SkillRows``, ``SignalRows``,
``Exchange``, ``Upkeep``).

Scope is a mandatory argument of every read: a backend applies it inside the
query, so a memory outside the caller's scope can never be returned, counted
or ranked. Every write is one transaction.

The values the roles' methods take and return beyond the models live in
the ``*_rows.py`` modules beside them (vectors in vector_rows.py), so that
the protocols and the SQL that implements them both import them; this
module re-exports those that callers name.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from mindpalace.store.exchange_rows import ImportReport
from mindpalace.store.memory_rows import AddResult, Signal
from mindpalace.store.recall_rows import TextMatch
from mindpalace.store.roles import GraphRows, Handle, MemoryRows, NameKeys, TextIndex, VectorRows
from mindpalace.store.roles_palace import Exchange, SignalRows, SkillRows, Upkeep
from mindpalace.store.vector_rows import DenseRows, VectorBatch, VectorTable

#: how the URL of a palace on a PostgreSQL server begins
SERVER_SCHEMES = ("postgresql://", "postgres://")


__all__ = [
    "ROLES",
    "SERVER_SCHEMES",
    "AddResult",
    "DenseRows",
    "Exchange",
    "GraphRows",
    "Handle",
    "ImportReport",
    "MemoryRows",
    "NameKeys",
    "Signal",
    "SignalRows",
    "SkillRows",
    "Store",
    "TextIndex",
    "TextMatch",
    "Upkeep",
    "VectorBatch",
    "VectorRows",
    "VectorTable",
    "redact_url",
]


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and ``location``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


class Store(
    Handle,
    MemoryRows,
    TextIndex,
    VectorRows,
    GraphRows,
    SkillRows,
    SignalRows,
    Exchange,
    Upkeep,
    Protocol,
):
    """A palace's storage: every role at once. A function that uses only
    some of it asks for those roles instead (a protocol combining two where
    it needs both)."""


#: the roles ``Store`` composes, each method declared by exactly one
ROLES: tuple[type, ...] = tuple(base for base in Store.__bases__ if base is not Protocol)
