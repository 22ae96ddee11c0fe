"""The signals table: what happened to memories, kept apart from them.

Writes record their source here in the write's own transaction; recalls
record what they returned, and feedback whether a hit helped, each in a
transaction of its own that touches no memory row and does not bump the
palace's change counters (a recall must not make caches reload).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from mindpalace.store.base import AddResult, Signal
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.fragments import from_epoch, in_list, to_epoch

__all__ = ["SignalStore"]

_COLUMNS = "seq, at, kind, agent_id, channel, memory_id, query, data"


class SignalStore(SqlCore):
    """The ``record_signals`` / ``iter_signals`` part of the ``Store`` protocol."""

    def _insert_signal(self, cur: Cursor, signal: Signal) -> None:
        self._exec(
            cur,
            "INSERT INTO signals (at, kind, agent_id, channel, memory_id, query, data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                to_epoch(signal.at),
                signal.kind,
                signal.agent_id,
                signal.channel or "",
                signal.memory_id,
                # A query is any text; stored text cannot hold NUL on every backend.
                None if signal.query is None else signal.query.replace("\x00", "\ufffd"),
                json.dumps(dict(signal.data), ensure_ascii=False, sort_keys=True),
            ),
        )

    def _store_signal(self, cur: Cursor, result: AddResult) -> None:
        """The write-source signal of one ``add`` (inside its transaction):
        where the write came from and whether it made the memory. What the
        memory is (its category, type, visibility) is its row's, which no
        write changes in place: a signal a memory has repeated them, 65 of
        a palace's 3,080 bytes a memory at 100,000."""
        m = result.memory
        self._insert_signal(
            cur,
            Signal(
                kind="store",
                agent_id=m.agent_id,
                at=m.updated_at,
                channel=m.channel,
                memory_id=m.id,
                data={"source": m.source.value, "created": result.created},
            ),
        )

    def _forget_signals(self, cur: Cursor, memory_id: str) -> None:
        """Drop the signals about a deleted memory (a hard delete leaves no trace)."""
        self._exec(cur, "DELETE FROM signals WHERE memory_id = ?", (memory_id,))

    def record_signals(self, signals: Sequence[Signal], *, wait: bool = True) -> None:
        """Append signals in one transaction, without bumping the generation;
        without ``wait``, give up (``BusyError``) rather than queue for a lock."""
        if not signals:
            return
        with self._write() if wait else self._write_briefly() as cur:
            for signal in signals:
                self._insert_signal(cur, signal)

    def iter_signals(
        self,
        *,
        kinds: Sequence[str] = (),
        agent_id: str | None,
        channel: str | None = None,
        batch: int = 1000,
    ) -> Iterator[Signal]:
        """Signals in recorded order, narrowed to kinds, an agent and a channel."""
        where = ["seq > ?"]
        params: list[Any] = []
        if kinds:
            where.append(in_list("kind", kinds))
            params += list(kinds)
        if agent_id is not None:
            where.append("agent_id = ?")
            params.append(agent_id)
        if channel is not None:
            where.append("channel = ?")
            params.append(channel)
        last = 0
        while True:
            with self._read() as cur:
                rows = self._exec(
                    cur,
                    f"SELECT {_COLUMNS} FROM signals WHERE {' AND '.join(where)}"
                    " ORDER BY seq LIMIT ?",
                    [last, *params, batch],
                ).fetchall()
            if not rows:
                return
            for seq, at, kind, agent, chan, memory_id, query, data in rows:
                when = from_epoch(at)
                assert when is not None
                yield Signal(
                    kind=str(kind),
                    agent_id=str(agent),
                    at=when,
                    channel=chan or None,
                    memory_id=memory_id,
                    query=query,
                    data=json.loads(data),
                    seq=int(seq),
                )
            last = int(rows[-1][0])

    # -- the learned scorer (retrieval/scorer.py) -----------------------------------

    def feedback_counts(
        self, memory_ids: Sequence[str], *, agent_id: str, channel: str | None
    ) -> dict[str, tuple[int, int]]:
        """(useful, not useful) judgments of each memory by one agent
        through one channel; memories never judged are left out."""
        ids = sorted(set(memory_ids))
        if not ids:
            return {}
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT memory_id, data FROM signals WHERE kind = 'feedback'"
                f" AND agent_id = ? AND channel = ? AND {in_list('memory_id', ids)}",
                [agent_id, channel or "", *ids],
            ).fetchall()
        counts: dict[str, list[int]] = {}
        for memory_id, data in rows:
            useful = bool(json.loads(data).get("useful"))
            entry = counts.setdefault(str(memory_id), [0, 0])
            entry[0 if useful else 1] += 1
        return {key: (good, bad) for key, (good, bad) in counts.items()}

    def save_scorer(
        self, *, agent_id: str, channel: str | None, data: Mapping[str, Any], at: datetime
    ) -> None:
        """Set the scorer weights of one agent and channel (one transaction;
        not a change of the palace: caches stay warm)."""
        with self._write() as cur:
            self._exec(
                cur,
                "INSERT INTO scorer_weights (agent_id, channel, trained_at, data)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, channel)"
                " DO UPDATE SET trained_at = excluded.trained_at, data = excluded.data",
                (
                    agent_id,
                    channel or "",
                    to_epoch(at),
                    json.dumps(dict(data), sort_keys=True),
                ),
            )

    def load_scorer(self, *, agent_id: str, channel: str | None) -> dict[str, Any] | None:
        """The scorer weights of one agent and channel, or None."""
        with self._read() as cur:
            row = self._exec(
                cur,
                "SELECT data FROM scorer_weights WHERE agent_id = ? AND channel = ?",
                (agent_id, channel or ""),
            ).fetchone()
        if row is None:
            return None
        data: dict[str, Any] = json.loads(row[0])
        return data
