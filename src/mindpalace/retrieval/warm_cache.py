"""A large SQLite palace's warm indexes kept on disk beside it.

Building the warm keyword and mention indexes (``warming.py``) and the HNSW
graph (``ann.py``) of a 100,000-memory palace takes tens of seconds, which
every new process would otherwise spend again, recalling slowly meanwhile.
After a build, a background thread saves what it built in a folder next to
the palace file, ``<palace file>-warm/``:

- ``text.bin``: the keyword postings and the entity mentions;
- ``graph.bin``: the HNSW graph in faiss's own format, and its labels;
- ``table.bin``: the rows' columns that scope, filters and ranking read
  (``warm_table.py``);

all three in the layout of ``warm_arrays.py``. The next process opening the
palace loads them (well under a second) in place of the build. They are
memory-mapped, not read: their pages are the file cache, shared by every
process of the host that opens the palace, where each process held its own
copy before (at 100,000 memories, the postings were a quarter of a worker's
memory and the graph a fifth; faiss reads the mapped graph in place,
``ann.AnnIndex.restored``). What a load would compute from
them (each posting's scope partition) is in the file too, and counts are
kept in the narrowest float that holds them exactly, widened per query.

Each file covers a prefix of the palace's rows and says which: the vectors'
model key, the palace's epoch (bumped by every write that changes existing
rows other than their flags: a delete, a re-embedding; archiving, restoring
and supersession change flags, which the files do not hold, and a warm
index reads them from the store), the number of rows, and a
fingerprint of them (their write sequences, ids, which have a vector and a
sample of the vectors). A file is used only when all of these match the
palace as it is now; rows written after it was saved are then indexed on top
of it, as rows written during a build are. Anything else (a stale,
truncated, corrupt or foreign file, another model's, a file not owned by
this user or writable by others) is ignored, and the indexes are built as if
there were none and saved again.

The files hold numbers and strings only: plain numeric arrays (numpy's
read with ``allow_pickle=False``), JSON, and faiss's binary graph format
(read with faiss's own checks), so no code runs from them; every array's
checksum is checked when it is read or mapped. They are written under a
temporary name, synced, and renamed into place: a reader sees a whole file
or the previous one, and two processes saving at once leave one whole file.
A folder that cannot be created or written (a read-only place) just means
no cache. In-memory and PostgreSQL palaces keep none. The folder may be
deleted at any time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval import ann, warm_arrays
from mindpalace.retrieval.dense import DenseIndex, scope_keys
from mindpalace.retrieval.keyword import KeywordIndex
from mindpalace.retrieval.mentions import MentionIndex
from mindpalace.store.roles import Handle
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.vector_rows import VectorTable

__all__ = [
    "FILES",
    "FORMAT",
    "OLD_GRAPH",
    "OLD_TEXT",
    "RESAVE_ROWS",
    "SAVE_ROWS",
    "SUFFIX",
    "TABLE",
    "TEXT",
    "VECTORS",
    "Saved",
    "Snapshot",
    "current",
    "discard",
    "file_state",
    "folder_of",
    "load_graph",
    "load_text",
    "matches",
    "meta_of",
    "pack",
    "read_file",
    "save_graph_when_built",
    "save_text",
    "trusted",
    "unpack",
    "write_file",
]

#: the folder's name is the palace file's with this after it
SUFFIX = "-warm"
#: the files' layout; a file of another one is ignored
FORMAT = 1
#: from this many rows, what a build made is saved (smaller palaces build
#: in well under a second)
SAVE_ROWS = 20_000
#: rows a loaded file may lag behind what a process has since indexed
#: before that process saves it again
RESAVE_ROWS = 2_000
#: vector rows sampled into a fingerprint
_SAMPLE_ROWS = 1_024
#: a temporary file older than this is a leftover of a process that died
#: mid-save
_STALE_TEMP_S = 3_600.0

TEXT = "text.bin"
#: where the postings were kept (read into memory) before they were mapped;
#: never read, removed by a save and by ``discard``
OLD_TEXT = "text.npz"
GRAPH = "graph.bin"
#: where the graph was kept (read into memory) before it was mapped; never
#: read, removed by a save and by ``discard``
OLD_GRAPH = "graph.npz"
#: the vectors as int8 codes and floats, memory-mapped (``warm_vectors.py``)
VECTORS = "vectors.bin"
#: the rows' columns recall filters and ranks by (``warm_table.py``)
TABLE = "table.bin"
#: the files of arrays a folder may hold (``warm_arrays.py``'s layout)
FILES = (TEXT, GRAPH, TABLE)

Arrays = Mapping[str, npt.NDArray[Any]]


@dataclass(frozen=True, slots=True)
class Saved:
    """Warm indexes loaded from disk, over the first ``rows`` rows."""

    rows: int
    keyword: KeywordIndex
    mentions: MentionIndex


class Snapshot(Protocol):
    """The rows of a palace a file is checked against: a dense index, or
    the rows loaded without their vectors, which it reads on demand
    (``warm_vectors.first_load``)."""

    @property
    def model(self) -> str: ...

    @property
    def epoch(self) -> int: ...

    @property
    def table(self) -> VectorTable: ...

    def __len__(self) -> int: ...

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]: ...


def folder_of(store: Handle) -> Path | None:
    """Where ``store``'s warm indexes are kept; None where none are (an
    in-memory or PostgreSQL palace)."""
    if not isinstance(store, SQLiteStore):
        return None
    location = store.location
    if location == ":memory:" or location.startswith("file:"):
        return None
    return Path(location + SUFFIX)


def fingerprint(index: Snapshot, rows: int) -> str:
    """A digest naming the first ``rows`` rows of ``index``: their seqs,
    ids, which have a vector, and a sample of the vectors."""
    table = index.table
    digest = hashlib.blake2b(digest_size=20)
    digest.update(np.ascontiguousarray(table.seq[:rows], dtype=np.int64).tobytes())
    digest.update("\0".join(map(str, table.ids[:rows].tolist())).encode("utf-8"))
    embedded = table.embedded[:rows] if table.embedded.shape[0] else np.ones(rows, dtype=bool)
    digest.update(np.ascontiguousarray(embedded).tobytes())
    step = max(1, rows // _SAMPLE_ROWS)
    sample = index.vectors_of(np.arange(0, rows, step, dtype=np.int64))
    digest.update(np.ascontiguousarray(sample, dtype=np.float32).tobytes())
    return digest.hexdigest()


def meta_of(index: DenseIndex, rows: int, kind: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "kind": kind,
        "model": index.model,
        "epoch": index.epoch,
        "rows": rows,
        "last_seq": int(index.table.seq[rows - 1]) if rows else 0,
        "fingerprint": fingerprint(index, rows),
    }


def matches(meta: Mapping[str, Any], kind: str, snapshot: Snapshot) -> int | None:
    """The rows of ``snapshot`` a file of ``meta`` covers, or None when it
    is not a file of ``snapshot``'s palace as it is now."""
    rows = meta.get("rows")
    if (
        meta.get("format") != FORMAT
        or meta.get("kind") != kind
        or meta.get("model") != snapshot.model
        or meta.get("epoch") != snapshot.epoch
        or not isinstance(rows, int)
        or not 0 < rows <= len(snapshot)
        or meta.get("last_seq") != int(snapshot.table.seq[rows - 1])
    ):
        return None
    if meta.get("fingerprint") != fingerprint(snapshot, rows):
        return None
    return rows


