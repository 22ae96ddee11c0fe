"""The warm keyword and mention indexes are built in the background: no
recall waits for them, recall answers the same before and after they are
ready, and writes that land during a build reach them. Each build is held
open with ``SemanticIndex.warm_hook`` (no timing)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.errors import StorageError
from mindpalace.models import HitList
from mindpalace.retrieval import indexing, warming
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.sqlite import SQLiteStore

TEXTS = [
    "Ana Ruiz moved the Kafka cluster to Project Falcon",
    "the billing service deploy waits for the audit",
    "Ben Okafor reviewed the postgres migration plan",
    "kafka latency incident after the broker upgrade",
    "Project Falcon roadmap review with Ana Ruiz",
    "hiring budget for the platform team",
    "Carla Diaz asked about the invoices audit",
    "postgres vacuum runs weekly on the billing database",
]
QUERIES = ["kafka broker latency", "Ana Ruiz Falcon", "billing audit", "postgres migration"]
LIMIT = 30.0  # seconds a held build may wait before the test fails instead of hanging


class Gate:
    """A ``warm_hook`` that holds the build until ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self._open = threading.Event()

    def __call__(self) -> None:
        self.entered.set()
        assert self._open.wait(LIMIT), "the test never released the build"

    def release(self) -> None:
        self._open.set()


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    store = SQLiteStore(tmp_path / "warm.db")
    palace = Palace(store=store, settings=Settings(signals=False), embedder=HashingEmbedder())
    palace.remember_many([{"content": text} for text in TEXTS])
    yield palace
    store.close()


def _shape(hits: HitList) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(h.memory.content, round(h.score, 6), h.gates) for h in hits]


def _answers(palace: Palace, queries: list[str] = QUERIES) -> dict[str, list[object]]:
    return {q: list(_shape(palace.recall(q, limit=10))) for q in queries}


def _current(palace: Palace) -> DenseIndex:
    index = palace.semantic.dense()  # what a recall now uses
    assert index is not None
    return index


def test_the_second_recall_does_not_wait_for_the_warm_build(palace: Palace) -> None:
    gate = Gate()
    palace.semantic.warm_hook = gate
    cold = _answers(palace)  # the first recall: no warm indexes asked for
    assert _current(palace).keyword is None
    during = _answers(palace)  # the second starts the build, which is held
    assert gate.entered.wait(LIMIT)
    index = _current(palace)
    assert index.keyword is None and index.mentions is None  # served by the store
    assert during == cold
    gate.release()
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None and warm.mentions is not None
    assert _answers(palace) == cold


def test_writes_during_the_build_reach_the_warm_indexes(palace: Palace) -> None:
    gate = Gate()
    palace.semantic.warm_hook = gate
    palace.recall("kafka")
    palace.recall("kafka")  # starts the build
    assert gate.entered.wait(LIMIT)  # it has read the palace: later writes are not in it
    late = palace.remember("Zanzibar gateway timeouts reported by Dora Lindqvist")
    assert palace.recall("zanzibar gateway")[0].memory.id == late.id  # the store finds it
    gate.release()
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None and warm.mentions is not None
    assert len(warm.keyword) == len(warm) == len(TEXTS) + 1
    row = warm.row_of(late.id)
    assert row is not None
    rows, _ = warm.keyword.postings("zanzibar")
    assert row in rows.tolist()
    mentioned = warm.mentions.members(
        ["dora lindqvist"], warm.scope_mask(palace.scope), warm.table.ids, max_degree=10
    )
    assert mentioned == {"dora lindqvist": (1, [late.id])}
    assert palace.recall("zanzibar gateway")[0].memory.id == late.id
    # And the warm answers are the store's answers.
    queries = [*QUERIES, "zanzibar gateway timeouts", "Dora Lindqvist"]
    warm_answers = _answers(palace, queries)
    warm.keyword = None
    warm.mentions = None
    assert _answers(palace, queries) == warm_answers


