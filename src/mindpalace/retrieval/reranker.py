"""The re-ranker: a small forest of regression trees that re-orders the
best hits of a hybrid recall from what the pipeline's stages said of them.

Each stage scores a memory alone (its keyword match, its cosine, its
session's support, the graph, the time prior); the re-ranker sees the whole
window at once, so it can weigh a memory against the others: how far its
scores are from the best, how many of its session's memories are above it,
whether it is long enough to carry its own context, whether the agent or
the user said it, how close the query comes to one passage of a long text.
The features come from the hits alone (what the caller may see) and the
vectors of their parts, never from the store's statistics.

The forest (``reranker.json``, beside this module) is fitted by
``python -m bench.rerank_fit`` on both benchmarks' development splits, with
leave-one-conversation-out and cross-validated figures reported
(BENCHMARKS.md); this module only evaluates it, with numpy.

The window keeps its scores: its scores (and ranking values,
``stage_scores["final"]``), highest first, are handed out in the new order,
so a list is still in score order, a score threshold keeps as many hits as
before, and a later stage that orders by the ranking value (the learned
scorer's cold start) keeps the re-ranker's order. ``stage_scores["rerank"]``
is the forest's value, ``stage_scores["pipeline"]`` the memory's own
ranking value and ``ranks["pipeline"]`` its rank before the re-ranker.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.models import Hit, HitList, MemoryKind
from mindpalace.retrieval.sparse import STOPWORDS, salient_terms

__all__ = ["FEATURES", "Forest", "default_forest", "features", "reranked"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

# The features, in the forest's column order. Scores are the stages'
# (``Hit.stage_scores``); "relative" ones are to the window's best.
FEATURES: tuple[str, ...] = (
    "place",  # 1 / sqrt(pipeline rank)
    "final",  # the pipeline's ranking value
    "fused",  # keyword and dense evidence, fused
    "fused_relative",  # fused / the window's best fused
    "keyword",  # BM25 relative to the best keyword match
    "keyword_matched",  # 1 when the keyword search found it
    "dense",  # cosine to the query
    "dense_gap",  # cosine minus the window's best cosine
    "session_support",
    "graph",
    "time",  # log of the time prior's factor
    "prior",  # strength, confidence and recency factor
    "length",  # log(1 + characters) / 8
    "keyword_place",  # 1 / (10 + keyword rank), 0 without a match
    "dense_place",  # 1 / (10 + dense rank), 0 without a vector
    "in_session",  # 1 / (1 + memories of its session above it)
    "session_count",  # log of its session's memories in the window
    "session_best",  # its session's best fused / the window's best
    "session_first",  # 1 when it is its session's best fused
    "assistant",  # 1 when the speaker is the assistant
    "speaker_named",  # 1 when the query names who said it (a written memory: whom it names)
    "other_named",  # 1 when the query names another speaker of the window
    "part",  # best cosine to a part of a long text, or to the whole (parts.py)
    "written",  # 1 for a memory written on its own, not a conversation turn
)

# Speakers that are roles, not names ("what did the user say" names no one).
_ROLES = frozenset({"user", "assistant", "system", "tool", "human", "ai"})
_WORD = re.compile(r"\w+", re.UNICODE)
# Two capitalised words opening a sentence: a full name ("Kenji Sato joined ...").
_OPENING_NAME = re.compile(r"(?:^|[.!?:;]\s+)([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")


def _name_words(speaker: object) -> frozenset[str]:
    """The words of a speaker's name a query may use for them (none for a role)."""
    if not isinstance(speaker, str) or speaker.strip().lower() in _ROLES:
        return frozenset()
    return frozenset(w for w in _WORD.findall(speaker.lower()) if w not in STOPWORDS)


