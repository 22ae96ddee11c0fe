"""Palace-wide values of the palace itself (``palace_meta``) that are not
counters: what every server process of one palace must agree on, such as
the inspector's session key and its ended sessions (``ui.sessions``).
Neither exported nor copied (``transfer.NOT_COPIED``), never shown."""

from __future__ import annotations

from collections.abc import Mapping

from mindpalace.store.core import SqlCore

__all__ = ["MetaSql"]


class MetaSql(SqlCore):
    """Named integers of the palace, in one transaction per call."""

    def keep_meta(self, values: Mapping[str, int]) -> dict[str, int]:
        """Store each of ``values`` whose key is not stored yet; returns what
        is stored under those keys afterwards (another process's values
        where it stored them first)."""
        with self._write() as cur:
            for key, value in values.items():
                self._exec(
                    cur,
                    "INSERT INTO palace_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO NOTHING",
                    (key, value),
                )
            stored = {}
            for key in values:
                row = self._exec(
                    cur, "SELECT value FROM palace_meta WHERE key = ?", (key,)
                ).fetchone()
                stored[key] = int(row[0])
        return stored

    def put_meta(self, key: str, value: int, *, drop_below: tuple[str, int] | None = None) -> None:
        """Store ``value`` under ``key`` (replacing any); with ``drop_below``
        ``(prefix, limit)``, also drop the values under ``prefix`` smaller
        than ``limit`` (entries that have expired), in the same transaction."""
        with self._write() as cur:
            if drop_below is not None:
                prefix, limit = drop_below
                self._exec(
                    cur,
                    "DELETE FROM palace_meta WHERE substr(key, 1, ?) = ? AND value < ?",
                    (len(prefix), prefix, limit),
                )
            self._exec(
                cur,
                "INSERT INTO palace_meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
