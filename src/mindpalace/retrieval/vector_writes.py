"""The writing half of a palace's embedding side: checking the model
against the palace's recorded one, embedding what a write stores (only text
never embedded before, and the parts of long texts), and the background
upgrade that embeds what a bulk write left waiting.

``SemanticIndex`` (``indexing.py``) is this and the reading half: query
vectors, the warm indexes recall searches, and reindexing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.embed.base import Embedder
from mindpalace.embed.texts import Progress, embed_text, text_hash, vector_key
from mindpalace.errors import EmbeddingError, EmbeddingMismatch, StorageError
from mindpalace.retrieval import parts
from mindpalace.retrieval.upgrading import VectorUpgrade
from mindpalace.retrieval.warming import WarmReads
from mindpalace.store import vector_bytes
from mindpalace.store.base import VectorBatch
from mindpalace.store.roles import MemoryRows, VectorRows

__all__ = ["BULK_TEXTS", "STOP_WAIT", "SemanticStore", "Usable", "VectorWrites", "embedded_batch"]

#: a write with this many new texts is a bulk write: with a slow model and
#: ``bulk_embed`` background, its vectors come after it (``upgrading.py``)
BULK_TEXTS = 256
#: seconds closing a palace waits for the upgrade's step under way (a model
#: behind a network may hang; the thread is a daemon)
STOP_WAIT = 30.0


class SemanticStore(WarmReads, VectorRows, MemoryRows, Protocol):
    """The store's roles the embedding side uses: the vectors, the texts
    and mentions its warm indexes are built from (``WarmReads``), and the
    memories a reindex reads."""


@dataclass(frozen=True, slots=True)
class Usable:
    """Semantic search may run: the embedder matches the model the palace's
    vectors come from, as read once (``SemanticIndex.usable``). A recall
    reads the recorded config once and hands this to each step that needs
    it, rather than each step reading it again."""

    embedder: Embedder
    #: the vectors' key (``vector_key`` of the embedder's config)
    key: str


class VectorWrites:
    """What a write asks of the embedding side (``SemanticIndex`` sets the
    attributes below in its constructor)."""

    store: SemanticStore
    embedder: Embedder | None
    bulk_embed: str
    parts: bool
    #: what runs the upgrade a deferred bulk write needs, when not a thread
    #: of this process (the command line starts a job that outlives it)
    on_pending: Callable[[], None] | None
    failure: str | None  # why semantic search is unavailable, if it is
    broken: str | None  # why the configured embedder could not be built
    _upgrade: VectorUpgrade | None  # the background embedding of waiting texts
    _upgrade_lock: threading.Lock
    _last_write: float  # time.monotonic() of this process's last write

    # -- state -------------------------------------------------------------------

    def _config_state(self, *, claim: bool = False) -> str | None:
        """None when the embedder may be used; else the reason it may not.

        Read from the store each time, so a reindex by another process is
        noticed. ``claim`` records the embedder's config in a palace that has
        none yet (writes do; recall never writes).
        """
        if self.embedder is None:
            return self.broken or "no embedding model is configured"
        wanted = self.embedder.config
        recorded = self.store.embedding_config()
        if recorded is None:
            if claim:
                self.store.set_embedding_config(wanted)
            return None
        if recorded != wanted:
            return (
                f"the palace's vectors come from {recorded.provider}/{recorded.model}"
                f" ({recorded.dimensions}-d), not {wanted.provider}/{wanted.model}"
                f" ({wanted.dimensions}-d); run `mindpalace reindex` to re-embed"
            )
        return None

    @property
    def available(self) -> bool:
        """Whether semantic search can run now."""
        return self.usable() is not None

    def usable(self) -> Usable | None:
        """A ``Usable`` when semantic search can run now (one read of the
        palace's recorded config); else None, with ``failure`` saying why."""
        reason = self._config_state()
        if reason is not None:
            self.failure = reason
            return None
        embedder = self.embedder
        return None if embedder is None else Usable(embedder, vector_key(embedder.config))

    # -- writing -------------------------------------------------------------------

    def vectors_for(self, texts: Sequence[str]) -> VectorBatch | None:
        """Vectors for the texts not embedded yet, or None when embedding is
        unavailable or fails (the memories are kept; ``reindex`` embeds them
        later). A bulk write that ``defers`` gets none: its memories wait
        for an upgrade (``upgrade_vectors``).

        Raises:
            EmbeddingMismatch: the palace belongs to another model.
        """
        return self.plan_vectors(texts, defer=self.defers(len(texts)))()

    def vectors_in_batches(
        self, texts: Sequence[str], *, batch: int = 256, progress: Progress | None = None
    ) -> VectorBatch | None:
        """``vectors_for`` ``batch`` texts at a time, with ``progress(done,
        total)`` after each: for a long import that writes once, at the end.
        None when a batch could not be embedded (``reindex`` embeds later).
        A bulk write that ``defers`` embeds nothing here: its memories wait
        for ``upgrade_vectors``.

        Raises:
            EmbeddingMismatch: the palace belongs to another model.
        """
        if self.defers(len(texts)):
            vectors = self.vectors_for(texts)
            if progress is not None:
                progress(len(texts), len(texts))
            return vectors
        found: dict[str, bytes] = {}
        found_parts: dict[str, bytes] = {}
        model: str | None = None
        embedded = True
        for start in range(0, len(texts), batch):
            vectors = self.vectors_for(texts[start : start + batch])
            if vectors is None:
                embedded = False
            else:
                model = vectors.model
                found.update(vectors.vectors)
                found_parts.update(vectors.parts)
            if progress is not None:
                progress(min(start + batch, len(texts)), len(texts))
        if not embedded or model is None:
            return None
        return VectorBatch(model, found, parts=found_parts)

    def defers(self, count: int) -> bool:
        """Whether a write of ``count`` new texts leaves its vectors to a
        background upgrade: a bulk write (``BULK_TEXTS`` or more) with a
        slow model, unless ``bulk_embed`` is ``inline``."""
        embedder = self.embedder
        return (
            embedder is not None
            and not embedder.fast
            and self.bulk_embed == "background"
            and count >= BULK_TEXTS
        )

    def plan_vectors(
        self, texts: Sequence[str], *, defer: bool = False
    ) -> Callable[[], VectorBatch | None]:
        """``vectors_for`` in two halves: the store is read now (in the
        caller's thread); the returned call only runs the model, so it may
        run in another thread while the caller goes on (bulk ingest embeds
        one batch while it writes the one before).

        Raises:
            EmbeddingMismatch: the palace belongs to another model.
        """
        embedder = self.embedder
        if embedder is None:
            return lambda: None
        reason = self._config_state(claim=True)
        if reason is not None:
            raise EmbeddingMismatch(reason)
        model = vector_key(embedder.config)
        if defer:  # the memories name their texts; the upgrade embeds them
            return lambda: VectorBatch(model, {}, pending=True)
        chars = self.store.hash_chars()
        by_hash = {text_hash(t, chars): t for t in texts}
        order = sorted(self.store.missing_vectors(model, by_hash))

        def run() -> VectorBatch | None:
            if not order:
                return VectorBatch(model, {})
            try:
                return embedded_batch(embedder, model, order, by_hash, cut=self.parts)
            except EmbeddingError as exc:
                self.failure = str(exc)
                return None

        return run

    # -- vectors after the write ---------------------------------------------------------

    def upgrade_vectors(self) -> VectorUpgrade | None:
        """Start embedding, in a background thread, the texts that memories
        wait to have embedded (a deferred bulk write's); the run under way
        if one is. None without a usable embedder."""
        embedder = self.embedder
        model = self._usable_key()
        if embedder is None or model is None:
            return None
        with self._upgrade_lock:
            upgrade = self._upgrade
            if upgrade is not None and not upgrade.done:
                return upgrade

            # The pass reads only memories written after the last finished
            # pass's mark, and leaves its own (store/waiting_sql.py).
            check = self.store.checked_vectors(model)
            newest: list[tuple[int, str]] = []

            def embed(after_seq: int, limit: int) -> tuple[VectorBatch, int] | None:
                after = max(after_seq, check.after_seq)
                waiting = self.store.pending_vectors(model, after_seq=after, limit=limit)
                if not waiting.rows:
                    newest[:] = [] if waiting.newest is None else [waiting.newest]
                    return None
                rows = waiting.rows
                texts = {h: embed_text(title, content) for _, h, title, content in rows}
                batch = embedded_batch(embedder, model, list(texts), texts, cut=self.parts)
                return batch, rows[-1][0]

            def finished() -> None:
                if newest:
                    # The vectors are stored; a mark not left only has the
                    # next pass read more.
                    with contextlib.suppress(StorageError):
                        self.store.mark_checked_vectors(model, check, newest[0])

            self._upgrade = VectorUpgrade(
                embed,
                self.store.add_vectors,
                last_write=lambda: self._last_write,
                finished=finished,
                name="mindpalace-vectors",
            ).start()
            return self._upgrade

    def written(self, vectors: VectorBatch | None) -> None:
        """After a write of ``vectors``: start the upgrade its texts wait for
        (it begins once this process's writes pause)."""
        self._last_write = time.monotonic()
        if vectors is not None and vectors.pending:
            self._start_upgrade()

    def _start_upgrade(self) -> None:
        """Have the texts that wait embedded: by ``on_pending`` where set
        (a one-shot command leaves it to a job), else by a thread here."""
        if self.on_pending is not None:
            self.on_pending()
        else:
            self.upgrade_vectors()

    def stop_upgrade(self) -> None:
        """End a background upgrade after its current step (what it embedded
        is stored; the rest waits for the next one)."""
        upgrade = self._upgrade
        if upgrade is not None:
            upgrade.stop(wait=STOP_WAIT)

    @property
    def upgrading(self) -> VectorUpgrade | None:
        """The latest background embedding of waiting texts, if any ran."""
        return self._upgrade

    def _usable_key(self) -> str | None:
        """The vectors' key of the embedder, when it may be used; else None."""
        if self.embedder is None or self._config_state() is not None:
            return None
        return vector_key(self.embedder.config)

    def pending_vectors(self) -> int:
        """How many texts of memories wait for their vector (0 without a
        usable embedder: nothing would embed them)."""
        model = self._usable_key()
        return 0 if model is None else self.store.count_pending_vectors(model)

    def waiting(self, texts: Sequence[str]) -> int:
        """How many of ``texts`` have no vector yet (0 without a usable embedder)."""
        model = self._usable_key()
        if model is None:
            return 0
        chars = self.store.hash_chars()
        return len(self.store.missing_vectors(model, (text_hash(t, chars) for t in texts)))

    def wait_for_vectors(self, timeout: float | None = None) -> int:
        """Embed what waits, in the background, and block until it is
        stored or ``timeout`` seconds passed; how many texts still wait.

        Raises:
            EmbeddingError: the upgrade failed (the texts wait on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = self.pending_vectors()
            if left == 0:
                return 0
            upgrade = self.upgrade_vectors()
            if upgrade is None:
                return left
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not upgrade.wait(remaining):
                return self.pending_vectors()
            if upgrade.error is not None:
                raise EmbeddingError(f"embedding the waiting memories failed: {upgrade.error}")
            if upgrade.embedded == 0:
                return self.pending_vectors()  # nothing it could embed: no loop


def embedded_batch(
    embedder: Embedder,
    model: str,
    order: Sequence[str],
    texts: Mapping[str, str],
    *,
    parts_only: Sequence[str] = (),
    cut: bool = True,
) -> VectorBatch:
    """The vectors of the texts (``texts``, by hash) named in ``order`` and
    of their parts, and the parts alone of those in ``parts_only`` (no
    parts unless ``cut``).

    The parts are a run of the model of their own: a model whose
    activations are quantised per batch (the bundled MiniLM) gives a whole
    text the same vector as without them."""
    vectors = _to_blobs(order, embedder.embed([texts[h] for h in order])) if order else {}
    splits = {h: parts.split(texts[h]) for h in (*order, *parts_only)} if cut else {}
    pieces = [p for split in splits.values() for p in split]
    kept: dict[str, bytes] = {}
    if pieces:
        matrix = embedder.embed(pieces)
        at = 0
        for key, split in splits.items():
            if split:
                kept[key] = parts.pack(matrix[at : at + len(split)])
                at += len(split)
    return VectorBatch(model, vectors, parts=kept)


def _to_blobs(hashes: Iterable[str], matrix: npt.NDArray[np.float32]) -> dict[str, bytes]:
    return dict(zip(hashes, vector_bytes.to_blobs(matrix), strict=True))
