"""Small scoring stages of the recall pipeline, each a pure function.

* ``range_normalise``: dense cosines mapped to 0-1 by the range over every
  visible memory (not just the candidates), which keeps the dense list on an
  absolute footing: min-max over a top-k pool would stretch small
  differences into large ones.
* ``session_support``: memories that belong together in time lend each other
  relevance: an adjacent memory of the same session passes on
  ``neighbour_weight`` of its score, and the session passes on
  ``session_weight`` of the mean of its ``session_top`` best scores (a small
  graph propagation over "same session" edges). Support stands in for the
  context a short turn lacks ("yes, last Tuesday"); a long one carries its
  own, so a memory longer than ``self_contained`` characters receives
  support scaled by ``self_contained / length`` unless it is its session's
  best: otherwise a strong session's long replies all climb together and
  crowd out the evidence other sessions hold. A memory in no session (a
  fact written on its own, not a turn of a conversation) carries its whole
  context itself: it is its own neighbour and its own session's best, so
  it is supported by its own score, and chat turns that only borrow their
  session's relevance do not crowd it out.
* ``confidence``: the system's confidence in a memory itself.
* ``squash``: a final score mapped into 0-1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mindpalace.models import Memory
from mindpalace.retrieval.appending import Growable

__all__ = [
    "SessionLayout",
    "confidence",
    "nearest_visible",
    "prior",
    "range_normalise",
    "ranks_of",
    "session_support",
    "squash",
    "visible_neighbours",
]

RECENCY_HALF_LIFE_DAYS = 365.0

Rows = npt.NDArray[np.int64]


@dataclass(slots=True)
class _Grown:
    """Sessions that gained rows since a layout was built (``appended``):
    each one's rows, in write order, in a buffer shared by the layout's
    later versions (a version reads those below its length)."""

    sessions: dict[int, Growable]
    #: rows the layouts sharing this hold (the latest one's length)
    filled: int
    #: the growable ``in_session`` and ``rank`` of the layouts
    in_session: Growable
    rank: Growable


@dataclass(frozen=True, slots=True)
class SessionLayout:
    """Where each row of a dense index sits in its session.

    Attributes:
        order: every row the layout was built over, session by session,
            each session in write order (a conversation's turn order).
        position: a row's place in ``order``.
        group_start / group_end: a row's session as the slice
            ``order[group_start[row]:group_end[row]]``.
        in_session: whether a row belongs to a session at all.
        codes: each row's session code (None: ``group_start`` names it).
        rank: the place in its session of each row appended since the
            layout was built (``appended``).
        grouped: ``codes[order]``, to find a session's rows in ``order``.
        grown: the sessions rows were appended to, with all their rows.
        blank: the code of no session, if any; names: how many names the
            codes were codes into.
    """

    order: Rows
    position: Rows
    group_start: Rows
    group_end: Rows
    in_session: npt.NDArray[np.bool_]
    codes: npt.NDArray[np.int32] | None = None
    rank: Rows | None = None
    grouped: npt.NDArray[np.int32] | None = None
    grown: _Grown | None = None
    blank: tuple[int, ...] = ()
    names: int = 0

    @classmethod
    def of(
        cls, codes: npt.NDArray[np.int32], blank: Iterable[int], *, names: int = 0
    ) -> SessionLayout:
        """The layout of rows whose sessions are ``codes`` (in write order)
        into ``names`` names; the ``blank`` codes mean "no session"."""
        order = np.argsort(codes, kind="stable").astype(np.int64)
        grouped = codes[order]
        change = np.flatnonzero(grouped[1:] != grouped[:-1]) + 1
        starts = np.concatenate(([0], change)).astype(np.int64)
        ends = np.concatenate((change, [len(codes)])).astype(np.int64)
        lengths = ends - starts
        position = np.empty(len(codes), dtype=np.int64)
        position[order] = np.arange(len(codes), dtype=np.int64)
        group_start = np.empty(len(codes), dtype=np.int64)
        group_end = np.empty(len(codes), dtype=np.int64)
        group_start[order] = np.repeat(starts, lengths)
        group_end[order] = np.repeat(ends, lengths)
        none = list(blank)
        in_session = ~np.isin(codes, none) if none else np.ones(len(codes), dtype=bool)
        rank = np.zeros(0, dtype=np.int64)
        return cls(
            order,
            position,
            group_start,
            group_end,
            in_session,
            codes=codes,
            rank=rank,
            grouped=grouped,
            grown=_Grown({}, len(codes), Growable(in_session), Growable(rank)),
            blank=tuple(none),
            names=names,
        )

    def __len__(self) -> int:
        return int(self.in_session.shape[0])

    def key(self, row: int) -> int:
        """A number naming the session of ``row`` (the same for each of its rows)."""
        return int(self.codes[row]) if self.codes is not None else int(self.group_start[row])

    def members(self, row: int) -> tuple[Rows, int]:
        """The rows of the session of ``row`` (in write order) and the
        place of ``row`` among them."""
        grown = None
        if self.grown is not None and self.codes is not None:
            grown = self.grown.sessions.get(int(self.codes[row]))
        base = self.order.shape[0]
        if grown is None:
            start = int(self.group_start[row])
            return self.order[start : int(self.group_end[row])], int(self.position[row]) - start
        rows = grown.view
        rows = rows[: int(np.searchsorted(rows, len(self)))]
        if row < base:
            return rows, int(self.position[row]) - int(self.group_start[row])
        assert self.rank is not None
        return rows, int(self.rank[row - base])

    def appended(self, codes: npt.NDArray[np.int32], names: Sequence[str]) -> SessionLayout:
        """The layout of this one's rows and those after them: ``codes`` are
        every row's session codes into ``names`` (this layout's rows' codes
        and names unchanged, new names after them). Each appended row joins its session's
        buffer (``grown``): the work is that of the new rows, except that
        the layout is built afresh once the rows appended since it was
        built outnumber those it was built over (and for a second version
        of the same rows)."""
        count, total, base = len(self), int(codes.shape[0]), self.order.shape[0]
        grown = self.grown
        blank = (*self.blank, *(i for i in range(self.names, len(names)) if names[i] == ""))
        none = set(blank)
        if (
            grown is None
            or self.grouped is None
            or self.rank is None
            or grown.filled != count
            or total - base > max(base, 1_024)
        ):
            return SessionLayout.of(codes, blank, names=len(names))
        new = codes[count:].tolist()
        inside = np.fromiter((c not in none for c in new), dtype=bool, count=len(new))
        ranks = np.zeros(len(new), dtype=np.int64)
        for offset, code in enumerate(new):
            if code in none:
                continue
            buffer = grown.sessions.get(code)
            if buffer is None:
                lo = int(np.searchsorted(self.grouped, code, side="left"))
                hi = int(np.searchsorted(self.grouped, code, side="right"))
                buffer = Growable(self.order[lo:hi])
            ranks[offset] = buffer.view.shape[0]
            row = np.array([count + offset], dtype=np.int64)
            grown.sessions[code], _ = buffer.append(buffer.view, row)
        grown.filled = total
        grown.in_session, in_session = grown.in_session.append(self.in_session, inside)
        grown.rank, rank = grown.rank.append(self.rank, ranks)
        return SessionLayout(
            self.order,
            self.position,
            self.group_start,
            self.group_end,
            in_session,
            codes=codes,
            rank=rank,
            grouped=self.grouped,
            grown=grown,
            blank=blank,
            names=len(names),
        )


def range_normalise(
    values: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    *,
    low: float | None = None,
) -> npt.NDArray[np.float64]:
    """``(v - min) / (max - min)`` over the masked entries; 0 elsewhere.

    A given ``low`` (an estimate of the minimum, when only some entries
    were scored) replaces the minimum, and results are clipped to 0-1.
    """
    out = np.zeros(values.shape[0], dtype=np.float64)
    if not mask.any():
        return out
    chosen = values[mask].astype(np.float64)
    high = float(chosen.max())
    low = float(chosen.min()) if low is None else min(low, high)
    if high > low:
        out[mask] = np.clip((chosen - low) / (high - low), 0.0, 1.0)
    else:
        out[mask] = 1.0
    return out


def nearest_visible(
    visible: npt.NDArray[np.bool_],
    order: npt.NDArray[np.int64],
    *,
    position: int,
    step: int,
    start: int,
    end: int,
) -> int | None:
    """The row of the nearest ``visible`` memory of the session in one
    direction (rows out of scope are skipped)."""
    at = position + step
    while start <= at < end:
        row = int(order[at])
        if visible[row]:
            return row
        at += step
    return None


def visible_neighbours(
    visible: npt.NDArray[np.bool_], rows: Iterable[int], layout: SessionLayout
) -> Iterator[tuple[int, int, list[int]]]:
    """Per row of ``rows``: (row, its session's key (``SessionLayout.key``),
    the rows of the nearest ``visible`` memory of its session on each
    side); a row in no session has key -1 and no neighbours."""
    at = np.fromiter(rows, dtype=np.int64)
    base = layout.order.shape[0]
    # Gathered once: indexing numpy arrays one scalar at a time is what the
    # loop would otherwise spend its time on. A row appended since the
    # layout was built reads its session from ``members`` instead.
    held = np.minimum(at, base - 1) if base else np.zeros(0, dtype=np.int64)
    inside = layout.in_session[at].tolist()
    positions = layout.position[held].tolist() if base else [0] * len(inside)
    starts = layout.group_start[held].tolist() if base else [0] * len(inside)
    ends = layout.group_end[held].tolist() if base else [0] * len(inside)
    keys = layout.codes[at].tolist() if layout.codes is not None else starts
    grown = layout.grown.sessions if layout.grown is not None and layout.codes is not None else {}
    for row, inner, place, first, last, key in zip(
        at.tolist(), inside, positions, starts, ends, keys, strict=True
    ):
        if not inner:
            yield row, -1, []
            continue
        order, pos, start, end = layout.order, place, first, last
        if key in grown:
            order, pos = layout.members(row)
            start, end = 0, order.shape[0]
        sides = (
            nearest_visible(visible, order, position=pos, step=step, start=start, end=end)
            for step in (-1, 1)
        )
        yield row, key, [r for r in sides if r is not None]


def session_support(
    fused: npt.NDArray[np.float64],
    visible: npt.NDArray[np.bool_],
    rows: Iterable[int],
    layout: SessionLayout,
    *,
    neighbour_weight: float,
    session_weight: float,
    session_top: int,
    lengths: npt.NDArray[np.int32] | None = None,
    self_contained: int = 0,
) -> dict[int, float]:
    """Support each of ``rows`` receives from its session (``layout``),
    by the ``fused`` score of each row.

    Rows not ``visible`` to the caller are neither neighbours nor part of
    a session's best (whatever ``fused`` reads for them). ``lengths``
    (characters of each row's content) with ``self_contained`` > 0 scale
    the support of long rows that are not their session's best visible row.
    """
    support: dict[int, float] = {}
    sessions: dict[int, tuple[float, int]] = {}  # key -> (mean of the best, best row)
    sizes = (
        lengths
        if lengths is not None and self_contained > 0 and lengths.shape[0] == fused.shape[0]
        else None
    )
    for row, key, neighbours in visible_neighbours(visible, rows, layout):
        if key < 0:
            # A memory of no session (a fact written on its own) is its own
            # context: its own neighbour and its own session's best.
            support[row] = (neighbour_weight + session_weight) * max(0.0, float(fused[row]))
            continue
        near = max([0.0, *(float(fused[r]) for r in neighbours)])
        value = neighbour_weight * near
        if key not in sessions:
            members, _ = layout.members(row)
            seen = visible[members]
            values = np.where(seen, fused[members], -np.inf)
            top = np.sort(values[seen])[::-1][:session_top]
            best = int(members[int(np.argmax(values))]) if seen.any() else -1
            sessions[key] = (float(top.mean()) if top.size else 0.0, best)
        mean, best = sessions[key]
        if session_weight:
            value += session_weight * max(0.0, mean)
        if sizes is not None and row != best and int(sizes[row]) > self_contained:
            value *= self_contained / int(sizes[row])
        support[row] = value
    return support


def ranks_of(values: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> Callable[[int], int]:
    """A function giving the 1-based rank of a row among the masked values."""
    # Counting beats sorting: only the few returned hits ever ask.
    chosen = values[mask]

    def rank(row: int) -> int:
        return int(np.count_nonzero(chosen > values[row])) + 1

    return rank


def squash(value: float, ceiling: float) -> float:
    """A score into 0-1 by the highest value the stages can produce."""
    if value <= 0 or ceiling <= 0:
        return 0.0
    return min(1.0, value / ceiling)


def prior(memory: Memory, now: datetime, weights: tuple[float, float, float]) -> float:
    """How much a memory's standing scales its relevance, in (0, 1]:
    ``(1 - ws (1 - strength)) (1 - wc (1 - confidence)) (1 - wr (1 - recency))``
    with recency ``0.5 ** (age / 1 year)``. Mild on purpose: relevance
    decides, standing breaks near-ties (a stale, weak, doubted memory loses
    at most about a third of its score with the default weights)."""
    w_strength, w_confidence, w_recency = weights
    age_days = max(0.0, (now - memory.created_at).total_seconds() / 86_400.0)
    recency = math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    return (
        (1.0 - w_strength * (1.0 - memory.strength))
        * (1.0 - w_confidence * (1.0 - memory.confidence))
        * (1.0 - w_recency * (1.0 - recency))
    )


def confidence(memory: Memory, now: datetime) -> float:
    """The system's confidence in a memory itself: the writer's
    confidence, tempered by strength, use and age without use."""
    age_days = max(0.0, (now - (memory.last_accessed_at or memory.created_at)).total_seconds())
    age_days /= 86_400.0
    freshness = 1.0 / (1.0 + age_days / 365.0)  # a year unused halves this term
    support = 0.6 + 0.25 * memory.strength + 0.15 * freshness
    support += 0.05 * min(1.0, math.log1p(memory.access_count) / 3.0)
    return max(0.0, min(1.0, memory.confidence * min(1.0, support)))
