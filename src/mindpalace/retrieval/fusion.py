"""Fusion of ranked lists into one: pure functions, no I/O.

Two families:

* Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009):
  ``score(d) = sum_i w_i / (k + rank_i(d))``, ranks 1-based; a list that
  misses ``d`` adds nothing.
* Score fusion: each list's scores mapped to 0-1 (min-max over the list, or
  taken as they are when already calibrated), then
  ``score(d) = sum_i w_i * s_i(d)``; a list that misses ``d`` adds 0.

Ties are broken by first appearance (list order, then rank), so fusion is
deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["minmax", "rrf", "weighted_sum"]

K = TypeVar("K", bound=Hashable)


def _weights(count: int, weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * count
    if len(weights) != count:
        raise ValueError(f"{len(weights)} weights for {count} lists")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")
    return weights


def _ordered(scores: dict[K, float], seen: dict[K, int]) -> list[tuple[K, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], seen[item[0]]))


def rrf(
    rankings: Sequence[Sequence[K]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """Reciprocal Rank Fusion of ranked lists (best first); returns (key, score), best first."""
    if k <= 0:
        raise ValueError("k must be positive")
    w = _weights(len(rankings), weights)
    scores: dict[K, float] = {}
    seen: dict[K, int] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        for rank, key in enumerate(ranking, start=1):
            seen.setdefault(key, len(seen))
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return _ordered(scores, seen)


def minmax(scores: Mapping[K, float]) -> dict[K, float]:
    """Scores rescaled to 0-1 within the list; a constant list maps to 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    span = high - low
    return {key: (value - low) / span for key, value in scores.items()}


def weighted_sum(
    lists: Sequence[Mapping[K, float]],
    *,
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """Weighted sum of already normalised score lists; returns (key, score), best first."""
    w = _weights(len(lists), weights)
    scores: dict[K, float] = {}
    seen: dict[K, int] = {}
    for weight, scored in zip(w, lists, strict=True):
        for key, value in sorted(scored.items(), key=lambda item: -item[1]):
            seen.setdefault(key, len(seen))
            scores[key] = scores.get(key, 0.0) + weight * value
    return _ordered(scores, seen)
