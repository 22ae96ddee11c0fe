"""The HNSW graph proposes, the exact matrix scores: recall through the graph
answers as exact recall does, under every scope; the graph never proposes a
row the caller may not see; it follows writes, deletions and re-embeddings."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.models import HitList
from mindpalace.retrieval import ann, dense, warm_arrays
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.store.base import VectorTable
from mindpalace.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(not ann.available(), reason="faiss is not installed")


@pytest.fixture(autouse=True)
def _graph_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small palaces here stand for big ones: the graph is asked whenever
    more than a quarter of the rows are visible (not only past 20,000)."""
    monkeypatch.setattr(dense, "GATHER_ROWS", 0)


PEOPLE = ["Ana Ruiz", "Ben Okafor", "Carla Diaz", "Project Falcon", "the Billing service"]
TOPICS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue "
    "latency dashboards incident postmortem budget hiring roadmap"
).split()
AGENTS = [("ann", ("ops",)), ("bob", ("ops",)), ("cy", ("sales",))]
QUERIES = [
    "what did we decide about the Billing service deploy",
    "Ana Ruiz invoices audit",
    "kafka latency incident",
    "Project Falcon roadmap review",
    "postgres migration rollback plan",
    "hiring budget",
]


def _unit(rows: int, dims: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _table(matrix: np.ndarray, seqs: np.ndarray | None = None) -> VectorTable:
    seqs = np.arange(1, matrix.shape[0] + 1) if seqs is None else seqs
    rows = [
        (f"m{int(s)}", "a", "isolated", "", "", 0, 0, "unknown", "semantic", "fact", 0.0,
         matrix[i].tobytes(), "", "manual", int(s), "memory", "", 0)
        for i, s in enumerate(seqs)
    ]  # fmt: skip
    return VectorTable.from_rows(rows, matrix.shape[1])


@settings(max_examples=25, deadline=None)
@given(share=st.floats(0.05, 1.0), k=st.integers(1, 60), seed=st.integers(0, 10_000))
def test_the_graph_proposes_only_allowed_rows(share: float, k: int, seed: int) -> None:
    matrix = _unit(600, seed=1)
    table = _table(matrix)
    graph = ann.AnnIndex(matrix.shape[1])
    graph.sync(table, wait=True)
    rng = np.random.default_rng(seed)
    allowed = rng.random(600) < share
    found = graph.search(matrix[seed % 600], allowed, graph.labels_of(table), k)
    assert found is not None
    assert allowed[found].all()
    if share >= 0.3:  # recall uses the graph only when many rows are visible
        assert len(found) == min(k, int(allowed.sum()))


def test_the_graph_finds_the_exact_neighbours() -> None:
    matrix = _unit(3_000, dims=48, seed=2)
    table = _table(matrix)
    graph = ann.AnnIndex(matrix.shape[1])
    graph.sync(table, wait=True)
    labels = graph.labels_of(table)
    allowed = np.ones(3_000, dtype=bool)
    allowed[::3] = False
    recall = []
    for q in range(0, 3_000, 60):
        found = graph.search(matrix[q], allowed, labels, 10)
        assert found is not None
        exact = np.argsort(-np.where(allowed, matrix @ matrix[q], -np.inf))[:10]
        recall.append(len(set(found.tolist()) & set(exact.tolist())) / 10)
    assert np.mean(recall) >= 0.95


def test_a_graph_read_in_place_from_a_file_searches_and_grows(tmp_path: Path) -> None:
    # A warm file's graph is read by faiss where the file is mapped (no
    # copy); growing it copies it first, as faiss aborts the process when
    # asked to grow a graph it reads in place. The same answers either way.
    matrix = _unit(1_500, dims=48, seed=4)
    built = ann.AnnIndex(matrix.shape[1])
    built.sync(_table(matrix[:1_000]), wait=True)
    saved = built.saved()
    assert saved is not None
    file = tmp_path / "graph.bin"
    with open(file, "wb") as handle:
        warm_arrays.dump(handle, {}, {"graph": saved[0], "seqs": saved[1]})
    with open(file, "rb") as handle:
        _, arrays = warm_arrays.load(handle)
    graph = ann.AnnIndex.restored(matrix.shape[1], arrays["graph"], arrays["seqs"])
    assert graph._view is not None and not graph._view.flags.writeable
    first = _table(matrix[:1_000])
    allowed = np.ones(1_000, dtype=bool)
    for q in range(0, 1_000, 97):
        mapped = graph.search(matrix[q], allowed, graph.labels_of(first), 10)
        own = built.search(matrix[q], allowed, built.labels_of(first), 10)
        assert mapped is not None and own is not None and mapped.tolist() == own.tolist()
    whole = _table(matrix)
    graph.sync(whole, wait=True)  # 500 rows past the file
    assert graph._view is None and len(graph) == 1_500
    found = graph.search(matrix[1_200], np.ones(1_500, dtype=bool), graph.labels_of(whole), 1)
    assert found is not None and found.tolist() == [1_200]
    with open(file, "rb") as handle:  # the file was never written
        assert warm_arrays.load(handle)[1]["graph"].tobytes() == saved[0].tobytes()


def test_labels_follow_deleted_rows_and_new_vectors() -> None:
    matrix = _unit(300, seed=3)
    table = _table(matrix)
    graph = ann.AnnIndex(matrix.shape[1])
    graph.sync(table, wait=True)
    # Rows 10 and 20 deleted (the table shrinks, seqs stay), row 30 re-embedded.
    keep = np.setdiff1d(np.arange(300), [10, 20])
    changed = matrix[keep].copy()
    new_row = int(np.searchsorted(keep, 30))
    changed[new_row] = -matrix[30]
    after = _table(changed, seqs=keep + 1)
    labels = graph.labels_of(after)
    assert (labels == -1).sum() == 2
    assert labels[10] == -1 and labels[20] == -1 and labels[31] == int(np.searchsorted(keep, 31))
    graph.refresh(table, after)
    assert len(graph) == 301  # the new vector of seq 31 was added under a new label
    found = graph.search(-matrix[30], np.ones(len(after), bool), graph.labels_of(after), 1)
    assert found is not None and found.tolist() == [new_row]


@settings(max_examples=15, deadline=None)
@given(share=st.floats(0.05, 1.0), seed=st.integers(0, 10_000), deleted=st.booleans())
def test_one_mask_serves_several_searches_as_separate_ones(
    share: float, seed: int, deleted: bool
) -> None:
    """``search_many`` answers each (query, k) as ``search`` alone would,
    whether label i is row i (the shortcut) or rows were deleted (the gather)."""
    matrix = _unit(500, seed=5)
    table = _table(matrix)
    graph = ann.AnnIndex(matrix.shape[1])
    graph.sync(table, wait=True)
    if deleted:  # rows 7 and 300 gone: labels and rows part ways
        keep = np.setdiff1d(np.arange(500), [7, 300])
        table = _table(matrix[keep], seqs=keep + 1)
    labels = graph.labels_of(table)
    assert np.array_equal(labels, np.arange(500)) is not deleted
    allowed = np.random.default_rng(seed).random(len(table)) < share
    query = matrix[seed % 500]
    both = graph.search_many([(query, 12), (-query, 3)], allowed, labels)
    assert both is not None
    alone = [graph.search(query, allowed, labels, 12), graph.search(-query, allowed, labels, 3)]
    for many, one in zip(both, alone, strict=True):
        assert one is not None and many.tolist() == one.tolist()
        assert allowed[many].all()
    # The shortcut and the gather agree on which labels are allowed.
    expected = np.zeros(len(graph), dtype=bool)
    known = labels >= 0
    expected[known] = allowed[labels[known]]
    assert np.array_equal(graph._allowed_labels(allowed, labels, len(graph)), expected)


def test_the_tail_past_the_graph_is_scored_exactly() -> None:
    matrix = _unit(400, seed=4)
    graph = ann.AnnIndex(matrix.shape[1])
    graph.sync(_table(matrix[:300]), wait=True)
    index = DenseIndex(_table(matrix), generation=1, ann=graph)
    allowed = np.ones(400, dtype=bool)
    near = index.nearest(matrix[350], allowed, 5)
    assert near is not None and 350 in near.rows.tolist()
    view = DenseView(index, matrix[350], allowed, candidates=5, extra=np.array([7]))
    assert view.partial and view.known is not None and view.known[7]
    assert view.sims[350] == pytest.approx(1.0, abs=1e-5)
    # Rows not proposed read -1 until filled, then their exact cosine.
    unseen = int(np.flatnonzero(~view.known)[0])
    assert view.sims[unseen] == -1.0
    view.fill(np.array([unseen]))
    assert view.sims[unseen] == pytest.approx(float(matrix[unseen] @ matrix[350]), abs=1e-6)


def test_a_narrow_scope_is_scored_exactly_without_the_graph() -> None:
    matrix = _unit(2_000, seed=6)
    graph = ann.AnnIndex(matrix.shape[1])
    index = DenseIndex(_table(matrix), generation=1, ann=graph)
    graph.sync(index.table, wait=True)
    allowed = np.zeros(2_000, dtype=bool)
    allowed[::10] = True  # a tenth visible: below a quarter of the index
    view = DenseView(index, matrix[0], allowed, candidates=50, extra=np.empty(0, np.int64))
    assert not view.partial
    np.testing.assert_allclose(view.sims[allowed], matrix[allowed] @ matrix[0], atol=1e-6)
    assert (view.sims[~allowed] == -1.0).all()


def _records(seed: int = 5, count: int = 900) -> list[tuple[str, dict[str, object]]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        agent = AGENTS[i % len(AGENTS)][0]
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(4, 14)))
        visibility = rng.choice(["isolated", "isolated", "shared", "group"])
        fields: dict[str, object] = {
            "content": f"{rng.choice(PEOPLE)} said {words} (note {i}).",
            "visibility": visibility,
        }
        if visibility == "group":
            fields["group"] = dict(AGENTS)[agent][0]
        if i % 3 == 0:
            fields["session"] = f"s{i // 30}"
        out.append((agent, fields))
    return out


