"""Fit the re-ranker (``mindpalace.retrieval.reranker``) on the three
benchmarks' development splits (LoCoMo, LongMemEval_S and the everyday
palaces), and say how it does on what it was not fitted on::

    python -m bench.rerank_fit                  # cross-validate, then fit and write
    python -m bench.rerank_fit --check          # cross-validate only
    python -m bench.rerank_fit --cache DIR      # keep the palaces (default bench/.cache/rerank)

Needs LightGBM (``pip install -e '.[fit]'``), which only fitting uses: the
product evaluates the written trees with numpy.

Every question of LongMemEval_S dev (the static model unless
``--lme-embedder local``, one palace per question, as ``bench.longmemeval``
builds it) and of LoCoMo dev (the
default model, as ``bench.quality`` builds it) is recalled with the
re-ranker off; the best ``WINDOW`` hits become one group of rows
(``reranker.features``), labelled by whether each is evidence. The trees
are fitted by LambdaRank. The everyday palaces of the development split
(``bench.everyday``, the default model) add one group per answerable
question; their held-out palaces are never fitted on. Held-out figures:
each LoCoMo conversation left out in turn (the trees fitted on the other
conversations and on the rest), LongMemEval in ``FOLDS`` folds of questions,
and each everyday development palace left out in turn. The public datasets
are read in place (``../shared/data``); nothing is copied.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench import everyday, locomo
from bench import longmemeval as lme
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.texts import vector_key
from mindpalace.formats import read_messages
from mindpalace.models import HitList
from mindpalace.retrieval import pipeline, reranker
from mindpalace.retrieval.options import RecallOptions

WINDOW = 20
FOLDS = 5
SEED = 7
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 50,
    "lambdarank_truncation_level": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "seed": SEED,
    "num_threads": 1,
    "deterministic": True,
    "verbose": -1,
}
ROUNDS = 200
# More evidence from a stage never lowers a memory: the trees may only rise
# with these (LightGBM's monotone constraints). Held out, this keeps LoCoMo's
# session Hit@1 (0.760 without, 0.772 with) for 0.003-0.009 on LongMemEval.
RISING = frozenset(
    {
        "place",
        "final",
        "fused",
        "fused_relative",
        "keyword",
        "dense",
        "dense_gap",
        "session_support",
        "graph",
        "time",
        "keyword_place",
        "dense_place",
        "part",
    }
)
PARAMS["monotone_constraints"] = [1 if name in RISING else 0 for name in reranker.FEATURES]
PARAMS["monotone_constraints_method"] = "basic"
OUT = Path(__file__).resolve().parents[1] / "src/mindpalace/retrieval/reranker.json"
CACHE = Path(__file__).resolve().parent / ".cache" / "rerank"
# The windows the trees learn from: the stages without the trees, and the
# graph's time budget lifted (on a loaded machine it cuts the second hop
# now and then, and a refit would differ from run to run).
# The newer-first rule runs after the trees: they learn from the order before it.
OFF = replace(RecallOptions(), rerank=False, newer_first=False, answer_support=False)


@dataclass
class Group:
    """One question's window: its features, labels and ids, and how to
    score an order of it."""

    bench: str  # "locomo", "longmemeval" or "everyday"
    key: str  # the conversation (LoCoMo), the question id or the palace (everyday)
    kind: str  # the question type (LongMemEval) or category (LoCoMo)
    x: np.ndarray
    y: np.ndarray
    ids: list[str]
    score: Any  # ranked ids -> metrics


def _built(path: Path, build: Any) -> Path:
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
        build(tmp)
        os.replace(tmp, path)
    return path


def _window(palace: Palace, hits: HitList, key: str, query: str) -> tuple[np.ndarray, list[str]]:
    """The window's features (with its parts' cosines, which a recall adds
    only when it re-ranks) and its turn ids."""
    semantic = palace.semantic
    vector = semantic.query_vector(query)
    if vector is not None and semantic.embedder is not None:
        model = vector_key(semantic.embedder.config)
        hits = pipeline.with_parts(palace.engine.store, hits, model, vector, WINDOW)
    head = list(hits[:WINDOW])
    return reranker.features(head, query), [str(h.memory.metadata[key]) for h in head]


def longmemeval_groups(cache: Path, model: str = "static") -> Iterator[Group]:
    """LongMemEval_S dev: one group per scored question, its palace made
    with ``model``."""
    embedder = from_settings(Settings(embedder=model))
    suffix = "" if model == "static" else f"-{model}"
    (cache / "longmemeval").mkdir(parents=True, exist_ok=True)
    for q in lme.load():
        if q.abstention or not q.evidence:
            continue

        def build(tmp: Path, q: lme.LmeQuestion = q) -> None:
            with Palace(tmp, embedder=embedder, clock=lambda: q.when) as palace:
                palace.add_messages(lme._messages(q))
                palace.wait_for_vectors()

        path = _built(cache / "longmemeval" / f"{q.question_id}{suffix}.db", build)
        with Palace(path, embedder=embedder, clock=lambda q=q: q.when) as palace:
            palace.recall_options = OFF
            palace.engine.semantic.wait_for_warm()  # recall as a palace in use does
            hits = palace.recall(q.text, limit=WINDOW)
            x, ids = _window(palace, hits, "turn_id", q.text)
        session_of = {t.turn_id: s.session_id for s in q.sessions for t in s.turns}

        def score(
            ranked: list[str], q: lme.LmeQuestion = q, s: Any = session_of
        ) -> dict[str, float]:
            return lme.question_metrics(q, ranked, session_of=s)

        y = np.array([i in q.evidence for i in ids], dtype=np.float64)
        yield Group("longmemeval", q.question_id, q.question_type, x, y, ids, score)


def locomo_groups(cache: Path) -> Iterator[Group]:
    """LoCoMo dev: one group per question, keyed by its conversation."""
    embedder = from_settings(Settings())
    (cache / "locomo").mkdir(parents=True, exist_ok=True)
    for c in locomo.load():
        after = c.turns[-1].when + timedelta(days=1)

        def build(tmp: Path, c: locomo.Conversation = c, after: Any = after) -> None:
            with Palace(tmp, embedder=embedder, clock=lambda: after) as palace:
                palace.add_messages(
                    read_messages(locomo.data_dir() / f"{c.name}.json", format="locomo"),
                    dates=True,
                )
                palace.wait_for_vectors()  # a slow model's bulk write is embedded after it

        path = _built(cache / "locomo" / f"{c.name}-{Settings().embedder}.db", build)
        with Palace(path, embedder=embedder, clock=lambda after=after: after) as palace:
            palace.recall_options = OFF
            palace.engine.semantic.wait_for_warm()
            for question in c.questions:
                hits = palace.recall(question.text, limit=WINDOW)
                x, ids = _window(palace, hits, "dia_id", question.text)
                evidence = frozenset(question.evidence)

                def score(ranked: list[str], e: frozenset[str] = evidence) -> dict[str, float]:
                    return locomo.turn_metrics(ranked, e)

                y = np.array([i in evidence for i in ids], dtype=np.float64)
                yield Group("locomo", c.name, str(question.category), x, y, ids, score)


def everyday_groups(cache: Path, split: str = "dev") -> Iterator[Group]:
    """The everyday palaces of ``split`` (facts among chat, bench.everyday),
    with the default model: one group per answerable question, keyed by palace."""
    embedder = from_settings(Settings())
    scratch = cache / "everyday"
    scratch.mkdir(parents=True, exist_ok=True)
    for file in everyday.split_files(everyday.palace_files(), split):
        data = everyday.load(file)
        path = scratch / f"{data.name}-{Settings().embedder}.db"
        for suffix in ("", "-wal", "-shm"):  # seconds to build: always fresh
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        palace, _ = everyday.build_palace(data, path, embedder)
        with palace:
            palace.recall_options = OFF
            for question in data.questions:
                if not question.answerable:
                    continue
                hits = palace.recall(question.text, limit=WINDOW)
                x, ids = _window(palace, hits, "key", question.text)

                def score(ranked: list[str], q: everyday.Question = question) -> dict[str, float]:
                    keyed = [{"key": key} for key in ranked]
                    return dict(everyday.question_metrics(q, keyed, relevance=False))

                y = np.array([i in question.evidence for i in ids], dtype=np.float64)
                yield Group("everyday", data.name, question.type, x, y, ids, score)


def fit(groups: Sequence[Group]) -> Any:
    """LambdaRank trees over ``groups`` (LightGBM's booster)."""
    import lightgbm  # fitting only: the product never imports it

    used = [g for g in groups if len(g.ids)]
    data = lightgbm.Dataset(
        np.vstack([g.x for g in used]),
        np.concatenate([g.y for g in used]),
        group=[len(g.ids) for g in used],
        feature_name=list(reranker.FEATURES),
    )
    return lightgbm.train(PARAMS, data, num_boost_round=ROUNDS)


def _flat(root: dict[str, Any]) -> dict[str, list[Any]]:
    """One of LightGBM's nested trees as flat node arrays, node 0 its root."""
    names = ("feature", "threshold", "left", "right", "value")
    nodes: dict[str, list[Any]] = {k: [] for k in names}

    def add(node: dict[str, Any]) -> int:
        j = len(nodes["feature"])
        for column in nodes.values():
            column.append(0)
        if "split_feature" not in node:
            nodes["feature"][j] = -1
            nodes["value"][j] = float(node.get("leaf_value", 0.0))
            return j
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r}")
        nodes["feature"][j] = int(node["split_feature"])
        nodes["threshold"][j] = float(node["threshold"])
        nodes["left"][j] = add(node["left_child"])
        nodes["right"][j] = add(node["right_child"])
        return j

    add(root)
    return nodes