def _names_of(hit: Hit) -> frozenset[str]:
    """Who a memory is by or about, as name words: a turn's speaker; for a
    memory written on its own (no speaker), the names in its text: words
    capitalised inside a sentence, and a capitalised pair that opens one
    ("Grace Okoye is the safety officer"; not "Green energy is ...")."""
    speaker = hit.memory.metadata.get("speaker")
    if speaker is not None or not _written(hit):
        return _name_words(speaker)
    text = f"{hit.memory.title or ''}. {hit.memory.content}"
    names = set(salient_terms(text))
    names.update(w.lower() for pair in _OPENING_NAME.findall(text) for w in pair)
    return frozenset(names - STOPWORDS - _ROLES)


def _written(hit: Hit) -> bool:
    """Whether a memory was written on its own (not a turn of a conversation)."""
    return hit.memory.session is None and hit.memory.kind is not MemoryKind.MESSAGE


def features(hits: Sequence[Hit], query: str = "") -> Floats:
    """The feature matrix of a window of hits (rows in the hits' order)
    for ``query``."""
    n = len(hits)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    scores = [hit.stage_scores for hit in hits]
    fused = [s.get("fused", 0.0) for s in scores]
    dense = [s.get("dense", 0.0) for s in scores]
    best_fused = max(fused) or 1.0
    best_dense = max(dense)
    sessions = [hit.memory.session or hit.memory.id for hit in hits]
    count: dict[str, int] = {}
    session_best: dict[str, float] = {}
    for session, value in zip(sessions, fused, strict=True):
        count[session] = count.get(session, 0) + 1
        session_best[session] = max(session_best.get(session, -math.inf), value)
    asked = frozenset(_WORD.findall(query.lower()))
    names = [_names_of(hit) for hit in hits]
    named = [bool(words & asked) for words in names]
    window_named = {
        w for words, hit_named in zip(names, named, strict=True) if hit_named for w in words
    }
    above: dict[str, int] = {}
    for i, hit in enumerate(hits):
        s, ranks, session = scores[i], hit.ranks, sessions[i]
        within = above.get(session, 0)
        above[session] = within + 1
        speaker = hit.memory.metadata.get("speaker")
        out[i] = (
            1.0 / math.sqrt(i + 1),
            s.get("final", 0.0),
            fused[i],
            fused[i] / best_fused,
            s.get("keyword", 0.0),
            float("keyword" in s),
            dense[i],
            dense[i] - best_dense,
            s.get("session_support", 0.0),
            s.get("graph", 0.0),
            math.log(max(s.get("time", 1.0), 1e-6)),
            s.get("prior", 1.0),
            math.log1p(len(hit.memory.content)) / 8.0,
            1.0 / (10 + ranks["bm25"]) if "bm25" in ranks else 0.0,
            1.0 / (10 + ranks["dense"]) if "dense" in ranks else 0.0,
            1.0 / (1 + within),
            math.log(count[session]),
            session_best[session] / best_fused,
            float(fused[i] >= session_best[session]),
            float(isinstance(speaker, str) and speaker.lower() == "assistant"),
            float(named[i]),
            float(bool(window_named - names[i])),
            s.get("part", dense[i]),
            float(_written(hit)),
        )
    return out


