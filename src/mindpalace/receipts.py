"""What an erasure reached: the counts of each kind of record it removed,
and the receipt kept of it (``Palace.erase``, ``Palace.forget(hard=True)``).

A receipt names the selection, the time, who erased, how many records of
each kind went, and a SHA-256 digest over the sorted ids of the erased
memories, so a person holding the ids can check them against it. It never
holds erased text: the selection of a person (``entity``) keeps a digest of
the name, not the name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

__all__ = ["CLEANUP_DONE", "CLEANUP_PENDING", "ErasureTally", "Receipt", "Sweep", "ids_digest"]

# A receipt's ``cleanup``: the erasure's disk cleanup is still to come, or done.
CLEANUP_PENDING = "pending"
CLEANUP_DONE = "done"


@dataclass(frozen=True, slots=True)
class ErasureTally:
    """How many records of each kind an erasure removes (or would remove).

    Attributes:
        memories: memory rows, each with its text-index entries (the FTS5
            rows on SQLite, the row's own ``tsvector`` on PostgreSQL).
        versions: of those, older versions (and merged duplicates) that the
            selection reached through their newer version.
        tags: tag rows of those memories.
        vectors: stored vectors of their texts that no other memory shares.
        part_vectors: the same for the vectors of the parts of long texts.
        mentions: entity mentions of those memories.
        entities: entities no remaining memory mentions (with their aliases).
        entity_edges: co-occurrence edges that only those memories supported,
            or of a removed entity.
        relations: typed relations those memories stated.
        links: links between memories (supersession, merges, skill
            correlations) with an erased end.
        skills: skill rows of erased skill memories.
        signals: signals removed: about an erased memory (its writes,
            feedback, skill use), recalls that returned one (their query
            likely quotes it; the learned scorer trains on them), or every
            signal of an erased agent or channel (its recall queries too).
        recall_signals: of those, the recalls that returned an erased memory.
        scorer_weights: learned-scorer weights of an erased agent or channel.
        contexts: other conversation turns whose search context held the
            start of an erased turn, cut out.
    """

    memories: int = 0
    versions: int = 0
    tags: int = 0
    vectors: int = 0
    part_vectors: int = 0
    mentions: int = 0
    entities: int = 0
    entity_edges: int = 0
    relations: int = 0
    links: int = 0
    skills: int = 0
    signals: int = 0
    recall_signals: int = 0
    scorer_weights: int = 0
    contexts: int = 0

    def to_dict(self) -> dict[str, int]:
        """Every count, by kind of record."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErasureTally:
        """The counts a stored receipt holds (kinds this version does not
        know are left out; missing ones are 0)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in data.items() if k in known})


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every signal and learned-scorer weight of one agent (any channel:
    ``channel`` None), of one agent's channel, or of one channel of every
    agent (``agent_id`` None): what erasing an agent or a channel removes
    besides its memories."""

    agent_id: str | None
    channel: str | None


@dataclass(frozen=True, slots=True)
class Receipt:
    """What an erasure removed, or (``id`` None) what it would remove.

    Attributes:
        selection: the selection, as ``Selection.to_dict`` gives it.
        counts: records removed, by kind.
        digest: SHA-256 (hex) over the erased memories' ids, sorted, one a
            line (``ids_digest``).
        at: when it ran.
        agent_id: the agent that erased.
        channel: the channel it acted through, if any.
        id: the receipt's id in the erasure log; None for a dry run, which
            erased nothing.
        cleanup: after the erasure's transaction, what is left on disk of
            the erased rows (SQLite's WAL and index pages, PostgreSQL's dead
            tuples) is cleaned in the background: "pending" until that is
            done, then "done"; None for a dry run.
    """

    selection: Mapping[str, Any]
    counts: ErasureTally
    digest: str
    at: datetime
    agent_id: str
    channel: str | None = None
    id: str | None = None
    cleanup: str | None = None

    @property
    def erased(self) -> bool:
        """Whether the records are gone (False: a dry run)."""
        return self.id is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts by kind, the time in ISO 8601."""
        return {
            "id": self.id,
            "erased": self.erased,
            "at": self.at.isoformat(),
            "agent_id": self.agent_id,
            "channel": self.channel,
            "selection": dict(self.selection),
            "counts": self.counts.to_dict(),
            "digest": self.digest,
            "cleanup": self.cleanup,
        }


def ids_digest(memory_ids: Iterable[str]) -> str:
    """SHA-256 (hex) of the ids, sorted and joined by newlines."""
    return hashlib.sha256("\n".join(sorted(set(memory_ids))).encode("utf-8")).hexdigest()
