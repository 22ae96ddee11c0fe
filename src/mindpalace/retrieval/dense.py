"""Dense retrieval: exact cosine search over a warm in-memory matrix.

Scope and filters become a boolean mask over the rows *before* ranking, so a
memory another agent may not see is never scored, and no visible match is
lost to a post-filter.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

from mindpalace.models import RecallFilters, Scope, Visibility
from mindpalace.retrieval.ann import TAIL_ROWS, AnnIndex
from mindpalace.retrieval.appending import RowsOf, TableRoom, appended
from mindpalace.retrieval.compact import CompactVectors, lowest, shortlist
from mindpalace.retrieval.keyword import KeywordIndex, ScopeParts
from mindpalace.retrieval.keyword_top import best_rows
from mindpalace.retrieval.mentions import MentionIndex
from mindpalace.retrieval.stages import SessionLayout
from mindpalace.store.base import VectorTable
from mindpalace.store.fragments import to_epoch
from mindpalace.store.vector_rows import FlagChange

__all__ = ["DenseIndex", "DenseView", "Nearest", "scope_keys", "text_columns"]

Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.int64]

#: rows of the range sample (``Nearest.low``)
SAMPLE_ROWS = 4_096
#: farthest rows the graph is asked for (the range's low end)
_FARTHEST = 8
#: up to this many visible rows (or a quarter of the index), dense search
#: scores just them, exactly, rather than asking a graph
GATHER_ROWS = 20_000
#: from this many rows an index keeps its vectors compact (``compact.py``):
#: int8 codes scanned, floats read only for the rows re-scored. The size
#: from which a palace keeps an HNSW graph (``DEFAULT_ANN_ROWS``): its
#: recalls are then scored as the graph's are, partially, whether the
#: graph or the codes propose the rows; a smaller palace scores every row.
COMPACT_ROWS = 50_000
#: rows an int8 scan re-scores exactly at least (more when the codes'
#: error bounds say more may belong among the best)
EXACT_WINDOW = 400


@dataclass(frozen=True, slots=True)
class Nearest:
    """What an approximate dense search found, for the pipeline to score.

    Attributes:
        rows: candidate rows (the graph's nearest allowed rows and the
            exactly scored tail's best), unscored.
        low: an estimate of the lowest cosine over the allowed rows, from a
            fixed random sample of the index (exact search takes the true
            minimum; the estimate only shifts the range normalisation).
    """

    rows: Rows
    low: float


def scope_keys(table: VectorTable, start: int = 0) -> npt.NDArray[np.int64]:
    """A number per row (from ``start``) naming its scope partition: its
    agent, visibility, group and channel codes packed together. Codes of
    an extended table keep their values, so keys stay stable as rows are
    appended (the keyword index groups postings by them)."""
    agent = table.agent[start:].astype(np.int64)
    visibility = table.visibility[start:].astype(np.int64)
    group = table.group[start:].astype(np.int64)
    channel = table.channel[start:].astype(np.int64)
    keys: npt.NDArray[np.int64] = (((agent * 16 + visibility) << 20 | group) << 20) | channel
    return keys


def _codes_of(names: tuple[str, ...], wanted: Collection[str]) -> list[int]:
    return [i for i, name in enumerate(names) if name in wanted]


# Up to this many wanted values, a column is compared with each: 40x less
# time than ``np.isin`` for one value, 20x for two, on a million rows.
_FEW_CODES = 8


def _member(column: npt.NDArray[np.int32], names: tuple[str, ...], wanted: Collection[str]) -> Mask:
    codes = _codes_of(names, wanted)
    if not codes:
        return np.zeros(column.shape[0], dtype=bool)
    if len(codes) > _FEW_CODES:
        return np.isin(column, codes)
    keep: Mask = column == codes[0]
    for code in codes[1:]:
        keep |= column == code
    return keep


class DenseIndex:
    """A palace's vectors of one model, searchable by cosine similarity."""

    def __init__(
        self,
        table: VectorTable,
        *,
        generation: int,
        epoch: int = 0,
        flags: int = 0,
        row_of: RowsOf | None = None,
        keyword: KeywordIndex | None = None,
        mentions: MentionIndex | None = None,
        ann: AnnIndex | None = None,
        model: str = "",
        vectors: int = 0,
        compact: CompactVectors | None = None,
        compact_rows: int | None = None,
        sessions: SessionLayout | None = None,
        room: TableRoom | None = None,
    ) -> None:
        #: which rows mention which entity (None: ask the store)
        self.mentions = mentions
        #: the palace's HNSW graph (None: exact search only)
        self.ann = ann
        #: the vectors' key (``embed.texts.vector_key``)
        self.model = model
        #: whether dense candidates come from the store's own index
        #: (``Store.nearest``) rather than ``ann``
        self.store_ann = False
        self._labels: tuple[int, Rows] = (-1, np.empty(0, dtype=np.int64))
        # (rows, their vectors) of ``_low``'s sample, set once as a pair:
        # recalls on several threads share an index
        self._sample: tuple[Rows, npt.NDArray[np.float32]] | None = None
        # Scope masks of this (immutable) index, by scope, and their rows' tokens.
        self._scopes: dict[Scope, Mask] = {}
        self._scope_parts: dict[Scope, ScopeParts] = {}
        # The keyword index is built from the rows' texts, which are then
        # dropped: the store keeps them, the index needs only its postings.
        if keyword is None and table.texts is not None:
            keyword = KeywordIndex(table.texts, scopes=scope_keys(table))
        self.keyword = keyword if keyword is not None and len(keyword) == len(table) else None
        table = replace(table, texts=None) if table.texts is not None else table
        threshold = COMPACT_ROWS if compact_rows is None else compact_rows
        if compact is None and len(table) >= threshold and table.matrix.shape[1]:
            compact = CompactVectors.of(table.matrix)
        #: the vectors as int8 codes and float rows, when kept compact; the
        #: table's matrix then has no columns (``vectors`` reads a row)
        self.compact = compact
        if compact is not None and table.matrix.shape[1]:
            table = replace(table, matrix=np.empty((len(table), 0), dtype=np.float32))
        self.table = table
        self.embedded: Mask = (
            table.embedded if table.embedded.shape[0] == len(table) else np.ones(len(table), bool)
        )
        self.generation = generation
        self.epoch = epoch
        #: the store's ``flags`` counter its rows' archived and superseded
        #: flags are current with (``reflagged``)
        self.flags = flags
        #: the store's ``vectors`` counter when the vectors were loaded
        self.vectors = vectors
        self.last_seq = int(table.seq[-1]) if len(table) else 0
        self._row_of = row_of if row_of is not None else RowsOf.of(table.ids)
        # the table's growable columns (``appending.py``), once it was extended
        self._room = room
        if sessions is None or len(sessions) != len(table):
            # Rows are in write order; a session's rows may be far apart.
            names = table.session_names
            blank = [i for i, name in enumerate(names) if name == ""]
            sessions = SessionLayout.of(table.session, blank, names=len(names))
        self.sessions = sessions

    def __len__(self) -> int:
        return len(self.table)

    def extended(
        self,
        more: VectorTable,
        *,
        generation: int,
        mentions: Sequence[tuple[str, int]] | None = None,
    ) -> DenseIndex:
        """A new index with ``more`` (rows written since ``last_seq``) appended,
        and the ``mentions`` (entity key, memory seq) of those rows."""
        if len(more) == 0:  # a write that appended nothing (a flag, a duplicate)
            same = copy.copy(self)
            same.generation = generation
            return same
        start = len(self.table)
        row_of = self._row_of.extended(start, more.ids)
        keyword = None
        compact = self.compact
        if compact is not None:
            compact = compact.extended(more.matrix)
            more = replace(more, matrix=np.empty((len(more), 0), dtype=np.float32))
        table, room = appended(self.table, more, self._room)
        if self.keyword is not None and more.texts is not None:
            keyword = self.keyword.extended(more.texts, scope_keys(table, start))
        index = DenseIndex(
            table,
            generation=generation,
            epoch=self.epoch,
            flags=self.flags,
            row_of=row_of,
            keyword=keyword,
            mentions=self._more_mentions(table, mentions),
            ann=self.ann,
            model=self.model,
            vectors=self.vectors,
            compact=compact,
            sessions=self.sessions.appended(table.session, table.session_names),
            room=room,
        )
        index.store_ann = self.store_ann
        return index

    def reflagged(self, changes: Sequence[FlagChange], *, flags: int) -> DenseIndex:
        """This index with the archived and superseded flags of ``changes``
        (``Store.flag_changes``), current with the store's ``flags`` counter;
        a change of a row it does not hold yet is left to ``extended`` (which
        reads that row's flags). Everything else is shared with this index:
        nothing but the flags is read again."""
        same = copy.copy(self)
        same.flags = flags
        same.table = self.table.with_flags(changes)
        return same

    def warmed(
        self,
        texts: Sequence[tuple[int, str | None, str, str | None, str]],
        mentions: Sequence[tuple[str, int]],
    ) -> DenseIndex:
        """This index with its keyword and mention indexes built from the
        rows' ``texts`` ((seq, title, content, context, tags), by seq) and
        their ``mentions`` (entity key, memory seq)."""
        return self.with_indexes(
            KeywordIndex(text_columns(self.table.seq, texts), scopes=scope_keys(self.table)),
            MentionIndex.build(mentions, self.table.seq),
        )

    def adopted(
        self,
        warm: DenseIndex,
        texts: Sequence[tuple[int, str | None, str, str | None, str]],
        mentions: Sequence[tuple[str, int]],
    ) -> DenseIndex:
        """This index with the keyword and mention indexes of ``warm`` (an
        index of this one's first rows, built in the background), extended
        by the ``texts`` and ``mentions`` of the rows written after it.

        Raises:
            ValueError: ``warm`` is not warm, or holds rows this index does not.
        """
        start = len(warm.table)
        if warm.keyword is None or warm.mentions is None:
            raise ValueError("the index to adopt has no keyword or mention index")
        if start > len(self.table) or not np.array_equal(warm.table.seq, self.table.seq[:start]):
            raise ValueError("the index to adopt holds rows this index does not")
        later = self.table.seq[start:]
        keyword = warm.keyword.extended(text_columns(later, texts), scope_keys(self.table, start))
        return self.with_indexes(
            keyword, MentionIndex.build(mentions, self.table.seq, base=warm.mentions)
        )

    def with_indexes(self, keyword: KeywordIndex, mentions: MentionIndex) -> DenseIndex:
        """This index with ``keyword`` and ``mentions``, built over its rows."""
        index = DenseIndex(
            self.table,
            generation=self.generation,
            epoch=self.epoch,
            flags=self.flags,
            row_of=self._row_of,
            keyword=keyword,
            mentions=mentions,
            ann=self.ann,
            model=self.model,
            vectors=self.vectors,
            compact=self.compact,
            sessions=self.sessions,
            room=self._room,
        )
        index.store_ann = self.store_ann
        return index

    def with_compact(self, compact: CompactVectors) -> DenseIndex:
        """This index with its vectors read from ``compact`` (the same rows'
        vectors, held elsewhere: mapped from a warm file)."""
        if len(compact) != len(self):
            raise ValueError("the compact vectors hold other rows")
        index = DenseIndex(
            self.table,
            generation=self.generation,
            epoch=self.epoch,
            flags=self.flags,
            row_of=self._row_of,
            keyword=self.keyword,
            mentions=self.mentions,
            ann=self.ann,
            model=self.model,
            vectors=self.vectors,
            compact=compact,
            sessions=self.sessions,
            room=self._room,
        )
        index.store_ann = self.store_ann
        return index

    @property
    def dimensions(self) -> int:
        """The vectors' size (0 when the rows were loaded without them)."""
        return self.compact.dimensions if self.compact is not None else self.table.matrix.shape[1]

    def vectors_of(self, rows: Rows | Sequence[int]) -> npt.NDArray[np.float32]:
        """The float vectors of ``rows`` (0 for a row without one)."""
        picked = np.asarray(rows, dtype=np.int64)
        if self.compact is not None:
            return self.compact.floats(picked)
        found: npt.NDArray[np.float32] = self.table.matrix[picked]
        return found

    def float_table(self) -> VectorTable:
        """The table with every vector in its matrix (a copy, when compact)."""
        if self.compact is None:
            return self.table
        return replace(self.table, matrix=self.compact.all_floats())

    def _more_mentions(
        self, table: VectorTable, pairs: Sequence[tuple[str, int]] | None
    ) -> MentionIndex | None:
        """This index's mentions and ``pairs`` (those of the rows ``table``
        holds after this index's)."""
        if self.mentions is None or pairs is None:
            return None
        return self.mentions.extended(pairs, table.seq)

    def mask(
        self, scope: Scope, filters: RecallFilters, allowed_ids: Collection[str] | None = None
    ) -> Mask:
        """Rows ``scope`` may see that match ``filters`` (and ``allowed_ids``)."""
        t = self.table
        keep = self.scope_mask(scope)
        for column, names, wanted in (
            (t.type, t.type_names, filters.types),
            (t.store, t.store_names, filters.stores),
            (t.category, t.category_names, filters.categories),
            (t.visibility, t.visibility_names, filters.visibilities),
            (t.source, t.source_names, filters.sources),
            (t.kind, t.kind_names, filters.kinds),
        ):
            if wanted:
                keep &= _member(column, names, {w.value for w in wanted})
        if filters.sessions:
            keep &= _member(t.session, t.session_names, set(filters.sessions))
        if filters.projects:
            keep &= _member(t.project, t.project_names, set(filters.projects))
        if filters.agents:
            keep &= _member(t.agent, t.agent_names, set(filters.agents))
        if not filters.include_archived:
            keep &= ~t.archived
        if not filters.include_superseded:
            keep &= ~t.superseded
        if filters.created_after is not None:
            keep &= t.created_at >= (to_epoch(filters.created_after) or 0.0)
        if filters.created_before is not None:
            keep &= t.created_at < (to_epoch(filters.created_before) or 0.0)
        if allowed_ids is not None:
            keep &= np.isin(t.ids, np.array(list(allowed_ids), dtype=object))
        return keep

    def scope_mask(self, scope: Scope) -> Mask:
        """Rows ``scope`` may see (whatever filters say); a fresh array."""
        cached = self._scopes.get(scope)
        if cached is None:
            cached = self._scope_mask(scope)
            if len(self._scopes) >= 64:
                self._scopes.clear()
            self._scopes[scope] = cached
        fresh: Mask = cached.copy()
        return fresh

    def keyword_scores(
        self, terms: Sequence[str], scope: Scope, only: Mask | None = None
    ) -> npt.NDArray[np.float64]:
        """BM25 of every row (of the ``only`` rows, when given) for
        ``terms`` (``KeywordIndex.scores``), its statistics those of the
        rows ``scope`` sees; mask before use."""
        assert self.keyword is not None
        visible = self.scope_mask(scope)
        parts = self._parts_of(scope, visible)
        return self.keyword.scores(terms, visible, parts=parts, only=only)

    def keyword_best(
        self, terms: Sequence[str], scope: Scope, shown: Mask, limit: int
    ) -> tuple[list[int], dict[int, float]]:
        """The ``limit`` best ``shown`` rows by ``keyword_scores`` (in
        ``top_rows``'s order) with their scores, without scoring every
        row a common word holds (``keyword_top.best_rows``)."""
        assert self.keyword is not None
        visible = self.scope_mask(scope)
        t = self.table
        return best_rows(
            self.keyword,
            terms,
            visible,
            parts=self._parts_of(scope, visible),
            shown=shown,
            created_at=t.created_at,
            ids=t.ids,
            limit=limit,
        )

    def _parts_of(self, scope: Scope, visible: Mask) -> ScopeParts:
        assert self.keyword is not None
        parts = self._scope_parts.get(scope)
        if parts is None:
            # A scope's rows are whole partitions: ``scope_keys`` packs
            # every column ``_scope_mask`` reads.
            parts = self.keyword.scope_parts(visible)
            if len(self._scope_parts) >= 64:
                self._scope_parts.clear()
            self._scope_parts[scope] = parts
        return parts

    def _scope_mask(self, scope: Scope) -> Mask:
        t = self.table
        rows = len(t)
        keep: Mask = np.ones(rows, dtype=bool)
        if not scope.unscoped:
            # The rule of store/fragments.py ``scope_clause``, over arrays.
            shared = _member(t.visibility, t.visibility_names, {Visibility.SHARED.value})
            if scope.groups:
                shared |= _member(t.visibility, t.visibility_names, {Visibility.GROUP.value}) & (
                    _member(t.group, t.group_names, set(scope.groups))
                )
            visible = shared | _member(t.agent, t.agent_names, {scope.agent_id})
            blank = _member(t.channel, t.channel_names, {""})
            own = (
                _member(t.channel, t.channel_names, {scope.channel})
                if scope.channel
                else np.zeros(rows, dtype=bool)
            )
            if scope.peer and not scope.channel:
                keep[:] = False  # fail closed, as the SQL does
            elif scope.peer:
                keep &= visible & (own | (blank & shared))
            else:
                keep &= visible & (own | blank)
        return keep

    def row_of(self, memory_id: str) -> int | None:
        """The row of a memory (``embedded`` says whether it has a vector)."""
        return self._row_of.get(memory_id, len(self.table))

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` to every row (mask it before use)."""
        if len(self.table) == 0:
            return np.zeros(0, dtype=np.float32)
        if self.compact is not None:
            step = 8_192
            out = np.empty(len(self.table), dtype=np.float32)
            for start in range(0, len(self.table), step):
                rows = np.arange(start, min(start + step, len(self.table)), dtype=np.int64)
                out[start : start + rows.shape[0]] = few_rows_product(self.vectors_of(rows), query)
            return out
        if len(self.table) >= _THREADED_ROWS:
            product: npt.NDArray[np.float32] = self.table.matrix @ query
            return product
        with _one_blas_thread():
            sims: npt.NDArray[np.float32] = self.table.matrix @ query
        return sims

    def nearest(self, query: npt.NDArray[np.float32], allowed: Mask, k: int) -> Nearest | None:
        """Candidates for the ``k`` best cosines among ``allowed`` rows from
        the HNSW graph and the tail of rows written since it was extended;
        None when exact search should run instead (no graph, the graph busy
        or far behind the writes)."""
        ann = self.ann
        if ann is None or len(ann) == 0 or len(self.table) == 0:
            return None
        table = self.table
        start = int(np.searchsorted(table.seq, ann.covered_seq, side="right"))
        if len(table) - start > TAIL_ROWS:
            ann.sync(table, vectors=self.vectors_of)  # catch up in the background; exact meanwhile
            return None
        size, labels = self._labels
        if size != len(ann):
            size = len(ann)
            labels = ann.labels_of(table)
            self._labels = (size, labels)
        # The lowest cosine is the nearest neighbour of the negated query:
        # the graph finds it too, far better than a sample (the minimum is
        # an outlier; range normalisation needs it).
        both = ann.search_many([(query, k), (-query, _FARTHEST)], allowed, labels)
        if both is None:
            return None
        found, far = both
        low = self._low(query, allowed)
        if far.shape[0]:
            low = min(low, float(few_rows_product(self.vectors_of(far), query).min()))
        tail = np.flatnonzero(allowed[start:]) + start
        if tail.shape[0]:
            sims = few_rows_product(self.vectors_of(tail), query)
            low = min(low, float(sims.min()))
            if tail.shape[0] > k:
                tail = tail[np.argpartition(-sims, k - 1)[:k]]
        return Nearest(np.concatenate((found, tail)).astype(np.int64), low)

    def nearest_of(
        self, ids: Sequence[str] | None, query: npt.NDArray[np.float32], allowed: Mask
    ) -> Nearest | None:
        """Candidates the store's own index proposed (``Store.nearest``), as
        rows; rows written after this index was built are not among them
        (the next recall's index has them). None when the store has none."""
        if ids is None:
            return None
        length = len(self.table)
        found = [self._row_of.get(memory_id, length) for memory_id in ids]
        rows = np.array([row for row in found if row is not None], dtype=np.int64)
        rows = rows[allowed[rows]] if rows.shape[0] else rows
        return Nearest(rows, self._low(query, allowed))

    def _low(self, query: npt.NDArray[np.float32], allowed: Mask) -> float:
        """The lowest cosine over a fixed random sample of the allowed rows."""
        sample = self._sample
        if sample is None:
            rng = np.random.default_rng(len(self.table))
            size = min(SAMPLE_ROWS, len(self.table))
            rows = np.sort(rng.choice(len(self.table), size=size, replace=False)).astype(np.int64)
            # One assignment of both: another thread sees the pair or
            # nothing (it saw the rows with no vectors yet, at a million rows).
            sample = (rows, np.ascontiguousarray(self.vectors_of(rows)))
            self._sample = sample
        rows, matrix = sample
        keep = allowed[rows]
        if not keep.any():
            return -1.0
        return float(few_rows_product(matrix, query)[keep].min())


def text_columns(
    seqs: npt.NDArray[np.int64], texts: Sequence[tuple[int, str | None, str, str | None, str]]
) -> list[tuple[str | None, str, str | None, str]]:
    """(title, content, context, tags) per row of ``seqs`` from ``texts``
    ((seq, title, content, context, tags), by seq); a row without one
    (deleted since) is blank."""
    columns: list[tuple[str | None, str, str | None, str]] = [(None, "", None, "[]")] * len(seqs)
    for seq, title, content, context, tags in texts:
        row = int(np.searchsorted(seqs, seq))
        if row < len(seqs) and int(seqs[row]) == seq:
            columns[row] = (title, content, context, tags)
    return columns


class DenseView:
    """A query's cosines to an index's rows, as one array the pipeline reads.

    Exact (``partial`` False): every row scored by one matrix product, or,
    when few are allowed, every allowed row (the others read -1).
    Partial: only the rows an approximate search proposed, the ``extra``
    rows (keyword matches) and whatever ``fill`` is later asked for are
    scored, exactly; the others read -1 (below every floor), and ``low``
    estimates the minimum for range normalisation. A compact index
    (``compact.py``) proposes rows from its int8 codes where no graph
    does, with the exact minimum (``_from_codes``).

    Args:
        index: the dense index.
        query: the unit query vector.
        allowed: rows the caller may see that have a vector.
        candidates: how many the approximate search proposes; 0 for exact.
        extra: rows to score in any case.
        external: the store's own nearest-neighbour search (ids for a
            count), used instead of the index's graph when given.
    """

    def __init__(
        self,
        index: DenseIndex,
        query: npt.NDArray[np.float32],
        allowed: Mask,
        *,
        candidates: int,
        extra: Rows,
        external: Callable[[int], Sequence[str] | None] | None = None,
    ) -> None:
        self._index = index
        self._query = query
        self.low: float | None = None
        self.known: Mask | None = None
        #: the rows ``fill`` scored, batch by batch (``scored_rows``)
        self._filled: list[Rows] = []
        near = None
        count = int(np.count_nonzero(allowed)) if candidates > 0 else 0
        few = candidates > 0 and count <= max(GATHER_ROWS, len(index) // 4)
        if index.compact is not None and candidates == 0:
            self._from_codes(allowed, candidates, extra)
            return
        if few:
            # Few rows visible (a narrow scope or filter): score just those,
            # exactly; a graph search under so selective a filter may come
            # up short, and gathering them costs less than the graph walk.
            rows = np.flatnonzero(allowed)
            self.sims = np.full(len(index), -1.0, dtype=np.float32)
            if rows.shape[0]:
                self.sims[rows] = few_rows_product(index.vectors_of(rows), query)
            return
        if candidates > 0 and external is not None:
            near = index.nearest_of(external(candidates), query, allowed)
        elif candidates > 0:
            near = index.nearest(query, allowed, candidates)
        if near is None and index.compact is not None:
            self._from_codes(allowed, candidates, extra)
            return
        if near is None:
            self.sims = index.scores(query)
            return
        self.low = near.low
        self.sims = np.full(len(index), -1.0, dtype=np.float32)
        self.known = np.zeros(len(index), dtype=bool)
        self.fill(np.concatenate((near.rows, extra)))

    @classmethod
    def scored(
        cls, index: DenseIndex, sims: npt.NDArray[np.float32], low: float | None
    ) -> DenseView:
        """A view of cosines computed elsewhere (the store's, in database
        mode), one per row of ``index``, which holds only the rows a recall
        ranks: every row is scored, and ``low`` is the lowest cosine over
        every row the caller may see (the index's own lowest when None)."""
        view = cls.__new__(cls)
        view._index = index
        view._query = np.zeros(0, dtype=np.float32)
        view.sims = np.asarray(sims, dtype=np.float32)
        view.known = np.ones(len(index), dtype=bool)
        view._filled = [np.arange(len(index), dtype=np.int64)]
        seen = view.sims[index.embedded]
        view.low = low if low is not None else (float(seen.min()) if seen.shape[0] else None)
        return view

    @property
    def partial(self) -> bool:
        """Whether only some rows are scored."""
        return self.known is not None

    def fill(self, rows: Rows) -> Rows:
        """Score ``rows`` not scored yet; returns them."""
        if self.known is None or rows.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        rows = np.unique(rows)
        rows = rows[~self.known[rows]]
        if rows.shape[0]:
            self.sims[rows] = few_rows_product(self._index.vectors_of(rows), self._query)
            self.known[rows] = True
            self._filled.append(rows)
        return rows

    def scored_rows(self) -> Rows:
        """The rows scored (every row, unless ``partial``), in no set order:
        where only some were, those ``fill`` scored, without a pass over
        every row's flag."""
        if self.known is None:
            return np.arange(len(self._index), dtype=np.int64)
        if not self._filled:
            return np.empty(0, dtype=np.int64)
        if len(self._filled) > 1:
            self._filled = [np.concatenate(self._filled)]
        return self._filled[0]

    def _from_codes(self, allowed: Mask, candidates: int, extra: Rows) -> None:
        """Scores from an int8 scan of every row (``compact.py``), re-scored
        exactly wherever the order or the range reads them: every allowed
        row that may be among the ``EXACT_WINDOW`` (or ``candidates``) best
        or be the lowest, and ``extra``. Those rows, their order and the
        lowest cosine equal an exact search's.

        With ``candidates`` (weighted fusion) the view is partial, as after
        a graph's proposals: other rows are scored when ``fill`` asks. For
        RRF (no ``candidates``) every allowed row reads its estimate and
        the best their exact cosines (RRF reads the best ranks alone)."""
        index, query = self._index, self._query
        compact = index.compact
        assert compact is not None
        approx, bound = compact.estimates(query)
        approx = np.where(allowed, approx, -np.inf).astype(np.float32)
        best = shortlist(approx, bound, max(EXACT_WINDOW, candidates))
        least = lowest(approx, bound)
        exact = np.concatenate((best, least, extra.astype(np.int64)))
        if candidates == 0:
            self.sims = np.where(allowed, approx, np.float32(-1.0)).astype(np.float32)
            exact = np.unique(exact)
            if exact.shape[0]:
                self.sims[exact] = few_rows_product(index.vectors_of(exact), query)
            return
        self.sims = np.full(len(index), -1.0, dtype=np.float32)
        self.known = np.zeros(len(index), dtype=bool)
        self.fill(exact)
        self.low = float(self.sims[least].min()) if least.shape[0] else None


# Below this many rows the product runs on one BLAS thread: OpenBLAS's
# threads gain nothing on a small memory-bound product and, on a busy
# machine, wait for each other (10k x 384 measured 1.3 ms on one thread
# against 16 ms on two at load average 5; BENCHMARKS.md).
_THREADED_ROWS = 50_000
_CONTROLLER: list[ThreadpoolController] = []


def _one_blas_thread() -> AbstractContextManager[object]:
    """Limit BLAS to one thread for a block (the controller is made once,
    on first use: it inspects the loaded libraries)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    limited: AbstractContextManager[object] = _CONTROLLER[0].limit(limits=1, user_api="blas")
    return limited


def few_rows_product(
    matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``matrix @ vector`` on one BLAS thread, for the products of a recall
    over a subset of rows (a sample, candidates, the unindexed tail): on a
    busy machine OpenBLAS's threads wait for each other, and a 4,096 x 256
    product took 5 ms on its threads against 0.2 ms on one (two loaded
    cores). Each row's cosine is the same either way."""
    if matrix.shape[0] >= _THREADED_ROWS:
        big: npt.NDArray[np.float32] = matrix @ vector
        return big
    with _one_blas_thread():
        product: npt.NDArray[np.float32] = matrix @ vector
    return product
