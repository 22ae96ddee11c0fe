"""Store round trips per recall: how many times recall calls the store, and
how many SQL statements those calls run::

    python -m bench.roundtrips                         # SQLite, 3,000 memories
    python -m bench.roundtrips --backends sqlite,postgres --size 5000 --by-method

A deterministic synthetic palace (``corpus.py``: several agents, visibilities,
sessions, named people and projects) plus, per agent, constraints and dated
events, so every stage of the pipeline has something to read: the
unknown-entity gate, keyword and dense search, graph propagation, event
anchors and the time prior, hydration, constraints. Queries are the speed
suite's plus questions that name times and events and ask when.

The store is wrapped, not mocked: every method of the ``Store`` protocol
counts its calls from outside the store (a method calling another counts
once), and ``_exec`` / ``_exec_many`` count the statements sent. Each
configuration is a real recall:

* ``palace warm``: ``Palace.recall`` once the warm indexes exist (its own
  reads included: change counters, scorer, the recall signal written);
* ``warm``: ``pipeline.recall`` over the warm dense, keyword and mention
  indexes (the steady state of a long-lived process);
* ``warm, tag filter``: the same with a tag filter (the store names the
  memories that carry the tag);
* ``warm, scorer``: the same re-ranked by the cold-start learned scorer
  (which reads the agent's feedback counts);
* ``cold``: ``pipeline.recall`` over a dense index without the keyword and
  mention indexes (a process's first recall on SQLite);
* ``text``: ``pipeline.recall`` without embeddings (keyword search alone).

Figures are medians over the queries (and the mean beside it), per recall.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.corpus import AGENTS, FIRST, PROJECTS, START, agent_groups, queries, records
from bench.pgserver import ThrowawayPostgres
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.models import HitList, RecallFilters
from mindpalace.retrieval import pipeline
from mindpalace.retrieval import scorer as learned
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.store import Store
from mindpalace.store.base import ROLES
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore

#: the methods of the roles the Store protocol composes (what recall may call)
METHODS = tuple(
    sorted(
        name
        for role in ROLES
        for name, value in vars(role).items()
        if callable(value) and not name.startswith("_")
    )
)
EVENTS = ("the trip", "the offsite", "the launch party", "the hackathon")
#: the default constants, without the graph's time budget (module docstring)
OPTIONS = RecallOptions()


@dataclass(slots=True)
class Tally:
    """Counts of one recall: store calls by method, and SQL statements."""

    calls: Counter[str] = field(default_factory=Counter)
    statements: int = 0
    depth: int = 0


class CountingStore:
    """Counts what is asked of a real store by wrapping its methods in place."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.tally = Tally()
        for name in METHODS:
            setattr(store, name, self._method(name, getattr(store, name)))
        for name in ("_exec", "_exec_many"):
            if hasattr(store, name):
                setattr(store, name, self._statement(getattr(store, name)))

    def _method(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            tally = self.tally
            if tally.depth == 0:
                tally.calls[name] += 1
            tally.depth += 1
            try:
                result = method(*args, **kwargs)
                if isinstance(result, Iterator):
                    return list(result)  # iterate inside the count
                return result
            finally:
                tally.depth -= 1

        return counted

    def _statement(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.tally.statements += 1
            return method(*args, **kwargs)

        return counted

    @contextmanager
    def counting(self) -> Iterator[Tally]:
        self.tally = Tally()
        try:
            yield self.tally
        finally:
            self.tally = Tally()  # what runs between counted recalls goes here


def _name(rng: random.Random) -> str:
    """A person or a project the corpus also names."""
    return rng.choice(FIRST) if rng.random() < 0.6 else f"Project {rng.choice(PROJECTS)}"


def _extras(agent: str, rng_seed: int) -> list[dict[str, Any]]:
    """Constraints and dated events for one agent (the corpus has neither)."""
    rng = random.Random(rng_seed)
    out: list[dict[str, Any]] = []
    for i in range(6):
        name = _name(rng)
        out.append(
            {
                "content": f"Never change {name} without a review by the on-call lead.",
                "constraint": True,
                "category": "rule",
                "created_at": (START + timedelta(days=3 * i)).isoformat(),
            }
        )
    for i, event in enumerate(EVENTS):
        name = _name(rng)
        when = START + timedelta(days=5 + 7 * i)
        out.append(
            {
                "content": f"{name} and I came back from {event[4:]} on {when:%d %B %Y}.",
                "category": "event",
                "created_at": when.isoformat(),
            }
        )
    return out


def _queries(count: int, size: int) -> list[tuple[str, str]]:
    """(agent, text): the speed suite's queries and questions about time."""
    rng = random.Random(7)
    out = [(q.agent, q.text) for q in queries(count, size)]
    for i in range(max(1, count // 3)):
        agent = AGENTS[i % len(AGENTS)]
        name = _name(rng)
        event = EVENTS[i % len(EVENTS)]
        out.append(
            (
                agent,
                (
                    f"What did {name} decide before {event}?",
                    f"When did {name} deploy the release?",
                    f"What happened with {name} last week?",
                )[i % 3],
            )
        )
    return out


def build(store: Store, size: int, settings: Settings) -> dict[str, Palace]:
    """The synthetic palace in ``store``, one palace view per agent."""
    embedder = HashingEmbedder()
    now = START + timedelta(seconds=600 * size + 86_400)
    palaces = {
        agent: Palace(
            store=store,
            agent_id=agent,
            groups=agent_groups(agent),
            settings=settings,
            embedder=embedder,
            clock=lambda now=now: now,
            recall_options=OPTIONS,
        )
        for agent in AGENTS
    }
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for record in records(size):
        by_agent.setdefault(record.agent, []).append(record.fields)
    for n, agent in enumerate(AGENTS):
        by_agent.setdefault(agent, []).extend(_extras(agent, n))
    for agent, fields in by_agent.items():
        for i in range(0, len(fields), 500):
            palaces[agent].remember_many(fields[i : i + 500])
    return palaces


def _cold_index(palace: Palace) -> DenseIndex:
    """A dense index without the keyword and mention indexes."""
    warm = palace.semantic.dense()
    assert warm is not None
    table = palace.store.load_vectors(warm.model)
    generation, epoch, _, _ = palace.store.change_counters()
    return DenseIndex(table, generation=generation, epoch=epoch, model=warm.model)


def measure(
    store: Store, counter: CountingStore, palaces: dict[str, Palace], asked: list[tuple[str, str]]
) -> dict[str, list[Tally]]:
    """Tallies per configuration, one per query."""
    tag = RecallFilters(tags=("ops",))
    out: dict[str, list[Tally]] = {}
    cold = {agent: _cold_index(p) for agent, p in palaces.items()}
    for agent_id, text in asked:
        palace = palaces[agent_id]
        palace.recall(text)  # warms the indexes (and remembers the query's vector)
        vector = palace.semantic.query_vector(text)
        warm = palace.semantic.dense()

        def run(
            *,
            filters: RecallFilters | None = None,
            dense: DenseIndex | None = warm,
            scorer: learned.ScorerWeights | None = None,
            palace: Palace = palace,
            text: str = text,
            vector: Any = vector,
        ) -> HitList:
            return pipeline.recall(
                store,
                query=text,
                scope=palace.scope,
                filters=filters or RecallFilters(),
                limit=10,
                now=palace.now(),
                query_vector=vector if dense is not None else None,
                dense_index=dense,
                options=palace.recall_options,
                scorer=scorer,
            )

        runs: dict[str, Callable[[], object]] = {
            "palace warm": lambda palace=palace, text=text: palace.recall(text),
            "warm": run,
            "warm, tag filter": lambda: run(filters=tag),
            "warm, scorer": lambda: run(scorer=learned.COLD_START),
            "cold": lambda agent_id=agent_id: run(dense=cold[agent_id]),
            "text": lambda: run(dense=None),
        }
        for name, call in runs.items():
            with counter.counting() as tally:
                call()
            out.setdefault(name, []).append(tally)
    return out


def report(backend: str, results: dict[str, list[Tally]], *, by_method: bool) -> str:
    lines = [
        f"### {backend}",
        "",
        "| recall | store calls, median (mean) | SQL statements, median (mean) |",
        "|---|---|---|",
    ]
    for name, tallies in results.items():
        calls = [sum(t.calls.values()) for t in tallies]
        statements = [t.statements for t in tallies]
        lines.append(
            f"| {name} | {statistics.median(calls):g} ({statistics.mean(calls):.2f})"
            f" | {statistics.median(statements):g} ({statistics.mean(statements):.2f}) |"
        )
    if by_method:
        for name, tallies in results.items():
            total: Counter[str] = Counter()
            for t in tallies:
                total.update(t.calls)
            parts = ", ".join(
                f"{method} {count / len(tallies):.2f}" for method, count in sorted(total.items())
            )
            lines.append(f"\n{name}: {parts}")
    return "\n".join(lines)


def run_backend(backend: str, size: int, count: int, *, by_method: bool) -> str:
    settings = Settings(embedder="hashing", signals=True)
    with tempfile.TemporaryDirectory() as scratch:
        server = None
        store: Store
        if backend == "sqlite":
            store = SQLiteStore(Path(scratch) / "palace.db")
        else:
            server = ThrowawayPostgres(prefix="mindpalace_roundtrips")
            store = PostgresStore(server.create())
        try:
            palaces = build(store, size, settings)
            counter = CountingStore(store)
            results = measure(store, counter, palaces, _queries(count, size))
            return report(backend, results, by_method=by_method)
        finally:
            store.close()
            if server is not None:
                server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=3000, help="memories (default 3000)")
    parser.add_argument("--queries", type=int, default=45, help="corpus queries (default 45)")
    parser.add_argument("--backends", default="sqlite", help="sqlite, postgres (default sqlite)")
    parser.add_argument("--by-method", action="store_true", help="mean calls per store method")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - {"sqlite", "postgres"})
    if unknown or not backends:
        parser.error(f"unknown backend(s) {unknown}; valid options: sqlite, postgres")
    print(f"{args.size} memories, {datetime.now():%Y-%m-%d}\n")
    for backend in backends:
        print(run_backend(backend, args.size, args.queries, by_method=args.by_method))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
