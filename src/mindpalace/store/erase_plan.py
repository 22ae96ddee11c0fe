"""What an erasure of memory rows changes besides the rows, decided before
anything is written (store/erase_sql.py reads the rows, applies the plan).

Pure functions over the rows read: which entities lose their last mention,
which co-occurrence edges lose their last support, which recall signals
returned an erased memory, and which conversation turns carry
the start of an erased turn as their search context.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from mindpalace.store.migrations import TURN_CONTEXT_CHARS

__all__ = [
    "ErasePlan",
    "co_mentions",
    "contexts_cut",
    "cut_context",
    "returned",
]

# Trimmed from the end of a turn's start, as the ingest does (transcripts.py).
_SPACES = " \t\n\r\x0b\x0c"
# A context cut shorter than the start of the turn before it (room left
# beside a dates line) is taken for that turn's only when this long.
_MIN_PARTIAL = 32


@dataclass(slots=True)
class ErasePlan:
    """Everything one erasure deletes or rewrites, by row key."""

    seqs: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    tags: int = 0
    mentions: int = 0
    relations: int = 0
    links: int = 0
    skills: int = 0
    # entity seq -> mentions left (0: the entity goes)
    entities: dict[int, int] = field(default_factory=dict)
    # (src, dst) -> count left (0 or less: the edge goes); edges of a
    # removed entity go with it
    edges: dict[tuple[int, int], int] = field(default_factory=dict)
    signals: list[int] = field(default_factory=list)
    # of those, recalls that returned an erased memory
    recalls: list[int] = field(default_factory=list)
    scorers: int = 0
    # memory seq -> its context without the erased turn's start
    contexts: dict[int, str | None] = field(default_factory=dict)
    vector_hashes: list[str] = field(default_factory=list)
    vectors: int = 0
    part_vectors: int = 0

    @property
    def orphans(self) -> list[int]:
        """The entities no remaining memory mentions."""
        return sorted(e for e, left in self.entities.items() if left <= 0)

    def edges_removed(self) -> int:
        """Edges that go: those with no support left, or a removed end."""
        gone = set(self.orphans)
        return sum(1 for (a, b), left in self.edges.items() if left <= 0 or {a, b} & gone)


def co_mentions(mentions: Iterable[tuple[int, int]]) -> Counter[tuple[int, int]]:
    """For each pair of entities (lower seq first) that memories mention
    together (``mentions``: ``(memory seq, entity seq)`` rows), how many
    of those memories mention both: what each added to the pair's edge
    count (graph_sql.py)."""
    by_memory: dict[int, set[int]] = {}
    for memory_seq, entity_seq in mentions:
        by_memory.setdefault(memory_seq, set()).add(entity_seq)
    lost: Counter[tuple[int, int]] = Counter()
    for entities in by_memory.values():
        lost.update(combinations(sorted(entities), 2))
    return lost


def returned(data: str, erased: Collection[str]) -> bool:
    """Whether a recall signal's data lists one of ``erased`` among its hits."""
    try:
        value = json.loads(data)
    except ValueError:
        return False
    hits = value.get("hits") if isinstance(value, dict) else None
    if not isinstance(hits, list):
        return False
    return any(isinstance(h, dict) and h.get("id") in erased for h in hits)


def _starts(text: str) -> list[str]:
    """What of a turn's text a later turn may carry as context: all of it,
    or its first ``TURN_CONTEXT_CHARS`` characters, trailing spaces cut."""
    cut = text[:TURN_CONTEXT_CHARS].rstrip(_SPACES)
    return [t for t in dict.fromkeys((text, cut)) if t]


def cut_context(context: str, erased: Sequence[str]) -> str | None:
    """``context`` without the start of an erased turn it opens with (the
    rest, a dates line, stays; "" when nothing is left); None when it opens
    with none of ``erased``."""
    for text in erased:
        for start in _starts(text):
            shared = 0
            for a, b in zip(context, start, strict=False):
                if a != b:
                    break
                shared += 1
            ends_line = shared == len(context) or context[shared] == "\n"
            whole = shared == len(start)
            if shared and ends_line and (whole or shared >= _MIN_PARTIAL):
                return context[shared + 1 :]
    return None


def contexts_cut(
    neighbours: Iterable[tuple[int, str, str]],
    erased: Mapping[str, Sequence[str]],
) -> dict[int, str | None]:
    """For each ``(seq, session key, context)`` of a turn kept, its context
    without the start of an erased turn of its session (``erased``: session
    key -> the erased turns' texts); turns whose context holds none are
    left out."""
    out: dict[int, str | None] = {}
    for seq, key, context in neighbours:
        cut = cut_context(context, erased.get(key, ()))
        if cut is not None:
            out[seq] = cut or None
    return out
