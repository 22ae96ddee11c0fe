"""A learned scorer over the features recall already computes.

The pipeline ranks by one formula: fused relevance (keyword and dense, plus
session support and graph propagation) times mild priors. The scorer is a
logistic model over that final value and the parts it was made of, plus the
memory's standing and the agent's own earlier judgments of it::

    score = sigmoid(bias + sum_i w_i * x_i)        (always in 0-1)

**Cold start.** ``COLD_START`` puts all weight on ``final`` (the pipeline's
own score) and none elsewhere. The logistic function is increasing, so the
cold-start scorer orders hits exactly as the pipeline does (ties keep the
pipeline's order): switching the scorer on changes no ranking until it has
been trained.

**Training.** Pairwise logistic regression (RankNet with a linear model):
within one recall, every hit judged useful should score above every hit
judged not useful. The loss is the log-loss summed over those comparisons
plus ``l2 / 2 * |w - COLD_START|^2``: with few judgments the weights stay near
the cold start, and only consistent evidence moves them. Newton's method on a
problem of a few dozen dimensions: deterministic, no learning rate, a handful
of iterations. The bias is not learned (comparisons cancel it).

**Enough pairs.** ``MIN_JUDGED`` judged hits and ``MIN_COMPARISONS``
useful/not-useful comparisons within recalls (see ``enough``); below that,
``train`` returns None and recall keeps the pipeline's order.

Everything here is a pure function of its arguments except ``rescore``,
which reads the agent's feedback counts from the store (a read; recall stays
read-only).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.models import Category, Hit, HitList, Scope, Source
from mindpalace.store.roles_palace import SignalRows

__all__ = [
    "COLD_START",
    "FEATURES",
    "HIT_FEATURES",
    "MIN_COMPARISONS",
    "MIN_JUDGED",
    "Example",
    "ScorerWeights",
    "comparisons",
    "enough",
    "features_of",
    "hit_features",
    "rerank",
    "rescore",
    "rescored",
    "score",
    "train",
]

# What the pipeline computed for a hit (recorded with each recall, so that
# training sees the features as they were when the hit was judged).
HIT_FEATURES: tuple[str, ...] = (
    "final",  # relevance x priors: the pipeline's own ranking value
    "keyword",  # BM25 relative to the best visible match
    "dense",  # cosine similarity (0 when below zero or absent)
    "fused",  # the weighted keyword + dense fusion
    "session",  # support from the memory's session
    "graph",  # score propagated over the entity graph
    "prior",  # the strength x confidence x recency factor
    "strength",
    "confidence",
    "recency",  # 0.5 ** (age in years)
    "access",  # log(1 + access count)
    "constraint",
    *(f"source:{s.value}" for s in Source),
    *(f"category:{c.value}" for c in Category),
)
# The agent's earlier judgments of the memory (log(1 + count)), read at recall.
FEEDBACK_FEATURES: tuple[str, ...] = ("useful_before", "useless_before")
FEATURES: tuple[str, ...] = HIT_FEATURES + FEEDBACK_FEATURES

# The pipeline's score alone. The slope maps a typical final value (0-1.5)
# onto 0.05-0.95; the value matters only as the point training starts from
# and is pulled back to.
COLD_START_SLOPE = 6.0
COLD_START_BIAS = -3.0
L2 = 1.0
# Below these the fit cannot move far from the cold start, and what it does
# learn is noise (BENCHMARKS.md, "Learned scorer": the learning curve).
MIN_JUDGED = 50
MIN_COMPARISONS = 20
# The scorer re-ranks this many of the pipeline's best candidates (or the
# recall's limit, when larger): the judged window. Feedback comes on what
# recall showed (10 hits by default); on LoCoMo re-ranking 20 or 50 cost
# 0.009 hit@10 while re-ranking 10 cost nothing (BENCHMARKS.md).
DEPTH = 10
_RECENCY_HALF_LIFE_DAYS = 365.0


@dataclass(frozen=True, slots=True)
class ScorerWeights:
    """A scorer's weights by feature name (absent: 0), its bias, and how
    it was trained (``judged`` 0: the cold start)."""

    weights: Mapping[str, float]
    bias: float
    judged: int = 0
    comparisons: int = 0
    trained_at: datetime | None = None

    @property
    def trained(self) -> bool:
        """Whether these weights were learned (else they are the cold start)."""
        return self.judged > 0

    def vector(self) -> npt.NDArray[np.float64]:
        """The weights in ``FEATURES`` order."""
        return np.array([self.weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (zero weights left out)."""
        return {
            "weights": {k: round(v, 8) for k, v in sorted(self.weights.items()) if v != 0.0},
            "bias": self.bias,
            "judged": self.judged,
            "comparisons": self.comparisons,
            "trained_at": self.trained_at.isoformat() if self.trained_at else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScorerWeights:
        """The inverse of ``to_dict``; features this version does not know are dropped."""
        at = data.get("trained_at")
        return cls(
            weights={
                str(k): float(v) for k, v in dict(data.get("weights", {})).items() if k in FEATURES
            },
            bias=float(data.get("bias", COLD_START_BIAS)),
            judged=int(data.get("judged", 0)),
            comparisons=int(data.get("comparisons", 0)),
            trained_at=datetime.fromisoformat(at) if at else None,
        )


COLD_START = ScorerWeights(weights={"final": COLD_START_SLOPE}, bias=COLD_START_BIAS)


@dataclass(frozen=True, slots=True)
class Example:
    """One judged hit: the recall it came from (``group``), its features
    then, and whether it helped."""

    group: str
    features: Mapping[str, float]
    useful: bool
    memory_id: str = ""


# -- features -------------------------------------------------------------------------------------


def hit_features(hit: Hit, now: datetime) -> list[float]:
    """The ``HIT_FEATURES`` of a hit, in order (recorded with each recall)."""
    s = hit.stage_scores
    m = hit.memory
    age_days = max(0.0, (now - m.created_at).total_seconds() / 86_400.0)
    values = {
        "final": s.get("final", hit.score),
        "keyword": s.get("keyword", 0.0),
        "dense": max(0.0, s.get("dense", 0.0)),
        "fused": max(0.0, s.get("fused", 0.0)),
        "session": s.get("session_support", 0.0),
        "graph": s.get("graph", 0.0),
        "prior": s.get("prior", 1.0),
        "strength": m.strength,
        "confidence": m.confidence,
        "recency": math.pow(0.5, age_days / _RECENCY_HALF_LIFE_DAYS),
        "access": math.log1p(max(0, m.access_count)),
        "constraint": float(m.constraint),
        f"source:{m.source.value}": 1.0,
        f"category:{m.category.value}": 1.0,
    }
    return [float(values.get(name, 0.0)) for name in HIT_FEATURES]


def features_of(
    recorded: Sequence[float], names: Sequence[str], *, useful: int = 0, useless: int = 0
) -> dict[str, float]:
    """Named features from a recorded vector (``names`` its order) and the
    memory's earlier judgment counts."""
    out = {n: float(v) for n, v in zip(names, recorded, strict=False) if n in FEATURES}
    out["useful_before"] = math.log1p(useful)
    out["useless_before"] = math.log1p(useless)
    return out


def _matrix(rows: Iterable[Mapping[str, float]]) -> npt.NDArray[np.float64]:
    table = [[row.get(name, 0.0) for name in FEATURES] for row in rows]
    return np.array(table, dtype=np.float64).reshape(len(table), len(FEATURES))


def _sigmoid(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * np.clip(z, -500.0, 500.0)))
    return out


