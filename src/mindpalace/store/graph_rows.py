"""Values the graph role's reads return (``GraphRows.relations``; the SQL
is relations_sql.py): value types, so that the protocol and the SQL both
import them, and ``heaviest``, the pure choice of an entity's strongest
co-occurring neighbours from its edges (graph_sql.py reads them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mindpalace.models import Memory

__all__ = ["RelationRow", "heaviest"]


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


def heaviest(
    edges: Mapping[str, list[tuple[float, int]]],
    per_entity: int,
    roots: Callable[[Sequence[int]], Mapping[int, str]],
) -> dict[str, list[tuple[str, float]]]:
    """The ``per_entity`` heaviest neighbours of each key (by weight, then
    key), from its edges (negated weight, the other end's seq); an other
    end is read as its key (``roots``), the heaviest edge counting when two
    ends share one, and one that is the key itself left out. Ends are named
    heaviest first, a few rounds of one read each, until no unnamed edge
    can change the answer: the rest are lighter than the last kept."""
    for found in edges.values():
        found.sort()
    named: dict[int, str] = {}
    best: dict[str, dict[str, float]] = {key: {} for key in edges}
    done: dict[str, int] = dict.fromkeys(edges, 0)  # edges named, heaviest first
    step = max(4 * per_entity, 16)
    open_keys = set(edges)
    while open_keys:
        wanted = sorted(
            {
                seq
                for key in open_keys
                for _, seq in edges[key][done[key] : done[key] + step]
                if seq not in named
            }
        )
        if wanted:
            named.update(roots(wanted))
        for key in sorted(open_keys):
            found, kept = edges[key], best[key]
            upto = min(done[key] + step, len(found))
            for negated, seq in found[done[key] : upto]:
                other = named.get(seq)
                if other is None or other == key or other in kept:
                    continue  # gone since, the key itself, or heavier already
                kept[other] = -negated
            done[key] = upto
            if upto == len(found):
                open_keys.discard(key)
            elif len(kept) >= per_entity:
                last = sorted(kept.values(), reverse=True)[per_entity - 1]
                if -found[upto][0] < last:  # every unnamed edge is lighter
                    open_keys.discard(key)
        step *= 2
    return {
        key: sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))[:per_entity]
        for key, kept in best.items()
        if kept
    }
