"""How a vector is kept in ``embeddings.vector``, on every backend.

A vector is written in half precision: its values as little-endian float16,
then one tag byte (``HALF``), so that the blob's length is odd. Palaces
written before keep float32 blobs (little-endian, a multiple of four bytes
long), and both are read: the length alone tells them apart, so no reader
needs the model's size to decode a blob.

Half precision keeps 11 significant bits: a unit vector's cosine with
another moves by about 1e-4, below the gaps that decide a ranking (the
benchmarks measured the same hits), for half the bytes (a 384-d vector:
1,536 -> 769 bytes; SQLite then fits twice as many rows on a page). The
values a process ranks by are the decoded ones, wherever they were written
(``to_blob`` rounds before it stores), so a palace reopened ranks exactly as
the process that wrote it. A vector with a value past float16's range
(65,504; no embedder here writes one) is kept in float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["HALF", "blob_dimensions", "from_blob", "from_blobs", "to_blob", "to_blobs"]

#: the last byte of a half-precision blob
HALF = b"h"
_HALF_MAX = float(np.finfo(np.float16).max)


def to_blobs(matrix: npt.NDArray[np.float32]) -> list[bytes]:
    """The stored form of each row of ``matrix``."""
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"vectors come as a matrix of rows, not of shape {rows.shape}")
    if not rows.size or float(np.abs(rows).max()) <= _HALF_MAX:
        half = np.ascontiguousarray(rows, dtype="<f2")
        return [row.tobytes() + HALF for row in half]
    return [
        row.astype("<f2").tobytes() + HALF
        if float(np.abs(row).max(initial=0.0)) <= _HALF_MAX
        else np.ascontiguousarray(row, dtype="<f4").tobytes()
        for row in rows
    ]


def to_blob(values: npt.NDArray[np.float32]) -> bytes:
    """The stored form of one vector."""
    return to_blobs(np.asarray(values, dtype=np.float32).reshape(1, -1))[0]


def blob_dimensions(blob: bytes) -> int:
    """The number of values a stored blob holds.

    Raises:
        ValueError: bytes that are neither form.
    """
    size = len(blob)
    if size % 2 == 1 and blob[-1:] == HALF:
        return (size - 1) // 2
    if size % 4 == 0:
        return size // 4
    raise ValueError(f"a stored vector of {size} bytes is neither float16 nor float32")


def from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    """The float32 values of a stored blob (either form)."""
    dims = blob_dimensions(blob)
    if len(blob) % 2 == 1:
        return np.frombuffer(blob, dtype="<f2", count=dims).astype(np.float32)
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def from_blobs(blobs: Sequence[bytes], dimensions: int) -> npt.NDArray[np.float32]:
    """The rows of ``blobs`` (each of ``dimensions`` values) as one matrix;
    in one pass when they are all of one form.

    Raises:
        ValueError: a blob of another size.
    """
    count = len(blobs)
    if not count:
        return np.zeros((0, dimensions), dtype=np.float32)
    half_size, full_size = 2 * dimensions + 1, 4 * dimensions
    if all(len(b) == half_size for b in blobs):
        # The tag byte ends each row: read the rows with their tags, then
        # drop the last column.
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(count, half_size)
        values = np.ascontiguousarray(raw[:, :-1]).view("<f2")
        return values.astype(np.float32)
    if all(len(b) == full_size for b in blobs):
        joined = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(count, dimensions)
        return joined.astype(np.float32)
    out = np.empty((count, dimensions), dtype=np.float32)
    for i, blob in enumerate(blobs):
        values = from_blob(blob)
        if values.shape[0] != dimensions:
            raise ValueError(f"a stored vector of {values.shape[0]} values among {dimensions}")
        out[i] = values
    return out
