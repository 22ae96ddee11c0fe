"""The vectors of a palace as the store hands them to dense search
(``Store.load_vectors``, ``Store.dense_rows``) and takes them on write
(``VectorBatch``): value types only, so the ``Store`` protocol (base.py), the
SQL that fills them and the retrieval stages that read them all import them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mindpalace.store.vector_bytes import blob_dimensions, from_blobs

__all__ = [
    "CODED_COLUMNS",
    "PLAIN_COLUMNS",
    "Counters",
    "DenseRows",
    "FlagChange",
    "VectorBatch",
    "VectorCheck",
    "VectorTable",
    "Waiting",
    "key_dimensions",
    "recoded",
]


def key_dimensions(model: str) -> int:
    """The vector size a vector key names (``provider/model/size``, as
    ``embed.texts.vector_key`` writes it); 0 when it names none."""
    size = model.rsplit("/", 1)[-1]
    return int(size) if size.isdigit() else 0


class Counters(NamedTuple):
    """The palace's change counters (``Store.change_counters``), which tell
    an in-process copy of the palace what to read again.

    Attributes:
        generation: bumped by every write of memories.
        epoch: bumped by writes that change existing rows in a way a copy
            cannot patch (a delete, a re-embedding): reload.
        vectors: bumped when vectors are added for memories already written.
        flags: bumped when rows are archived, restored or superseded; each
            such row is stamped with the new value (``Store.flag_changes``).
    """

    generation: int
    epoch: int
    vectors: int
    flags: int


class FlagChange(NamedTuple):
    """A row's flags now (``Store.flag_changes``)."""

    seq: int
    archived: bool
    superseded: bool


