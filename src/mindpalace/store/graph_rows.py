"""Values the graph role's reads return (``GraphRows.relations``; the SQL
is relations_sql.py): value types only, so that the protocol and the SQL
both import them."""

from __future__ import annotations

from dataclasses import dataclass

from mindpalace.models import Memory

__all__ = ["RelationRow"]


@dataclass(frozen=True, slots=True)
class RelationRow:
    """One stated relation as a reader sees it: ``subject`` -kind-> ``object``
    (entity keys and display names), and the memory stating it."""

    kind: str
    subject: str
    subject_name: str
    object: str
    object_name: str
    sentence: str
    memory: Memory
