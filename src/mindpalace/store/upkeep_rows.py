"""Values the upkeep role's consolidation reads and writes
(``Upkeep.decay_candidates``, ``Upkeep.apply_consolidation``; the SQL is
upkeep_sql.py): value types only, so that the protocol and the SQL both
import them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = ["ConsolidationPlan", "DecayCandidate", "TimesToKeep"]


@dataclass(frozen=True, slots=True)
class DecayCandidate:
    """A memory's fields decay looks at."""

    id: str
    strength: float
    last_used: float  # epoch seconds: last access, else creation
    exempt: bool  # constraints and pinned memories never decay


@dataclass(frozen=True, slots=True)
class TimesToKeep:
    """A memory whose stated times are not kept in the reader's form
    (``Upkeep.times_to_keep``): what reading them needs."""

    seq: int
    content_hash: str
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """What one consolidation writes, for one partition (agent and channel)."""

    agent_id: str
    day: int  # the day number (days since the epoch) of this run
    channel: str = ""  # "" for the unchannelled memories
    strengths: Sequence[tuple[str, float]] = ()  # memory id -> new strength
    edge_factor: float = 1.0  # multiply stale edges' weights by this
    edge_floor: float = 0.0
    stale_before: float = 0.0  # edges not updated since then are stale
    strengthen: Sequence[tuple[int, int, float]] = ()  # entity seq pairs, new weight
    merges: Sequence[tuple[str, str]] = ()  # (kept id, merged id)
    signal_watermark: int | None = None