@dataclass(frozen=True, slots=True)
class VectorBatch:
    """Vectors to store: text hash -> a vector's stored bytes
    (``vector_bytes``), all of one model. ``pending``: the write's texts
    are left to a background upgrade (their memories name them; ``vectors``
    holds none of them). ``parts``: text hash -> the vectors of the text's
    parts, packed (``retrieval.parts``), for the texts of more than one
    part."""

    model: str
    vectors: Mapping[str, bytes]
    pending: bool = False
    parts: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorTable:
    """Every embedded memory of a palace as column arrays, row i = one memory.

    Carries what scope and filters need, so dense search can mask exactly
    before ranking. String columns are factorised: ``agent`` holds codes into
    ``agent_names``, and so on.
    """

    ids: npt.NDArray[np.object_]
    matrix: npt.NDArray[np.float32]
    agent: npt.NDArray[np.int32]
    agent_names: tuple[str, ...]
    visibility: npt.NDArray[np.int32]
    visibility_names: tuple[str, ...]
    group: npt.NDArray[np.int32]
    group_names: tuple[str, ...]
    channel: npt.NDArray[np.int32]
    channel_names: tuple[str, ...]
    type: npt.NDArray[np.int32]
    type_names: tuple[str, ...]
    store: npt.NDArray[np.int32]
    store_names: tuple[str, ...]
    category: npt.NDArray[np.int32]
    category_names: tuple[str, ...]
    archived: npt.NDArray[np.bool_]
    superseded: npt.NDArray[np.bool_]
    created_at: npt.NDArray[np.float64]
    session: npt.NDArray[np.int32]  # code into session_names; "" is no session
    session_names: tuple[str, ...]
    source: npt.NDArray[np.int32]
    source_names: tuple[str, ...]
    seq: npt.NDArray[np.int64]  # the store's write order
    kind: npt.NDArray[np.int32]
    kind_names: tuple[str, ...]
    project: npt.NDArray[np.int32]  # code into project_names; "" is no project
    project_names: tuple[str, ...]
    #: rows that have a vector of the model (the others' ``matrix`` rows are 0)
    embedded: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: characters of each row's content (session support reads it)
    length: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    #: (title, content, context, tags) per row, when loaded for the keyword index
    texts: tuple[tuple[str | None, str, str | None, str], ...] | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @classmethod
    def from_rows(
        cls, rows: Sequence[Sequence[Any]], dimensions: int = 0, *, floats: bool = True
    ) -> VectorTable:
        """Build from rows of (id, agent, visibility, group, channel, archived,
        superseded, type, store, category, created_at, vector bytes, session, source,
        seq, kind, project, content length[, title, content, context, tags]),
        in write order. Without ``floats`` the vector column only says
        whether a row has one (not NULL), and the matrix has no columns."""

        def factor(index: int) -> tuple[npt.NDArray[np.int32], tuple[str, ...]]:
            # Codes into the sorted distinct names (what np.unique gives),
            # found by hashing: sorting 100k strings per column was 40% of
            # loading a 100k palace's vectors, and a Python step per row
            # most of the rest (the lookups below run in C).
            values = [r[index] for r in rows]
            distinct = dict.fromkeys(values)
            names = sorted({str(value) for value in distinct})
            number = {name: code for code, name in enumerate(names)}
            code_of = {value: number[str(value)] for value in distinct}
            codes = np.fromiter(map(code_of.__getitem__, values), dtype=np.int32, count=len(rows))
            return codes, tuple(names)

        count = len(rows)
        embedded = np.fromiter((r[11] is not None for r in rows), dtype=bool, count=count)
        dims = (
            next((blob_dimensions(r[11]) for r in rows if r[11] is not None), dimensions)
            if floats
            else 0
        )
        if not floats:  # the column holds the vector's key: no width to read from it
            matrix = np.empty((count, 0), dtype=np.float32)
        elif count and embedded.all():
            matrix = from_blobs([r[11] for r in rows], dims)
        else:
            matrix = np.zeros((count, dims), dtype=np.float32)
            at = np.flatnonzero(embedded)
            matrix[at] = from_blobs([rows[i][11] for i in at.tolist()], dims)
        texts = None
        if count and len(rows[0]) > 18:
            texts = tuple((r[18], r[19], r[20], r[21]) for r in rows)
        agent, agent_names = factor(1)
        visibility, visibility_names = factor(2)
        group, group_names = factor(3)
        channel, channel_names = factor(4)
        type_, type_names = factor(7)
        store, store_names = factor(8)
        category, category_names = factor(9)
        session, session_names = factor(12)
        source, source_names = factor(13)
        kind, kind_names = factor(15)
        project, project_names = factor(16)
        return cls(
            ids=np.array([str(r[0]) for r in rows], dtype=object),
            matrix=matrix,
            agent=agent,
            agent_names=agent_names,
            visibility=visibility,
            visibility_names=visibility_names,
            group=group,
            group_names=group_names,
            channel=channel,
            channel_names=channel_names,
            type=type_,
            type_names=type_names,
            store=store,
            store_names=store_names,
            category=category,
            category_names=category_names,
            archived=np.array([bool(r[5]) for r in rows], dtype=bool),
            superseded=np.array([bool(r[6]) for r in rows], dtype=bool),
            created_at=np.array([float(r[10]) for r in rows], dtype=np.float64),
            session=session,
            session_names=session_names,
            source=source,
            source_names=source_names,
            seq=np.array([int(r[14]) for r in rows], dtype=np.int64),
            kind=kind,
            kind_names=kind_names,
            project=project,
            project_names=project_names,
            embedded=embedded,
            length=np.fromiter((int(r[17] or 0) for r in rows), dtype=np.int32, count=count),
            texts=texts,
        )

    def extend(self, more: VectorTable) -> VectorTable:
        """This table with ``more``'s rows after its own (codes re-mapped)."""
        if len(more) == 0:
            return self
        if len(self) == 0:
            return more
        mine, theirs = self.matrix.shape[1], more.matrix.shape[1]
        if mine != theirs:  # rows loaded without the model's width, or two models
            raise ValueError(f"vectors of {mine} and {theirs} dimensions in one table")
        merged: dict[str, Any] = {}
        for column in CODED_COLUMNS:
            names: tuple[str, ...] = getattr(self, f"{column}_names")
            number = {name: code for code, name in enumerate(names)}
            codes, merged[f"{column}_names"] = recoded(names, number, more, column)
            merged[column] = np.concatenate((getattr(self, column), codes)).astype(np.int32)
        for column in PLAIN_COLUMNS:
            merged[column] = np.concatenate((getattr(self, column), getattr(more, column)))
        return VectorTable(**merged)

    def with_flags(self, changes: Sequence[FlagChange]) -> VectorTable:
        """This table with the archived and superseded flags of ``changes``
        (``Store.flag_changes``) on the rows it holds (a change of a row it
        does not hold is left out); the other columns shared with it."""
        seqs = np.fromiter((c.seq for c in changes), dtype=np.int64, count=len(changes))
        rows = np.searchsorted(self.seq, seqs)
        held = rows < len(self)
        held[held] = self.seq[rows[held]] == seqs[held]
        if not held.any():
            return self
        archived, superseded = self.archived.copy(), self.superseded.copy()
        picked = rows[held]
        archived[picked] = [c.archived for c, h in zip(changes, held, strict=True) if h]
        superseded[picked] = [c.superseded for c, h in zip(changes, held, strict=True) if h]
        return replace(self, archived=archived, superseded=superseded)

    def take(self, rows: npt.NDArray[np.int64]) -> VectorTable:
        """The table of ``rows`` of this one, in that order (names kept)."""
        picked: dict[str, Any] = {column: getattr(self, column)[rows] for column in CODED_COLUMNS}
        for column in PLAIN_COLUMNS:  # ``length`` and ``embedded`` may be left empty
            values = getattr(self, column)
            picked[column] = values[rows] if len(values) else values
        return replace(self, texts=None, **picked)


