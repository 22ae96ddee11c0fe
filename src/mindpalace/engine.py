"""The engine of a palace: what one palace shares per process, for every agent.

An ``Engine`` holds the heavy, scope-free parts of a palace: the open store,
the settings, the embedding model and the semantic index with its warm
keyword, mention and dense indexes (and, past a size, the HNSW graph), the
recall constants, the optional entity extractor, the clock, the id
generator and the process's metrics (recall and write timings). It never
acts as anyone: a ``Palace`` is one agent's view of an engine
(``Palace.for_agent``), and any number of views share one engine, so a
server answering a thousand agents loads the model and builds its indexes
once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

from mindpalace import embed
from mindpalace.config import Settings, default_db_path
from mindpalace.embed.base import Embedder
from mindpalace.erase_cleanup import Cleanup
from mindpalace.errors import EmbeddingError
from mindpalace.graph.extract import Extractor
from mindpalace.graph.llm import llm_extractor
from mindpalace.ids import IdGenerator
from mindpalace.metrics import Registry
from mindpalace.retrieval.indexing import SemanticIndex
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.store import Store, open_store

__all__ = ["Clock", "Engine", "RecallLog", "utcnow"]

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The wall clock, in UTC (the default ``Clock``)."""
    return datetime.now(timezone.utc)


class RecallLog:
    """What this process remembers of the recalls it served: which recall
    last returned a memory to an agent (through a channel), so that the
    agent's feedback on it names that recall, and how many outcomes were
    not recorded because another writer held the palace.

    Held by the engine, not by one view, so that every view of an agent
    (a server makes them per call, or keeps a few) shares it.
    """

    # Past this many remembered returns the log starts afresh (feedback then
    # names no recall, as after a restart).
    LIMIT = 10_000

    def __init__(self) -> None:
        self.ids = IdGenerator("rcl_")
        #: recall outcomes not recorded because the palace was busy
        self.dropped = 0
        self._last: dict[tuple[str, str | None, str], str] = {}
        self._lock = threading.Lock()

    def returned(
        self, agent_id: str, channel: str | None, memory_ids: Iterable[str], recall_id: str
    ) -> None:
        """Note that ``recall_id`` returned ``memory_ids`` to this agent."""
        with self._lock:
            if len(self._last) > self.LIMIT:
                self._last.clear()
            self._last.update(((agent_id, channel, m), recall_id) for m in memory_ids)

    def last_recall(self, agent_id: str, channel: str | None, memory_id: str) -> str | None:
        """The last recall that returned ``memory_id`` to this agent, if any."""
        return self._last.get((agent_id, channel, memory_id))

    def drop(self) -> None:
        """Count an outcome that was not recorded."""
        with self._lock:
            self.dropped += 1


class Engine:
    """The shared, scope-free state of one palace in one process.

    Args:
        target: a SQLite file path (in a folder that exists),
            ``sqlite:///PATH``, ``:memory:`` or a ``postgresql://`` URL; the
            default (``MINDPALACE_DB``, else a per-user file, its folder
            made on first use) when omitted. Ignored when ``store`` is given.
        settings: limits and models; read from the environment when omitted.
        store: an already open backend to use instead of ``target``.
        embedder: the embedding model; when omitted, the one ``settings``
            name (the bundled local model by default; ``none`` for keyword
            search only). A model that cannot be built leaves keyword search,
            and recall says why.
        recall_options: constants of the recall pipeline.
        clock: the time source (tests pass a fixed clock).
        extractor: extra entity extraction beside the rules (e.g.
            ``graph.llm.LLMExtractor``); from ``MINDPALACE_EXTRACT_*`` when
            omitted.
    """

    def __init__(
        self,
        target: str | Path | None = None,
        *,
        settings: Settings | None = None,
        store: Store | None = None,
        embedder: Embedder | None = None,
        recall_options: RecallOptions | None = None,
        clock: Clock = utcnow,
        extractor: Extractor | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        if store is None:
            # The default palace's folder is made on first use; a path the
            # caller names must be in a folder that exists (a typo is an
            # error, not a new folder).
            store = open_store(
                target if target is not None else default_db_path(),
                busy_timeout=self.settings.busy_timeout,
                create_folder=target is None,
                replicas=self.settings.replicas,
            )
        self.store = store
        broken: str | None = None
        if embedder is None:
            try:
                embedder = embed.from_settings(self.settings)
            except EmbeddingError as exc:  # e.g. model files missing: degrade, don't fail
                broken = str(exc)
        self.semantic = SemanticIndex(
            store,
            embedder,
            ann_rows=self.settings.ann_rows,
            index=self.settings.index,
            bulk_embed=self.settings.bulk_embed,
            parts=self.settings.parts,
        )
        if broken is not None:
            self.semantic.broken = broken
        self.recall_options = recall_options or RecallOptions()
        self.extractor = extractor or llm_extractor(self.settings)
        self.clock = clock
        self.ids = IdGenerator()
        #: this process's recall and write timings (``mindpalace.metrics``)
        self.metrics = Registry()
        #: the recalls this process served, for feedback to name
        self.recalls = RecallLog()
        #: the disk cleanup after erasures, in the background (erase_cleanup.py)
        self.cleanup = Cleanup(store)

    def now(self) -> datetime:
        """The engine's clock (tests inject a fixed one)."""
        return self.clock()

    def close(self) -> None:
        """Stop the background embedding after its step, finish the cleanup
        after erasures, close the store. Idempotent."""
        self.semantic.stop_upgrade()
        self.cleanup.close()
        self.store.close()

    def __repr__(self) -> str:
        return f"Engine({self.store.location!r})"