def score(weights: ScorerWeights, rows: Sequence[Mapping[str, float]]) -> list[float]:
    """The scorer's value, in 0-1, of each row of named features."""
    if not rows:
        return []
    z = _matrix(rows) @ weights.vector() + weights.bias
    return [float(v) for v in _sigmoid(z)]


# -- ranking --------------------------------------------------------------------------------------


def rerank(
    hits: Sequence[Hit],
    weights: ScorerWeights,
    *,
    now: datetime,
    limit: int,
    judgments: Mapping[str, tuple[int, int]] | None = None,
) -> list[Hit]:
    """Hits ordered by the scorer, best first, at most ``limit``; ties keep
    the given order. Each hit's ``score`` becomes the scorer's (0-1); its
    ``stage_scores["scorer"]`` says so and ``ranks["pipeline"]`` keeps the
    rank it had before."""
    judgments = judgments or {}
    rows = []
    for hit in hits:
        useful, useless = judgments.get(hit.memory.id, (0, 0))
        recorded = hit_features(hit, now)
        rows.append(features_of(recorded, HIT_FEATURES, useful=useful, useless=useless))
    values = score(weights, rows)
    order = sorted(range(len(hits)), key=lambda i: (-values[i], i))[:limit]
    out = []
    for place, i in enumerate(order, start=1):
        hit = hits[i]
        out.append(
            replace(
                hit,
                score=values[i],
                ranks={**hit.ranks, "pipeline": i + 1, "final": place},
                stage_scores={**hit.stage_scores, "scorer": values[i]},
            )
        )
    return out