def recoded(
    names: tuple[str, ...], number: dict[str, int], more: VectorTable, column: str
) -> tuple[npt.NDArray[np.int32], tuple[str, ...]]:
    """``more``'s codes of the coded ``column`` re-mapped into ``names``
    (``number``: name -> code, given, grown by the names ``more`` adds), and
    ``names`` with those new names after them."""
    theirs: tuple[str, ...] = getattr(more, f"{column}_names")
    added: list[str] = []
    remap = np.empty(len(theirs), dtype=np.int32)
    for i, name in enumerate(theirs):
        code = number.get(name)
        if code is None:
            code = number[name] = len(names) + len(added)
            added.append(name)
        remap[i] = code
    codes = remap[getattr(more, column)] if remap.size else getattr(more, column)
    return codes.astype(np.int32, copy=False), (*names, *added) if added else names


#: columns of a ``VectorTable`` that are one value per row, not codes into names
PLAIN_COLUMNS = (
    "ids",
    "matrix",
    "archived",
    "superseded",
    "created_at",
    "seq",
    "embedded",
    "length",
)
#: columns of a ``VectorTable`` that are codes into names (``<column>_names``)
CODED_COLUMNS = (
    "agent",
    "visibility",
    "group",
    "channel",
    "type",
    "store",
    "category",
    "session",
    "source",
    "kind",
    "project",
)


@dataclass(frozen=True, slots=True)
class DenseRows:
    """Rows the store's dense search found (``Store.dense_rows``).

    Attributes:
        table: the rows, in write order; no vectors (they stay in the store).
        sims: the query's cosine to each row (-1 for a row without a vector).
        low: the lowest cosine over every visible row (exact or estimated),
            when nearest rows were asked for; else None.
        complete: whether ``table`` holds every visible row under the filters.
    """

    table: VectorTable
    sims: npt.NDArray[np.float32]
    low: float | None
    complete: bool = False


@dataclass(frozen=True)
class Waiting:
    """One read of the texts waiting for a model's vectors.

    Attributes:
        rows: up to the limit asked, in write order: (seq, text hash,
            title, content).
        newest: the newest memory (seq, id) the same read saw; None in an
            empty palace.
    """

    rows: list[tuple[int, str, str | None, str]]
    newest: tuple[int, str] | None


@dataclass(frozen=True)
class VectorCheck:
    """Where a pass over the waiting texts starts: every memory up to
    ``after_seq`` had its vector when a pass last ended; ``resets`` is the
    count of in-place text changes then (``mark_checked_vectors``)."""

    after_seq: int
    resets: int