def to_forest(booster: Any) -> dict[str, Any]:
    """The booster's trees in ``reranker.Forest``'s JSON form."""
    trees = [_flat(info["tree_structure"]) for info in booster.dump_model()["tree_info"]]
    return {"features": list(reranker.FEATURES), "window": WINDOW, "trees": trees}


def evaluate(groups: Sequence[Group], forest: reranker.Forest | None) -> list[dict[str, float]]:
    """Each group's metrics under the forest's order (None: the pipeline's)."""
    out = []
    for g in groups:
        if forest is None or len(g.ids) < 2:
            order = list(range(len(g.ids)))
        else:
            values = forest.predict(g.x)
            order = sorted(range(len(g.ids)), key=lambda i: (-values[i], i))
        out.append(g.score([g.ids[i] for i in order]))
    return out


LOCOMO_KEYS = ("hit@10", "mrr", "session_hit@1", "recall@10", "ndcg@10")
LME_KEYS = ("turn_recall_any@5", "turn_recall_all@10", "turn_ndcg@10", "session_recall_all@5")


def _mean(rows: Sequence[dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {k: statistics.fmean(r[k] for r in rows) for k in keys}


EVERYDAY_KEYS = ("hit1", "hit5", "rr")  # bench.everyday.question_metrics' names


def held_out(
    loc: Sequence[Group], lme_groups: Sequence[Group], days: Sequence[Group] = ()
) -> dict[str, Any]:
    """Pipeline order against held-out re-ranked order, every benchmark:
    a LoCoMo conversation or an everyday palace left out in turn, LongMemEval
    in folds of questions."""
    conversations = sorted({g.key for g in loc})
    loc_out: list[dict[str, float]] = []
    for name in conversations:
        train = [g for g in loc if g.key != name] + list(lme_groups) + list(days)
        forest = reranker.Forest.from_dict(to_forest(fit(train)))
        loc_out += evaluate([g for g in loc if g.key == name], forest)
    keys = [g.key for g in lme_groups]
    random.Random(SEED).shuffle(keys)
    fold = {k: i % FOLDS for i, k in enumerate(keys)}
    lme_out: dict[str, dict[str, float]] = {}
    for f in range(FOLDS):
        test = [g for g in lme_groups if fold[g.key] == f]
        train = [g for g in lme_groups if fold[g.key] != f] + list(loc) + list(days)
        forest = reranker.Forest.from_dict(to_forest(fit(train)))
        for g, m in zip(test, evaluate(test, forest), strict=True):
            lme_out[g.key] = m
    lme_rows = [lme_out[g.key] for g in lme_groups]
    base_lme = evaluate(lme_groups, None)
    by_type: dict[str, Any] = {}
    for kind in sorted({g.kind for g in lme_groups}):
        picks = [i for i, g in enumerate(lme_groups) if g.kind == kind]
        by_type[kind] = {
            "questions": len(picks),
            "pipeline": _mean([base_lme[i] for i in picks], LME_KEYS),
            "reranked": _mean([lme_rows[i] for i in picks], LME_KEYS),
        }
    days_out: list[dict[str, float]] = []
    for name in sorted({g.key for g in days}):
        train = [g for g in days if g.key != name] + list(loc) + list(lme_groups)
        forest = reranker.Forest.from_dict(to_forest(fit(train)))
        days_out += evaluate([g for g in days if g.key == name], forest)
    ordered_days = [g for name in sorted({g.key for g in days}) for g in days if g.key == name]
    everyday_report = (
        {
            "questions": len(days),
            "pipeline": _mean(evaluate(ordered_days, None), EVERYDAY_KEYS),
            "reranked, palace left out": _mean(days_out, EVERYDAY_KEYS),
        }
        if days
        else {}
    )
    return {
        "everyday": everyday_report,
        "locomo": {
            "questions": len(loc),
            "pipeline": _mean(evaluate(loc, None), LOCOMO_KEYS),
            "reranked, conversation left out": _mean(loc_out, LOCOMO_KEYS),
        },
        "longmemeval": {
            "questions": len(lme_groups),
            "pipeline": _mean(base_lme, LME_KEYS),
            f"reranked, {FOLDS} folds": _mean(lme_rows, LME_KEYS),
            "by type": by_type,
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rerank_fit", description=__doc__)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where palaces are kept")
    parser.add_argument("--check", action="store_true", help="cross-validate only, write nothing")
    parser.add_argument("--json", type=Path, help="write the held-out figures here too")
    parser.add_argument(
        "--lme-embedder",
        choices=("static", "local"),
        default="static",
        help="the LongMemEval palaces' model (default static; LoCoMo's is the default model)",
    )
    parser.add_argument(
        "--no-everyday",
        action="store_true",
        help="leave out the everyday palaces' development split",
    )
    args = parser.parse_args(argv)
    for needed in (lme.data_file(), locomo.data_dir()):
        if not needed.exists():
            print(f"skipped: {needed} is absent (the development splits are read in place)")
            return 0
    loc = list(locomo_groups(args.cache))
    lme_groups = list(longmemeval_groups(args.cache, args.lme_embedder))
    days = [] if args.no_everyday else list(everyday_groups(args.cache))
    report = held_out(loc, lme_groups, days)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    if not args.check:
        forest = to_forest(fit([*loc, *lme_groups, *days]))
        forest["fitted_on"] = {
            "locomo": len(loc),
            "longmemeval": len(lme_groups),
            "everyday": len(days),
            "longmemeval_model": args.lme_embedder,
            "rounds": ROUNDS,
        }
        OUT.write_text(json.dumps(forest, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {OUT} ({len(forest['trees'])} trees)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