def rescored(
    hits: HitList,
    weights: ScorerWeights,
    *,
    now: datetime,
    limit: int,
    judgments: Mapping[str, tuple[int, int]],
) -> HitList:
    """``rerank`` a recall's hits with the agent's own (useful, not useful)
    ``judgments``, keeping the list's mode, notice and timings."""
    out = HitList(
        rerank(hits, weights, now=now, limit=limit, judgments=judgments),
        mode=hits.mode,
        notice=hits.notice,
    )
    out.timings = hits.timings
    return out


def rescore(
    store: SignalRows,
    hits: HitList,
    weights: ScorerWeights,
    *,
    scope: Scope,
    now: datetime,
    limit: int,
) -> HitList:
    """``rerank`` a recall's hits with the agent's own judgment counts (of
    this agent through this channel only), read from the store."""
    judgments = store.feedback_counts(
        [h.memory.id for h in hits], agent_id=scope.agent_id, channel=scope.channel
    )
    return rescored(hits, weights, now=now, limit=limit, judgments=judgments)


# -- training -------------------------------------------------------------------------------------


def comparisons(examples: Sequence[Example]) -> npt.NDArray[np.float64]:
    """Feature differences (useful minus not useful) of every pair of
    examples from the same recall, groups in sorted order."""
    by_group: dict[str, list[Example]] = defaultdict(list)
    for example in examples:
        by_group[example.group].append(example)
    diffs: list[npt.NDArray[np.float64]] = []
    for group in sorted(by_group):
        members = by_group[group]
        good = _matrix(e.features for e in members if e.useful)
        bad = _matrix(e.features for e in members if not e.useful)
        if len(good) and len(bad):
            diffs.append((good[:, None, :] - bad[None, :, :]).reshape(-1, len(FEATURES)))
    if not diffs:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    return np.concatenate(diffs)


def enough(examples: Sequence[Example]) -> bool:
    """Whether there are enough judgments to train on (``MIN_JUDGED``
    judged hits, ``MIN_COMPARISONS`` comparisons within recalls)."""
    return len(examples) >= MIN_JUDGED and len(comparisons(examples)) >= MIN_COMPARISONS


def train(
    examples: Sequence[Example],
    *,
    prior: ScorerWeights = COLD_START,
    l2: float = L2,
    now: datetime | None = None,
    force: bool = False,
) -> ScorerWeights | None:
    """Fit the weights to judged hits (pairwise logistic, L2 toward
    ``prior``). Returns None when there are not ``enough`` judgments
    (unless ``force``) or no recall has both a useful and a useless hit.

    Deterministic: the same examples, in any order, give the same weights.
    """
    if not force and not enough(examples):
        return None
    diffs = comparisons(sorted(examples, key=lambda e: (e.group, e.memory_id, e.useful)))
    if len(diffs) == 0:
        return None
    w0 = prior.vector()
    w = w0.copy()
    n = len(diffs)
    eye = np.eye(len(FEATURES))
    for _ in range(50):
        p = _sigmoid(diffs @ w)  # chance the useful hit wins each comparison
        grad = -(diffs.T @ (1.0 - p)) + l2 * (w - w0)
        hess = (diffs.T * (p * (1.0 - p))) @ diffs + l2 * eye
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.abs(step).max()) < 1e-10:
            break
    return ScorerWeights(
        weights={name: float(v) for name, v in zip(FEATURES, w, strict=True) if v != 0.0},
        bias=prior.bias,
        judged=len(examples),
        comparisons=n,
        trained_at=now,
    )
