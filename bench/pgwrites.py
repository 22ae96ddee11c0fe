"""Bulk-write throughput on SQLite and PostgreSQL, side by side, one run.

For each backend: one LoCoMo conversation ingested with ``add_messages``
(the product's conversation ingest), the same turns written with
``remember_many`` into a fresh palace, and that palace's export restored with
``import_jsonl`` into another. Embedding is the same work on both backends,
so the ``static`` model is the default (``--embedder``)::

    python -m bench.pgwrites                       # both backends
    python -m bench.pgwrites --repeat 3            # median of three

Prints one JSON report: memories per second per operation and backend.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.locomo import data_dir, load
from bench.pgserver import ThrowawayPostgres
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.formats import read_messages


def _timed(action: Callable[[], int]) -> tuple[int, float]:
    start = time.perf_counter()
    count = action()
    return count, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", default="static", help="static (default), local, none")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--conversation", type=int, default=0, help="which LoCoMo conversation")
    args = parser.parse_args(argv)
    embedder = from_settings(Settings(embedder=args.embedder))
    conversation = load()[args.conversation]
    source = data_dir() / f"{conversation.name}.json"
    records = [
        {"content": t.text, "session": f"s{t.session}", "tags": [t.speaker.lower()]}
        for t in conversation.turns
    ]
    server = ThrowawayPostgres(prefix="mindpalace_pgwrites")
    scratch = Path(tempfile.mkdtemp(prefix="mindpalace-pgwrites-"))
    names = iter(range(1_000_000))
    results: dict[str, dict[str, list[float]]] = {}

    def fresh(backend: str) -> Palace:
        n = next(names)
        target: str | Path = scratch / f"p{n}.db"
        if backend == "postgres":
            target = server.create(f"p{n}")
        return Palace(target, embedder=embedder)

    try:
        for _ in range(args.repeat):
            for backend in ("sqlite", "postgres"):
                rates = results.setdefault(backend, {})
                with fresh(backend) as p:
                    n, s = _timed(
                        lambda p=p: len(p.add_messages(read_messages(source, format="locomo")))
                    )
                    rates.setdefault("ingest", []).append(n / s)
                with fresh(backend) as p:
                    n, s = _timed(lambda p=p: len(p.remember_many(records)))
                    rates.setdefault("remember_many", []).append(n / s)
                    out = io.StringIO()
                    p.export_jsonl(out)
                with fresh(backend) as p:
                    lines = out.getvalue().splitlines()
                    n, s = _timed(lambda p=p, lines=lines: p.import_jsonl(lines).inserted)
                    rates.setdefault("import", []).append(n / s)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "conversation": conversation.name,
        "memories": len(conversation.turns),
        "embedder": args.embedder,
        "memories_per_s": {
            b: {op: round(statistics.median(v), 1) for op, v in ops.items()}
            for b, ops in results.items()
        },
    }
    report["postgres_vs_sqlite"] = {
        op: round(
            report["memories_per_s"]["postgres"][op] / report["memories_per_s"]["sqlite"][op], 2
        )
        for op in report["memories_per_s"]["sqlite"]
    }
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
