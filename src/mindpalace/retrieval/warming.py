"""Building a palace's warm keyword and mention indexes in the background.

A process's second recall asks for the warm indexes (``SemanticIndex.dense``);
at 100,000 long chat turns they take tens of seconds to build, which no
caller should wait for. A ``WarmBuild`` builds them over a snapshot of the
dense index (its rows up to one write sequence) while recall goes on
through the store's own text search and mention queries, which answer the
same (``tests/retrieval/test_warm_paths.py``). The caller then *adopts* the
result: rows written after the snapshot are added from the store, so no
write is lost in between.

A large SQLite palace is indexed by a child Python process reading the same
file: tokenising a hundred thousand texts holds the interpreter, and a
thread doing it would take turns with the recalls it is meant to spare
(and get half a core). Small palaces, in-memory ones and follow-up rounds
are indexed in a thread.

A large SQLite palace's indexes are also kept on disk beside it
(``warm_cache.py``): a build first looks there, and uses what it finds for
the rows it covers (rows written since are indexed on top); after a build,
the same background thread saves the result for the next process.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.embed import word_table
from mindpalace.retrieval import answered, warm_cache
from mindpalace.retrieval.ann import AnnIndex
from mindpalace.retrieval.dense import DenseIndex, scope_keys, text_columns
from mindpalace.retrieval.keyword import KeywordIndex
from mindpalace.retrieval.mentions import MentionIndex
from mindpalace.store.roles import GraphRows, Handle, TextIndex
from mindpalace.store.sqlite import SQLiteStore

__all__ = ["CHUNK_ROWS", "PROCESS_ROWS", "WarmBuild", "WarmReads"]

#: rows whose texts are read from the store at a time: each read holds the
#: store's connection, and a recall running beside the build reads it too
CHUNK_ROWS = 2_000
#: from this many rows a SQLite palace is indexed in a child process
PROCESS_ROWS = 20_000

Texts = list[tuple[int, str | None, str, str | None, str]]

# Children building now: ended at interpreter exit, so that a process that
# leaves mid-build (a one-shot command) leaves no work running behind it.
_CHILDREN: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _stop_children() -> None:
    for child in list(_CHILDREN):
        child.kill()


class WarmReads(Handle, TextIndex, GraphRows, Protocol):
    """What a warm build reads: the texts (text index) and mentions (graph)
    of the rows it indexes, and where the palace is (its saved indexes
    beside it, a child process opening it)."""


class WarmBuild:
    """One background build of the keyword and mention indexes of
    ``snapshot``'s rows.

    Args:
        store: the palace's store (read from the builder).
        snapshot: the dense index to warm; its rows, vectors and epoch are
            what the result holds.
        base: an earlier build's result (an index of ``snapshot``'s first
            rows, same epoch): only the rows after it are read and indexed.
        hook: called in the builder thread once the palace is read (and,
            in a child process, indexed), before the result is published
            (tests hold a build open with it).
    """

    def __init__(
        self,
        store: WarmReads,
        snapshot: DenseIndex,
        *,
        base: DenseIndex | None = None,
        hook: Callable[[], None] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.base = base
        #: the warm index of ``snapshot``'s rows, once built
        self.result: DenseIndex | None = None
        #: why the build failed, if it did
        self.error: str | None = None
        #: whether a child process built it (else this process's thread)
        self.in_process = False
        #: rows whose indexes were loaded from disk rather than built
        self.from_disk = 0
        #: the palace's HNSW graph as saved on disk, when it matched
        self.graph: AnnIndex | None = None
        #: whether this build saved its result to disk
        self.saved = False
        self._saving = threading.Event()
        self._store = store
        self._hook = hook
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mindpalace-warm", daemon=True)

    def start(self) -> WarmBuild:
        """Start building; returns this build."""
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """Whether the build has finished (``result`` or ``error`` is set)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build has finished; False on ``timeout``."""
        return self._done.wait(timeout)

    def wait_saved(self, timeout: float | None = None) -> bool:
        """Block until the build has finished and its result is saved (or
        found not worth saving); False on ``timeout``."""
        return self._saving.wait(timeout)

    def _run(self) -> None:
        try:
            self.result = self._build()
        except Exception as exc:  # a closed store, a failed read: recall stays cold
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()
        if answered.marks_for(self.snapshot.model) is not None:
            # The word table answer support reads: loaded here, off the
            # first recall's path (once per process).
            word_table().vectors(["warm"])
        try:
            result = self.result
            if (
                result is not None
                and self.base is None
                and len(result) >= warm_cache.SAVE_ROWS
                and len(result) - self.from_disk >= warm_cache.RESAVE_ROWS
            ):
                self.saved = warm_cache.save_text(self._store, result)
        except Exception:  # noqa: S110 - a cache not saved is rebuilt next time
            pass
        finally:
            self._saving.set()

    def _build(self) -> DenseIndex:
        snapshot, base, store = self.snapshot, self.base, self._store
        if base is None:
            self.graph = warm_cache.load_graph(store, snapshot)
            saved = warm_cache.load_text(store, snapshot)
            if saved is not None and len(snapshot) - saved.rows < PROCESS_ROWS:
                return self._on_disk(saved)
        path = store.location if isinstance(store, SQLiteStore) else ":memory:"
        if base is None and len(snapshot) >= PROCESS_ROWS and path != ":memory:":
            try:
                keyword, mentions = _in_child(path, snapshot)
            except (OSError, RuntimeError, pickle.UnpicklingError, EOFError):
                pass  # no usable interpreter to start: index here instead
            else:
                self.in_process = True
                if self._hook is not None:
                    self._hook()
                return snapshot.with_indexes(keyword, mentions)
        after = base.last_seq if base is not None else 0
        texts, pairs = _read(store, snapshot.table.seq, after)
        if self._hook is not None:
            self._hook()
        if base is not None:
            return snapshot.adopted(base, texts, pairs)
        return snapshot.warmed(texts, pairs)

    def _on_disk(self, saved: warm_cache.Saved) -> DenseIndex:
        """The snapshot's indexes from those saved for its first rows, the
        rows written since added (as ``DenseIndex.adopted`` adds them)."""
        snapshot = self.snapshot
        seqs = snapshot.table.seq
        self.from_disk = saved.rows
        texts, pairs = _read(self._store, seqs, int(seqs[saved.rows - 1]))
        if self._hook is not None:
            self._hook()
        later = seqs[saved.rows :]
        keyword = saved.keyword.extended(
            text_columns(later, texts), scope_keys(snapshot.table, saved.rows)
        )
        return snapshot.with_indexes(keyword, MentionIndex.build(pairs, seqs, base=saved.mentions))


def _read(
    store: WarmReads, seqs: npt.NDArray[np.int64], after: int
) -> tuple[Texts, list[tuple[str, int]]]:
    """The texts and mentions of the rows of ``seqs`` written after
    ``after``, ``CHUNK_ROWS`` at a time."""
    first = int(np.searchsorted(seqs, after, side="right"))
    texts: Texts = []
    mentions: list[tuple[str, int]] = []
    for start in range(first, len(seqs), CHUNK_ROWS):
        upto = int(seqs[min(start + CHUNK_ROWS, len(seqs)) - 1])
        texts.extend(store.load_texts(after_seq=after, upto_seq=upto))
        mentions.extend(store.load_mentions(after_seq=after, upto_seq=upto))
        after = upto
    return texts, mentions


def _in_child(path: str, snapshot: DenseIndex) -> tuple[KeywordIndex, MentionIndex]:
    """The keyword and mention indexes of ``snapshot``'s rows, built by a
    child interpreter (``python -m mindpalace.retrieval.warming``) that
    opens the palace file itself.

    Raises:
        RuntimeError: the child failed (its last line of errors says why).
    """
    package = str(Path(__file__).resolve().parents[2])  # the folder holding mindpalace/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    request = (path, snapshot.table.seq, scope_keys(snapshot.table))
    child = subprocess.Popen(
        [sys.executable, "-m", "mindpalace.retrieval.warming"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    _CHILDREN.add(child)
    try:
        out, err = child.communicate(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        _CHILDREN.discard(child)
    if child.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {child.returncode}")
    # The payload comes from the child this process just started.
    keyword, mentions = pickle.loads(out)  # noqa: S301
    if not isinstance(keyword, KeywordIndex) or not isinstance(mentions, MentionIndex):
        raise RuntimeError("the child process answered something else")
    return keyword, mentions


def _child(request: Any) -> tuple[KeywordIndex, MentionIndex]:
    path, seqs, keys = request
    store = SQLiteStore(path)
    try:
        texts, pairs = _read(store, seqs, 0)
    finally:
        store.close()
    keyword = KeywordIndex(text_columns(seqs, texts), scopes=keys)
    return keyword, MentionIndex.build(pairs, seqs)


if __name__ == "__main__":
    # The request comes from the parent process that started this one.
    built = _child(pickle.load(sys.stdin.buffer))  # noqa: S301
    sys.stdout.buffer.write(pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL))
