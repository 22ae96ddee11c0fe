"""Skill activation: pure stages over candidate lists.

::

    keyword ranks ─┐
                   ├─ fuse (RRF) ─ propagate (correlation edges) ─ gate ─ ranked activations
    dense ranks ───┘

* ``fuse``: Reciprocal Rank Fusion of the BM25 and the embedding ranking
  (``fusion.rrf``), divided by the best attainable RRF score so it is 0-1.
* ``propagate``: the top ``seeds`` candidates send activation along their
  outbound correlation edges, one hop: a neighbour gains
  ``seed score x edge weight x spread / sqrt(outbound degree of the seed)``
  (the square root keeps a hub with many links from swamping the list
  while still letting it lend something). What a skill gains from several
  seeds adds up (capped at 1); its score combines the fused score ``f`` and
  that gain ``g`` as ``1 - (1 - f)(1 - g)``, so it stays in 0-1.
* ``gate``: "nothing relevant" is an answer. Without direct evidence (an
  embedding cosine of at least ``dense_floor``, or a keyword match with a
  cosine of at least ``keyword_floor``) anywhere, nothing activates;
  a candidate needs direct evidence of its own or propagated activation, and
  a score of at least ``relative_floor`` x the best one (candidates far below
  the leader carry little information about the task).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mindpalace.retrieval.fusion import rrf

__all__ = ["ActivateOptions", "Activation", "Evidence", "fuse", "gate", "propagate"]


@dataclass(frozen=True, slots=True)
class ActivateOptions:
    """Constants of skill activation (chosen on the sample library's
    labelled queries; ``bench/skills.py`` reports each variant).

    Attributes:
        candidates: how many of each ranking enter fusion.
        rrf_k: the RRF constant.
        sparse_weight / dense_weight: weights of the two rankings in RRF.
        seeds: how many top candidates propagate.
        spread: share of a seed's score passed along a weight-1 edge
            (0 turns propagation off).
        dense_floor: the cosine that counts as direct evidence without a
            keyword match.
        keyword_floor: the cosine a keyword match needs beside it to count
            as direct evidence (a match on a generic word such as "find" in
            an unrelated task is not evidence); with no embedding available
            a keyword match counts alone.
        relative_floor: the share of the best score a result must reach.
    """

    candidates: int = 50
    rrf_k: float = 10.0
    sparse_weight: float = 1.0
    dense_weight: float = 1.0
    seeds: int = 5
    spread: float = 0.3
    dense_floor: float = 0.25
    keyword_floor: float = 0.1
    relative_floor: float = 0.2


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the first-stage searches said about one candidate."""

    key: str
    fused: float
    sparse_rank: int | None = None
    dense_rank: int | None = None
    cosine: float | None = None

    def direct(self, options: ActivateOptions) -> bool:
        """A cosine at the floor, or a keyword match not contradicted by the embedding."""
        if self.cosine is not None and self.cosine >= options.dense_floor:
            return True
        return self.sparse_rank is not None and (
            self.cosine is None or self.cosine >= options.keyword_floor
        )


@dataclass(frozen=True, slots=True)
class Activation:
    """A candidate after propagation: its score and the skills it is linked
    to in this activation (``links``: (other key, edge weight))."""

    evidence: Evidence
    score: float
    propagated: float = 0.0
    links: tuple[tuple[str, float], ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        """The candidate's key."""
        return self.evidence.key


def fuse(
    sparse: Sequence[str],
    dense: Sequence[tuple[str, float]],
    *,
    options: ActivateOptions,
) -> list[Evidence]:
    """RRF of the keyword ranking (keys, best first) and the dense ranking
    ((key, cosine), best first); scores scaled to 0-1, best first."""
    sparse = list(sparse)[: options.candidates]
    dense = list(dense)[: options.candidates]
    weights = [options.sparse_weight, options.dense_weight]
    fused = rrf([sparse, [k for k, _ in dense]], k=options.rrf_k, weights=weights)
    best = sum(weights) / (options.rrf_k + 1)
    sparse_rank = {key: i for i, key in enumerate(sparse, start=1)}
    dense_rank = {key: i for i, (key, _) in enumerate(dense, start=1)}
    cosine = dict(dense)
    return [
        Evidence(
            key=key,
            fused=score / best if best > 0 else 0.0,
            sparse_rank=sparse_rank.get(key),
            dense_rank=dense_rank.get(key),
            cosine=cosine.get(key),
        )
        for key, score in fused
    ]


def propagate(
    candidates: Sequence[Evidence],
    edges: Mapping[str, Mapping[str, float]],
    *,
    options: ActivateOptions,
) -> list[Activation]:
    """Spread the top ``seeds`` candidates' scores one hop along ``edges``
    (src -> dst -> weight). Neighbours not among the candidates join with no
    direct evidence. Best first; ties by key."""
    by_key = {c.key: c for c in candidates}
    gained: dict[str, float] = {}
    links: dict[str, dict[str, float]] = {}
    if options.spread > 0:
        for seed in candidates[: options.seeds]:
            out = {dst: w for dst, w in edges.get(seed.key, {}).items() if dst != seed.key}
            if not out:
                continue
            damp = options.spread / math.sqrt(len(out))
            for dst, weight in out.items():
                gained[dst] = gained.get(dst, 0.0) + seed.fused * weight * damp
                links.setdefault(seed.key, {})[dst] = weight
                links.setdefault(dst, {})[seed.key] = weight
    for key in gained:
        by_key.setdefault(key, Evidence(key=key, fused=0.0))
    activations = [
        Activation(
            evidence=evidence,
            score=1.0 - (1.0 - evidence.fused) * (1.0 - min(1.0, gained.get(key, 0.0))),
            propagated=gained.get(key, 0.0),
            links=tuple(sorted(links.get(key, {}).items(), key=lambda kv: (-kv[1], kv[0]))),
        )
        for key, evidence in by_key.items()
    ]
    activations.sort(key=lambda a: (-a.score, -a.evidence.fused, a.key))
    return activations


def gate(activations: Sequence[Activation], *, options: ActivateOptions) -> list[Activation]:
    """Drop what carries no evidence or too little score; [] when nothing
    has direct evidence."""
    if not any(a.evidence.direct(options) for a in activations):
        return []
    kept = [a for a in activations if a.evidence.direct(options) or a.propagated > 0]
    if not kept:
        return []
    best = max(a.score for a in kept)
    return [a for a in kept if a.score >= options.relative_floor * best]
