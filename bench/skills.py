"""Skill activation quality on the sample library (``examples/skills``).

Imports the library into a scratch palace and activates each labelled task
of ``bench/skills_queries.jsonl`` (written as users phrase tasks, not copied
from the skills). A query hits at k when any expected skill is among the
first k. Reports hit@1, hit@5 and MRR per variant and split (``dev`` is what
the activation constants were chosen on; ``test`` was not looked at for
that), and how often an off-topic task (``offtopic``, no expected skill)
activates nothing, in one run::

    python -m bench.skills                 # bundled MiniLM (the default model)
    python -m bench.skills --embedder static
    python -m bench.skills --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.skills import ActivateOptions

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "examples" / "skills"
QUERIES = Path(__file__).resolve().parent / "skills_queries.jsonl"
DEPTH = 10


@dataclass(frozen=True)
class Query:
    text: str
    expected: frozenset[str]
    split: str


def load_queries(path: Path = QUERIES) -> list[Query]:
    """The labelled tasks."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out.append(Query(record["query"], frozenset(record["expected"]), record["split"]))
    return out


def metrics(ranked: Sequence[str], expected: frozenset[str]) -> dict[str, float]:
    """hit@1, hit@5 and reciprocal rank of the first expected name."""
    first = next((i for i, name in enumerate(ranked, start=1) if name in expected), None)
    return {
        "hit@1": 1.0 if first == 1 else 0.0,
        "hit@5": 1.0 if first is not None and first <= 5 else 0.0,
        "mrr": 1.0 / first if first is not None else 0.0,
    }


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-metric means (0 for no rows)."""
    keys = ("hit@1", "hit@5", "mrr")
    return {k: (sum(r[k] for r in rows) / len(rows) if rows else 0.0) for k in keys}


VARIANTS: dict[str, ActivateOptions] = {
    "full (RRF + propagation + gating)": ActivateOptions(),
    "no propagation": replace(ActivateOptions(), spread=0.0),
    "BM25 only": replace(ActivateOptions(), dense_weight=0.0, spread=0.0),
    "dense only": replace(ActivateOptions(), sparse_weight=0.0, spread=0.0),
}


def run(embedder: str) -> dict[str, Any]:
    """Every variant over every query; returns the results table."""
    queries = load_queries()
    with tempfile.TemporaryDirectory() as scratch:
        palace = Palace(Path(scratch) / "skills.db", settings=Settings(embedder=embedder))
        started = time.perf_counter()
        report = palace.skills.import_path(LIBRARY)
        import_seconds = time.perf_counter() - started
        again = palace.skills.import_path(LIBRARY)
        results: dict[str, Any] = {
            "embedder": embedder,
            "skills": len(report.added),
            "correlations": report.correlations,
            "import_seconds": round(import_seconds, 3),
            "reimport_changed": bool(again.added or again.updated or again.changed_correlations),
            "queries": {s: sum(q.split == s for q in queries) for s in ("dev", "test", "offtopic")},
            "variants": {},
            "misses": {},
        }
        for name, options in VARIANTS.items():
            rows: dict[str, list[dict[str, float]]] = {"dev": [], "test": []}
            misses = []
            latency = []
            abstained = []
            for query in queries:
                t0 = time.perf_counter()
                hits = palace.skills.activate(query.text, limit=DEPTH, options=options)
                latency.append(time.perf_counter() - t0)
                ranked = [h.name for h in hits]
                if not query.expected:
                    abstained.append(0.0 if ranked else 1.0)
                    continue
                row = metrics(ranked, query.expected)
                rows[query.split].append(row)
                if not row["hit@5"]:
                    misses.append(
                        {"query": query.text, "expected": sorted(query.expected), "got": ranked[:5]}
                    )
            results["variants"][name] = {
                "all": mean(rows["dev"] + rows["test"]),
                "dev": mean(rows["dev"]),
                "test": mean(rows["test"]),
                "abstained": sum(abstained) / len(abstained) if abstained else 0.0,
                "ms_per_query": round(1000 * sum(latency) / len(latency), 2),
            }
            results["misses"][name] = misses
        palace.close()
    return results


def table(results: dict[str, Any]) -> str:
    """Markdown table of the results."""
    counts = results["queries"]
    lines = [
        f"Skill activation, {results['skills']} skills, {results['correlations']} correlations,"
        f" {counts['dev'] + counts['test']} queries (dev {counts['dev']},"
        f" test {counts['test']}) + {counts['offtopic']} off-topic,"
        f" embedder {results['embedder']}",
        "",
        "| variant | hit@1 | hit@5 | MRR | test hit@5 | test MRR | off-topic: none | ms/query |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in results["variants"].items():
        a, t = row["all"], row["test"]
        lines.append(
            f"| {name} | {a['hit@1']:.3f} | {a['hit@5']:.3f} | {a['mrr']:.3f}"
            f" | {t['hit@5']:.3f} | {t['mrr']:.3f} | {row['abstained']:.2f}"
            f" | {row['ms_per_query']} |"
        )
    lines.append("")
    lines.append(
        f"import: {results['import_seconds']} s; importing again changed anything:"
        f" {results['reimport_changed']}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--embedder", default="local", help="local (default), static, hashing, none"
    )
    parser.add_argument("--json", help="also write the full results (misses included) here")
    parser.add_argument("--misses", action="store_true", help="print the full variant's misses")
    args = parser.parse_args(argv)
    results = run(args.embedder)
    print(table(results))
    if args.misses:
        for miss in results["misses"][next(iter(VARIANTS))]:
            print(json.dumps(miss))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
