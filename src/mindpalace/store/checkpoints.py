"""Copying a SQLite palace's write-ahead log into its file beside the
writers rather than inside their commits.

A commit in WAL mode appends the pages it changed to the ``-wal`` file; a
checkpoint copies them into the database file. SQLite's own
``wal_autocheckpoint`` runs that copy inside the commit that crosses its
threshold, so the writer that happens to cross it waits for every page the
log holds. In a large palace a batch of writes changes pages spread over the
whole file (the index entries of hashes, names and co-occurrences land on
scattered pages), and that copy was about a tenth of a batch's time at
100,000 memories (docs/benchmarks/16-facts-at-size.md).

Here the writing connection's automatic checkpoint is off and a thread of
the process copies the log on its own connection (a ``PASSIVE`` checkpoint:
it never blocks a writer or a reader), woken by each commit and at most
once every ``interval`` seconds; SQLite releases the interpreter while it
copies. The log stays bounded by what one interval writes. A store that
committed since the last copy copies once more when it closes, so a short
process leaves no longer a log than SQLite's own rule would.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["Checkpointer"]

# At most one background copy per this many seconds while writes go on.
INTERVAL = 0.5


class Checkpointer:
    """The background copier of one store's log (one per open file and
    process; see the module's text). ``committed`` after every commit,
    ``close`` when the store closes."""

    def __init__(self, path: str, *, interval: float = INTERVAL) -> None:
        # Absolute now: the thread connects later, whatever the working
        # folder has become by then.
        self._path = os.path.abspath(path)
        self._interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        # One checkpoint of this process at a time: the store's own ones
        # (erasure's) take it too, so neither finds the other's busy.
        self._running = threading.Lock()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        self._dirty = False
        self.copies = 0  # background checkpoints made (tests read it)

    def committed(self) -> None:
        """A commit added to the log: have it copied soon."""
        self._dirty = True
        if self._thread is None:
            with self._start:
                if self._thread is None and not self._stop.is_set():
                    thread = threading.Thread(
                        target=self._run, name="mindpalace-checkpoint", daemon=True
                    )
                    thread.start()
                    self._thread = thread
        self._wake.set()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off the background copy (for a checkpoint of the store's own)."""
        with self._running:
            yield

    def _run(self) -> None:
        try:
            # Never creates the file: a palace removed while open stays gone.
            conn = sqlite3.connect(
                Path(self._path).as_uri() + "?mode=rw",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error:
            return  # the file is gone: the store copies at close, if it can
        try:
            last = 0.0
            while not self._stop.is_set():
                self._wake.wait()
                if self._stop.is_set():
                    break
                # A burst of commits is copied once an interval, not once each.
                delay = last + self._interval - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    break
                self._wake.clear()
                self._copy(conn)
                last = time.monotonic()
        finally:
            conn.close()

    def _copy(self, conn: sqlite3.Connection) -> None:
        with self._running:
            if self._stop.is_set():  # closing: the store copies on its own connection
                return
            self._dirty = False
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error:
                # Another process's checkpoint, or a closing file: the next
                # commit wakes this again, and the store copies at close.
                self._dirty = True
                return
            self.copies += 1

    def close(self, conn: sqlite3.Connection) -> None:
        """Stop the thread; copy what this store's commits left in the log
        since the last copy (on ``conn``, the store's own connection).
        Idempotent."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join()
        if self._dirty:
            self._dirty = False
            # A failure leaves the log to the file's next writer.
            with suppress(sqlite3.Error):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