def test_many_writes_during_the_build_are_indexed_in_another_round(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "ADOPT_ROWS", 2)
    gate = Gate()
    palace.semantic.warm_hook = gate
    palace.recall("kafka")
    palace.recall("kafka")
    assert gate.entered.wait(LIMIT)
    first = palace.semantic.warming
    late = [palace.remember(f"late note {i} about quokka sightings") for i in range(5)]
    gate.release()
    assert first is not None and first.wait(LIMIT)
    palace.recall("kafka")  # five rows behind: a second round starts from the first's result
    second = palace.semantic.warming
    assert second is not None and second is not first and second.base is first.result
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None
    assert len(warm.keyword) == len(TEXTS) + 5
    found = {h.memory.id for h in palace.recall("quokka sightings", limit=10)}
    assert found == {m.id for m in late}


@pytest.mark.parametrize("hard", [True, False])
def test_a_build_of_rows_changed_since_is_dropped_a_flag_keeps_it(
    palace: Palace, hard: bool
) -> None:
    """A delete during a background build makes its snapshot stale (built
    anew); an archive changes a flag, the rows are the same: adopted."""
    gate = Gate()
    palace.semantic.warm_hook = gate
    palace.recall("kafka")
    palace.recall("kafka")
    assert gate.entered.wait(LIMIT)
    build = palace.semantic.warming
    gone = palace.recall("kafka latency incident")[0].memory
    palace.forget(gone.id, hard=hard)
    gate.release()
    assert build is not None and build.wait(LIMIT)
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None
    row = warm.row_of(gone.id)
    if hard:
        assert warm.epoch != build.snapshot.epoch  # built anew, not the stale build adopted
        assert row is None
    else:
        assert warm.epoch == build.snapshot.epoch  # the build adopted
        assert row is not None and bool(warm.table.archived[row])
    assert palace.semantic.warming is None
    assert all(h.memory.id != gone.id for h in palace.recall("kafka latency incident"))


def test_concurrent_recalls_see_whole_indexes(palace: Palace) -> None:
    gate = Gate()
    palace.semantic.warm_hook = gate
    expected = _answers(palace)  # the store's answers: the build started is held
    errors: list[BaseException] = []
    seen: list[dict[str, list[object]]] = []

    def recalling() -> None:
        try:
            for _ in range(4):
                seen.append(_answers(palace))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=recalling) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert gate.entered.wait(LIMIT)
    gate.release()  # the build finishes and is adopted while they recall
    for thread in threads:
        thread.join(LIMIT)
    assert not errors
    assert seen and all(answer == expected for answer in seen)
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None
    assert _answers(palace) == expected


def test_a_failed_build_leaves_recall_on_the_store(palace: Palace) -> None:
    def broken() -> None:
        raise OSError("disk unplugged")

    palace.semantic.warm_hook = broken
    cold = _answers(palace)
    build = palace.semantic.warming
    assert build is not None and build.wait(LIMIT)
    assert palace.semantic.warm_error == "OSError: disk unplugged"
    assert _answers(palace) == cold  # still answered, by the store
    with pytest.raises(StorageError, match="disk unplugged"):
        palace.semantic.wait_for_warm()


def test_a_large_palace_is_indexed_by_a_child_process(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _answers(palace)
    index = palace.semantic.dense()
    assert index is not None
    monkeypatch.setattr(warming, "PROCESS_ROWS", 1)
    child = warming.WarmBuild(palace.store, index).start()
    assert child.wait(LIMIT) and child.error is None and child.in_process
    monkeypatch.setattr(warming, "PROCESS_ROWS", 10**9)
    here = warming.WarmBuild(palace.store, index).start()
    assert here.wait(LIMIT) and here.error is None and not here.in_process
    assert child.result is not None and here.result is not None
    a, b = child.result, here.result
    assert a.keyword is not None and b.keyword is not None
    assert a.mentions is not None and b.mentions is not None
    visible = index.scope_mask(palace.scope)
    for query in ["kafka", "ana", "audit", "postgres", "falcon"]:
        assert a.keyword.scores([query], visible).tolist() == (
            b.keyword.scores([query], visible).tolist()
        )
    names = ["ana ruiz", "project falcon", "carla diaz", "ben okafor"]
    assert a.mentions.members(names, visible, index.table.ids, max_degree=10) == (
        b.mentions.members(names, visible, index.table.ids, max_degree=10)
    )
    monkeypatch.setattr(warming, "PROCESS_ROWS", 1)
    warm = palace.semantic.wait_for_warm()
    assert warm is not None and warm.keyword is not None
    assert _answers(palace) == cold
