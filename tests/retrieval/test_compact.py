"""Compact vectors (``compact.py``, ``warm_vectors.py``): an index that scans
int8 codes and re-scores a short list exactly finds the same rows, in the
same order, with the same cosines as one that scores every float; a large
SQLite palace maps its vectors from one file beside it, which every process
shares and an erasure removes. Thresholds are lowered so that small
palaces are compact (no timing)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval import compact, dense, warm_cache
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.store.sqlite import SQLiteStore

WORDS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue latency "
    "dashboards incident postmortem budget hiring roadmap garden weather vault north door"
).split()
QUERIES = [
    "kafka latency incident",
    "postgres migration rollback plan",
    "budget hiring roadmap",
    "the vault by the north door",
    "weather in the garden",
]


def _fill(palace: Palace, count: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    palace.remember_many(
        [
            {
                "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14))),
                "visibility": rng.choice(["isolated", "shared"]),
            }
            for _ in range(count)
        ]
    )


def _open(path: Path, agent: str = "alice") -> Palace:
    return Palace(
        store=SQLiteStore(path),
        settings=Settings(signals=False, ann_rows=0, agent_id=agent),
        embedder=HashingEmbedder(),
        agent_id=agent,
    )


@pytest.fixture(scope="module")
def palace_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compact") / "memories.db"
    with _open(path) as palace:
        _fill(palace, 1_500)
        palace.for_agent("bob").remember_many([{"content": f"bob's note {n}"} for n in range(50)])
    return path


def test_the_estimate_is_within_its_bound() -> None:
    rng = np.random.default_rng(1)
    floats = rng.standard_normal((500, 64)).astype(np.float32)
    floats /= np.linalg.norm(floats, axis=1, keepdims=True)
    floats[7] = 0.0  # a row without a vector
    query = floats[3] + 0.3 * rng.standard_normal(64).astype(np.float32)
    query /= np.linalg.norm(query)
    vectors = compact.CompactVectors.of(floats)
    approx, bound = vectors.estimates(query)
    exact = floats @ query
    assert np.all(np.abs(approx - exact) <= bound)
    assert 0 < float(np.abs(approx - exact).max()) < 0.05  # an estimate, not the floats
    best = compact.shortlist(approx, bound, 20)
    assert set(np.argsort(-exact)[:20].tolist()) <= set(best.tolist())
    assert int(np.argmin(exact)) in set(compact.lowest(approx, bound).tolist())


def test_rows_appended_keep_the_first_part() -> None:
    rng = np.random.default_rng(2)
    floats = rng.standard_normal((300, 16)).astype(np.float32)
    vectors = compact.CompactVectors.of(floats[:100])
    grown = vectors.extended(floats[100:200]).extended(floats[200:])
    assert len(grown.parts) == 2 and grown.parts[0] is vectors.parts[0]
    rows = np.array([299, 0, 150, 99, 100], dtype=np.int64)
    assert np.array_equal(grown.floats(rows), floats[rows])
    assert np.array_equal(grown.all_floats(), floats)


@pytest.mark.parametrize("candidates", [400, 0], ids=["weighted", "rrf"])
@pytest.mark.parametrize("window", [400, 30])
def test_int8_finds_the_rows_floats_find(
    palace_path: Path, candidates: int, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense, "EXACT_WINDOW", window)
    monkeypatch.setattr(dense, "GATHER_ROWS", 0)  # the floats score every row, not a gather
    with _open(palace_path) as palace:
        semantic = palace.engine.semantic
        table = palace.store.load_vectors(semantic.dense().model)  # type: ignore[union-attr]
        floats = DenseIndex(table, generation=0, compact_rows=10**9)
        int8 = DenseIndex(table, generation=0, compact_rows=0)
        assert floats.compact is None and int8.compact is not None
        assert int8.table.matrix.shape[1] == 0  # no float copy beside the codes
        for scope in (Scope(agent_id="alice"), Scope(agent_id="bob")):
            allowed = floats.mask(scope, RecallFilters()) & floats.embedded
            for text in QUERIES:
                query = palace.engine.semantic.embedder.embed_query(text)  # type: ignore[union-attr]
                extra = np.array([5, 17], dtype=np.int64)
                want = DenseView(floats, query, allowed, candidates=candidates, extra=extra)
                got = DenseView(int8, query, allowed, candidates=candidates, extra=extra)
                k = min(max(window, candidates), int(allowed.sum()))
                order = np.argsort(-np.where(allowed, want.sims, -np.inf), kind="stable")[:k]
                found = np.argsort(-np.where(allowed, got.sims, -np.inf), kind="stable")[:k]
                # The same score at every rank (rows of one score may swap:
                # the codes' short list is re-scored by another product).
                np.testing.assert_allclose(want.sims[found], want.sims[order], rtol=0, atol=1e-6)
                np.testing.assert_allclose(got.sims[order], want.sims[order], rtol=0, atol=1e-6)
                seen = extra[allowed[extra]]
                np.testing.assert_allclose(got.sims[seen], want.sims[seen], rtol=0, atol=1e-6)
                if got.partial:
                    assert got.low == pytest.approx(float(want.sims[allowed].min()), abs=1e-6)


def test_a_large_palace_maps_its_vectors_from_one_shared_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense, "COMPACT_ROWS", 100)
    monkeypatch.setattr(warm_cache, "SAVE_ROWS", 100)
    path = tmp_path / "memories.db"
    file = Path(str(path) + warm_cache.SUFFIX) / warm_cache.VECTORS
    with _open(path) as palace:
        _fill(palace, 300)
        first = [palace.recall(text, limit=5) for text in QUERIES]  # the second recall maps
        index = palace.engine.semantic.dense()
        assert index is not None and index.compact is not None
        base = index.compact.parts[0]
        assert all(isinstance(a, np.memmap) for a in (base.floats, base.codes, base.scales))
        assert file.is_file()
        written = file.stat().st_mtime_ns
        palace.remember("a note written after the file, about kafka latency")
        index = palace.engine.semantic.dense()
        assert index is not None and index.compact is not None
        assert index.compact.parts[0] is base and len(index.compact) == len(index)
    with _open(path) as again:  # another process: the same file, mapped, not rewritten
        again.recall("warm up")
        again.recall("warm up")
        index = again.engine.semantic.dense()
        assert index is not None and index.compact is not None
        assert isinstance(index.compact.parts[0].floats, np.memmap)
        assert file.stat().st_mtime_ns == written
        found = again.recall(QUERIES[1], limit=5)
        assert [h.memory.id for h in found] == [h.memory.id for h in first[1]]


def test_an_erased_memory_leaves_the_vectors_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense, "COMPACT_ROWS", 100)
    monkeypatch.setattr(warm_cache, "SAVE_ROWS", 100)
    path = tmp_path / "memories.db"
    file = Path(str(path) + warm_cache.SUFFIX) / warm_cache.VECTORS
    with _open(path) as palace:
        _fill(palace, 200)
        secret = palace.remember("Qxvaultword zebra quartz north door")
        palace.recall("zebra quartz")
        palace.recall("zebra quartz")
        index = palace.engine.semantic.dense()
        assert index is not None and index.compact is not None
        row = index.row_of(secret.id)
        assert row is not None
        vector = index.vectors_of([row])[0].tobytes()
        codes = np.asarray(index.compact.parts[0].codes[row]).tobytes()
        held = file.read_bytes()
        assert vector in held and codes in held  # the scan sees what is there
        palace.forget(secret.id, hard=True)
        assert not file.exists()
        palace.recall("zebra quartz")  # the next load maps a new file, without it
        palace.recall("zebra quartz")
        assert file.is_file()
        held = file.read_bytes()
        assert vector not in held and codes not in held
