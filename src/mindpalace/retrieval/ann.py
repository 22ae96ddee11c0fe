"""Approximate nearest neighbours for large palaces: an HNSW graph (faiss)
that proposes candidates, which the exact matrix then scores.

The graph only *proposes*: every row it returns is re-scored from the warm
float32 matrix, so a candidate's cosine is exact and the approximation can
only cost a miss, never a wrong score. Scope and filters reach the graph as a
bitmap of allowed labels (faiss's ``IDSelectorBitmap``): the search walks the
whole graph but returns only rows the caller may see, so no visible match is
lost to a post-filter and no hidden one is ever scored.

Labels are faiss's own sequential ids; ``seq_of_label`` maps them to the
store's write sequence, which survives an index rebuild (rows shift when a
memory is deleted; seqs do not). Rows written after the graph was last
extended (the *tail*) are scored exactly, so a write never waits for the
graph: a background thread extends it once the tail grows past
``TAIL_ROWS``.

Storage is 8-bit scalar-quantised (a quarter of float32): the graph walk
compares against approximate vectors, the exact re-scoring fixes the order.
"""

from __future__ import annotations

import atexit
import functools
import mmap
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.store.base import VectorTable

__all__ = ["TAIL_ROWS", "AnnIndex", "available"]


@functools.cache
def _faiss() -> Any:
    """The faiss module, imported at first use (a tenth of a second that a
    command on a small palace never needs); None where it does not import:
    faiss is a dependency, and a broken install falls back to exact search."""
    try:
        import faiss  # noqa: PLC0415 - a tenth of a second, only when a graph is used
    except ImportError:  # pragma: no cover - exercised only without the wheel
        return None
    return faiss


#: rows past the graph that are scored exactly before the graph is extended
TAIL_ROWS = 5_000
#: rows added per locked step of a background build (searches fall back to
#: exact scoring while a step holds the lock)
STEP_ROWS = 4_096
M = 32  # graph degree: 32 keeps recall@100 above 0.97 at 100k (BENCHMARKS.md)
EF_CONSTRUCTION = 64


# Graphs that may be building: stopped at interpreter exit, so that a
# process leaving mid-build (a one-shot CLI on a PostgreSQL palace) exits
# cleanly instead of aborting inside faiss.
_GRAPHS: weakref.WeakSet[AnnIndex] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for graph in list(_GRAPHS):
        graph.stop()


def _is_mapped(data: npt.NDArray[Any]) -> bool:
    """Whether ``data`` is a read-only view of a memory mapping (a warm
    file's bytes), which faiss may read in place."""
    base: Any = data
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return isinstance(base, mmap.mmap) and data.dtype == np.uint8 and data.flags.c_contiguous


def available() -> bool:
    """Whether the ANN library loaded."""
    return _faiss() is not None


