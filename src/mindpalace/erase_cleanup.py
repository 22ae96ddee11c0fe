"""The cleanup after an erasure, off the erasure's call: what the deleted
rows left on disk (SQLite's WAL and text-index pages, PostgreSQL's dead
tuples) goes in a background thread once the erasure has committed
(``Store.scrub``); the receipt says ``cleanup: "pending"`` until then, and
the erasure log (``Palace.erasures``) says "done" once it finished.

One ``Cleanup`` per engine. Erasures that commit while a cleanup runs get
one more run after it (one run cleans up after every erasure committed
before it began). A run that cannot finish (a SQLite reader still on the
WAL, a PostgreSQL VACUUM refused) is tried again a few times, waiting
longer each time; after that the receipts stay pending and ``doctor`` says
so. Closing the engine waits for the cleanup, so a one-shot command (the
CLI's ``erase``) finishes it before the process ends.
"""

from __future__ import annotations

import logging
import threading

from mindpalace.errors import BusyError
from mindpalace.store import Store

__all__ = ["Cleanup"]

_log = logging.getLogger(__name__)

# Tries of one run that could not finish, and the first wait between them
# (doubled each time, up to _MAX_DELAY seconds).
_TRIES = 8
_FIRST_DELAY = 0.05
_MAX_DELAY = 5.0


class Cleanup:
    """The background cleanup of one engine's store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._wanted = False
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def request(self) -> None:
        """Clean up after the erasures committed so far, in the background."""
        with self._lock:
            self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mindpalace-erasure-cleanup", daemon=True
                )
                self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the cleanup under way (and the one requested after it);
        True when none is left running."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted or self._stopping.is_set():
                    self._thread = None
                    return
                self._wanted = False
            self._once()

    def _once(self) -> None:
        delay = _FIRST_DELAY
        for _ in range(_TRIES):
            try:
                if self._store.scrub():
                    return
            except BusyError as exc:  # writers kept it waiting past the timeout: try again
                _log.warning("erasure cleanup of %s: %s", self._store.location, exc)
            except Exception as exc:  # a background thread: log, never raise
                # e.g. the store closed under it (its owner did not close the
                # engine; a closed connection raises the driver's own error):
                # the receipts stay pending, and doctor says so.
                _log.warning("erasure cleanup of %s stopped: %s", self._store.location, exc)
                return
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, _MAX_DELAY)
        _log.warning(
            "erasure cleanup of %s did not finish; the receipts stay pending",
            self._store.location,
        )

    def close(self) -> None:
        """Finish the run under way (waits for it) and start no other."""
        self.wait()
        self._stopping.set()
