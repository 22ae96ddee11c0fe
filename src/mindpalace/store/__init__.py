"""Storage backends behind one ``Store`` protocol."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mindpalace.errors import ConfigError
from mindpalace.store.base import (
    SERVER_SCHEMES,
    AddResult,
    ImportReport,
    Signal,
    Store,
    TextMatch,
)
from mindpalace.store.core import SqlCore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import TransferReport, copy_palace

if TYPE_CHECKING:
    from mindpalace.store.postgres import PostgresStore

    # mypy checks here that each backend is every role of ``Store``, with
    # the roles' signatures (a missing or differing method fails the check).
    _SQLITE_IS_A_STORE: type[Store] = SQLiteStore
    _POSTGRES_IS_A_STORE: type[Store] = PostgresStore

__all__ = [
    "AddResult",
    "ImportReport",
    "SQLiteStore",
    "Signal",
    "Store",
    "TextMatch",
    "TransferReport",
    "migrate",
    "open_store",
]


def open_store(
    target: str | Path,
    *,
    busy_timeout: float = 30.0,
    create_folder: bool = False,
    replicas: Sequence[str] = (),
) -> Store:
    """Open the backend a path or URL names.

    ``memories.db``, ``sqlite:///abs/path.db`` and ``:memory:`` are SQLite
    (a missing file is created, in a folder that must exist unless
    ``create_folder``); ``postgresql://user@host/db`` (or ``postgres://``)
    is PostgreSQL, which needs the ``postgres`` extra; ``replicas`` are its
    streaming replicas' URLs, which serve its reads.

    Raises:
        ConfigError: for a URL scheme no backend serves, PostgreSQL
            without its extra installed, a file in a missing folder, or
            replicas of a SQLite palace.
    """
    if not isinstance(target, (str, os.PathLike)):
        # str() of anything else would name a file after its repr.
        raise ConfigError(
            f"a palace is a file path, ':memory:' or a postgresql:// URL, not a"
            f" {type(target).__name__}; an open store goes in as store=..."
        )
    text = str(target)
    if text.startswith(SERVER_SCHEMES):
        # Imported here, not at the top: psycopg is an optional extra, and a
        # SQLite palace must open without it.
        from mindpalace.store.postgres import PostgresStore  # noqa: PLC0415

        return PostgresStore(text, busy_timeout=busy_timeout, replicas=replicas)
    if replicas:
        raise ConfigError(
            "read replicas serve a PostgreSQL palace; valid options: a postgresql:// palace URL"
        )
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite://")
    elif "://" in text:
        scheme = text.split("://", 1)[0]
        raise ConfigError(
            f"no backend for {scheme!r} URLs; valid options: a file path, sqlite:///PATH,"
            " :memory:, postgresql://USER@HOST/DB"
        )
    return SQLiteStore(text, busy_timeout=busy_timeout, create_folder=create_folder)


def migrate(
    source: str | Path, destination: str | Path, *, busy_timeout: float = 30.0
) -> TransferReport:
    """Copy the palace at ``source`` into the empty palace at ``destination``
    (paths or URLs, any backends), verified by row counts and digests.

    Raises:
        StorageError: the destination is not empty or the copy does not
            match (then nothing is written).
    """
    src = open_store(source, busy_timeout=busy_timeout)
    try:
        dst = open_store(destination, busy_timeout=busy_timeout)
        try:
            assert isinstance(src, SqlCore) and isinstance(dst, SqlCore)
            return copy_palace(src, dst)
        finally:
            dst.close()
    finally:
        src.close()
