"""What a recall reads from the store: three calls on the warm hybrid path
(what the query decides, the graph around the seeds, the memories to
rank), the palace's recorded model once, and nothing that depends on what
other scopes hold.

The store is a real one, instrumented in place (its methods counted), not
a mock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.skills import LIBRARY
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import HitList, RecallFilters
from mindpalace.retrieval import pipeline
from mindpalace.store import Store
from mindpalace.store.base import ROLES

QUERY = "What did Alice Moreno decide about the Kafka rollout?"
#: the methods of every role ``Store`` composes (but ``hash_chars``, read
#: when the store opens: no statement after that)
METHODS = sorted(
    name
    for role in ROLES
    for name, value in vars(role).items()
    if callable(value) and name[0] != "_" and name != "hash_chars"
)


class Counted:
    """Counts the store calls (outermost only) and SQL statements of a block."""

    def __init__(self, store: Store) -> None:
        self.calls: Counter[str] = Counter()
        self.statements = 0
        self._depth = 0
        self._on = False
        for name in METHODS:
            setattr(store, name, self._method(name, getattr(store, name)))
        setattr(store, "_exec", self._statement(getattr(store, "_exec")))  # noqa: B009, B010

    def _method(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._on and self._depth == 0:
                self.calls[name] += 1
            self._depth += 1
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1

        return counted

    def _statement(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._on:
                self.statements += 1
            return method(*args, **kwargs)

        return counted

    @contextmanager
    def counting(self) -> Iterator[None]:
        self.calls.clear()
        self.statements = 0
        self._on = True
        try:
            yield
        finally:
            self._on = False


def _palace(store: Store, agent: str) -> Palace:
    settings = Settings(agent_id=agent, embedder="hashing", signals=False)
    return Palace(store=store, agent_id=agent, settings=settings)


def _prepared(
    palace: Palace, query: str, filters: RecallFilters | None = None
) -> Callable[[], HitList]:
    """A warm hybrid recall through the pipeline, its indexes built first."""
    palace.recall(query)
    palace.recall(query)  # the second starts building the warm keyword and mention indexes
    index = palace.semantic.wait_for_warm()
    vector = palace.semantic.query_vector(query)
    assert index is not None and index.keyword is not None and index.mentions is not None

    def run() -> HitList:
        return pipeline.recall(
            palace.store,
            query=query,
            scope=palace.scope,
            filters=filters or RecallFilters(),
            limit=10,
            now=palace.now(),
            query_vector=vector,
            dense_index=index,
            options=palace.recall_options,
        )

    run()  # caches (co-occurrence, term counts) filled since the last write
    return run


def _remember(palace: Palace) -> None:
    palace.remember_many(
        [
            {"content": "Alice Moreno moved the Kafka cluster to Project Falcon"},
            {"content": "Alice Moreno decided the Kafka rollout waits for the audit"},
            {"content": "Bruno and Alice Moreno reviewed the Falcon rollout"},
            {"content": "the audit of Project Falcon is due in June"},
        ]
    )


def test_a_warm_hybrid_recall_reads_the_store_six_times(store: Store) -> None:
    ann = _palace(store, "ann")
    _remember(ann)
    ann.remember("Never page Alice Moreno at night", constraint=True)
    counted = Counted(store)
    run = _prepared(ann, QUERY)
    with counted.counting():
        hits = run()
    assert hits and hits.mode == "hybrid"
    assert any(hit.memory.constraint for hit in hits)
    # What the query decides, the graph's seeds, the short names linked to
    # its entities (the warm mention index keys mentions by the name used),
    # the names of the entities its second hop reached (for the reasons a
    # hit gives), the memories, and the parts of the re-ranker's window.
    assert dict(counted.calls) == {
        "query_facts": 1,
        "seed_graph": 1,
        "linked_names": 1,
        "entities_named": 1,
        "hydrate": 1,
        "part_vectors": 1,
    }
    tagged = _prepared(ann, QUERY, RecallFilters(tags=("ops",)))
    with counted.counting():
        tagged()
    assert dict(counted.calls) == {"query_facts": 1, "hydrate": 1}  # nothing tagged: no seeds


def test_reads_do_not_depend_on_other_scopes(store: Store) -> None:
    ann = _palace(store, "ann")
    bob = _palace(store, "bob")
    _remember(ann)
    bob.remember("Bob keeps a private note on zebras")
    counted = Counted(store)

    def reads() -> tuple[dict[str, int], int, list[str]]:
        run = _prepared(ann, QUERY)
        with counted.counting():
            hits = run()
        return dict(counted.calls), counted.statements, [h.memory.id for h in hits]

    before = reads()
    # Another agent's constraint about the same person, and more of its
    # memories naming her: Ann's recall reads exactly as before.
    bob.remember("Never page Alice Moreno at night", constraint=True)
    bob.remember("Alice Moreno told Bob about the Kafka rollout")
    assert reads() == before


def test_a_warm_recall_reads_the_palaces_model_once(store: Store) -> None:
    ann = _palace(store, "ann")
    _remember(ann)
    ann.skills.import_path(LIBRARY)
    counted = Counted(store)
    ann.recall(QUERY)
    ann.recall(QUERY)
    ann.semantic.wait_for_warm()
    ann.recall(QUERY)
    with counted.counting():
        hits = ann.recall(QUERY)
    assert hits.mode == "hybrid"
    # One check that the embedder is the palace's model serves the query's
    # vector, the choice of where dense search runs and the warm index.
    assert counted.calls["embedding_config"] == 1
    with counted.counting():
        ann.skills.activate("roll out a schema change to postgres with zero downtime")
    assert counted.calls["embedding_config"] == 1
