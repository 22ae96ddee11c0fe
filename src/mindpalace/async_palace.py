"""``AsyncPalace``: the ``Palace`` API for asyncio programs.

Every blocking method of ``Palace`` is a coroutine here, with the same
arguments, result and errors: the call runs in the palace's own worker
threads, so the event loop goes on while a model embeds or SQLite writes.

The coroutines are not written out again: each is made once, from the
``Palace`` method itself, by ``_off_loop`` (typed with ``ParamSpec``, so a
type checker sees ``Palace``'s exact parameters and an awaitable of its
result, and ``inspect.signature`` and ``help`` show them too). A test holds
the list to ``Palace``'s public methods, so the two cannot drift apart.

Threads: a palace is safe to call from several threads at once (the HTTP
server does): SQLite's one connection is opened with
``check_same_thread=False`` and every statement runs under the store's
lock; PostgreSQL hands each thread a pooled connection. Concurrent awaits
on one ``AsyncPalace`` run in up to ``threads`` threads; its
``for_agent`` views share those threads and the engine.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from mindpalace.config import Settings
from mindpalace.engine import Engine
from mindpalace.errors import StorageError
from mindpalace.models import Scope
from mindpalace.palace import Palace
from mindpalace.validation import check_limit

__all__ = ["DEFAULT_THREADS", "MAX_THREADS", "AsyncPalace"]

P = ParamSpec("P")
R = TypeVar("R")

#: worker threads of a palace: as the HTTP server's (``server.DEFAULT_THREADS``,
#: measured there), since its calls are the same
DEFAULT_THREADS = 4
MAX_THREADS = 64


class _Workers:
    """The threads an ``AsyncPalace`` and its views run calls in."""

    def __init__(self, threads: int) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="mindpalace-async")
        self.closed = False
        self.lock = threading.Lock()


def _off_loop(
    method: Callable[Concatenate[Palace, P], R],
) -> Callable[Concatenate[AsyncPalace, P], Coroutine[Any, Any, R]]:
    """``Palace``'s ``method`` as a coroutine method of ``AsyncPalace``: the
    same parameters and result, run in the palace's worker threads."""

    async def call(self: AsyncPalace, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self.run(method, *args, **kwargs)

    functools.update_wrapper(call, method)  # name, docstring; signature via __wrapped__
    call.__qualname__ = f"AsyncPalace.{method.__name__}"
    call.__module__ = __name__
    return call


class AsyncPalace:
    """A ``Palace`` for asyncio: every method that reads or writes is a
    coroutine, run in the palace's worker threads, with ``Palace``'s
    arguments, results and errors.

    Example:
        >>> async with AsyncPalace("memories.db") as palace:  # doctest: +SKIP
        ...     await palace.remember("We chose SQLite", category="decision")
        ...     hits = await palace.recall("why sqlite", limit=5)

    Opening is synchronous, as ``Palace``'s (a SQLite file opens in
    milliseconds; the model loads on first use, in a worker thread). The
    features built on the palace (``skills``, ``family``, ``graph``...) are
    reached through ``run``: ``await palace.run(lambda p: p.family.why_did_we("sqlite"))``.
    A cancelled await leaves its call to finish in its thread (a write
    commits or rolls back whole); a ``progress`` callback is called in the
    worker thread.

    Args:
        target: as ``Palace``'s.
        threads: worker threads, 1-64 (default 4): the most calls that run
            at once; more wait their turn.
        **options: ``Palace``'s keyword options (agent_id, settings, ...).

    Raises:
        ValidationError: ``threads`` out of range, or as ``Palace``.
        ConfigError: as ``Palace``.
    """

    def __init__(
        self, target: str | Path | None = None, *, threads: int = DEFAULT_THREADS, **options: Any
    ) -> None:
        check_limit(threads, low=1, high=MAX_THREADS, field="threads")
        self.palace = Palace(target, **options)
        self._workers = _Workers(threads)
        self._owns_workers = True
        self._closed = False

    @classmethod
    def open(
        cls, target: str | Path | None = None, *, threads: int = DEFAULT_THREADS, **options: Any
    ) -> AsyncPalace:
        """Open a palace by path or URL (as ``Palace.open``)."""
        return cls(target, threads=threads, **options)

    @classmethod
    def _view(cls, palace: Palace, workers: _Workers) -> AsyncPalace:
        view = cls.__new__(cls)
        view.palace = palace
        view._workers = workers
        view._owns_workers = False
        view._closed = False
        return view

    def for_agent(
        self,
        agent_id: str,
        *,
        groups: Iterable[str] = (),
        channel: str | None = None,
        peer: bool | None = None,
    ) -> AsyncPalace:
        """The palace as ``agent_id`` sees it (``Palace.for_agent``), sharing
        this palace's engine and worker threads; closing it leaves both open.

        Raises:
            ValidationError: a bad name, or a peer view without a channel.
        """
        view = self.palace.for_agent(agent_id, groups=groups, channel=channel, peer=peer)
        return AsyncPalace._view(view, self._workers)

    # -- running a call -------------------------------------------------------------

    async def run(
        self, function: Callable[Concatenate[Palace, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``function(palace, *args, **kwargs)`` in a worker thread, for any
        synchronous use of the palace (its features included), with the
        caller's context variables.

        Raises:
            StorageError: the palace (or the one this view was taken from) is closed.
        """
        workers = self._workers
        with workers.lock:
            if self._closed or workers.closed:
                raise StorageError("this palace is closed")
            context = contextvars.copy_context()
            palace = self.palace

            def call() -> R:
                return context.run(function, palace, *args, **kwargs)

            future = workers.executor.submit(call)
        return await asyncio.wrap_future(future)

    # -- Palace's methods, off the event loop ------------------------------------------

    get = _off_loop(Palace.get)
    recall = _off_loop(Palace.recall)
    feedback = _off_loop(Palace.feedback)
    context = _off_loop(Palace.context)
    search = _off_loop(Palace.search)
    memories = _off_loop(Palace.memories)
    stats = _off_loop(Palace.stats)
    add_messages = _off_loop(Palace.add_messages)
    search_messages = _off_loop(Palace.search_messages)
    recent = _off_loop(Palace.recent)
    reindex = _off_loop(Palace.reindex)
    pending_vectors = _off_loop(Palace.pending_vectors)
    wait_for_vectors = _off_loop(Palace.wait_for_vectors)
    doctor = _off_loop(Palace.doctor)
    export_jsonl = _off_loop(Palace.export_jsonl)
    import_file = _off_loop(Palace.import_file)
    import_jsonl = _off_loop(Palace.import_jsonl)
    remember = _off_loop(Palace.remember)
    remember_many = _off_loop(Palace.remember_many)
    forget = _off_loop(Palace.forget)
    erase = _off_loop(Palace.erase)
    erasures = _off_loop(Palace.erasures)
    restore = _off_loop(Palace.restore)
    update = _off_loop(Palace.update)

    # -- what needs no thread -----------------------------------------------------------

    @property
    def engine(self) -> Engine:
        """The shared engine (``Palace.engine``)."""
        return self.palace.engine

    @property
    def scope(self) -> Scope:
        """Whose eyes the palace looks through (``Palace.scope``)."""
        return self.palace.scope

    @property
    def settings(self) -> Settings:
        """The engine's settings."""
        return self.palace.settings

    def now(self) -> datetime:
        """The palace's clock (``Palace.now``)."""
        return self.palace.now()

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the palace once the calls under way have finished: the
        engine and the worker threads too if this palace opened them (a
        ``for_agent`` view leaves them to its opener). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._owns_workers:
            self.palace.close()
            return
        workers = self._workers
        with workers.lock:
            workers.closed = True
        # Waiting for the calls in flight blocks: a thread of the loop's waits.
        await asyncio.to_thread(workers.executor.shutdown, wait=True)
        await asyncio.to_thread(self.palace.close)

    async def __aenter__(self) -> AsyncPalace:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncPalace({self.palace.store.location!r}, agent_id={self.scope.agent_id!r})"