def _shape(hits: HitList) -> list[tuple[str, float]]:
    return [(h.memory.content, round(h.score, 5)) for h in hits]


def test_recall_through_the_graph_answers_as_exact_recall(tmp_path: Path) -> None:
    """900 memories over three agents: every agent's recall is the same with
    the graph proposing 150 candidates (of about 500 visible) as with every row scored.
    One fixed clock: recency would otherwise move the scores between the two
    recalls by the time a loaded machine takes between them."""
    store = SQLiteStore(tmp_path / "ann.db")
    embedder = HashingEmbedder()
    now = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
    palaces = {}
    for agent, groups in AGENTS:
        palace = Palace(
            store=store,
            agent_id=agent,
            groups=groups,
            settings=Settings(agent_id=agent, signals=False),
            embedder=embedder,
            clock=lambda: now,
        )
        palace.semantic.ann_rows = 1
        palaces[agent] = palace
    by_agent: dict[str, list[dict[str, object]]] = {}
    for agent, fields in _records():
        by_agent.setdefault(agent, []).append(fields)
    for agent, records in by_agent.items():
        palaces[agent].remember_many(records)
    compared = 0
    for palace in palaces.values():
        assert palace.semantic.wait_for_graph()
        index = palace.semantic.dense()
        assert index is not None and index.ann is not None and len(index.ann) == 900
        for query in QUERIES:
            palace.recall_options = RecallOptions(ann_candidates=150)
            through_graph = palace.recall(query, limit=10)
            palace.recall_options = RecallOptions(ann_candidates=0)
            exact = palace.recall(query, limit=10)
            assert _shape(through_graph) == _shape(exact), query
            compared += len(exact)
    assert compared > 100
    store.close()


