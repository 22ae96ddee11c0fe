"""A warm, in-memory keyword index: BM25 over postings held in numpy arrays.

Scores are FTS5's ``bm25()`` as SQLite computes it (fts5_aux.c; Robertson &
Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)
over the same text the SQLite backend indexes (title, content, context and
tags, weighted 1.5 / 1.0 / 0.5 / 1.0), cut into the same terms
(``store/words.py``)::

    score(d) = sum over query phrases p of
               idf(p) * f(p, d) * (k1 + 1) / (f(p, d) + k1 * (1 - b + b * |d| / avgdl))

with ``f(p, d)`` the column-weighted count of ``p`` in ``d``, ``|d|`` its
length in tokens over every column, k1 = 1.2, b = 0.75, and ``idf(p) =
ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6. N, n and ``avgdl`` (the
mean length) count only the rows the caller's scope may see, so what other
agents write or erase never moves a score or an order of this one's hits.
Where the scope sees every row, these are FTS5's own figures; where it sees
fewer, the store's search before this index is warm re-scores FTS5's answers
with the same figures (``store/sqlite_text.py``), to the same floats.

Against FTS5 on disk, this index answers in a few milliseconds at 100k
memories where FTS5 spends most of a recall computing ``bm25()`` for every
row that shares a common word with the query. It is the same on every
backend, so PostgreSQL ranks exactly as SQLite does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval.appending import Growable
from mindpalace.store import words
from mindpalace.store.fts5_bm25 import K1, B, fts5_idf

__all__ = [
    "COLUMN_WEIGHTS",
    "KeywordIndex",
    "Occurrences",
    "ScopeParts",
    "Term",
    "fts5_idf",
    "ordered_rows",
    "top_rows",
    "top_scored",
]

#: title, content, context, tags (the SQLite backend's ``bm25()`` weights)
COLUMN_WEIGHTS = (1.5, 1.0, 0.5, 1.0)
#: rows tokenised at a time while building
CHUNK_ROWS = 1_000
_WEIGHTS = np.array(COLUMN_WEIGHTS, dtype=np.float64)
#: what a restored index's counts may be kept as (all hold sums of halves)
_COUNT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
#: postings checked at a time when an index is restored
_CHECK_ROWS = 1 << 20

Rows = npt.NDArray[np.int32]
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class _Segment:
    """Postings of a run of rows, grouped by term, and within a term by the
    rows' scope partition: term ``t``'s rows are ``rows[start[t]:start[t + 1]]``
    (by partition, then ascending), with weighted counts ``tf`` and their
    partitions ``parts``. A restored segment's arrays may be read-only
    mappings of a file, and its ``tf`` a narrower float than float64
    (``KeywordIndex.postings`` widens what a query reads): nothing writes
    into a segment's arrays; a merge makes new ones."""

    __slots__ = ("parts", "rows", "start", "tf")

    def __init__(
        self,
        terms: npt.NDArray[np.int64],
        rows: Rows,
        tf: Floats,
        vocab: int,
        parts: npt.NDArray[np.int32],
    ) -> None:
        # Stable by term, then partition: rows stay ascending within. One
        # key sorted stably is lexsort's order; a merge's parts are runs
        # already sorted, which the stable sort (timsort) merges in linear time.
        width = int(parts.max()) + 1 if parts.size else 1
        order = np.argsort(terms * width + parts, kind="stable")
        self.rows: Rows = rows[order]
        self.tf: npt.NDArray[np.floating[Any]] = tf[order]
        self.parts: npt.NDArray[np.int32] = parts[order]
        counts = np.bincount(terms, minlength=vocab) if terms.size else np.zeros(vocab, np.int64)
        self.start = np.zeros(vocab + 1, dtype=np.int64)
        np.cumsum(counts, out=self.start[1:])

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def postings(
        self, term: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> tuple[Rows, npt.NDArray[np.floating[Any]]]:
        """The term's postings, only those of the ``allowed`` partitions
        (sorted) when given: their runs are found by binary search, so the
        work grows with the allowed partitions' postings alone."""
        if term + 1 >= self.start.shape[0]:
            return self.rows[:0], self.tf[:0]
        lo, hi = int(self.start[term]), int(self.start[term + 1])
        if allowed is None or lo == hi:
            return self.rows[lo:hi], self.tf[lo:hi]
        parts = self.parts[lo:hi]
        firsts = np.searchsorted(parts, allowed, side="left")
        lasts = np.searchsorted(parts, allowed, side="right")
        runs = [(lo + int(a), lo + int(b)) for a, b in zip(firsts, lasts, strict=True) if b > a]
        if len(runs) == 1:
            a, b = runs[0]
            return self.rows[a:b], self.tf[a:b]
        if not runs:
            return self.rows[:0], self.tf[:0]
        picked = np.concatenate([np.arange(a, b) for a, b in runs])
        return self.rows[picked], self.tf[picked]


class KeywordIndex:
    """BM25 over rows ``0..n-1`` (the dense index's rows, in write order).

    Built from each row's (title, content, context, tags); rows written later
    are added with ``extended``, which keeps the built postings and adds a
    segment: a segment merges into the one before it once it holds a fifth
    of its postings, so segments shrink fivefold from the first (a handful
    at most) and an append rewrites, on average, a small multiple of its
    own postings. ``extended`` shares the vocabulary, the partitions and
    the per-row arrays (their buffers, ``appending.Growable``) with the
    index it extends; each index reads only its own rows and terms, so an
    older one answers as before.

    ``scopes`` gives each row's scope partition as a number (any stable
    key of its agent, visibility, group and channel): each term's postings
    are then grouped by partition, and a search reads only the partitions
    of the rows it may see, so its work never grows with other scopes'
    matches (a timing oracle for their words otherwise).
    """

    def __init__(
        self,
        texts: Sequence[Sequence[str | None]],
        *,
        scopes: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self._vocab: dict[str, int] = {}
        # token -> term id, so each distinct token is stemmed once
        self._token_ids: dict[str, int] = {}
        # scope key -> partition number, in order of first appearance
        self._partitions: dict[int, int] = {}
        self.row_parts: npt.NDArray[np.int32] = self._parts_of(scopes, len(texts))
        terms, rows, tf, self.lengths = self._postings(texts, 0)
        segment = _Segment(terms, rows, tf, len(self._vocab), self.row_parts[rows])
        self._segments: tuple[_Segment, ...] = (segment,) if len(segment) else ()
        self._counted()

    def _counted(self) -> None:
        """Note what this index holds of what it shares with others: its
        terms, partitions and rows' lengths summed (``_norm_of``)."""
        #: term ids below this are this index's (the vocabulary is shared)
        self._terms = len(self._vocab)
        self._part_count = len(self._partitions)
        self._total = float(self.lengths.sum())
        self._rooms = (Growable(self.lengths), Growable(self.row_parts))
        #: per partition: a row, rows, tokens (``_partition_stats``, when asked)
        self._stats: _PartitionStats | None = None

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def _parts_of(self, scopes: npt.NDArray[np.int64] | None, count: int) -> npt.NDArray[np.int32]:
        """Partition numbers of ``count`` new rows of scope keys ``scopes``
        (every row one partition when None)."""
        if count == 0:
            return np.zeros(0, dtype=np.int32)
        if scopes is None:
            self._partitions.setdefault(-1, len(self._partitions))
            return np.full(count, self._partitions[-1], dtype=np.int32)
        keys, inverse = np.unique(np.asarray(scopes, dtype=np.int64), return_inverse=True)
        numbers = np.array(
            [self._partitions.setdefault(int(k), len(self._partitions)) for k in keys],
            dtype=np.int32,
        )
        parts: npt.NDArray[np.int32] = numbers[inverse.ravel()]
        return parts

    def _postings(
        self, texts: Sequence[Sequence[str | None]], first: int
    ) -> tuple[npt.NDArray[np.int64], Rows, Floats, Floats]:
        # Token by token in Python this took ~0.1 ms a memory; here the
        # tokens of all texts are listed at C speed, stemmed once per
        # distinct word, and counted with numpy. Rows go CHUNK_ROWS at a
        # time: the index is often built in a background thread, and no
        # single call should hold the interpreter for seconds (a recall
        # waits for it).
        ids = self._token_ids
        term_parts: list[npt.NDArray[np.int64]] = []
        key_parts: list[npt.NDArray[np.int64]] = []  # row * 4 + column, per token
        for lo in range(0, len(texts), CHUNK_ROWS):
            tokens: list[str] = []
            slots: list[int] = []
            sizes: list[int] = []
            for offset in range(lo, min(lo + CHUNK_ROWS, len(texts))):
                for field, text in enumerate(texts[offset]):
                    if not text:
                        continue
                    found = words.tokens(text)
                    tokens.extend(found)
                    slots.append(offset * 4 + field)
                    sizes.append(len(found))
            for token in set(tokens).difference(ids):
                ids[token] = self._vocab.setdefault(words.stem(token), len(self._vocab))
            term_parts.append(
                np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))
            )
            key_parts.append(
                np.repeat(np.array(slots, dtype=np.int64), np.array(sizes, dtype=np.int64))
            )
        term = np.concatenate(term_parts) if term_parts else np.zeros(0, dtype=np.int64)
        slot = np.concatenate(key_parts) if key_parts else np.zeros(0, dtype=np.int64)
        doc, column = slot >> 2, slot & 3
        lengths = np.bincount(doc, minlength=len(texts)).astype(np.float64)
        width = max(len(self._vocab), 1)
        # One sort of (row, term, column) keys: a run of equal (row, term)
        # is one posting, its tf the sum of its tokens' column weights
        # (halves and wholes: exact in any order).
        keys = np.sort((doc * width + term) * 4 + column)
        pair = keys >> 2
        starts = np.flatnonzero(np.diff(pair)) + 1 if pair.shape[0] else pair
        starts = np.concatenate(([0], starts)) if pair.shape[0] else starts
        tf = np.add.reduceat(_WEIGHTS[keys & 3], starts) if pair.shape[0] else np.zeros(0)
        pairs = pair[starts]
        return (
            (pairs % width).astype(np.int64),
            (pairs // width + first).astype(np.int32),
            tf.astype(np.float64),
            lengths,
        )

    def _merge(self, parts: Sequence[_Segment]) -> _Segment:
        vocab = len(self._vocab)
        terms = []
        for part in parts:
            counts = np.diff(part.start)
            terms.append(np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts))
        # Stable by term and partition: rows stay ascending, as every later
        # part's rows come after the earlier parts' ones.
        rows = np.concatenate([p.rows for p in parts])
        return _Segment(
            np.concatenate(terms),
            rows,
            np.concatenate([p.tf for p in parts]),
            vocab,
            np.concatenate([p.parts for p in parts]),
        )

    def extended(
        self, texts: Sequence[Sequence[str | None]], scopes: npt.NDArray[np.int64] | None = None
    ) -> KeywordIndex:
        """A new index with rows for ``texts`` (scope keys ``scopes``) after
        this one's; this one is left as it was."""
        if not texts:
            return self
        index = KeywordIndex.__new__(KeywordIndex)
        index._vocab, index._token_ids = self._vocab, self._token_ids
        index._partitions = self._partitions
        new_parts = index._parts_of(scopes, len(texts))
        terms, rows, tf, lengths = index._postings(texts, len(self))
        lengths_room, index.lengths = self._rooms[0].append(self.lengths, lengths)
        parts_room, index.row_parts = self._rooms[1].append(self.row_parts, new_parts)
        index._rooms = (lengths_room, parts_room)
        index._terms = len(self._vocab)
        index._part_count = len(self._partitions)
        # Lengths are whole numbers of tokens: the sum is exact in any order.
        index._total = self._total + float(lengths.sum())
        index._stats = (
            None
            if self._stats is None
            else self._stats.extended(new_parts, lengths, len(self), index._part_count)
        )
        segment = _Segment(terms, rows, tf, len(self._vocab), index.row_parts[rows])
        parts = [*self._segments, segment] if len(segment) else list(self._segments)
        while len(parts) >= 2 and len(parts[-1]) * 5 >= len(parts[-2]):
            parts[-2:] = [index._merge(parts[-2:])]
        index._segments = tuple(parts)
        return index

    def state(self) -> tuple[list[str], dict[str, npt.NDArray[np.generic]]]:
        """What ``restored`` rebuilds this index from: its terms (by term
        id) and its arrays (per-row lengths and partitions, each segment's
        postings and their partitions, which a load would otherwise
        compute). Scope keys are not kept: ``restored`` takes the rows' keys
        of the table it is restored for."""
        vocab = self._terms
        terms = [""] * vocab
        for term, number in list(self._vocab.items()):  # shared: grows meanwhile
            if number < vocab:
                terms[number] = term
        arrays: dict[str, npt.NDArray[np.generic]] = {
            "lengths": self.lengths,
            "row_parts": self.row_parts,
        }
        for i, segment in enumerate(self._segments):
            start = segment.start
            if start.shape[0] < vocab + 1:  # built before later terms came
                start = np.concatenate((start, np.full(vocab + 1 - start.shape[0], start[-1])))
            arrays[f"segment{i}_rows"] = segment.rows
            arrays[f"segment{i}_tf"] = segment.tf
            arrays[f"segment{i}_start"] = start
            arrays[f"segment{i}_parts"] = segment.parts
        return terms, arrays

    @classmethod
    def restored(
        cls,
        terms: Sequence[str],
        arrays: Mapping[str, npt.NDArray[np.generic]],
        scopes: npt.NDArray[np.int64],
    ) -> KeywordIndex:
        """The index ``state`` described, for rows of scope keys ``scopes``.

        The arrays are kept as they are, never copied: a memory-mapped
        file's stay its pages, shared by every process that maps it. Each
        must be of the type ``state`` gives it (a count any float type);
        every posting is checked once, a chunk at a time.

        Raises:
            ValueError: the state is inconsistent (an array of another type,
                a posting outside the rows, a term outside the terms, a
                count that is not positive, a posting's partition not its
                row's), or its partitions do not group ``scopes``'s rows one
                key to one partition.
        """
        lengths = _typed(arrays["lengths"], np.float64)
        row_parts = _typed(arrays["row_parts"], np.int32)
        count = int(lengths.shape[0])
        if row_parts.shape != (count,) or scopes.shape != (count,):
            raise ValueError("rows, lengths and partitions disagree")
        # Scope keys are codes of the names in the table they came from, which
        # a later load of the palace may number differently: the partitions
        # are matched to today's keys through the rows they group.
        keys, inverse = np.unique(scopes.astype(np.int64), return_inverse=True)
        parts = np.zeros(keys.shape[0], dtype=np.int64)
        parts[inverse] = row_parts
        if (
            not np.array_equal(parts[inverse], row_parts)  # a key in two partitions
            or np.unique(parts).shape[0] != parts.shape[0]  # a partition of two keys
            or (count and (int(parts.min()) < 0 or int(parts.max()) >= parts.shape[0]))
        ):
            raise ValueError("the partitions do not match the rows' scopes")
        segments = []
        vocab = len(terms)
        i = 0
        while f"segment{i}_rows" in arrays:
            rows = _typed(arrays[f"segment{i}_rows"], np.int32)
            tf = np.asarray(arrays[f"segment{i}_tf"])
            start = _typed(arrays[f"segment{i}_start"], np.int64)
            seg_parts = _typed(arrays[f"segment{i}_parts"], np.int32)
            size = rows.shape[0]
            if (
                tf.dtype not in _COUNT_TYPES
                or tf.shape != (size,)
                or seg_parts.shape != (size,)
                or start.shape != (vocab + 1,)
                or int(start[0]) != 0
                or int(start[-1]) != size
                or bool(np.any(np.diff(start) < 0))
                or not _postings_hold(rows, tf, seg_parts, start, row_parts)
            ):
                raise ValueError(f"segment {i} is inconsistent")
            segment = _Segment.__new__(_Segment)
            segment.rows, segment.tf, segment.parts, segment.start = rows, tf, seg_parts, start
            segments.append(segment)
            i += 1
        if len(set(terms)) != vocab or not bool(np.all((lengths >= 0) & (lengths < np.inf))):
            raise ValueError("terms repeat, or lengths are negative")
        index = cls.__new__(cls)
        index._vocab = {term: number for number, term in enumerate(terms)}
        index._token_ids = {}
        index._partitions = {int(k): int(p) for k, p in zip(keys, parts, strict=True)}
        index.row_parts = row_parts
        index.lengths = lengths
        index._segments = tuple(segments)
        index._counted()
        return index

    def postings(
        self, phrase: str, allowed: npt.NDArray[np.int64] | None = None
    ) -> tuple[Rows, Floats]:
        """Rows holding the (already cut and stemmed) term, and its weighted
        counts; only those of the ``allowed`` partitions when given."""
        term = self._vocab.get(phrase)
        if term is None or term >= self._terms:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        found = [segment.postings(term, allowed) for segment in self._segments]
        if len(found) == 1:
            rows, tf = found[0]
        else:
            rows = np.concatenate([r for r, _ in found])
            tf = np.concatenate([t for _, t in found])
        # Counts may be kept narrower (exactly); scores add float64s.
        return rows, tf.astype(np.float64, copy=False)

    def tokens_of(self, visible: Mask) -> float:
        """The ``visible`` rows' lengths summed (what ``scores`` divides by
        their count for the mean length)."""
        return float(self.lengths.sum(where=visible))

    def _partition_stats(self) -> _PartitionStats:
        stats = self._stats
        if stats is None:
            count, rows = self._part_count, len(self)
            first = np.full(count, -1, dtype=np.int64)
            # Written last to first: each partition keeps its first row.
            first[self.row_parts[::-1]] = np.arange(rows - 1, -1, -1, dtype=np.int64)
            sizes = np.bincount(self.row_parts, minlength=count).astype(np.int64)
            weighed = np.bincount(self.row_parts, weights=self.lengths, minlength=count)
            tokens = weighed.astype(np.float64)
            stats = self._stats = _PartitionStats(first, sizes, tokens)
        return stats

    def scope_parts(self, visible: Mask) -> ScopeParts:
        """The partitions ``visible`` covers, which must be whole partitions
        (the rows a scope sees are: partitions are keyed by the columns its
        rule reads), with their rows counted and tokens summed, in a time
        that grows with the partitions, not the rows.

        Raises:
            ValueError: ``visible`` splits a partition (seen by its count).
        """
        stats = self._partition_stats()
        present = np.flatnonzero(stats.first >= 0)
        allowed = present[visible[stats.first[present]]] if len(self) else present
        seen = int(stats.sizes[allowed].sum())
        if seen != int(np.count_nonzero(visible)):
            raise ValueError("the visible rows are not whole scope partitions")
        # Lengths are whole numbers of tokens: any order sums them exactly.
        return ScopeParts(allowed, seen, float(stats.tokens[allowed].sum()))

    def scores(
        self,
        query_words: Sequence[str],
        visible: Mask,
        *,
        parts: ScopeParts | None = None,
        only: Mask | None = None,
    ) -> Floats:
        """BM25 of every row for ``query_words`` (each an FTS5 phrase of one
        word), idf and mean length counted over the ``visible`` rows
        (``parts``: their ``scope_parts``, which spares reading every row).
        Rows outside ``visible`` are scored too: mask them before use. With
        ``only``, just those rows are scored (the others stay 0), each to
        the same float: a caller that chooses among a few rows does not
        pay for every row holding a common word."""
        found = self.occurrences(query_words, visible, parts=parts)
        return self.scores_of(found, only=only)

    def scores_of(self, found: Occurrences, *, only: Mask | None = None) -> Floats:
        """``scores`` of the terms ``occurrences`` found."""
        out = np.zeros(len(self), dtype=np.float64)
        for term in found.terms:
            rows, tf = term.rows, term.tf
            if only is not None:
                kept = only[rows]
                rows, tf = rows[kept], tf[kept]
            out[rows] += found.weigh(term, rows, tf)
        return out

    def occurrences(
        self, query_words: Sequence[str], visible: Mask, *, parts: ScopeParts | None = None
    ) -> Occurrences:
        """Each term of ``query_words`` the ``visible`` rows hold, in the
        query's order, with its postings (those of the visible partitions
        when ``parts`` or several partitions say which) and idf, and the
        length normalisation of the visible rows: what ``scores`` sums."""
        rows_total = len(self)
        seen = int(np.count_nonzero(visible)) if parts is None else parts.seen
        whole = seen == rows_total
        # k1 (1 - b + b |d| / avgdl) = base + per_token * |d|, avgdl the visible rows' own
        if parts is not None:
            visible_tokens = parts.tokens
        else:
            visible_tokens = self.tokens_of(visible) if not whole else 0.0
        avgdl = visible_tokens / seen if visible_tokens > 0 else 1.0
        base, per_token = K1 * (1.0 - B), K1 * B / avgdl
        mean = self._total / rows_total if rows_total and self._total > 0 else 1.0
        # The partitions holding a visible row: only their postings are read.
        allowed: npt.NDArray[np.int64] | None = None
        if not whole and parts is not None:
            allowed = parts.allowed
        elif not whole and self._part_count > 1:
            allowed = np.flatnonzero(
                np.bincount(self.row_parts[visible], minlength=self._part_count)
            )
        terms: list[Term] = []
        for word in query_words:
            # A word FTS5 would cut in several tokens is a phrase there;
            # here each token counts on its own (rare: "a·b", scripts
            # unicode61 splits).
            for phrase in words.terms(word):
                rows, tf = self.postings(phrase, allowed)
                if rows.shape[0] == 0:
                    continue
                if whole:
                    idf = fts5_idf(rows_total, int(rows.shape[0]))
                else:
                    # Whole partitions: every posting read is a visible row's.
                    hits = (
                        int(rows.shape[0])
                        if parts is not None
                        else int(np.count_nonzero(visible[rows]))
                    )
                    if not hits:
                        continue
                    idf = fts5_idf(max(seen, hits), hits)
                # Widened once: numpy widens an int32 index at every use.
                terms.append(Term(phrase, rows.astype(np.int64), tf, idf))
        norm = _Norm(self.lengths, whole, mean, base, per_token)
        return Occurrences(terms, norm)


