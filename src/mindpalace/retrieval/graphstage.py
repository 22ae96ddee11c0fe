"""The graph stages of recall: propagation from the fused seeds and the
information-gain gate on what it brings in; the names a query may use for
entities (the constraints it touches are read with them). Reads go through
the store with the caller's scope; the arithmetic is ``propagate.propagate``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from mindpalace.graph.extract import extract_mentions
from mindpalace.models import Association, Entity, RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex, few_rows_product
from mindpalace.retrieval.propagate import GraphSlice, Reach, propagate
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.roles import GraphRows

__all__ = [
    "Candidate",
    "Expansion",
    "expand",
    "query_entities",
    "query_names",
    "redundant",
    "untold",
]

Candidate = tuple[float, str, int | None]  # (value, memory id, dense row or None)

# How many neighbours a hit lists in its associative_context.
CONTEXT_SIZE = 5
# How many of an entity's strongest co-occurring entities the second hop follows.
CO_NEIGHBOURS = 5
# How many reasons (paths from different seeds) a reached memory keeps.
REASONS = 2
# An entity mentioned by more than this share of the visible memories (and
# by more than HUB_FLOOR of them) is a hub: followed, never given as a reason.
HUB_SHARE = 0.1
HUB_FLOOR = 4


@dataclass(frozen=True, slots=True)
class Expansion:
    """Candidates after propagation, with what the graph added.

    Attributes:
        candidates: every candidate, its value raised by what the graph added.
        reached: memory id -> its best path from a seed.
        associations: seed id -> the memories it reached, best first.
        reasons: memory id -> its best paths (from different seeds, best
            first) through no hub and no date: what may be shown as the
            reason it was reached.
        lift: memory id -> the share of its value the graph added (0-1].
    """

    candidates: list[Candidate]
    reached: Mapping[str, Reach] = field(default_factory=dict)
    associations: Mapping[str, list[Association]] = field(default_factory=dict)
    reasons: Mapping[str, tuple[Reach, ...]] = field(default_factory=dict)
    lift: Mapping[str, float] = field(default_factory=dict)


def expand(
    store: GraphRows,
    candidates: list[Candidate],
    *,
    scope: Scope,
    filters: RecallFilters,
    dense_index: DenseIndex | None,
    seeds: int,
    weight: float,
    hops: int,
    max_degree: int,
    visible: npt.NDArray[np.bool_] | None = None,
) -> Expansion:
    """Add ``weight`` x the propagated score of every memory reached from the
    top ``seeds`` candidates (new candidates for memories not yet in the list).

    The graph around the seeds is one store read (``Store.seed_graph``).
    With ``visible`` (the rows of ``dense_index`` that scope and filters
    admit) and a warm mention index, entity members are counted in memory;
    otherwise that read brings them too.
    """
    ordered = sorted(candidates, key=lambda c: (-c[0], c[1]))
    top = [(key, value) for value, key, _ in ordered[:seeds] if value > 0]
    if not top or weight <= 0:
        return Expansion(candidates)
    warm = dense_index.mentions if dense_index is not None and visible is not None else None
    counted: dict[str, tuple[int, list[str]]] = {}

    def members_of(norms: Sequence[str]) -> dict[str, tuple[int, list[str]]]:
        if warm is not None and visible is not None and dense_index is not None:
            wanted = [n for n in dict.fromkeys(norms) if n not in counted]
            if wanted:
                # The warm index keys mentions by the name they use: an
                # entity's members are those of the short names linked to it too.
                linked = store.linked_names(wanted, scope)
                keys = list(
                    dict.fromkeys([*wanted, *(s for n in wanted for s in linked.get(n, []))])
                )
                found = warm.members(keys, visible, dense_index.table.ids, max_degree=max_degree)
                for n in wanted:
                    counted_n = _joined(
                        [found[k] for k in (n, *linked.get(n, [])) if k in found], max_degree
                    )
                    if counted_n is not None:
                        counted[n] = counted_n
            return {n: counted[n] for n in dict.fromkeys(norms) if n in counted}
        known = graph.members or {}
        return {norm: known[norm] for norm in dict.fromkeys(norms) if norm in known}

    def degrees(norms: Sequence[str]) -> dict[str, int]:
        return {norm: found[0] for norm, found in members_of(norms).items()}

    graph = store.seed_graph(
        [key for key, _ in top],
        scope,
        filters,
        neighbours=CO_NEIGHBOURS if hops >= 2 else 0,
        max_degree=max_degree,
        members=warm is None,
        degrees=degrees if warm is not None else None,
    )

    found = graph.entities
    seed_entities = {key: [e.norm for e in found.get(key, [])] for key, _ in top}
    entities = {e.norm: e for mentioned in found.values() for e in mentioned}
    norms = sorted({n for keys in seed_entities.values() for n in keys})
    members = members_of(norms)
    co: dict[str, list[tuple[str, float]]] = {}
    if hops >= 2 and graph.co:
        # Hubs and lone mentions are not traversed: their neighbours are not wanted.
        usable = [n for n in norms if 2 <= members.get(n, (0, []))[0] <= max_degree]
        co = {n: list(graph.co[n]) for n in usable if graph.co.get(n)}
        far = sorted({o for pairs in co.values() for o, _ in pairs} - set(members))
        if far:
            members = {**members, **members_of(far)}
            # Their names and kinds, for paths and reasons (one small read).
            for entity in store.entities_named(far, scope):
                entities.setdefault(entity.norm, entity)
    visible_count = int(np.count_nonzero(visible)) if visible is not None else 0
    slice_ = GraphSlice(
        seed_entities=seed_entities,
        members=members,
        co=co,
        names={norm: e.name for norm, e in entities.items()},
        untold=untold(entities, members, visible_count),
    )
    result = propagate(top, slice_, hops=hops, max_degree=max_degree)
    reached = result.best
    values = {key: (value, row) for value, key, row in candidates}
    lift: dict[str, float] = {}
    for memory_id, reach in reached.items():
        value, row = values.get(memory_id, (0.0, None))
        if row is None and dense_index is not None:
            row = dense_index.row_of(memory_id)
        added = weight * reach.score
        values[memory_id] = (value + added, row)
        lift[memory_id] = added / (value + added) if value + added > 0 else 0.0
    reasons = {
        memory_id: tuple(sorted(by_seed.values(), key=lambda r: (-r.score, r.seed))[:REASONS])
        for memory_id, by_seed in result.told.items()
    }
    associations = {
        seed: [
            Association(memory_id, reach.score, reach.path)
            for memory_id, reach in sorted(paths.items(), key=lambda kv: (-kv[1].score, kv[0]))[
                :CONTEXT_SIZE
            ]
        ]
        for seed, paths in result.by_seed.items()
    }
    return Expansion(
        [(value, key, row) for key, (value, row) in values.items()],
        reached=reached,
        associations=associations,
        reasons=reasons,
        lift=lift,
    )


def untold(
    entities: Mapping[str, Entity], members: Mapping[str, tuple[int, Sequence[str]]], visible: int
) -> frozenset[str]:
    """The entity keys never given as the reason a memory was reached: dates
    (every day links what happened on it), names mentioned by more than
    ``HUB_SHARE`` of the ``visible`` memories (the palace's own project, its
    owner), and entities whose name is not known."""
    limit = max(HUB_FLOOR, HUB_SHARE * visible)
    return frozenset(
        norm
        for norm, (degree, _) in members.items()
        if norm not in entities or entities[norm].kind == "date" or degree > limit
    )


def _joined(
    parts: Sequence[tuple[int, list[str]]], max_degree: int
) -> tuple[int, list[str]] | None:
    """One entity's (degree, members) from those of its names (a hub's
    degree is ``max_degree + 1``, its members unlisted)."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    if any(degree > max_degree for degree, _ in parts):
        return (max_degree + 1, [])
    ids = sorted({i for _, found in parts for i in found})
    return (max_degree + 1, []) if len(ids) > max_degree else (len(ids), ids)


def redundant(
    row: int | None, chosen_rows: Sequence[int], dense_index: DenseIndex | None, threshold: float
) -> bool:
    """Information-gain gate: a memory adds nothing when its embedding is
    within ``threshold`` cosine of one already chosen."""
    if row is None or dense_index is None or not chosen_rows:
        return False
    sims = few_rows_product(
        dense_index.vectors_of(list(chosen_rows)), dense_index.vectors_of([row])[0]
    )
    return bool(np.max(sims) >= threshold)


def query_names(query: str) -> list[str]:
    """The names a query may use for entities: its capitalised names, words
    and word pairs, normalised, sorted."""
    words = query_terms(query)
    names = {m.norm for m in extract_mentions([query])}
    names |= set(words) | {f"{a} {b}" for a, b in pairwise(words)}
    return sorted(names)


def query_entities(store: GraphRows, query: str, scope: Scope) -> dict[str, set[str]]:
    """The visible entities a query names: its capitalised names, words and
    word pairs, resolved through names and aliases (name -> entity keys)."""
    return store.resolve_names(query_names(query), scope)
