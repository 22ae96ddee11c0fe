"""Keeping a palace's vectors: what text is embedded, when, and by which model.

``SemanticIndex`` owns the embedder of a palace, checks it against the
palace's recorded ``embedding_config``, embeds new memories (only text never
embedded before: ``vector_writes.py``, the writing half), keeps the warm
``DenseIndex`` current, and re-indexes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress

import numpy as np
import numpy.typing as npt

from mindpalace.config import (
    BULK_EMBEDS,
    DEFAULT_ANN_ROWS,
    DEFAULT_DATABASE_ROWS,
    ENV_BULK_EMBED,
    ENV_INDEX,
    INDEXES,
)
from mindpalace.embed.base import Embedder
from mindpalace.embed.texts import Progress, embed_text, text_hash, vector_key
from mindpalace.errors import ConfigError, EmbeddingError, StorageError
from mindpalace.models import Scope
from mindpalace.retrieval import ann, heap, parts, warm_cache, warm_table, warm_vectors
from mindpalace.retrieval.compact import CompactVectors
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.mentions import MentionIndex
from mindpalace.retrieval.upgrading import VectorUpgrade
from mindpalace.retrieval.vector_writes import (
    BULK_TEXTS,
    SemanticStore,
    Usable,
    VectorWrites,
    embedded_batch,
)
from mindpalace.retrieval.warming import WarmBuild
from mindpalace.store.base import VectorTable

__all__ = ["BULK_TEXTS", "SemanticIndex", "SemanticStore", "Usable"]

_QUERY_VECTORS = 512  # query vectors kept, most recently asked first
#: rows written during a background build of the warm indexes that the next
#: recall indexes itself when it adopts them; past this, another background
#: round indexes them
ADOPT_ROWS = 2_000
#: in database mode, how often (seconds) a process that recalls repeatedly
#: looks whether another process wrote since it last looked (a write whose
#: texts may wait for their vectors)
PENDING_LOOK = 30.0


class SemanticIndex(VectorWrites):
    """The embedding side of one palace.

    Args:
        store: the palace's store.
        embedder: the model; ``None`` means keyword search only.
        ann_rows: from this many embedded memories on, the warm index keeps
            an HNSW graph (built in the background) and dense search
            proposes candidates from it; 0 turns it off.
        index: where recall finds its rows: ``process`` (the warm indexes
            here), ``database`` (the store, which must be able to:
            ``Store.dense_rows``), ``auto`` (the database where the store
            can and the palace holds ``database_rows`` memories or more,
            decided on first use).
        bulk_embed: ``background``: a bulk write with a slow model stores
            its memories at once and their vectors come from a background
            upgrade; ``inline``: every write embeds before it returns.
        parts: embed the parts of long texts as well (``parts.py``).

    Raises:
        ConfigError: an unknown ``index`` or ``bulk_embed``, or
            ``database`` on a store that cannot search its vectors itself.
    """

    def __init__(
        self,
        store: SemanticStore,
        embedder: Embedder | None,
        *,
        ann_rows: int = DEFAULT_ANN_ROWS,
        index: str = "auto",
        database_rows: int = DEFAULT_DATABASE_ROWS,
        bulk_embed: str = "background",
        parts: bool = True,
    ) -> None:
        if bulk_embed not in BULK_EMBEDS:
            raise ConfigError(
                f"invalid {ENV_BULK_EMBED} {bulk_embed!r}",
                setting=ENV_BULK_EMBED,
                valid=BULK_EMBEDS,
            )
        if index not in INDEXES:
            raise ConfigError(f"invalid {ENV_INDEX} {index!r}", setting=ENV_INDEX, valid=INDEXES)
        if index == "database" and not store.dense_in_store:
            raise ConfigError(
                f"{ENV_INDEX}=database needs a PostgreSQL palace with pgvector;"
                f" {store.location} keeps its vectors for this process to search",
                setting=ENV_INDEX,
                valid=("auto", "process"),
            )
        self.store = store
        self.embedder = embedder
        self.ann_rows = ann_rows
        self.index = index
        self.database_rows = database_rows
        self.bulk_embed = bulk_embed
        self.parts = parts
        self._upgrade: VectorUpgrade | None = None  # the background embedding of waiting texts
        self._upgrade_lock = threading.Lock()
        #: what runs the upgrade a deferred bulk write needs, when not a thread
        #: of this process (the command line starts a job that outlives it)
        self.on_pending: Callable[[], None] | None = None
        self._last_write = 0.0  # time.monotonic() of this process's last write
        #: the generation at which this process last looked for waiting texts
        self._upgrade_looked = -1
        self._looked_at = -PENDING_LOOK  # time.monotonic() of the last look
        self._in_database: bool | None = None if index == "auto" else index == "database"
        self._ann: ann.AnnIndex | None = None
        self._dense: DenseIndex | None = None
        self._key: str | None = None
        self._lock = threading.Lock()
        self._uses = 0  # recalls (dense(), or database-mode looks); warm from the 2nd
        self._warming: WarmBuild | None = None  # the background build of the warm indexes
        self._saved_graph: ann.AnnIndex | None = None  # the graph an adopted build found on disk
        # (vectors' key, epoch) whose vectors were last mapped from disk, or tried
        self._mapped: tuple[str, int] | None = None
        # (vectors' key, epoch) whose rows' file was last looked at (``warm_table``)
        self._rows_saved: tuple[str, int] | None = None
        #: the store's full-text searches this process's writes asked for
        #: (``keywords_for_writes``), all batches together
        self._write_searches = 0
        #: called in the thread that builds the warm indexes once it has read
        #: the palace, before it indexes it (tests hold a build open with it)
        self.warm_hook: Callable[[], None] | None = None
        # Recent query vectors: an agent asks the same text of recall, context
        # and skills in one turn, and a query's vector costs a forward pass.
        self._queries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._queries_lock = threading.Lock()
        self.failure: str | None = None  # why semantic search is unavailable, if it is
        self.broken: str | None = None  # why the configured embedder could not be built

    # -- reading -------------------------------------------------------------------

    def query_vector(self, query: str) -> npt.NDArray[np.float32] | None:
        """The query's vector, or None (and ``failure`` set) when unavailable."""
        usable = self.usable() if query.strip() else None
        return None if usable is None else self.embed_query(usable, query)

    def embed_query(self, usable: Usable, query: str) -> npt.NDArray[np.float32] | None:
        """``query_vector`` with the config already checked (``usable``);
        None (and ``failure`` set) when the model fails or the query is blank."""
        if not query.strip():
            return None
        with self._queries_lock:
            vector = self._queries.get(query)
            if vector is not None:
                self._queries.move_to_end(query)
                return vector
        try:
            vector = usable.embedder.embed_query(query)
        except EmbeddingError as exc:
            self.failure = str(exc)
            return None
        vector.setflags(write=False)  # shared by every caller of this text
        with self._queries_lock:
            self._queries[query] = vector
            while len(self._queries) > _QUERY_VECTORS:
                self._queries.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Drop the remembered query vectors (benchmarks time the model)."""
        with self._queries_lock:
            self._queries.clear()

    def in_database(self) -> str | None:
        """The vectors' key when recall runs in the database (its rows are
        found by the store, no warm index is kept here); None when it runs
        in this process, or semantic search is unavailable."""
        usable = self.usable()
        return None if usable is None else self.database_key(usable)

    def database_key(self, usable: Usable) -> str | None:
        """``in_database`` with the config already checked (``usable``)."""
        if self._in_database is None:  # auto: decided once, on first use
            self._in_database = (
                self.store.dense_in_store and self.store.size() >= self.database_rows
            )
        if not self._in_database:
            return None
        self._look_for_pending()
        return usable.key

    def _look_for_pending(self) -> None:
        """Database mode keeps no warm index to tell that rows wait for
        their vectors (another process's bulk write, or one that closed
        before its upgrade ended). A process that recalls repeatedly and
        runs its own upgrade (``on_pending`` unset) looks, at most every
        ``PENDING_LOOK`` seconds, whether anything was written since it
        last looked, and if so has the upgrade embed what waits: one read
        of the change counters on the recall path, the search for waiting
        texts in the upgrade's thread."""
        self._uses += 1  # in database mode dense() does not count recalls
        now = time.monotonic()
        if self.on_pending is not None or self._uses < 2 or now - self._looked_at < PENDING_LOOK:
            return
        self._looked_at = now
        generation = self.store.generation()
        if generation != self._upgrade_looked:
            self._upgrade_looked = generation
            self.upgrade_vectors()

    def dense(self) -> DenseIndex | None:
        """The warm dense index: rows written since it was built are appended;
        it is rebuilt only when existing rows changed (archive, delete, a
        re-embedding), which the store's epoch tells.

        From the second call (the first, where ``store.warm_at_once``) it
        also carries the warm keyword and mention indexes; a process that
        recalls once does not pay for building them. On a store that does
        not warm at once they are built in a background thread (as the HNSW
        graph is): until they are ready, recall asks the store, which
        answers the same, and no caller waits for them.
        """
        usable = self.usable()
        return None if usable is None else self.dense_index(usable)

    def current_keywords(self) -> DenseIndex | None:
        """The warm index, brought up to the palace's latest writes, when
        this process holds one with its keyword index and no write since
        asks for a reload; else None (the caller asks the store, which
        answers the same). Never starts a load or a build: a process that
        only writes pays for neither."""
        with self._lock:
            index, key = self._dense, self._key
        if index is None or index.keyword is None or self._in_database:
            return None
        usable = self.usable()
        if usable is None or usable.key != key:
            return None
        if self.store.change_counters().epoch != index.epoch:
            return None
        return self.dense_index(usable)

    def keywords_for_writes(
        self, searches: int, *, load_from: int, build_from: int, min_rows: int
    ) -> None:
        """Bring the warm keyword index into this process for a write that
        would otherwise ask the store's full-text search ``searches``
        times, in a palace of at least ``min_rows`` memories (below, the
        store's search is cheap). Counted over every write of this process:
        once they reach ``load_from``, the index saved beside the palace is
        loaded; once they reach ``build_from``, one is built when none is
        saved. Nothing when this process holds a current one. A failed load
        or build leaves the store's search to answer.

        Counted over writes, not per batch: a bulk import in batches of a
        few hundred memories, a few dozen of which may restate one, never
        reached a batch's threshold, and each of those memories searched
        the store (85% of building a palace of a million memories, and
        growing with it)."""
        with self._lock:
            self._write_searches += searches
            asked = self._write_searches
        if self._in_database:
            return  # no warm index in database mode: the store's search looks
        if asked < load_from or self.current_keywords() is not None:
            return
        if self.store.size() < min_rows:
            return
        folder = warm_cache.folder_of(self.store)
        saved = folder is not None and (folder / warm_cache.TEXT).is_file()
        if saved or asked >= build_from:
            with suppress(StorageError):
                self.wait_for_warm()

    def dense_index(self, usable: Usable) -> DenseIndex:
        """``dense`` with the config already checked (``usable``)."""
        key = usable.key
        if self._in_database:
            # No warm copy is kept in database mode: a one-off index of the
            # vectors for the caller (consolidation's near-duplicates).
            generation, epoch, vectors, _ = self.store.change_counters()
            return DenseIndex(
                self.store.load_vectors(key),
                generation=generation,
                epoch=epoch,
                model=key,
                vectors=vectors,
            )
        replaced = False  # whether large arrays were dropped (``heap.release``)
        with self._lock:
            self._uses += 1
            at_once = self.store.warm_at_once
            warm = self._uses >= 2 or at_once
            generation, epoch, vectors, flags = self.store.change_counters()
            index = self._dense
            unchanged = index is not None and index.epoch == epoch and self._key == key
            if unchanged and index is not None and index.flags != flags:
                # rows archived, restored or superseded: their flags alone
                index = index.reflagged(self.store.flag_changes(index.flags), flags=flags)
            if unchanged and index is not None and index.vectors != vectors:
                # an upgrade stored vectors for rows this index holds
                index = self._with_new_vectors(index, generation, vectors)
            if index is None or index.epoch != epoch or self._key != key:
                refresh = index is not None and self._ann is not None and self._key == key
                table, compact = self._load(
                    key, epoch, vectors, texts=warm and at_once, refresh=refresh
                )
                mentions = (
                    MentionIndex.build(self.store.load_mentions(), table.seq)
                    if warm and at_once
                    else None
                )
                if self._key != key:
                    self._ann = None
                elif index is not None and self._ann is not None:
                    self._ann.refresh(index.float_table(), table)
                index = DenseIndex(
                    table,
                    generation=generation,
                    epoch=epoch,
                    flags=flags,
                    mentions=mentions,
                    ann=self._ann,
                    model=key,
                    vectors=vectors,
                    compact=compact,
                )
                replaced = True
            elif index.generation != generation:
                more = self.store.load_vectors(
                    key, after_seq=index.last_seq, texts=index.keyword is not None
                )
                pairs = (
                    self.store.load_mentions(after_seq=index.last_seq)
                    if index.mentions is not None
                    else None
                )
                index = index.extended(more, generation=generation, mentions=pairs)
            if warm and (index.keyword is None or index.mentions is None):
                if at_once:
                    index = index.warmed(
                        self.store.load_texts(upto_seq=index.last_seq), self.store.load_mentions()
                    )
                else:
                    index = self._adopt_warm(index)
                replaced = replaced or index.keyword is not None
            # Like the warm indexes, the graph is not for a process that
            # recalls once; its build waits for theirs (two cores shared by
            # two builds and the recalls leave each slow).
            if warm and index.compact is not None:
                index, mapped = self._kept_beside(index, key)
                replaced = replaced or mapped
            building = self._warming is not None and self._warming.error is None
            if warm and (index.keyword is not None or not building):
                index = self._with_graph(index)
            self._dense, self._key = index, key
        if replaced:
            heap.release()
        if warm and generation != self._upgrade_looked and not bool(index.embedded.all()):
            # Memories wait for their vectors (a bulk write's, perhaps of
            # another process): a process that recalls repeatedly embeds them.
            self._upgrade_looked = generation
            self._start_upgrade()
        return index

    def _kept_beside(self, index: DenseIndex, key: str) -> tuple[DenseIndex, bool]:
        """Once per load of a process that recalls again: the vectors from
        the shared file beside the palace (written if none matches), not
        this process's own copy; and the rows' columns saved beside it where
        the file there lags, so the next process reads just the later ones.
        Returns the index and whether its vectors were replaced. Called
        under ``_lock``."""
        mapped = False
        if self._mapped != (key, index.epoch):
            self._mapped = (key, index.epoch)
            index = warm_vectors.mapped(self.store, index)
            mapped = True
        if self._rows_saved != (key, index.epoch):
            self._rows_saved = (key, index.epoch)
            warm_table.save_when_stale(self.store, index)
        return index, mapped

    def _load(
        self, key: str, epoch: int, vectors: int, *, texts: bool, refresh: bool
    ) -> tuple[VectorTable, CompactVectors | None]:
        """The palace's rows for a new index, and their vectors where the
        file beside the palace matches it (mapped; only rows written since
        it was saved are read whole): not when the graph is ``refresh``ed
        from every row's new vector. Called under ``_lock``."""
        found = (
            None
            if refresh
            else warm_vectors.first_load(self.store, key, epoch=epoch, vectors=vectors, texts=texts)
        )
        if found is None:
            return self.store.load_vectors(key, texts=texts), None
        self._mapped = (key, epoch)
        return found

    def _with_new_vectors(self, index: DenseIndex, generation: int, vectors: int) -> DenseIndex:
        """``index`` reloaded after vectors were added for its rows (an
        upgrade's): the vectors from the store, the keyword and mention
        indexes kept (the rows are the same) and extended by rows written
        since. Called under ``_lock``."""
        table = self.store.load_vectors(index.model)
        self._mapped = None  # the vectors on disk are of the rows before
        if self._ann is not None:
            self._ann.refresh(index.float_table(), table)
        fresh = DenseIndex(
            table,
            generation=generation,
            epoch=index.epoch,
            flags=index.flags,
            ann=self._ann,
            model=index.model,
            vectors=vectors,
        )
        fresh.store_ann = index.store_ann
        start = len(index)
        if (
            index.keyword is None
            or index.mentions is None
            or start > len(fresh)
            or not np.array_equal(index.table.seq, table.seq[:start])
        ):
            return fresh
        texts = self.store.load_texts(after_seq=index.last_seq, upto_seq=fresh.last_seq)
        pairs = self.store.load_mentions(after_seq=index.last_seq)
        return fresh.adopted(index, texts, pairs)

    def _adopt_warm(self, index: DenseIndex) -> DenseIndex:
        """``index`` with the warm keyword and mention indexes when a
        background build of them has finished (the rows written since its
        snapshot added); else ``index`` as it is, a build started if none
        runs for it. Called under ``_lock``."""
        build = self._warming
        if (
            build is None
            or build.snapshot.epoch != index.epoch
            or build.snapshot.model != index.model
        ):
            self._warming = WarmBuild(self.store, index, hook=self.warm_hook).start()
            return index
        if not build.done or build.result is None:
            return index  # building; or failed (``warm_error``), recall stays cold
        result = build.result
        if len(index) - len(result) > ADOPT_ROWS:
            # Many rows were written during the build: index them in the
            # background too, from where it stopped.
            self._warming = WarmBuild(self.store, index, base=result, hook=self.warm_hook).start()
            return index
        self._warming = None
        self._saved_graph = build.graph
        texts = self.store.load_texts(after_seq=result.last_seq, upto_seq=index.last_seq)
        pairs = self.store.load_mentions(after_seq=result.last_seq)
        return index.adopted(result, texts, pairs)

    @property
    def warming(self) -> WarmBuild | None:
        """The background build of the warm indexes not yet adopted (under
        way, finished, or failed), if any."""
        return self._warming

    @property
    def warm_error(self) -> str | None:
        """Why the last background build of the warm indexes failed, if it did."""
        build = self._warming
        return build.error if build is not None else None

    def wait_for_warm(self) -> DenseIndex | None:
        """Block until the warm keyword and mention indexes are built and in
        the warm index, and return it (benchmarks, tests, a daemon's start);
        None when there is no warm index (no embedder, database mode)."""
        with self._lock:
            self._uses = max(self._uses, 1)  # the next call warms
        while True:
            index = self.dense()
            if index is None or self._in_database:
                return None  # database mode keeps no warm index
            if index.keyword is not None and index.mentions is not None:
                return index
            build = self._warming
            if build is None:
                continue
            build.wait()
            if build.error is not None:
                raise StorageError(f"the warm indexes could not be built: {build.error}")

    def _with_graph(self, index: DenseIndex) -> DenseIndex:
        """``index`` with the palace's HNSW graph once it is large enough;
        the graph's first build runs in the background (exact search serves
        meanwhile). A graph saved on disk serves at once instead (the rows
        written since it was saved are added)."""
        saved, self._saved_graph = self._saved_graph, None  # used now, or never
        if index.ann is not None or index.store_ann or not self.ann_rows:
            return index
        if int(np.count_nonzero(index.embedded)) < self.ann_rows:
            return index
        if self.store.ann_in_store:
            index.store_ann = True  # the store's own index proposes candidates
            return index
        if not ann.available():
            return index
        self._ann = saved if saved is not None else ann.AnnIndex(index.dimensions)
        self._ann.sync(index.table, vectors=index.vectors_of)
        warm_cache.save_graph_when_built(
            self.store, self._ann, index, loaded=len(saved) if saved is not None else 0
        )
        index.ann = self._ann
        return index

    def wait_for_graph(self) -> bool:
        """Block until the HNSW graph covers the warm index (benchmarks and
        tests); False when there is no graph."""
        index = self.wait_for_warm()  # the warm call also starts the graph
        graph = self._ann
        if graph is None or index is None:
            return False
        graph.wait()
        graph.sync(index.table, wait=True, vectors=index.vectors_of)
        return True

    # -- maintenance -----------------------------------------------------------------

    def reindex(self, *, batch: int = 256, progress: Progress | None = None) -> int:
        """Embed every memory with the current embedder, then adopt its config
        and drop other models' vectors. Long texts get the vectors of their
        parts too (``parts.py``), also those embedded before parts were
        kept; vectors kept in float32 (an older form) are rewritten in half
        precision. Returns how many whole texts were embedded.

        Raises:
            EmbeddingError: when no embedder is configured or it fails.
        """
        if self.embedder is None:
            raise EmbeddingError("no embedding model is configured")
        model = vector_key(self.embedder.config)
        memories = list(self.store.iter_memories(Scope.management()))
        embedded = 0
        for start in range(0, len(memories), batch):
            chunk = memories[start : start + batch]
            texts = {m.id: embed_text(m.title, m.content) for m in chunk}
            chars = self.store.hash_chars()
            hashes = {memory_id: text_hash(t, chars) for memory_id, t in texts.items()}
            missing = sorted(self.store.missing_vectors(model, hashes.values()))
            by_hash = {hashes[i]: texts[i] for i in texts}
            # Texts embedded before parts were kept get their parts now.
            embedding = set(missing)
            whole = [
                h for h in by_hash if self.parts and h not in embedding and parts.split(by_hash[h])
            ]
            kept = self.store.part_vectors(model, whole) if whole else {}
            lacking = [h for h in whole if h not in kept]
            vectors = embedded_batch(
                self.embedder, model, missing, by_hash, parts_only=lacking, cut=self.parts
            )
            self.store.assign_vectors(hashes, vectors)
            embedded += len(missing)
            if progress is not None:
                progress(min(start + batch, len(memories)), len(memories))
        # Vectors an older mindpalace kept in float32, in half the space.
        self.store.halve_vectors(model)
        self.store.set_embedding_config(self.embedder.config, drop_vectors_except=model)
        self._dense = None
        self._mapped = None
        self._ann = None
        self._warming = None
        self._saved_graph = None
        return embedded