class Term(NamedTuple):
    """One occurrence of a term in a query: its postings and idf."""

    phrase: str
    rows: npt.NDArray[np.int64]
    tf: Floats
    idf: float


class _Norm(NamedTuple):
    lengths: Floats
    whole: bool
    mean: float
    base: float
    per_token: float


class Occurrences(NamedTuple):
    """A query's terms over an index (``KeywordIndex.occurrences``)."""

    terms: list[Term]
    norm: _Norm

    def weigh(self, term: Term, rows: npt.NDArray[np.int64], tf: Floats) -> Floats:
        """BM25's share of ``term`` in each of ``rows`` (postings of it,
        counts ``tf``): the same float whichever rows are asked."""
        n = self.norm
        lengths = n.lengths[rows]
        norm = _norm_of(lengths, n.mean) if n.whole else n.base + n.per_token * lengths
        weighed: Floats = term.idf * tf * (K1 + 1.0) / (tf + norm)
        return weighed

    @property
    def floor(self) -> float:
        """The least length normalisation any row can have (of a row of
        no tokens): what bounds a term's share from above."""
        return K1 * (1.0 - B)


class ScopeParts(NamedTuple):
    """The rows a scope sees, as whole partitions (``KeywordIndex.scope_parts``).

    Attributes:
        allowed: the partitions, ascending.
        seen: how many rows they hold.
        tokens: those rows' lengths summed.
    """

    allowed: npt.NDArray[np.int64]
    seen: int
    tokens: float


