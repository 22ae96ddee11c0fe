"""Keyword search cost against words other scopes hold: a timing side channel.

A caller with 50 memories searches a word only another agent's private
memories hold (``hidden``) and a word nobody holds (``absent``). Where the
search's work grows with matches the caller may not see, the first costs
more, and its time tells the caller that (and how often) the word occurs
elsewhere. Both searches alternate, each after a write (so no cache of an
earlier search serves it), on every backend named, in one run::

    python -m bench.textcost --rows 20000 --backends sqlite,postgres

Reports medians (ms) and their ratio per backend, the same for the warm
in-process keyword index recall uses once a process is warm, and on PostgreSQL the
work of the search's statements (``statement_work``: buffers touched and
rows produced, not time). A benchmark, not a test (``tests/store/test_text_cost.py`` holds
the bars).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.pgserver import ThrowawayPostgres
from mindpalace.models import NewMemory, RecallFilters, Scope
from mindpalace.store import Store
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.validation import content_hash

__all__ = ["ABSENT", "CALLER", "HIDDEN", "fill", "median_times", "statement_work"]

CALLER = Scope(agent_id="caller")
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
# The word only the other agent has, and one nobody has.
HIDDEN = "zanzibar"
ABSENT = "quixotry"


def fill(store: Store, other_rows: int) -> None:
    """``other_rows`` isolated memories of agent ``other`` holding ``HIDDEN``,
    then 50 of the caller's own, none holding it."""

    def new(agent: str, text: str) -> NewMemory:
        return NewMemory(content=text, content_hash=content_hash(text, 32), agent_id=agent)

    other = Scope(agent_id="other")
    for start in range(0, other_rows, 1000):
        items = [
            (new("other", f"note {i} about {HIDDEN} trip and plans"), f"mem_o{i}")
            for i in range(start, min(start + 1000, other_rows))
        ]
        store.add_many(items, now=NOW, scope=other)
    mine = [(new("caller", f"caller note {i} on plans"), f"mem_c{i}") for i in range(50)]
    store.add_many(mine, now=NOW, scope=CALLER)


def touch(store: Store, i: int, name: str) -> None:
    """One write by a third agent: every cache keyed by the palace's
    generation is stale afterwards."""
    text = f"touch {name} {i}"
    store.add(
        NewMemory(content=text, content_hash=content_hash(text, 32), agent_id="toucher"),
        memory_id=f"mem_t{name}{i}",
        now=NOW,
        scope=Scope(agent_id="toucher"),
    )


def search(store: Store, word: str) -> Callable[[], object]:
    """The caller's keyword search for ``word``."""
    return lambda: store.search_text([word], CALLER, RecallFilters(), limit=20)


def median_times(store: Store, runs: int = 41) -> dict[str, float]:
    """Median seconds of the hidden and the absent word's search, the two
    interleaved (which goes first alternates), each after a write."""
    calls = {"hidden": search(store, HIDDEN), "absent": search(store, ABSENT)}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(runs):
        order = sorted(calls, reverse=i % 2 == 1)
        for name in order:
            touch(store, i, name)
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


@contextmanager
def _recorded(store: PostgresStore) -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """The statements (shared SQL and parameters) ``store`` runs meanwhile."""
    statements: list[tuple[str, tuple[Any, ...]]] = []
    run = store._exec

    def spy(cur: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        statements.append((sql, tuple(params)))
        return run(cur, sql, params)

    store._exec = spy  # type: ignore[method-assign]
    try:
        yield statements
    finally:
        del store._exec


def _node_rows(node: dict[str, Any]) -> int:
    """Rows every node of a plan produced (actual rows x loops), summed."""
    own = int(node.get("Actual Rows", 0) * node.get("Actual Loops", 1))
    return own + sum(_node_rows(child) for child in node.get("Plans", ()))


def statement_work(store: PostgresStore, call: Callable[[], object]) -> dict[str, int]:
    """The work of ``call``'s statements, run again under ``EXPLAIN
    (ANALYZE, BUFFERS)``: the shared buffers they touch (hit or read) and
    the rows their plans' nodes produce. Work, not time: scheduling noise
    does not move it, and a search that reads or filters rows it may not
    show produces them at some node."""
    with _recorded(store) as statements:
        call()
    buffers = rows = 0
    with store._read() as cur:
        for sql, params in statements:
            plan = store._exec(cur, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
            top = plan.fetchone()[0][0]["Plan"]
            buffers += int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
            rows += _node_rows(top)
    return {"buffers": buffers, "rows": rows}


def warm_times(store: Store, runs: int = 41) -> dict[str, float]:
    """Median seconds of the warm in-process keyword index's scoring (what
    recall uses once a process is warm) for the hidden and the absent word,
    interleaved, under the caller's scope mask."""
    from mindpalace.retrieval.dense import DenseIndex

    index = DenseIndex(store.load_vectors("none", texts=True), generation=0)
    assert index.keyword is not None
    visible = index.scope_mask(CALLER)
    times: dict[str, list[float]] = {"hidden": [], "absent": []}
    for i in range(runs):
        for name, word in sorted({"hidden": HIDDEN, "absent": ABSENT}.items(), reverse=i % 2 == 1):
            start = time.perf_counter()
            index.keyword.scores([word], visible)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _measure(store: Store, rows: int, runs: int) -> dict[str, Any]:
    fill(store, rows)
    assert not store.search_text([HIDDEN], CALLER, RecallFilters(), limit=20)
    medians = median_times(store, runs)
    out: dict[str, Any] = {
        "hidden_ms": round(medians["hidden"] * 1000, 3),
        "absent_ms": round(medians["absent"] * 1000, 3),
        "ratio": round(medians["hidden"] / medians["absent"], 2),
    }
    warm = warm_times(store, runs)
    out["warm_index_hidden_ms"] = round(warm["hidden"] * 1000, 3)
    out["warm_index_absent_ms"] = round(warm["absent"] * 1000, 3)
    if isinstance(store, PostgresStore):
        touch(store, 0, "work")
        out["hidden_work"] = statement_work(store, search(store, HIDDEN))
        touch(store, 1, "work")
        out["absent_work"] = statement_work(store, search(store, ABSENT))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=20_000, help="the other agent's rows")
    parser.add_argument("--runs", type=int, default=41, help="searches per word")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"rows": args.rows, "runs": args.runs}
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                store: Store = SQLiteStore(Path(tmp) / "cost.db")
                try:
                    report["sqlite"] = _measure(store, args.rows, args.runs)
                finally:
                    store.close()
        elif backend == "postgres":
            server = ThrowawayPostgres(prefix="mindpalace_textcost")
            try:
                store = PostgresStore(server.create("cost"))
                try:
                    report["postgres"] = _measure(store, args.rows, args.runs)
                finally:
                    store.close()
            finally:
                server.stop()
        else:
            parser.error(f"unknown backend {backend!r}: sqlite, postgres")
        print(json.dumps({backend: report[backend]}), file=sys.stderr)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
