"""The command line's background embedding: ``python -m mindpalace.vectorjob``.

A bulk write from the command line (``mindpalace ingest``, ``import``) with
a slow model stores its memories at once and leaves their vectors to an
upgrade (``retrieval/upgrading.py``). A one-shot command cannot run it: it
ends when the write does. It starts this job instead, in a session of its
own, which opens the same palace (``MINDPALACE_DB`` in its environment, so
a URL's password never shows in a process list), embeds every text that
waits at a low priority, and exits. One job at a time per palace: for a
SQLite palace a lock file beside it, for a PostgreSQL one a session-level
advisory lock in its database, both released when the job ends, however it
ends; a second job finds the lock taken and leaves.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from mindpalace.paths import ENV_DB

__all__ = ["SERVER_LOCK", "lock_path", "main", "spawn"]

# The advisory lock a job holds in a PostgreSQL palace's database (a palace
# is one database); not the writers' lock, which a job takes per write.
SERVER_LOCK = 0x6D70_7665  # "mpve"


def lock_path(target: str) -> Path | None:
    """The lock file of the job for the SQLite palace ``target`` (a path or
    ``sqlite:///PATH``); None for a server's URL or a palace in memory."""
    if target.startswith("sqlite:///"):
        target = target.removeprefix("sqlite://")
    if "://" in target or target == ":memory:":
        return None
    return Path(f"{target}.vectors-lock")


def spawn(target: str) -> subprocess.Popen[bytes] | None:
    """Start the job for ``target`` (a path or URL); None for an in-memory palace."""
    if target == ":memory:":
        return None
    env = {**os.environ, ENV_DB: target}
    return subprocess.Popen(
        [sys.executable, "-m", "mindpalace.vectorjob"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=env,
    )


@contextlib.contextmanager
def _only_job(target: str) -> Iterator[bool]:
    """Whether this is the only job for ``target``, for the block's length."""
    from mindpalace.store.base import SERVER_SCHEMES  # noqa: PLC0415 - after the priority drop

    if target.startswith(SERVER_SCHEMES):
        with _only_job_on_server(target) as alone:
            yield alone
        return
    path = lock_path(target)
    if path is None:
        yield True
        return
    try:
        import fcntl  # noqa: PLC0415 - POSIX only; elsewhere jobs may overlap (harmless)

        handle = path.open("a")
    except (ImportError, OSError):
        yield True  # no lock here (a read-only folder): overlapping jobs only repeat work
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


@contextlib.contextmanager
def _only_job_on_server(url: str) -> Iterator[bool]:
    """``_only_job`` for a PostgreSQL palace: the advisory lock, held by a
    connection of its own (the server releases it when that closes)."""
    import psycopg  # noqa: PLC0415 - only PostgreSQL palaces need it

    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.Error:
        yield True  # opening the palace will say what is wrong
        return
    with conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (SERVER_LOCK,)).fetchone()
        yield bool(row and row[0])


def main() -> int:
    from mindpalace.palace import Palace  # noqa: PLC0415 - after the priority drop

    target = os.environ.get(ENV_DB)
    if not target:
        return 2
    with contextlib.suppress(OSError):
        os.nice(10)  # the foreground's work first
    lock = lock_path(target)
    if lock is not None and not lock.with_suffix("").exists():
        return 0  # removed since the write: nothing to embed, nothing to create
    with _only_job(target) as alone:
        if not alone:
            return 0
        with Palace(target) as palace:
            palace.wait_for_vectors()
    return 0


if __name__ == "__main__":
    sys.exit(main())