class AnnIndex:
    """An HNSW graph over one model's vectors, labelled by memory seq.

    Shared by successive ``DenseIndex`` versions of a palace (they only
    append rows); thread-safe.

    Args:
        dimensions: the vectors' size.
        ef_search: breadth of a search (higher: better recall, slower).
    """

    def __init__(self, dimensions: int, *, ef_search: int = 160) -> None:
        if _faiss() is None:  # pragma: no cover
            raise RuntimeError("faiss is not installed")
        self.dimensions = dimensions
        self.ef_search = ef_search
        self._index: Any = None
        self._lock = threading.Lock()
        self._syncing = threading.Lock()
        self._seqs = np.empty(0, dtype=np.int64)  # seq of each label
        self._covered = 0
        self._builder: threading.Thread | None = None
        self._stopping = threading.Event()
        self.error: str | None = None  # why the last background step failed
        #: the mapped bytes the graph is read from in place, kept alive with
        #: it (None once it is this process's own, or when it always was)
        self._view: npt.NDArray[np.uint8] | None = None
        # (labels array, whether label i is row i): see _allowed_labels
        self._identity: tuple[npt.NDArray[np.int64], bool] | None = None
        _GRAPHS.add(self)

    def saved(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None:
        """The graph in faiss's own format and the seq of each label, taken
        between two build steps (searches meanwhile score exactly); None
        while it is empty."""
        with self._lock:
            if self._index is None:
                return None
            data: npt.NDArray[np.uint8] = _faiss().serialize_index(self._index)
            return data, self._seqs.copy()

    @classmethod
    def restored(
        cls, dimensions: int, data: npt.NDArray[np.uint8], seqs: npt.NDArray[np.int64]
    ) -> AnnIndex:
        """A graph ``saved`` earlier, labels ``seqs`` (ascending).

        Raises:
            ValueError: ``data`` is not such a graph of ``dimensions``-d
                vectors with one label per seq.
        """
        faiss = _faiss()
        if faiss is None:  # pragma: no cover
            raise ValueError("faiss is not installed")
        seqs = np.asarray(seqs, dtype=np.int64)
        if seqs.ndim != 1 or not seqs.shape[0] or bool(np.any(np.diff(seqs) <= 0)):
            raise ValueError("the graph's labels are not ascending seqs")
        mapped = _is_mapped(data)
        try:
            if mapped:
                # Read in place: the graph's arrays are views of the mapping
                # (file pages, shared by every process that maps the file),
                # not a copy in this process's memory.
                reader = faiss.ZeroCopyIOReader(faiss.swig_ptr(data), data.shape[0])
                index = faiss.read_index(reader, faiss.IO_FLAG_MMAP_IFC)
            else:
                index = faiss.deserialize_index(np.ascontiguousarray(data, dtype=np.uint8))
        except RuntimeError as exc:  # faiss's "read error" and the like
            raise ValueError(f"not a saved graph: {exc}") from exc
        if not isinstance(index, faiss.IndexHNSWSQ):
            raise ValueError(f"not an HNSW graph: {type(index).__name__}")
        if index.d != dimensions or index.ntotal != seqs.shape[0] or not index.is_trained:
            raise ValueError("the graph's size or dimensions differ")
        index.hnsw.efConstruction = EF_CONSTRUCTION
        graph = cls(dimensions)
        graph._index = index
        # faiss cannot grow a graph it reads in place (it aborts the
        # process): ``_add`` copies it into memory first.
        graph._view = data if mapped else None
        graph._seqs = seqs
        graph._covered = int(seqs[-1])
        return graph

    @property
    def covered_seq(self) -> int:
        """The highest seq in the graph (0 when empty)."""
        return self._covered

    def __len__(self) -> int:
        return int(self._seqs.shape[0])

    @property
    def building(self) -> bool:
        """Whether a background step is extending the graph."""
        return self._builder is not None and self._builder.is_alive()

    def labels_of(self, table: VectorTable) -> npt.NDArray[np.int64]:
        """Each label's row in ``table`` (-1: the memory is gone)."""
        seqs = self._seqs
        rows = np.searchsorted(table.seq, seqs).astype(np.int64)
        rows[rows >= len(table)] = 0
        found = table.seq[rows] == seqs if len(table) else np.zeros(seqs.shape[0], dtype=bool)
        return np.where(found, rows, -1)

    def sync(
        self,
        table: VectorTable,
        *,
        wait: bool = False,
        vectors: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float32]] | None = None,
    ) -> None:
        """Extend the graph with ``table``'s embedded rows past
        ``covered_seq``: in a background thread, unless ``wait`` or there
        are few of them. ``vectors`` reads rows' vectors where the table's
        matrix does not hold them (a compact index's)."""
        with self._syncing:  # two recalls at once must not add the same rows twice
            if self.building:
                return
            start = int(np.searchsorted(table.seq, self.covered_seq, side="right"))
            rows = np.flatnonzero(table.embedded[start:]) + start
            if rows.shape[0] == 0:
                return
            found = vectors(rows) if vectors is not None else table.matrix[rows]
            matrix = np.ascontiguousarray(found, dtype=np.float32)
            seqs = table.seq[rows].astype(np.int64)
            if wait or rows.shape[0] <= STEP_ROWS:
                self._add(matrix, seqs)
                return
            self._builder = threading.Thread(
                target=self._add, args=(matrix, seqs), name="mindpalace-ann", daemon=True
            )
            self._builder.start()

    def refresh(self, old: VectorTable, new: VectorTable) -> None:
        """Re-add the rows whose vector changed between two loads of a
        palace (a re-embedding; a row that gained its vector). The stale
        entry stays in the graph, mapped to the same memory: it can only
        propose it, and proposals are re-scored exactly.

        A background step under way read its rows before they changed, and
        passes them: what it covers of the changed rows is re-added once it
        ends (by a thread, so the caller does not wait for it); rows past
        the graph are added by a later ``sync``."""
        _, in_old, in_new = np.intersect1d(old.seq, new.seq, return_indices=True)
        if old.matrix.shape[1] == new.matrix.shape[1]:
            changed = np.any(old.matrix[in_old] != new.matrix[in_new], axis=1)
        else:  # the old load had no vector at all (no width): every vector is new
            changed = np.ones(in_new.shape[0], dtype=bool)
        rows = in_new[changed & new.embedded[in_new]]
        if rows.shape[0] == 0:
            return
        matrix = np.ascontiguousarray(new.matrix[rows], dtype=np.float32)
        seqs = new.seq[rows].astype(np.int64)
        with self._syncing:
            builder = self._builder
            if builder is None or not builder.is_alive():
                self._add_covered(matrix, seqs)
                return

            def after_the_step() -> None:
                builder.join()
                self._add_covered(matrix, seqs)

            self._builder = threading.Thread(
                target=after_the_step, name="mindpalace-ann", daemon=True
            )
            self._builder.start()

    def _add_covered(self, matrix: npt.NDArray[np.float32], seqs: npt.NDArray[np.int64]) -> None:
        """Add the rows of ``matrix`` whose seq the graph already covers."""
        keep = seqs <= self.covered_seq
        if keep.any():
            self._add(matrix[keep], seqs[keep])

    def wait(self) -> None:
        """Block until a background step has finished."""
        builder = self._builder
        if builder is not None:
            builder.join()

    def stop(self) -> None:
        """End a background build after its current step (what it added
        stays; a later ``sync`` goes on from there)."""
        self._stopping.set()
        self.wait()
        self._stopping.clear()

    def _add(self, matrix: npt.NDArray[np.float32], seqs: npt.NDArray[np.int64]) -> None:
        try:
            for start in range(0, matrix.shape[0], STEP_ROWS):
                if self._stopping.is_set():
                    return
                with self._lock:
                    if self._index is None:
                        self._index = self._new_index(matrix)
                    elif self._view is not None:
                        faiss = _faiss()
                        self._index = faiss.deserialize_index(faiss.serialize_index(self._index))
                        self._view = None
                    self._index.add(matrix[start : start + STEP_ROWS])
                    step = seqs[start : start + STEP_ROWS]
                    self._seqs = np.concatenate((self._seqs, step))
                    self._covered = max(self._covered, int(step.max()))
        except Exception as exc:  # faiss raises RuntimeError on bad input or memory
            self.error = str(exc)

    def _new_index(self, sample: npt.NDArray[np.float32]) -> Any:
        faiss = _faiss()
        index = faiss.IndexHNSWSQ(
            self.dimensions, faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT
        )
        index.hnsw.efConstruction = EF_CONSTRUCTION
        # Unit vectors: every component lies in [-1, 1]; training on the
        # first rows only sets the quantiser's per-dimension range.
        index.train(sample[: min(sample.shape[0], 20_000)])
        return index

    def search(
        self,
        query: npt.NDArray[np.float32],
        allowed: npt.NDArray[np.bool_],
        labels: npt.NDArray[np.int64],
        k: int,
    ) -> npt.NDArray[np.int64] | None:
        """Rows (of the table ``labels`` was computed for) of the ``k``
        nearest allowed labels, best first; None when the graph is busy.

        Args:
            query: the unit query vector.
            allowed: per row of the table, whether it may be returned.
            labels: ``labels_of(table)``, computed when this graph had at
                most as many labels as now (later labels are not returned).
            k: how many.
        """
        found = self.search_many([(query, k)], allowed, labels)
        return None if found is None else found[0]

    def search_many(
        self,
        queries: list[tuple[npt.NDArray[np.float32], int]],
        allowed: npt.NDArray[np.bool_],
        labels: npt.NDArray[np.int64],
    ) -> list[npt.NDArray[np.int64]] | None:
        """``search`` for each (query, k) under one ``allowed`` mask, whose
        bitmap is computed once; None when the graph is busy."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            index = self._index
            if index is None or labels.shape[0] == 0:
                return [np.empty(0, dtype=np.int64) for _ in queries]
            faiss = _faiss()
            ok = self._allowed_labels(allowed, labels, index.ntotal)
            bits = np.packbits(ok, bitorder="little")
            selector = faiss.IDSelectorBitmap(index.ntotal, faiss.swig_ptr(bits))
            found = []
            for query, k in queries:
                params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(self.ef_search, k))
                _, hits = index.search(query.reshape(1, -1).astype(np.float32), k, params=params)
                found.append(np.asarray(hits[0], dtype=np.int64))
        finally:
            self._lock.release()
        return [labels[hits[hits >= 0]] for hits in found]

    def _allowed_labels(
        self, allowed: npt.NDArray[np.bool_], labels: npt.NDArray[np.int64], ntotal: int
    ) -> npt.NDArray[np.bool_]:
        """Per label of the graph, whether its row is ``allowed``. Where
        label i is row i (nothing deleted, every row embedded: the usual
        case) that is ``allowed`` itself, without a gather over every row."""
        identity = self._identity
        if identity is None or identity[0] is not labels:
            n = labels.shape[0]
            same = n <= allowed.shape[0] and bool(
                np.array_equal(labels, np.arange(n, dtype=labels.dtype))
            )
            identity = (labels, same)
            self._identity = identity
        n = labels.shape[0]
        if identity[1] and n == ntotal:
            return allowed[:n]
        ok = np.zeros(ntotal, dtype=bool)
        if identity[1]:
            ok[:n] = allowed[:n]
        else:
            known = labels >= 0
            ok[:n][known] = allowed[labels[known]]
        return ok
