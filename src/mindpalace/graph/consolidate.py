"""Consolidation arithmetic: Hebbian strengthening, decay, near-duplicates.

Pure functions; ``palace.graph.consolidate`` reads the palace, calls these
and writes the changes in one transaction. Every rule is idempotent: decay
counts whole days since the last run (a second run the same day decays
nothing), strengthening consumes the feedback signals it used (a watermark),
and a merged duplicate is archived (never a candidate again).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_OVERLAP",
    "ConsolidationReport",
    "decayed",
    "hebbian",
    "near_duplicates",
    "word_overlap",
]

# Hebbian step: a useful co-recall moves an edge this share of the way to the cap.
HEBBIAN_RATE = 0.2
EDGE_CAP = 1.0
# Decay per whole day unused, after a grace period; never below the floor.
MEMORY_DECAY_PER_DAY = 0.995
EDGE_DECAY_PER_DAY = 0.99
GRACE_DAYS = 30
MEMORY_FLOOR = 0.05
EDGE_FLOOR = 0.05
# Near-duplicates need both: nearly the same embedding and mostly the same words.
DUPLICATE_COSINE = 0.95
DUPLICATE_OVERLAP = 0.6

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(slots=True)
class ConsolidationReport:
    """Every change one consolidation made."""

    days: int = 0
    strengthened: list[dict[str, Any]] = field(default_factory=list)
    decayed_memories: list[dict[str, Any]] = field(default_factory=list)
    decayed_edges: int = 0
    merged: list[dict[str, Any]] = field(default_factory=list)
    signals_used: int = 0

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return bool(self.strengthened or self.decayed_memories or self.decayed_edges or self.merged)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "days": self.days,
            "strengthened": self.strengthened,
            "decayed_memories": self.decayed_memories,
            "decayed_edges": self.decayed_edges,
            "merged": self.merged,
            "signals_used": self.signals_used,
            "changed": self.changed,
        }


def hebbian(weight: float, times: int = 1) -> float:
    """An edge weight after ``times`` useful co-recalls (capped)."""
    for _ in range(times):
        weight += (EDGE_CAP - weight) * HEBBIAN_RATE
    return min(weight, EDGE_CAP)


def decayed(value: float, days: int, per_day: float, floor: float) -> float:
    """``value`` after ``days`` whole days of decay, never below ``floor``
    (nor raised to it)."""
    if days <= 0 or value <= floor:
        return value
    return max(floor, value * per_day**days)


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' lower-case word sets."""
    wa = set(_WORD.findall(a.casefold()))
    wb = set(_WORD.findall(b.casefold()))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def near_duplicates(
    text_of: Callable[[int], str],
    groups: Sequence[str],
    matrix: npt.NDArray[np.float32],
    *,
    cosine: float = DUPLICATE_COSINE,
    overlap: float = DUPLICATE_OVERLAP,
    block: int = 1024,
) -> list[tuple[int, int, float]]:
    """Pairs (keep, merge, cosine) of rows that say the same thing (row
    texts come from ``text_of``, asked only for rows of similar pairs): in the
    same group (scope), cosine at least ``cosine`` and word overlap at least
    ``overlap``. Rows are in write order; the older row is kept. Each row is
    merged at most once, never into a row that is itself merged."""
    count = len(groups)
    merged: set[int] = set()
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, count, block):
        sims = matrix[start : start + block] @ matrix.T
        for offset in range(sims.shape[0]):
            row = start + offset
            if row in merged:
                continue
            # Only later rows: each pair is seen once, the older row keeps.
            later = np.flatnonzero(sims[offset, row + 1 :] >= cosine) + row + 1
            for other in later.tolist():
                if other in merged or groups[other] != groups[row]:
                    continue
                if word_overlap(text_of(row), text_of(other)) >= overlap:
                    merged.add(other)
                    pairs.append((row, other, float(sims[offset, other])))
    return pairs