@dataclass(frozen=True, slots=True)
class Forest:
    """Regression trees packed into flat arrays, evaluated all at once.

    Node ``j`` splits on column ``feature[j]``: a row goes to ``left[j]``
    when its value is at most ``threshold[j]``, else to ``right[j]``; a
    leaf (``feature[j] < 0``) holds ``value[j]``. ``roots`` are the trees'
    first nodes, ``depth`` the deepest path. ``window`` is how many of a
    recall's best hits it re-orders.
    """

    feature: Ints
    threshold: Floats
    left: Ints
    right: Ints
    value: Floats
    roots: Ints
    depth: int
    window: int

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Forest:
        """A forest from its JSON form (``bench.rerank_fit`` writes it):
        ``features`` (must equal ``FEATURES``), ``window`` and ``trees``,
        each with the node arrays above, node 0 its root."""
        if tuple(data.get("features", ())) != FEATURES:
            raise ValueError(
                f"re-ranker features {data.get('features')!r} differ from this "
                f"version's {list(FEATURES)!r}: refit it with python -m bench.rerank_fit"
            )
        parts: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right")}
        values: list[float] = []
        roots: list[int] = []
        depth = 0
        for tree in data["trees"]:
            base = len(values)
            roots.append(base)
            feature = [int(f) for f in tree["feature"]]
            if any(f >= len(FEATURES) for f in feature):
                raise ValueError("a re-ranker tree splits on a feature it does not have")
            for j, f in enumerate(feature):
                leaf = f < 0
                parts["feature"].append(f)
                parts["threshold"].append(float(tree["threshold"][j]))
                parts["left"].append(base + j if leaf else base + int(tree["left"][j]))
                parts["right"].append(base + j if leaf else base + int(tree["right"][j]))
                values.append(float(tree["value"][j]))
            depth = max(depth, _depth(tree))
        return cls(
            feature=np.array(parts["feature"], dtype=np.int64),
            threshold=np.array(parts["threshold"], dtype=np.float64),
            left=np.array(parts["left"], dtype=np.int64),
            right=np.array(parts["right"], dtype=np.int64),
            value=np.array(values, dtype=np.float64),
            roots=np.array(roots, dtype=np.int64),
            depth=depth,
            window=int(data["window"]),
        )

    def predict(self, x: Floats) -> Floats:
        """The forest's value of each row of ``x`` (sum over the trees)."""
        if x.shape[0] == 0 or self.roots.size == 0:
            return np.zeros(x.shape[0], dtype=np.float64)
        node = np.repeat(self.roots[:, None], x.shape[0], axis=1)
        columns = np.arange(x.shape[0])[None, :]
        for _ in range(self.depth):
            split = self.feature[node]
            leaf = split < 0
            go_left = x[columns, np.where(leaf, 0, split)] <= self.threshold[node]
            node = np.where(leaf, node, np.where(go_left, self.left[node], self.right[node]))
        values: Floats = self.value[node].sum(axis=0)
        return values


def _depth(tree: dict[str, Any]) -> int:
    """The longest root-to-leaf path of one tree in its JSON form."""
    feature, left, right = tree["feature"], tree["left"], tree["right"]
    deepest, stack = 0, [(0, 0)]
    while stack:
        node, d = stack.pop()
        if feature[node] < 0:
            deepest = max(deepest, d)
        else:
            stack += [(int(left[node]), d + 1), (int(right[node]), d + 1)]
    return deepest


@cache
def default_forest() -> Forest:
    """The forest that ships with mindpalace (``reranker.json``)."""
    text = resources.files("mindpalace.retrieval").joinpath("reranker.json").read_text("utf-8")
    return Forest.from_dict(json.loads(text))


def reranked(hits: HitList, forest: Forest, query: str = "") -> HitList:
    """``hits`` with the best ``forest.window`` re-ordered by the forest
    (ties keep the pipeline's order) and the rest after them as they were;
    mode, notice and timings are kept."""
    head = list(hits[: forest.window])
    if len(head) < 2:
        return hits
    values = forest.predict(features(head, query))
    order = sorted(range(len(head)), key=lambda i: (-values[i], i))
    scores = sorted((hit.score for hit in head), reverse=True)
    finals = sorted((hit.stage_scores.get("final", hit.score) for hit in head), reverse=True)
    out = []
    for place, i in enumerate(order):
        stage_scores = dict(head[i].stage_scores)
        stage_scores["pipeline"] = stage_scores.get("final", head[i].score)
        stage_scores["final"] = finals[place]
        stage_scores["rerank"] = float(values[i])
        ranks = {**head[i].ranks, "pipeline": i + 1, "final": place + 1}
        out.append(replace(head[i], score=scores[place], ranks=ranks, stage_scores=stage_scores))
    result = HitList([*out, *hits[forest.window :]], mode=hits.mode, notice=hits.notice)
    result.timings = hits.timings
    return result