# -- strings in arrays -------------------------------------------------------------


def pack(strings: list[str]) -> npt.NDArray[np.uint8] | None:
    """``strings`` as UTF-8 bytes separated by NUL; None if one holds a NUL."""
    if any("\0" in s for s in strings):
        return None
    return np.frombuffer("\0".join(strings).encode("utf-8"), dtype=np.uint8)


def unpack(data: npt.NDArray[Any], count: int) -> list[str]:
    if count == 0:
        return []
    strings = np.asarray(data, dtype=np.uint8).tobytes().decode("utf-8").split("\0")
    if len(strings) != count:
        raise ValueError("the strings are cut differently")
    return strings


# -- reading -------------------------------------------------------------------------


def _own(info: os.stat_result) -> bool:
    """Whether a file or folder belongs to this user and no one else may
    write it."""
    if not hasattr(os, "geteuid"):  # pragma: no cover - not POSIX
        return True
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _own_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real folder (not a link) of this user's that
    no one else may write: what another user planted is neither read nor
    written into (the files hold what the palace's texts say)."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _own(info)


def trusted(folder: Path, handle: IO[bytes]) -> bool:
    """Whether an opened cache file and its folder are this user's alone: a
    file planted by another user is ignored."""
    return _own_folder(folder) and _own(os.fstat(handle.fileno()))


def read_file(folder: Path, name: str) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The metadata and memory-mapped arrays of a cache file; None when it
    is absent, untrusted or unreadable."""
    try:
        with open(folder / name, "rb") as handle:
            if not trusted(folder, handle):
                return None
            meta, arrays = warm_arrays.load(handle)
    except FileNotFoundError:
        return None
    except Exception:  # any damage means no cache
        return None
    return (meta, arrays) if isinstance(meta, dict) else None


def file_state(folder: Path, name: str) -> tuple[str, dict[str, Any]]:
    """What the cache file ``name`` in ``folder`` is, for a health check:
    ``absent``; ``untrusted`` (another user's, or writable by others);
    ``damaged`` (unreadable: truncated, corrupt, not a cache file); or
    ``ok``, with its metadata (whether it matches the palace as it is now
    is the metadata's model and epoch). A file that is not ``ok`` is never
    loaded."""
    try:
        with open(folder / name, "rb") as handle:
            if not trusted(folder, handle):
                return "untrusted", {}
    except FileNotFoundError:
        return "absent", {}
    except OSError:
        return "damaged", {}
    found = read_file(folder, name)
    if found is None or found[0].get("format") != FORMAT:
        return "damaged", {}
    return "ok", found[0]


def load_text(store: Handle, snapshot: DenseIndex) -> Saved | None:
    """The saved keyword and mention indexes of ``snapshot``'s first rows,
    when a file of them matches the palace as it is now; else None."""
    try:
        return _load_text(store, snapshot)
    except Exception:  # whatever a file holds, the build goes on without it
        return None


def _saved(
    store: Handle, snapshot: DenseIndex, name: str, kind: str
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]], int] | None:
    """The metadata and arrays of the file ``name`` beside ``store`` and how
    many of ``snapshot``'s first rows it covers, when its ``kind`` record
    matches the palace as it is; else None."""
    folder = folder_of(store)
    found = read_file(folder, name) if folder is not None else None
    if found is None:
        return None
    meta, arrays = found
    rows = matches(meta, kind, snapshot)
    return None if rows is None else (meta, arrays, rows)


def _load_text(store: Handle, snapshot: DenseIndex) -> Saved | None:
    saved = _saved(store, snapshot, TEXT, "text")
    if saved is None:
        return None
    meta, arrays, rows = saved
    try:
        terms = unpack(arrays.pop("terms"), int(meta["terms"]))
        keys = unpack(arrays.pop("mention_keys"), int(meta["mention_keys"]))
        mentions = MentionIndex.restored(
            keys, arrays.pop("mention_offsets"), arrays.pop("mention_rows"), rows
        )
        keyword = KeywordIndex.restored(terms, arrays, scope_keys(snapshot.table)[:rows])
    except (KeyError, ValueError, TypeError, UnicodeDecodeError):
        return None
    return Saved(rows, keyword, mentions)


def load_graph(store: Handle, snapshot: DenseIndex) -> ann.AnnIndex | None:
    """The saved HNSW graph of ``snapshot``'s first rows, when a file of it
    matches the palace as it is now (it labels exactly their embedded
    rows); else None."""
    try:
        return _load_graph(store, snapshot)
    except Exception:  # whatever a file holds, the build goes on without it
        return None


def _load_graph(store: Handle, snapshot: DenseIndex) -> ann.AnnIndex | None:
    if not ann.available() or len(snapshot) == 0:
        return None
    saved = _saved(store, snapshot, GRAPH, "graph")
    if saved is None:
        return None
    _, arrays, rows = saved
    try:
        seqs = np.asarray(arrays["seqs"], dtype=np.int64)
        table = snapshot.table
        if not np.array_equal(seqs, table.seq[:rows][snapshot.embedded[:rows]]):
            return None
        return ann.AnnIndex.restored(snapshot.dimensions, arrays["graph"], seqs)
    except (KeyError, ValueError, TypeError):
        return None


# -- writing -------------------------------------------------------------------------


def write_file(folder: Path, name: str, dump: Callable[[IO[bytes]], None]) -> bool:
    """Write the file ``name`` in ``folder`` atomically with ``dump``: under
    a temporary name, synced, renamed into place. False when the folder
    cannot be written (nothing is left behind), or the palace file is gone."""
    if not Path(str(folder)[: -len(SUFFIX)]).is_file():
        return False  # removed while a build ran: no folder for nothing
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if not _own_folder(folder):
            return False
        _sweep(folder)
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            dump(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, folder / name)
    except OSError:
        _remove(Path(temp))
        return False
    except BaseException:
        _remove(Path(temp))
        raise
    try:  # the rename itself survives a crash once the folder is synced
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return True
    try:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return True


def _sweep(folder: Path) -> None:
    """Remove temporary files that processes which died mid-save left."""
    now = time.time()
    for leftover in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > _STALE_TEMP_S:
                leftover.unlink()


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def discard(store: Handle) -> int:
    """Remove the saved indexes beside ``store`` (after an erasure: they
    hold the erased texts' words and vectors); the next process builds them
    again. Returns how many files went."""
    folder = folder_of(store)
    if folder is None or not _own_folder(folder):
        return 0
    removed = 0
    names = (TEXT, OLD_TEXT, GRAPH, OLD_GRAPH, VECTORS, TABLE)
    for path in [*(folder / name for name in names), *folder.glob(".*.tmp")]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


def current(store: Handle, index: DenseIndex) -> bool:
    """Whether ``index`` is of the palace as it is now (no erasure, edit or
    delete since it was loaded): a stale one is never saved."""
    try:
        return store.change_counters()[1] == index.epoch
    except Exception:  # a closed store: nothing to save for
        return False


def save_text(store: Handle, index: DenseIndex) -> bool:
    """Save ``index``'s keyword and mention indexes (which must cover its
    rows); False when they were not saved (no folder for this palace, a
    string that cannot be stored, a folder that cannot be written)."""
    folder = folder_of(store)
    keyword, mentions = index.keyword, index.mentions
    if folder is None or keyword is None or mentions is None or len(index) == 0:
        return False
    if not current(store, index):
        return False
    terms, arrays = keyword.state()
    keys, offsets, rows = mentions.state()
    packed_terms, packed_keys = pack(terms), pack(keys)
    if packed_terms is None or packed_keys is None:
        return False
    out: dict[str, npt.NDArray[Any]] = dict(arrays)
    for name, array in arrays.items():
        # Weighted counts are sums of halves: exact in a narrower float (a
        # quarter of the file, and of the pages a query reads), unless a
        # word repeats a thousand times; a query widens what it reads.
        if name.endswith("_tf"):
            out[name] = next(
                (
                    narrow
                    for narrow in (array.astype(np.float16), array.astype(np.float32))
                    if np.array_equal(narrow, array)
                ),
                array,
            )
    out.update(
        terms=packed_terms,
        mention_keys=packed_keys,
        mention_offsets=offsets,
        mention_rows=rows.astype(np.int32 if len(index) < 2**31 else np.int64),
    )
    meta = meta_of(index, len(index), "text")
    meta.update(terms=len(terms), mention_keys=len(keys))

    def dump(handle: IO[bytes]) -> None:
        warm_arrays.dump(handle, meta, out)

    if not write_file(folder, TEXT, dump):
        return False
    _remove(folder / OLD_TEXT)
    return True


def save_graph(store: Handle, graph: ann.AnnIndex, index: DenseIndex) -> bool:
    """Save ``graph`` when it labels exactly the embedded rows of a prefix
    of ``index`` (no row added twice, none of another epoch); False when it
    was not saved."""
    folder = folder_of(store)
    saved = graph.saved() if folder is not None else None
    if folder is None or saved is None:
        return False
    data, seqs = saved
    if not seqs.shape[0] or seqs[-1] > index.last_seq or not current(store, index):
        return False
    rows = int(np.searchsorted(index.table.seq, seqs[-1], side="right"))
    if not np.array_equal(seqs, index.table.seq[:rows][index.embedded[:rows]]):
        return False
    meta = meta_of(index, rows, "graph")

    def dump(handle: IO[bytes]) -> None:
        warm_arrays.dump(handle, meta, {"graph": data, "seqs": seqs})

    if not write_file(folder, GRAPH, dump):
        return False
    _remove(folder / OLD_GRAPH)
    return True


def save_graph_when_built(
    store: Handle, graph: ann.AnnIndex, index: DenseIndex, *, loaded: int = 0
) -> threading.Thread | None:
    """In a background thread: wait for ``graph``'s build over ``index``,
    then save it, unless it was ``loaded`` from disk with all but a few of
    its labels. Returns the thread (None when nothing is to be saved)."""
    if folder_of(store) is None or int(index.embedded.sum()) - loaded < RESAVE_ROWS:
        return None
    if int(index.embedded.sum()) < SAVE_ROWS:
        return None

    def run() -> None:
        graph.wait()
        if graph.error is None:
            save_graph(store, graph, index)

    thread = threading.Thread(target=run, name="mindpalace-save-graph", daemon=True)
    thread.start()
    return thread
