"""A warm index of which memories mention which entity, for the graph stage.

The store's ``entity_members`` answers the same question in SQL, one query
per entity; recall asks it for every entity of its seeds and of their
neighbours, which cost most of the graph stage at 10k memories. Here each
entity key maps to the index rows of the memories that mention it, and the
caller's scope-and-filter mask (``DenseIndex.mask``) decides what counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["MentionIndex"]

Rows = npt.NDArray[np.int64]
#: what a restored index's rows may be kept as
_ROW_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


class MentionIndex:
    """Entity key -> rows of the memories mentioning it (ascending). A
    restored index's rows are views of the array it was restored from (a
    memory-mapped file's, shared between processes), never written into.

    An index over ``count`` rows may share its mapping with the indexes
    ``extended`` made from it, which hold more rows: it reads only the
    rows below ``count`` of each key."""

    def __init__(self, rows: dict[str, Rows] | None = None, count: int | None = None) -> None:
        self._rows: dict[str, Rows] = rows if rows is not None else {}
        #: the rows this index covers (None: every row its mapping holds)
        self.count = count
        # the rows the shared mapping covers (that of the latest index)
        self._filled: list[int | None] = [count]

    @classmethod
    def build(
        cls,
        pairs: Sequence[tuple[str, int]],
        seqs: npt.NDArray[np.int64],
        *,
        base: MentionIndex | None = None,
    ) -> MentionIndex:
        """From (entity key, memory seq) pairs; ``seqs`` are the index rows'
        seqs (ascending). Mentions of memories the rows do not hold yet are
        left out: they come with those rows."""
        found = cls._found(pairs, seqs)
        merged = dict(base._cut()._rows) if base is not None else {}
        for key, new in found.items():
            old = merged.get(key)
            merged[key] = new if old is None else np.union1d(old, new)
        return cls(merged, len(seqs))

    def extended(
        self, pairs: Sequence[tuple[str, int]], seqs: npt.NDArray[np.int64]
    ) -> MentionIndex:
        """This index with ``pairs`` (entity key, memory seq) of the rows
        after its own (``seqs``: every row's seq, ascending), as ``build``
        with ``base`` makes it. The mapping is shared with this index, each
        key's rows grown at their end, when this index is the latest made
        from it and covers its rows; the work is then that of ``pairs``."""
        count = self.count
        if count is None or self._filled[0] != count:
            # Not the latest index of its mapping (or not counted): its own.
            return MentionIndex.build(pairs, seqs, base=self)
        found = self._found(pairs, seqs)
        rows = self._rows
        added = {}
        for key, new in found.items():
            old = rows.get(key)
            if new[0] < count:  # a mention of an older row: not an append
                return MentionIndex.build(pairs, seqs, base=self)
            added[key] = new if old is None else np.concatenate((old, new))
        rows.update(added)  # each key's rows past the count of every older index
        index = MentionIndex(rows, len(seqs))
        index._filled = self._filled
        self._filled[0] = len(seqs)
        return index

    def _cut(self) -> MentionIndex:
        """This index with a mapping of its own rows alone (itself when
        its mapping holds no others)."""
        if self.count is None or self._filled[0] == self.count:
            return self
        return MentionIndex(dict(self._visible()), self.count)

    def _visible(self) -> list[tuple[str, Rows]]:
        """Each key's rows below ``count`` (keys of none left out)."""
        count = self.count
        if count is None:
            return list(self._rows.items())
        out: list[tuple[str, Rows]] = []
        for key, held in list(self._rows.items()):  # shared: grows meanwhile
            cut = held.shape[0] and held[-1] >= count
            rows = held[: int(np.searchsorted(held, count))] if cut else held
            if rows.shape[0]:
                out.append((key, rows))
        return out

    @staticmethod
    def _found(pairs: Sequence[tuple[str, int]], seqs: npt.NDArray[np.int64]) -> dict[str, Rows]:
        """Rows of ``seqs`` per entity key of ``pairs`` (ascending, each once)."""
        found: dict[str, Rows] = {}
        if len(seqs) and pairs:
            codes: dict[str, int] = {}
            norm = np.fromiter(
                (codes.setdefault(n, len(codes)) for n, _ in pairs),
                dtype=np.int64,
                count=len(pairs),
            )
            seq = np.fromiter((s for _, s in pairs), dtype=np.int64, count=len(pairs))
            row = np.minimum(np.searchsorted(seqs, seq), len(seqs) - 1)
            held = seqs[row] == seq
            norm, row = norm[held], row[held]
            order = np.lexsort((row, norm))
            norm, row = norm[order], row[order]
            # Sorted by entity, then row: a repeat is equal to its predecessor.
            fresh = np.ones(norm.shape[0], dtype=bool)
            fresh[1:] = (norm[1:] != norm[:-1]) | (row[1:] != row[:-1])
            norm, row = norm[fresh], row[fresh]
            cuts = np.flatnonzero(np.diff(norm)) + 1
            names = list(codes)
            if norm.shape[0]:
                firsts = norm[np.concatenate(([0], cuts))].tolist()
                for code, part_rows in zip(firsts, np.split(row, cuts), strict=True):
                    found[names[code]] = part_rows
        return found

    def state(self) -> tuple[list[str], npt.NDArray[np.int64], Rows]:
        """What ``restored`` rebuilds this index from: the entity keys, the
        offsets of each key's rows in the third array, and the rows."""
        held = self._visible()
        keys = [key for key, _ in held]
        sizes = np.fromiter((r.shape[0] for _, r in held), dtype=np.int64, count=len(held))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        rows = (
            np.concatenate([r for _, r in held]).astype(np.int64)
            if keys
            else np.zeros(0, dtype=np.int64)
        )
        return keys, offsets, rows

    @classmethod
    def restored(
        cls, keys: Sequence[str], offsets: npt.NDArray[np.int64], rows: Rows, count: int
    ) -> MentionIndex:
        """The index ``state`` described, over ``count`` rows. ``rows`` (of
        int32 or int64) is kept as it is, not copied: each key's rows are
        a view of it.

        Raises:
            ValueError: the state is inconsistent (rows of another type, a
                row outside ``count``, a key's rows not ascending, keys
                repeated).
        """
        offsets = np.asarray(offsets)
        rows = np.asarray(rows)
        if (
            offsets.dtype != np.int64
            or rows.dtype not in _ROW_TYPES
            or offsets.shape != (len(keys) + 1,)
            or rows.ndim != 1
            or int(offsets[0]) != 0
            or int(offsets[-1]) != rows.shape[0]
            or bool(np.any(np.diff(offsets) <= 0))
            or (rows.shape[0] and (int(rows.min()) < 0 or int(rows.max()) >= count))
            or len(set(keys)) != len(keys)
        ):
            raise ValueError("the mention index is inconsistent")
        rises = np.diff(rows) > 0
        cuts = offsets[1:-1] - 1
        rises[cuts[cuts < rises.shape[0]]] = True  # each key's rows start afresh
        if not bool(rises.all()):
            raise ValueError("a key's rows are not ascending")
        bounds = offsets.tolist()
        return cls({key: rows[bounds[i] : bounds[i + 1]] for i, key in enumerate(keys)}, count)

    def members(
        self,
        norms: Sequence[str],
        visible: npt.NDArray[np.bool_],
        ids: npt.NDArray[np.object_],
        *,
        max_degree: int,
    ) -> dict[str, tuple[int, list[str]]]:
        """``Store.entity_members`` over the ``visible`` rows: per entity key,
        how many visible memories mention it and, up to ``max_degree``,
        their ids (a hub's degree is ``max_degree + 1`` and its list empty)."""
        out: dict[str, tuple[int, list[str]]] = {}
        for norm in dict.fromkeys(norms):
            rows = self._rows.get(norm)
            if rows is None:
                continue
            if self.count is not None and rows.shape[0] and rows[-1] >= self.count:
                rows = rows[: int(np.searchsorted(rows, self.count))]  # a later index's
            seen = _visible_upto(rows, visible, max_degree)
            if seen is None:
                out[norm] = (max_degree + 1, [])
            elif seen.shape[0]:
                out[norm] = (int(seen.shape[0]), sorted(str(ids[r]) for r in seen.tolist()))
        return out


def _visible_upto(
    rows: npt.NDArray[np.int64], visible: npt.NDArray[np.bool_], most: int
) -> npt.NDArray[np.int64] | None:
    """The ``visible`` ones of ``rows``, or None when more than ``most``
    are: read a block at a time, so a name thousands of memories mention
    costs the rows it takes to pass ``most``, not all of them."""
    step = max(1_024, 4 * (most + 1))
    if rows.shape[0] <= step:
        found: npt.NDArray[np.int64] = rows[visible[rows]]
        return None if found.shape[0] > most else found
    blocks: list[npt.NDArray[np.int64]] = []
    count = 0
    for lo in range(0, rows.shape[0], step):
        block = rows[lo : lo + step]
        block = block[visible[block]]
        count += int(block.shape[0])
        if count > most:
            return None
        blocks.append(block)
    return np.concatenate(blocks)
