"""Synaptic propagation over the entity graph, as a pure function of the
seeds and a graph slice.

From each of the top-N fused seeds, through each entity it mentions, to the
other memories mentioning that entity (hop 1), and through the entity's
strongest co-occurring entities to theirs (hop 2). A neighbour scores

    seed score x edge weight / sqrt(degree of each entity passed)

where a mention is an edge of weight 1 and the degree is how many visible
memories mention the entity. Dividing by the square root of the degree keeps
hubs (a speaker named in every turn) from swamping the list, as IDF does in
BM25; entities above ``max_degree`` are not traversed at all. A memory
reached by several paths keeps its best.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["GraphSlice", "Propagation", "Reach", "propagate"]


@dataclass(frozen=True, slots=True)
class GraphSlice:
    """What propagation reads from the graph, already scoped to the caller.

    Attributes:
        seed_entities: seed memory id -> the entity keys it mentions.
        members: entity key -> (degree, ids of the memories mentioning it;
            empty for hubs).
        co: entity key -> (neighbour entity key, edge weight), strongest first.
        names: entity key -> display name, for paths.
        untold: entity keys traversed but never given as the reason a
            memory was reached (dates, names in a large share of the palace).
    """

    seed_entities: Mapping[str, Sequence[str]]
    members: Mapping[str, tuple[int, Sequence[str]]]
    co: Mapping[str, Sequence[tuple[str, float]]] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    untold: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Reach:
    """A memory propagation reached: its score, the seed it came from, the
    path (seed id, entity name, [entity name,] memory id) and the keys of
    the entities on it, in path order."""

    score: float
    seed: str
    path: tuple[str, ...]
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Propagation:
    """What propagation reached: each memory's best path, per seed the
    best path from that seed to each memory it reached, and per memory the
    best path from each seed through no ``untold`` entity (its reasons)."""

    best: dict[str, Reach]
    by_seed: dict[str, dict[str, Reach]]
    told: dict[str, dict[str, Reach]] = field(default_factory=dict)


def propagate(
    seeds: Sequence[tuple[str, float]],
    graph: GraphSlice,
    *,
    hops: int = 2,
    max_degree: int = 50,
) -> Propagation:
    """Memories reached from ``seeds`` (id, fused score).

    Seeds themselves are never reached (they are already candidates).
    """
    seed_ids = {memory_id for memory_id, _ in seeds}
    best: dict[str, Reach] = {}
    by_seed: dict[str, dict[str, Reach]] = {}
    told: dict[str, dict[str, Reach]] = {}
    untold = graph.untold

    def offer(
        mine: dict[str, Reach],
        members: Sequence[str],
        score: float,
        *,
        seed: str,
        via: tuple[str, ...],
        keys: tuple[str, ...],
    ) -> None:
        """Each of ``members`` reached from ``seed`` through the entities
        named ``via`` (keys ``keys``) with ``score``."""
        if score <= 0:
            return
        tellable = untold.isdisjoint(keys)  # the same for every member
        for memory_id in members:
            if memory_id in seed_ids:
                continue
            known = best.get(memory_id)
            ours = mine.get(memory_id)
            improves = known is None or score > known.score
            if not (improves or ours is None or score > ours.score or tellable):
                continue
            reach = Reach(score, seed, (seed, *via, memory_id), keys)
            if improves:
                best[memory_id] = reach
            if ours is None or score > ours.score:
                mine[memory_id] = reach
            if tellable:
                reasons = told.setdefault(memory_id, {})
                if seed not in reasons or score > reasons[seed].score:
                    reasons[seed] = reach

    for seed, seed_score in seeds:
        mine = by_seed.setdefault(seed, {})
        for key in graph.seed_entities.get(seed, ()):
            degree, members = graph.members.get(key, (0, ()))
            if degree < 2 or degree > max_degree:
                continue
            name = graph.names.get(key, key)
            weight = seed_score / math.sqrt(degree)
            offer(mine, members, weight, seed=seed, via=(name,), keys=(key,))
            if hops < 2:
                continue
            for other, edge in graph.co.get(key, ()):
                other_degree, other_members = graph.members.get(other, (0, ()))
                if other_degree < 1 or other_degree > max_degree:
                    continue
                far = weight * edge / math.sqrt(other_degree)
                other_name = graph.names.get(other, other)
                offer(
                    mine, other_members, far, seed=seed, via=(name, other_name), keys=(key, other)
                )
    return Propagation(best, {k: v for k, v in by_seed.items() if v}, told)
