"""Embeddings in SQL: the model a palace's vectors come from, the vectors
themselves (one per model and text hash, shared by every memory of that
text), and the unscoped loads a process's warm indexes are built from.

Vectors are stored inside the write that needs them (``_put_vectors``); the
loads read every memory in write order and leave scope to the warm index
that applies it (retrieval/). A backend that searches vectors itself
(pg_dense.py, pg_vectors.py) overrides ``nearest`` and ``dense_rows``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.models import EmbeddingConfig, RecallFilters, Scope
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import in_list
from mindpalace.store.vector_bytes import from_blob, to_blob
from mindpalace.store.vector_rows import DenseRows, VectorBatch, VectorTable, key_dimensions
from mindpalace.store.waiting_sql import WaitingSql, forget_checked_vectors

__all__ = ["VectorsSql"]


class VectorsSql(WaitingSql):
    """The vectors part of ``SqlStore``: the embedding model, stored vectors, warm loads."""

    def _put_vectors(self, cur: Cursor, vectors: VectorBatch | None) -> None:
        """Store ``vectors`` inside a write's transaction (a text's vector once per model)."""
        if vectors is None:
            return
        key = self._put_key(cur, vectors.model)
        self._exec_many(
            cur,
            "INSERT INTO embeddings (model, text_hash, vector) VALUES (?, ?, ?)"
            " ON CONFLICT (model, text_hash) DO NOTHING",
            [(key, text_hash, blob) for text_hash, blob in vectors.vectors.items()],
        )
        self._put_parts(cur, vectors)

    def _put_parts(self, cur: Cursor, vectors: VectorBatch) -> None:
        """Store the vectors of ``vectors``' parts (once per model and text)."""
        if vectors.parts:
            model = self._put_key(cur, vectors.model)
            self._exec_many(
                cur,
                "INSERT INTO part_vectors (model, text_hash, vectors) VALUES (?, ?, ?)"
                " ON CONFLICT (model, text_hash) DO NOTHING",
                [(model, key, blob) for key, blob in vectors.parts.items()],
            )

    def part_vectors(self, model: str, text_hashes: Iterable[str]) -> dict[str, bytes]:
        """The stored part vectors of those of ``text_hashes`` that have them."""
        rows = self._keyed(model, "part_vectors", "text_hash, vectors", text_hashes)
        return {str(r[0]): bytes(r[1]) for r in rows}

    def memory_vectors(self, model: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The ``model`` vectors (stored bytes, ``vector_bytes``) of those of ``memory_ids``
        that have one, by memory id; unscoped: for ids the caller found
        through a scoped read."""
        # Two lookups by key, not a join: for a long list of ids SQLite's
        # planner walked every vector of the model instead (1,024 ids of a
        # 100,000-memory palace: 0.9 s against 15 ms).
        hash_of: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        wanted = list(dict.fromkeys(memory_ids))
        with self._read() as cur:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                for memory_id, text_hash in self._exec(
                    cur,
                    "SELECT id, embed_hash FROM memories WHERE embed_hash IS NOT NULL AND "
                    + in_list("id", chunk),
                    chunk,
                ).fetchall():
                    hash_of[str(memory_id)] = str(text_hash)
            hashes = list(dict.fromkeys(hash_of.values()))
            key = self._vector_key(cur, model)
            for i in range(0, len(hashes), 500):
                chunk = hashes[i : i + 500]
                for text_hash, blob in self._exec(
                    cur,
                    "SELECT text_hash, vector FROM embeddings WHERE model = ? AND "
                    + in_list("text_hash", chunk),
                    [key, *chunk],
                ).fetchall():
                    blobs[str(text_hash)] = bytes(blob)
        return {m: blobs[h] for m, h in hash_of.items() if h in blobs}

    def _keyed(
        self, model: str, table: str, columns: str, text_hashes: Iterable[str]
    ) -> list[tuple[Any, ...]]:
        """``columns`` of ``table``'s rows of ``model`` and of those text hashes."""
        wanted = list(dict.fromkeys(text_hashes))
        rows: list[tuple[Any, ...]] = []
        with self._read() as cur:
            key = self._vector_key(cur, model)
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                rows += self._exec(
                    cur,
                    f"SELECT {columns} FROM {table} WHERE model = ? AND "
                    + in_list("text_hash", chunk),
                    [key, *chunk],
                ).fetchall()
        return rows

    def assign_vectors(self, assignments: Mapping[str, str], vectors: VectorBatch) -> None:
        """Point memories (id -> text hash) at vectors, storing the vectors, in one transaction."""
        self._ensure_vector_key(vectors)
        with self._mutate(structural=True) as cur:
            self._put_vectors(cur, vectors)
            forget_checked_vectors(self, cur)
            for memory_id, text_hash in assignments.items():
                self._exec(
                    cur, "UPDATE memories SET embed_hash = ? WHERE id = ?", (text_hash, memory_id)
                )

    def set_embedding_config(
        self, config: EmbeddingConfig, *, drop_vectors_except: str | None = None
    ) -> None:
        """Record which model the palace's vectors come from."""
        with self._mutate(structural=True) as cur:
            self._exec(cur, "DELETE FROM embedding_config")
            self._exec(
                cur,
                "INSERT INTO embedding_config (id, provider, model, dimensions)"
                " VALUES (1, ?, ?, ?)",
                (config.provider, config.model, config.dimensions),
            )
            forget_checked_vectors(self, cur)
            if drop_vectors_except is not None:
                kept = self._vector_key(cur, drop_vectors_except)
                for table in ("embeddings", "part_vectors"):
                    self._exec(cur, f"DELETE FROM {table} WHERE model <> ?", (kept,))

    def embedding_config(self) -> EmbeddingConfig | None:
        """The model the palace's vectors come from, if any was recorded."""
        with self._read() as cur:
            row = self._exec(
                cur, "SELECT provider, model, dimensions FROM embedding_config WHERE id = 1"
            ).fetchone()
        return None if row is None else EmbeddingConfig(str(row[0]), str(row[1]), int(row[2]))

    def missing_vectors(self, model: str, text_hashes: Iterable[str]) -> set[str]:
        """Which of ``text_hashes`` have no stored vector for ``model``."""
        wanted = set(text_hashes)
        return wanted - {str(r[0]) for r in self._keyed(model, "embeddings", "text_hash", wanted)}

    def wide_vectors(self, model: str, *, limit: int) -> int:
        """How many of the first ``limit`` ``model`` vectors in storage
        order are kept in float32, the form of an older mindpalace. Those
        are the oldest rows, so the first ones tell: counting every row
        read every vector (31 s at a million, where none was float32)."""
        with self._read() as cur:
            row = self._exec(
                cur,
                "SELECT COUNT(*) FROM (SELECT vector FROM embeddings WHERE model = ? LIMIT ?)"
                " AS first WHERE length(first.vector) % 2 = 0",
                (self._vector_key(cur, model), int(limit)),
            ).fetchone()
        return int(row[0] or 0)

    def halve_vectors(self, model: str, *, batch: int = 2_000) -> int:
        """Rewrite the ``model`` vectors an older mindpalace kept in float32
        in half precision (``vector_bytes``), ``batch`` to a transaction;
        how many. Values past float16's range stay float32."""
        halved, after = 0, ""
        while True:
            # Read, then rewrite: a text's vector changes only here, and an
            # erasure that takes it meanwhile leaves its update no row.
            with self._read() as cur:
                key = self._vector_key(cur, model)
                rows = self._exec(
                    cur,
                    "SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash > ?"
                    " AND length(vector) % 2 = 0 ORDER BY text_hash LIMIT ?",
                    (key, after, int(batch)),
                ).fetchall()
            if not rows:
                return halved
            after = str(rows[-1][0])
            changed = [
                (half, key, str(text_hash))
                for text_hash, blob in rows
                if len(half := to_blob(from_blob(bytes(blob)))) % 2 == 1
            ]
            if not changed:  # every value of the batch past float16's range
                continue
            with self._mutate(structural=True) as cur:
                self._exec_many(
                    cur,
                    "UPDATE embeddings SET vector = ? WHERE model = ? AND text_hash = ?",
                    changed,
                )
            halved += len(changed)

    def count_unembedded(self) -> int:
        """How many memories name no text to embed (``embed_hash`` unset)."""
        with self._read() as cur:
            row = self._exec(
                cur, "SELECT COUNT(*) FROM memories WHERE embed_hash IS NULL"
            ).fetchone()
        return int(row[0] or 0)

    def add_vectors(self, vectors: VectorBatch) -> None:
        """Store vectors of texts memories already name (and of their
        parts), bumping ``vectors``."""
        if not vectors.vectors and not vectors.parts:
            return
        self._ensure_vector_key(vectors)
        with self._write() as cur:
            self._put_vectors(cur, vectors)
            self._exec(
                cur,
                "INSERT INTO palace_meta (key, value) VALUES ('vectors', 1)"
                " ON CONFLICT (key) DO UPDATE SET value = palace_meta.value + 1",
            )

    def load_texts(
        self, *, upto_seq: int, after_seq: int = 0
    ) -> list[tuple[int, str | None, str, str | None, str]]:
        """(seq, title, content, context, tags) of every memory written after
        ``after_seq`` up to ``upto_seq``, in write order, unscoped (for the
        warm keyword index)."""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT seq, title, content, context, tags FROM memories"
                " WHERE seq > ? AND seq <= ? ORDER BY seq",
                (after_seq, upto_seq),
            ).fetchall()
        return [(int(r[0]), r[1], str(r[2]), r[3], str(r[4])) for r in rows]

    def load_vectors(
        self, model: str, *, after_seq: int = 0, texts: bool = False, floats: bool = True
    ) -> VectorTable:
        """Every memory written after ``after_seq``, in write order, with its
        vector for ``model`` (NULL when it has none), the columns scope and
        filters need and, with ``texts``, the text the keyword index reads.
        Without ``floats`` no vector is read (the join reads the key alone,
        which the embeddings' primary key index covers): the matrix has no
        columns and ``embedded`` says which rows have one."""
        text_columns = ", m.title, m.content, m.context, m.tags" if texts else ""
        vector = "e.vector" if floats else "e.text_hash"
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT m.id, m.agent_id, m.visibility, m.group_name, m.channel, m.archived,"
                " m.superseded_by IS NOT NULL, m.type, m.store, m.category, m.created_at,"
                f" {vector}, COALESCE(m.session_id, ''), m.source, m.seq, m.kind, m.project,"
                " length(m.content)"
                f"{text_columns}"
                " FROM memories m"
                " LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = m.embed_hash"
                " WHERE m.seq > ? ORDER BY m.seq",
                (self._vector_key(cur, model), after_seq),
            ).fetchall()
        return VectorTable.from_rows(rows, key_dimensions(model), floats=floats)

    def nearest(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> list[str] | None:
        """None: this store keeps no nearest-neighbour index (a backend that
        does overrides this)."""
        return None

    def dense_rows(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        nearest: int = 0,
        ids: Sequence[str] = (),
        sessions: Sequence[str] = (),
    ) -> DenseRows | None:
        """None: this store cannot search vectors itself (a backend that can
        overrides this)."""
        return None
