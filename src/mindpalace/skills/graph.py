"""The skill graph's weights: pure functions, no I/O.

* Declared correlations (written by every import): an explicit link in a
  file weighs what it says (default ``EXPLICIT_DEFAULT``) in both directions;
  two skills sharing tags or tools weigh ``SHARED_WEIGHT`` x the Jaccard
  index of their tag-and-tool sets, kept from ``MIN_WEIGHT``. A pair takes
  the larger of the two.
* Learned correlations (written by consolidation): every activation whose
  top skills include both of a pair moves the pair's weight a fixed share of
  the way to 1 (Hebbian strengthening with saturation).
* Propagation reads both as one weight, ``1 - (1 - declared)(1 - learned)``:
  either alone can link two skills, and together they link them more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations

from mindpalace.skills.model import SkillDefinition

__all__ = [
    "EXPLICIT_DEFAULT",
    "MIN_WEIGHT",
    "SHARED_WEIGHT",
    "coactivation_counts",
    "combine",
    "declared_correlations",
    "edge_weights",
]

EXPLICIT_DEFAULT = 0.8
SHARED_WEIGHT = 0.6
MIN_WEIGHT = 0.12


def _features(skill: SkillDefinition) -> set[str]:
    return {f"tag:{t}" for t in skill.tags} | {f"tool:{t.lower()}" for t in skill.tools}


def declared_correlations(
    skills: Sequence[SkillDefinition],
    *,
    explicit_default: float = EXPLICIT_DEFAULT,
    shared_weight: float = SHARED_WEIGHT,
    min_weight: float = MIN_WEIGHT,
) -> dict[tuple[str, str], float]:
    """(source name, target name) -> weight for every correlated pair, both
    directions; links to names not among ``skills`` are left out."""
    names = {s.name for s in skills}
    out: dict[tuple[str, str], float] = {}

    def put(a: str, b: str, weight: float) -> None:
        weight = round(weight, 4)
        for pair in ((a, b), (b, a)):
            if weight > out.get(pair, 0.0):
                out[pair] = weight

    for skill in skills:
        for target, weight in skill.links:
            if target in names and target != skill.name:
                put(skill.name, target, explicit_default if weight is None else weight)
    # Only pairs sharing a feature can score, so walk the inverted index
    # rather than every pair.
    features = {s.name: _features(s) for s in skills}
    holders: dict[str, list[str]] = defaultdict(list)
    for name, feats in features.items():
        for feature in feats:
            holders[feature].append(name)
    pairs: set[tuple[str, str]] = set()
    for members in holders.values():
        pairs.update(combinations(sorted(members), 2))
    for a, b in pairs:
        union = len(features[a] | features[b])
        weight = shared_weight * len(features[a] & features[b]) / union
        if weight >= min_weight:
            put(a, b, weight)
    return out


def coactivation_counts(
    activations: Iterable[Sequence[str]], *, top: int = 3
) -> dict[tuple[str, str], int]:
    """How often each ordered pair of skills (memory ids) was among the
    ``top`` of one activation together; both directions counted."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for activated in activations:
        head = list(dict.fromkeys(activated))[:top]
        for a, b in combinations(head, 2):
            counts[(a, b)] += 1
            counts[(b, a)] += 1
    return dict(counts)


def combine(declared: float, learned: float) -> float:
    """One edge weight from the declared and learned ones (noisy-or)."""
    return 1.0 - (1.0 - declared) * (1.0 - learned)


def edge_weights(
    links: Iterable[tuple[str, str, str, float]],
) -> dict[str, dict[str, tuple[float, float]]]:
    """(src, dst, kind, weight) rows -> src -> dst -> (declared, learned)."""
    out: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for src, dst, kind, weight in links:
        declared, learned = out[src].get(dst, (0.0, 0.0))
        if kind == "coactivated":
            learned = weight
        else:
            declared = weight
        out[src][dst] = (declared, learned)
    return dict(out)
