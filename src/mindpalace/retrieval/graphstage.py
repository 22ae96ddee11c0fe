"""The graph stages of recall: propagation from the fused seeds, the
information-gain gate on what it brings in, and the constraints the query
touches. Reads go through the store with the caller's scope; the arithmetic
is ``propagate.propagate``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from mindpalace.graph.extract import extract_mentions
from mindpalace.models import Association, Memory, RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.propagate import GraphSlice, Reach, propagate
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.base import Store

__all__ = ["Candidate", "Expansion", "constraints_for", "expand", "query_entities"]

Candidate = tuple[float, str, int | None]  # (value, memory id, dense row or None)

# How many neighbours a hit lists in its associative_context.
CONTEXT_SIZE = 5


@dataclass(slots=True)
class Expansion:
    """Candidates after propagation, with what the graph added."""

    candidates: list[Candidate]
    reached: dict[str, Reach] = field(default_factory=dict)
    associations: dict[str, list[Association]] = field(default_factory=dict)
    elapsed_ms: float = 0.0


def expand(
    store: Store,
    candidates: list[Candidate],
    *,
    scope: Scope,
    filters: RecallFilters,
    dense_index: DenseIndex | None,
    seeds: int,
    weight: float,
    hops: int,
    max_degree: int,
    budget_ms: float,
    visible: npt.NDArray[np.bool_] | None = None,
) -> Expansion:
    """Add ``weight`` x the propagated score of every memory reached from the
    top ``seeds`` candidates (new candidates for memories not yet in the list).

    With ``visible`` (the rows of ``dense_index`` that scope and filters
    admit) and a warm mention index, entity members are read from memory.
    """

    def members_of(norms: list[str]) -> dict[str, tuple[int, list[str]]]:
        warm = dense_index.mentions if dense_index is not None else None
        if warm is not None and visible is not None and dense_index is not None:
            return warm.members(norms, visible, dense_index.table.ids, max_degree=max_degree)
        return store.entity_members(norms, scope, filters, max_degree=max_degree)

    started = time.perf_counter()
    ordered = sorted(candidates, key=lambda c: (-c[0], c[1]))
    top = [(key, value) for value, key, _ in ordered[:seeds] if value > 0]
    if not top or weight <= 0:
        return Expansion(candidates)
    found = store.entities_of([key for key, _ in top], scope)
    seed_entities = {key: [e.norm for e in found.get(key, [])] for key, _ in top}
    names = {e.norm: e.name for entities in found.values() for e in entities}
    norms = sorted({n for keys in seed_entities.values() for n in keys})
    members = members_of(norms)
    co: dict[str, list[tuple[str, float]]] = {}
    if hops >= 2 and (time.perf_counter() - started) * 1000 < budget_ms / 2:
        usable = [n for n in norms if 2 <= members.get(n, (0, []))[0] <= max_degree]
        co = store.co_occurring(usable, scope, per_entity=5)
        far = sorted({o for pairs in co.values() for o, _ in pairs} - set(members))
        if far:
            members = {
                **members,
                **members_of(far),
            }
    graph = GraphSlice(seed_entities=seed_entities, members=members, co=co, names=names)
    result = propagate(top, graph, hops=hops, max_degree=max_degree)
    reached = result.best
    values = {key: (value, row) for value, key, row in candidates}
    for memory_id, reach in reached.items():
        value, row = values.get(memory_id, (0.0, None))
        if row is None and dense_index is not None:
            row = dense_index.row_of(memory_id)
        values[memory_id] = (value + weight * reach.score, row)
    associations = {
        seed: [
            Association(memory_id, reach.score, reach.path)
            for memory_id, reach in sorted(found.items(), key=lambda kv: (-kv[1].score, kv[0]))[
                :CONTEXT_SIZE
            ]
        ]
        for seed, found in result.by_seed.items()
    }
    return Expansion(
        [(value, key, row) for key, (value, row) in values.items()],
        reached=reached,
        associations=associations,
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


def redundant(
    row: int | None, chosen_rows: Sequence[int], dense_index: DenseIndex | None, threshold: float
) -> bool:
    """Information-gain gate: a memory adds nothing when its embedding is
    within ``threshold`` cosine of one already chosen."""
    if row is None or dense_index is None or not chosen_rows:
        return False
    matrix = dense_index.table.matrix
    sims = matrix[list(chosen_rows)] @ matrix[row]
    return bool(np.max(sims) >= threshold)


def query_entities(store: Store, query: str, scope: Scope) -> dict[str, set[str]]:
    """The visible entities a query names: its capitalised names, words and
    word pairs, resolved through names and aliases (name -> entity keys)."""
    words = query_terms(query)
    names = {m.norm for m in extract_mentions([query])}
    names |= set(words) | {f"{a} {b}" for a, b in pairwise(words)}
    return store.resolve_names(sorted(names), scope)


def constraints_for(
    store: Store, query: str, scope: Scope, filters: RecallFilters
) -> list[tuple[Memory, str]]:
    """Constraint memories mentioning an entity the query names, each with
    the entity name that ties it to the query."""
    if not store.has_constraints():
        return []  # the common case: no name lookups for nothing
    keys = sorted({k for found in query_entities(store, query, scope).values() for k in found})
    out: dict[str, tuple[Memory, str]] = {}
    for key, memories in store.constraints_mentioning(keys, scope, filters).items():
        for memory in memories:
            out.setdefault(memory.id, (memory, key))
    return sorted(out.values(), key=lambda item: (item[0].created_at, item[0].id), reverse=True)
