"""Arrays saved to one file and mapped back (``warm_arrays.py``), and a
keyword index restored from such a mapping: the arrays stay file pages
(shared between processes, never written), a damaged file or inconsistent
postings are refused, and the index scores exactly as a fresh build, also
once rows are added after the load."""

from __future__ import annotations

import hashlib
import json
import mmap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.retrieval.test_keyword import QUERIES, _corpus, _fts5, _reference

from mindpalace.retrieval import warm_arrays
from mindpalace.retrieval.keyword import KeywordIndex


def _file_backed(array: np.ndarray) -> bool:
    """Whether ``array``'s bytes are a memory mapping's (a file's pages)."""
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base.obj if isinstance(base, memoryview) else base, mmap.mmap)


def _save(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        warm_arrays.dump(handle, meta, arrays)


def _load(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with open(path, "rb") as handle:
        return warm_arrays.load(handle)


SAMPLE = {
    "bytes": np.frombuffer(b"ana\0ben", dtype=np.uint8),
    "rows": np.arange(1000, dtype=np.int32),
    "starts": np.array([0, 3, 1 << 40], dtype=np.int64),
    "halves": np.array([0.5, 1.5, 2048.0], dtype=np.float16),
    "counts": np.array([1.0, 2.5], dtype=np.float32),
    "lengths": np.array([3.0, 7.0, 0.0], dtype=np.float64),
    "none": np.zeros(0, dtype=np.int32),
}


def test_arrays_come_back_mapped_read_only(tmp_path: Path) -> None:
    _save(tmp_path / "a.bin", {"rows": 3, "name": "x"}, SAMPLE)
    meta, arrays = _load(tmp_path / "a.bin")
    assert meta == {"rows": 3, "name": "x"}
    assert arrays.keys() == SAMPLE.keys()
    for name, array in SAMPLE.items():
        assert arrays[name].dtype == array.dtype and arrays[name].tolist() == array.tolist()
        assert not arrays[name].flags.writeable
        assert arrays[name].ctypes.data % array.dtype.itemsize == 0  # aligned
    assert all(_file_backed(arrays[name]) for name in SAMPLE if SAMPLE[name].size)
    with pytest.raises(ValueError, match="read-only"):
        arrays["rows"][0] = 5


@pytest.mark.parametrize(
    "array", [np.array([{"x": 1}], dtype=object), np.zeros((2, 2)), np.array(["a"])]
)
def test_what_cannot_be_stored_is_refused(tmp_path: Path, array: np.ndarray) -> None:
    with open(tmp_path / "a.bin", "wb") as handle, pytest.raises(ValueError, match="stored"):
        warm_arrays.dump(handle, {}, {"bad": array})


def _aligned(offset: int) -> int:
    return -(-offset // 64) * 64


def _header(data: bytes) -> tuple[dict[str, Any], int]:
    """A file's header and where its arrays begin."""
    size = int.from_bytes(data[8:16], "little")
    return json.loads(data[16 : 16 + size]), _aligned(16 + size)


def _edit_header(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        header, base = _header(data)
        edit(header)
        raw = json.dumps(header).encode("utf-8")
        start = data[:8] + len(raw).to_bytes(8, "little") + raw
        return start.ljust(_aligned(len(start)), b"\0") + data[base:]

    return damage


def _flip_a_row(data: bytes) -> bytes:
    header, base = _header(data)
    at = base + header["arrays"]["rows"]["offset"] + 401
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) - 100],
    "a flipped bit": _flip_a_row,
    "empty": lambda data: b"",
    "not ours": lambda data: b"PK\x03\x04" + data[4:],
    "header cut": lambda data: data[:40],
    "objects": _edit_header(lambda h: h["arrays"]["rows"].update(dtype="|O")),
    "big-endian": _edit_header(lambda h: h["arrays"]["rows"].update(dtype=">i4")),
    "past the end": _edit_header(lambda h: h["arrays"]["lengths"].update(offset=1 << 30)),
    "negative offset": _edit_header(lambda h: h["arrays"]["rows"].update(offset=-64)),
    "two dimensions": _edit_header(lambda h: h["arrays"]["rows"].update(shape=[10, 100])),
    "longer": _edit_header(lambda h: h["arrays"]["rows"].update(shape=[1001])),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_file_is_refused(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "a.bin"
    _save(path, {"rows": 3}, SAMPLE)
    path.write_bytes(DAMAGE[damage](path.read_bytes()))
    with pytest.raises(ValueError):
        _load(path)


# -- a keyword index restored from a mapping ------------------------------------


def _scopes(count: int, parts: int) -> np.ndarray:
    return (np.arange(count, dtype=np.int64) * 7919) % parts + 100


def _mapped_index(
    path: Path, index: KeywordIndex, scopes: np.ndarray
) -> tuple[KeywordIndex, dict[str, np.ndarray]]:
    """``index`` saved as ``warm_cache.save_text`` saves it (counts as
    float32) and restored from the file mapped."""
    terms, arrays = index.state()
    out = {k: v.astype(np.float32) if k.endswith("_tf") else v for k, v in arrays.items()}
    _save(path, {"terms": terms}, out)
    meta, mapped = _load(path)
    return KeywordIndex.restored(meta["terms"], mapped, scopes), mapped


@pytest.mark.parametrize("parts", [1, 3])
def test_a_mapped_index_scores_as_a_fresh_build(tmp_path: Path, parts: int) -> None:
    rows = _corpus(300)
    scopes = _scopes(len(rows), parts)
    fresh = KeywordIndex(rows, scopes=scopes)
    mapped, arrays = _mapped_index(tmp_path / "text.bin", fresh, scopes)
    assert arrays["segment0_tf"].dtype == np.float32
    for name in ("segment0_rows", "segment0_tf", "segment0_parts", "segment0_start"):
        assert _file_backed(arrays[name]), name
    segment = mapped._segments[0]
    for array in (segment.rows, segment.tf, segment.parts, segment.start, mapped.row_parts):
        assert _file_backed(array) and not array.flags.writeable  # kept, not copied
    everyone = np.ones(len(rows), dtype=bool)
    some = scopes == scopes[0]
    db = _fts5(rows)
    for words in QUERIES:
        got = mapped.scores(words, everyone)
        assert got.dtype == np.float64
        assert got.tolist() == fresh.scores(words, everyone).tolist()
        np.testing.assert_allclose(got, _reference(db, words, len(rows)), rtol=1e-9, atol=1e-12)
        assert mapped.scores(words, some).tolist() == fresh.scores(words, some).tolist()
        found, counts = mapped.postings(words[0])
        assert counts.dtype == np.float64 and found.shape == counts.shape


def test_rows_added_after_a_mapped_load_score_as_a_fresh_build(tmp_path: Path) -> None:
    rows = _corpus(300)
    scopes = _scopes(len(rows), 3)
    path = tmp_path / "text.bin"
    index, _ = _mapped_index(path, KeywordIndex(rows[:200], scopes=scopes[:200]), scopes[:200])
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    start = 200
    # A tail beside the mapped segment, then a merge (the tail's postings
    # outgrow a fifth of the mapped ones).
    for size in (10, 60):
        index = index.extended(rows[start : start + size], scopes[start : start + size])
        start += size
        if size == 10:
            assert len(index._segments) == 2 and _file_backed(index._segments[0].rows)
            assert not _file_backed(index._segments[1].rows)
    assert len(index._segments) == 1
    merged = index._segments[0]
    assert not any(_file_backed(a) for a in (merged.rows, merged.tf, merged.parts))
    index = index.extended(rows[start:], scopes[start:])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # never written
    fresh = KeywordIndex(rows, scopes=scopes)
    for visible in (np.ones(len(rows), dtype=bool), scopes == scopes[1]):
        for words in QUERIES:
            np.testing.assert_allclose(
                index.scores(words, visible), fresh.scores(words, visible), rtol=1e-12
            )


def _shift_rows(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_rows"] = arrays["segment0_rows"] + np.int32(300)


def _zero_count(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_tf"][5] = 0.0


def _infinite_count(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_tf"][5] = np.inf


def _wrong_partition(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_parts"][5] = (arrays["segment0_parts"][5] + 1) % 3


def _unordered_partitions(arrays: dict[str, np.ndarray]) -> None:
    """Two postings of one term in different partitions swapped, their
    partitions with them: each posting's partition is its row's, but the
    term's postings are no longer ordered by partition."""
    rows, tf, parts, start = (arrays[f"segment0_{k}"] for k in ("rows", "tf", "parts", "start"))
    for term in range(start.shape[0] - 1):
        lo, hi = int(start[term]), int(start[term + 1])
        if parts[lo] != parts[hi - 1]:
            for array in (rows, tf, parts):
                array[[lo, hi - 1]] = array[[hi - 1, lo]]
            return
    raise AssertionError("no term spans two partitions")


def _wide_rows(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_rows"] = arrays["segment0_rows"].astype(np.int64)


def _object_counts(arrays: dict[str, np.ndarray]) -> None:
    arrays["segment0_tf"] = arrays["segment0_tf"].astype(np.int64)


INCONSISTENT: dict[str, Callable[[dict[str, np.ndarray]], None]] = {
    "a row outside the index": _shift_rows,
    "a count of zero": _zero_count,
    "an infinite count": _infinite_count,
    "a posting's partition not its row's": _wrong_partition,
    "a term's postings out of partition order": _unordered_partitions,
    "rows of another type": _wide_rows,
    "counts that are not floats": _object_counts,
}


@pytest.mark.parametrize("damage", list(INCONSISTENT))
def test_inconsistent_postings_are_refused(tmp_path: Path, damage: str) -> None:
    rows = _corpus(300)
    scopes = _scopes(len(rows), 3)
    terms, state = KeywordIndex(rows, scopes=scopes).state()
    arrays = {k: np.array(v) for k, v in state.items()}
    KeywordIndex.restored(terms, arrays, scopes)  # sound as saved: the test can fail
    INCONSISTENT[damage](arrays)
    with pytest.raises(ValueError):
        KeywordIndex.restored(terms, arrays, scopes)