def test_the_graph_follows_writes_and_forgets(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "follow.db")
    palace = Palace(store=store, settings=Settings(signals=False), embedder=HashingEmbedder())
    palace.semantic.ann_rows = 1
    palace.remember_many([{"content": f"kafka broker {i} restarts nightly"} for i in range(50)])
    assert palace.semantic.wait_for_graph()
    later = palace.remember("Zanzibar gateway timeouts after the postgres upgrade")
    hits = palace.recall("zanzibar gateway timeouts")
    assert hits[0].memory.id == later.id
    index = palace.semantic.dense()
    assert index is not None and index.ann is not None and len(index.ann) == 50  # in the tail
    palace.forget(later.id)
    assert all(h.memory.id != later.id for h in palace.recall("zanzibar gateway timeouts"))
    store.close()


def test_the_graph_size_comes_from_the_environment(tmp_path: Path) -> None:
    from mindpalace import ConfigError

    assert Settings.from_env({}).ann_rows == 50_000
    assert Settings.from_env({"MINDPALACE_ANN_ROWS": "0"}).ann_rows == 0
    for bad in ("-1", "many", "1e5"):
        with pytest.raises(ConfigError, match="MINDPALACE_ANN_ROWS must be a whole number"):
            Settings.from_env({"MINDPALACE_ANN_ROWS": bad})
    palace = Palace(
        tmp_path / "p.db", settings=Settings(signals=False, ann_rows=0), embedder=HashingEmbedder()
    )
    palace.remember_many([{"content": f"kafka broker {i} restarts nightly"} for i in range(20)])
    assert palace.semantic.ann_rows == 0
    assert not palace.semantic.wait_for_graph()  # never built, at any size
    palace.close()


def test_recalls_at_once_add_each_row_once() -> None:
    import threading

    matrix = _unit(3_000, seed=7)
    table = _table(matrix)
    graph = ann.AnnIndex(matrix.shape[1])
    threads = [threading.Thread(target=graph.sync, args=(table,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    graph.wait()
    graph.sync(table, wait=True)  # nothing left to add
    assert len(graph) == 3_000 and graph.covered_seq == 3_000


def test_a_process_leaving_mid_build_exits_cleanly() -> None:
    """The build runs in a daemon thread inside faiss: leaving the
    interpreter under it must stop it, not abort the process."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from mindpalace.retrieval import ann\n"
        "from tests.retrieval.test_ann import _table, _unit\n"
        "m = _unit(40_000, dims=64, seed=8)\n"
        "g = ann.AnnIndex(64)\n"
        "g.sync(_table(m))\n"
        "assert g.building\n"
        "print('left')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "left"
    assert "terminate" not in done.stderr
