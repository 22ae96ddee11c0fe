"""Texts that wait for their vectors, found without reading every memory.

A bulk write may leave its texts for a background upgrade to embed
(``VectorBatch.pending``); the upgrade, and a database-mode process looking
whether another process left texts waiting, search memories for a text
hash with no vector of the model. That search read every memory of the
palace: 1.3-5.7 s at a million, every 30 seconds in each process that
recalls while others write, and at each scrape of the metrics.

So an upgrade that finished a pass leaves a mark: every memory up to seq
``W`` had its vector of the model (``palace_meta``: ``vectors_checked:`` and
the model key). Later passes, and the count of what waits, read only the
memories written after it. The mark holds because:

- writers are serialised (SQLite's write lock, PostgreSQL's advisory lock)
  and take a seq inside their transaction, so a reader that sees seq ``s``
  sees every memory written before it: a pass's last read covers every
  memory up to the newest one it saw (``Waiting.newest``);
- vectors of a text some memory names are never deleted, except where the
  model changes (``set_embedding_config``), which drops the marks;
- a memory that changes its text in place (``assign_vectors``, a skill
  saved again) drops the marks and bumps ``vector_resets``; a pass that
  began before such a change does not mark (``mark_checked_vectors``
  compares the counter);
- SQLite gives a new memory the next seq after the newest one left, so a
  deleted newest memory's seq may come back: the mark also keeps a hash of
  the marked memory's id, and counts only while that memory is still there.
"""

from __future__ import annotations

import hashlib

from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.vector_rows import VectorCheck, Waiting

__all__ = ["WaitingSql", "forget_checked_vectors"]

_CHECKED = "vectors_checked:"
_CHECKED_ROW = "vectors_checked_row:"
_RESETS = "vector_resets"


def _row_hash(memory_id: str) -> int:
    """A 56-bit hash of a memory id (fits the meta table's BIGINT)."""
    return int.from_bytes(hashlib.blake2b(memory_id.encode(), digest_size=7).digest(), "big")


def forget_checked_vectors(store: SqlCore, cur: Cursor) -> None:
    """Inside a write that gives existing memories other texts (or drops
    vectors): no mark holds any more, and a pass under way must not leave one."""
    store._exec(
        cur,
        "DELETE FROM palace_meta WHERE key LIKE ? OR key LIKE ?",
        (_CHECKED + "%", _CHECKED_ROW + "%"),
    )
    store._exec(
        cur,
        "INSERT INTO palace_meta (key, value) VALUES (?, 1)"
        " ON CONFLICT (key) DO UPDATE SET value = palace_meta.value + 1",
        (_RESETS,),
    )


class WaitingSql(SqlCore):
    """The waiting texts' reads and marks (mixed into ``VectorsSql``)."""

    def _checked_after(self, cur: Cursor, model: str) -> int:
        """The seq every memory up to which had its ``model`` vector (0: none known)."""
        marks = dict(
            self._exec(
                cur,
                "SELECT key, value FROM palace_meta WHERE key IN (?, ?)",
                (_CHECKED + model, _CHECKED_ROW + model),
            ).fetchall()
        )
        upto, row_hash = marks.get(_CHECKED + model), marks.get(_CHECKED_ROW + model)
        if upto is None or row_hash is None:
            return 0
        row = self._exec(cur, "SELECT id FROM memories WHERE seq = ?", (int(upto),)).fetchone()
        if row is None or _row_hash(str(row[0])) != int(row_hash):
            return 0  # the marked memory is gone: its seq may have been given again
        return int(upto)

    def checked_vectors(self, model: str) -> VectorCheck:
        """Where a pass over the texts waiting for ``model`` may start."""
        with self._read() as cur:
            after = self._checked_after(cur, model)
            row = self._exec(
                cur, "SELECT value FROM palace_meta WHERE key = ?", (_RESETS,)
            ).fetchone()
        return VectorCheck(after, 0 if row is None else int(row[0]))

    def pending_vectors(self, model: str, *, after_seq: int = 0, limit: int) -> Waiting:
        """Up to ``limit`` memories written after ``after_seq`` whose text
        waits for its ``model`` vector, in write order, and the newest
        memory the same statement saw."""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT 0, w.* FROM (SELECT m.seq, m.embed_hash, m.title, m.content"
                " FROM memories m WHERE m.seq > ? AND m.embed_hash IS NOT NULL AND NOT EXISTS"
                " (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = m.embed_hash)"
                " ORDER BY m.seq LIMIT ?) AS w UNION ALL SELECT 1, n.* FROM (SELECT m.seq,"
                " m.id, NULL, '' FROM memories m ORDER BY m.seq DESC LIMIT 1) AS n",
                (after_seq, self._vector_key(cur, model), limit),
            ).fetchall()
        waiting = sorted((int(r[1]), str(r[2]), r[3], str(r[4])) for r in rows if int(r[0]) == 0)
        newest = next(((int(r[1]), str(r[2])) for r in rows if int(r[0]) == 1), None)
        return Waiting(waiting, newest)

    def mark_checked_vectors(self, model: str, check: VectorCheck, newest: tuple[int, str]) -> bool:
        """Record that every memory up to ``newest`` (seq, id) had its
        ``model`` vector: what a pass that began at ``check`` and ended
        with nothing waiting found. Not recorded (False) where a memory's
        text changed in place since the pass began, or ``newest`` is gone."""
        seq, memory_id = newest
        with self._write() as cur:
            row = self._exec(
                cur, "SELECT value FROM palace_meta WHERE key = ?", (_RESETS,)
            ).fetchone()
            if (0 if row is None else int(row[0])) != check.resets:
                return False
            there = self._exec(cur, "SELECT id FROM memories WHERE seq = ?", (seq,)).fetchone()
            if there is None or str(there[0]) != memory_id:
                return False
            marks = ((_CHECKED + model, seq), (_CHECKED_ROW + model, _row_hash(memory_id)))
            for key, value in marks:
                self._exec(
                    cur,
                    "INSERT INTO palace_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
        return True

    def count_pending_vectors(self, model: str) -> int:
        """How many distinct texts wait for their ``model`` vector (those of
        memories written after the last pass's mark)."""
        with self._read() as cur:
            after = self._checked_after(cur, model)
            row = self._exec(
                cur,
                "SELECT COUNT(DISTINCT m.embed_hash) FROM memories m"
                " WHERE m.seq > ? AND m.embed_hash IS NOT NULL AND NOT EXISTS"
                " (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = m.embed_hash)",
                (after, self._vector_key(cur, model)),
            ).fetchone()
        return int(row[0] or 0)
