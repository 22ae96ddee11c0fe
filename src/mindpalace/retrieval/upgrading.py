"""Embedding in the background the memories a bulk write left waiting.

A bulk write (``ingest``, ``import``, ``remember_many``, ``add_messages`` of
many turns) with a slow model (the bundled MiniLM embeds long chat turns at
~20 a second on two cores) stores its memories at once, each naming the
hash of the text it is to be embedded from, and leaves the vectors to a
``VectorUpgrade``: a thread that embeds the waiting texts, oldest first,
and stores their vectors in small transactions (``Store.add_vectors``).
Until a memory's vector is in, recall finds it by its words (keyword
search, session support, the entity graph), not by meaning.

Nothing is lost when the process ends mid-way: what is stored stays, and
the texts still waiting are found again by the next upgrade (any process
that writes in bulk or recalls repeatedly from its warm indexes starts one;
``reindex`` embeds them at once). Two processes upgrading one palace at once only repeat some
work: a vector is stored once per model and text.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable

from mindpalace.store.base import VectorBatch

__all__ = ["STEP_TEXTS", "VectorUpgrade"]

#: texts embedded per step: enough for the model to group texts of like
#: length (32 made the upgrade of 3,000 real turns a third slower than
#: embedding them inline), few enough that a process leaving mid-way waits
#: for one step only (a few seconds of the model)
STEP_TEXTS = 128
#: vectors are stored once this many are embedded, or ``COMMIT_SECONDS``
#: after the last store: each store makes every warm process reload its
#: vectors, so stores are few
COMMIT_TEXTS = 2_048
COMMIT_SECONDS = 20.0
#: the upgrade waits while this process wrote within this many seconds: a
#: bulk ingest in several calls keeps both cores, its vectors come after
QUIET_SECONDS = 1.0
#: at interpreter exit, how long an upgrade may finish its step
_EXIT_WAIT = 20.0

# Upgrades that may be running: stopped at interpreter exit after their
# current step, so that the model is not torn down under a running thread.
_UPGRADES: weakref.WeakSet[VectorUpgrade] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for upgrade in list(_UPGRADES):
        upgrade.stop(wait=_EXIT_WAIT)


class VectorUpgrade:
    """One background run over a palace's waiting texts.

    Args:
        embed: ``embed(after_seq, limit)``: the vectors of up to ``limit``
            texts waiting, of memories written after ``after_seq``, and the
            last such memory's seq; None when none wait.
        store: stores vectors, in one transaction.
        last_write: when (``time.monotonic``) this process last wrote.
        finished: called once every text found waiting is stored and a
            read found none left (not after a stop or a failure).
        name: the thread's name.
    """

    def __init__(
        self,
        embed: Callable[[int, int], tuple[VectorBatch, int] | None],
        store: Callable[[VectorBatch], None],
        *,
        last_write: Callable[[], float] = lambda: 0.0,
        finished: Callable[[], None] = lambda: None,
        name: str,
    ) -> None:
        self._embed = embed
        self._store = store
        self._last_write = last_write
        self._on_finished = finished
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        #: texts embedded and stored so far
        self.embedded = 0
        #: why the upgrade stopped early, if it failed
        self.error: str | None = None
        _UPGRADES.add(self)

    def start(self) -> VectorUpgrade:
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """Whether the run has ended (finished, stopped or failed)."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends; False if ``timeout`` passed first."""
        return self._finished.wait(timeout)

    def stop(self, *, wait: float | None = None) -> None:
        """End the run after its current step (what was embedded is stored)."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(wait)

    def _run(self) -> None:
        held: dict[str, bytes] = {}
        held_parts: dict[str, bytes] = {}
        model = ""
        after = 0
        last = time.monotonic()
        try:
            while not self._stopping.is_set():
                if time.monotonic() - self._last_write() < QUIET_SECONDS:
                    self._stopping.wait(QUIET_SECONDS / 4)  # writes first
                    continue
                step = self._embed(after, STEP_TEXTS)
                if step is None:
                    self._flush(model, held, held_parts)
                    self._on_finished()
                    return
                batch, after = step
                model = batch.model
                held.update(batch.vectors)
                held_parts.update(batch.parts)
                if len(held) >= COMMIT_TEXTS or time.monotonic() - last >= COMMIT_SECONDS:
                    self._flush(model, held, held_parts)
                    held, held_parts, last = {}, {}, time.monotonic()
            self._flush(model, held, held_parts)
        except Exception as exc:  # the model or the store failed: the texts wait on
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._finished.set()

    def _flush(self, model: str, held: dict[str, bytes], held_parts: dict[str, bytes]) -> None:
        if held:
            self._store(VectorBatch(model, held, parts=held_parts))
            self.embedded += len(held)