class _PartitionStats(NamedTuple):
    first: npt.NDArray[np.int64]  # a row of each partition (-1: none here)
    sizes: npt.NDArray[np.int64]  # rows of each partition
    tokens: Floats  # their lengths summed

    def extended(
        self, parts: npt.NDArray[np.int32], lengths: Floats, start: int, count: int
    ) -> _PartitionStats:
        """These with rows ``start..`` of partitions ``parts`` and
        ``lengths`` added (``count`` partitions now); these are left as
        they were."""
        grow = count - self.first.shape[0]
        first = np.concatenate((self.first, np.full(grow, -1, dtype=np.int64)))
        new = np.full(count, -1, dtype=np.int64)
        new[parts[::-1]] = np.arange(start + parts.shape[0] - 1, start - 1, -1, dtype=np.int64)
        first = np.where(first >= 0, first, new)
        sizes = np.concatenate((self.sizes, np.zeros(grow, dtype=np.int64)))
        tokens = np.concatenate((self.tokens, np.zeros(grow, dtype=np.float64)))
        sizes = sizes + np.bincount(parts, minlength=count)
        tokens = tokens + np.bincount(parts, weights=lengths, minlength=count).astype(np.float64)
        return _PartitionStats(first, sizes, tokens)


def _typed(array: npt.NDArray[Any], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """``array`` itself when it is one-dimensional of ``dtype``: a restored
    array is never converted (a copy would be this process's own memory,
    and a narrowing one could wrap a bad value into range)."""
    array = np.asarray(array)
    if array.dtype != dtype or array.ndim != 1:
        raise ValueError(f"{array.dtype} x {array.shape} where {np.dtype(dtype)} rows belong")
    return array


def _postings_hold(
    rows: Rows,
    tf: npt.NDArray[np.floating[Any]],
    parts: npt.NDArray[np.int32],
    start: npt.NDArray[np.int64],
    row_parts: npt.NDArray[np.int32],
) -> bool:
    """Whether restored postings are sound: rows inside the index, counts
    positive and finite, each posting's partition its row's, and each
    term's postings ordered by partition (what ``_Segment.postings``
    searches). Checked ``_CHECK_ROWS`` at a time, so a check holds no more
    than a few megabytes besides the arrays."""
    count = row_parts.shape[0]
    for lo in range(0, rows.shape[0], _CHECK_ROWS):
        hi = min(lo + _CHECK_ROWS, rows.shape[0])
        chunk = rows[lo:hi]
        if int(chunk.min()) < 0 or int(chunk.max()) >= count:
            return False
        counts = tf[lo:hi]
        if not bool(np.all((counts > 0) & (counts < np.inf))):
            return False
        if not np.array_equal(parts[lo:hi], row_parts[chunk]):
            return False
        # A fall in partition numbers only where a term's postings begin.
        first = max(lo - 1, 0)
        falls = np.flatnonzero(np.diff(parts[first:hi]) < 0) + first + 1
        if falls.shape[0] and not np.array_equal(start[np.searchsorted(start, falls)], falls):
            return False
    return True


def _norm_of(lengths: Floats, avgdl: float) -> Floats:
    """BM25 length normalisation of rows of ``lengths``, k1 * (1 - b + b * |d| / avgdl)."""
    norm: Floats = K1 * (1.0 - B + B * lengths / avgdl)
    return norm


def top_rows(
    scores: Floats,
    candidates: Mask,
    *,
    created_at: npt.NDArray[np.float64],
    ids: npt.NDArray[np.object_],
    limit: int,
) -> list[int]:
    """The ``limit`` best rows with a positive score among ``candidates``:
    best first, then newest, then highest id (the SQL backends' order)."""
    best = top_scored(scores, candidates, created_at=created_at, ids=ids, limit=limit)
    return [row for row, _ in best]


def top_scored(
    scores: Floats,
    candidates: Mask,
    *,
    created_at: npt.NDArray[np.float64],
    ids: npt.NDArray[np.object_],
    limit: int,
) -> list[tuple[int, float]]:
    """``top_rows``, each with its score."""
    chosen = np.flatnonzero(candidates & (scores > 0))
    return ordered_rows(chosen, scores[chosen], created_at=created_at, ids=ids, limit=limit)


def ordered_rows(
    rows: npt.NDArray[np.int64],
    values: Floats,
    *,
    created_at: npt.NDArray[np.float64],
    ids: npt.NDArray[np.object_],
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` best of ``rows`` (distinct, each scoring its entry of
    ``values``, all positive) in ``top_rows``'s order, with their scores."""
    if limit <= 0:
        return []
    if rows.shape[0] > limit:
        kth = np.partition(values, values.shape[0] - limit)[values.shape[0] - limit]
        kept = values >= kth  # ties at the edge kept, cut below
        rows, values = rows[kept], values[kept]
    score = dict(zip(rows.tolist(), values.tolist(), strict=True))
    ordered = sorted(score, key=lambda r: str(ids[r]), reverse=True)
    ordered.sort(key=lambda r: (-score[r], -created_at[r]))
    return [(row, score[row]) for row in ordered[:limit]]
