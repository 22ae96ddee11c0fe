"""The parts of a long memory: its text cut at sentence ends into passages
of a sentence or a few, each embedded on its own.

A memory's vector is the mean of its whole text, so one sentence in a long
message ("I just got a smoker", amid a page of recipes) barely moves it,
and a model reads only its first 256 tokens. The parts keep such a passing
mention findable by meaning: the re-ranker reads the best cosine of the
query to any part of a memory (its ``part`` feature), beside the cosine to
the whole. On LongMemEval's long chat turns this raised the held-out
NDCG@10 from 0.766 to 0.777 and recall_any@5 from 0.891 to 0.900
(BENCHMARKS.md, "The parts of long texts").

Parts are embedded wherever the whole text is (a write, the background
upgrade, ``reindex``), with the same model, and stored with its vector
(``VectorBatch.parts``), all of one text in one row: a text of one part,
or shorter than ``PARTED_CHARS``, has none. Recall reads the parts of the re-ranker's window only
(``Store.part_vectors``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from mindpalace.models import HitList

__all__ = [
    "MAX_PARTS",
    "PARTED_CHARS",
    "PART_CHARS",
    "best_cosines",
    "pack",
    "split",
    "unpack",
    "with_parts",
]

#: a part ends at the first sentence end past this many characters. At
#: 240 rather than 80 a long chat turn has about half as many parts (3.1
#: against 5.8 a LongMemEval turn), so half the part vectors to embed and
#: keep; LongMemEval, LoCoMo and the everyday palaces rank as at 80
#: (docs/benchmarks/34-fewer-longer-parts.md)
PART_CHARS = 240
#: a text shorter than this many characters has no parts: a few sentences'
#: mean still carries each of them. Without them a short memory takes a
#: quarter to a fifth fewer bytes; the everyday palaces and LoCoMo rank as
#: before, LongMemEval's recall_all@10 and NDCG@10 hold and its
#: recall_all@5 lost two questions of 221
#: (docs/benchmarks/28-disk-per-memory.md)
PARTED_CHARS = 400
#: at most this many parts of one text (the rest of a longer text is its
#: last part, which the model cuts at its token limit)
MAX_PARTS = 16

# Sentence ends: ., ! or ? before white space, and line breaks.
_ENDS = re.compile(r"(?<=[.!?])\s+|\n+")


def split(text: str) -> list[str]:
    """The parts of ``text``: its sentences, run together until each
    reaches ``PART_CHARS``; none when the text is one part or shorter than
    ``PARTED_CHARS``."""
    if len(text) < PARTED_CHARS:
        return []
    out: list[str] = []
    current = ""
    for raw in _ENDS.split(text):
        piece = raw.strip()
        if not piece:
            continue
        current = f"{current} {piece}" if current else piece
        if len(current) >= PART_CHARS and len(out) < MAX_PARTS - 1:
            out.append(current)
            current = ""
    if current:
        if out and len(current) < PART_CHARS // 4:
            out[-1] = f"{out[-1]} {current}"  # a short tail joins the part before
        else:
            out.append(current)
    return out if len(out) > 1 else []


def pack(matrix: npt.NDArray[np.float32]) -> bytes:
    """The stored form of a text's part vectors, a quarter of float32's
    size: per row, its scale (float32, little-endian) and its values as
    int8 multiples of it (cosines move by about 0.001)."""
    rows = np.asarray(matrix, dtype=np.float32)
    scale = np.abs(rows).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    values = np.clip(np.rint(rows / scale), -127, 127).astype(np.int8)
    head = scale.astype("<f4").view(np.uint8)
    return np.ascontiguousarray(np.hstack((head, values.view(np.uint8)))).tobytes()


def unpack(blob: bytes, dimensions: int) -> npt.NDArray[np.float32]:
    """Part vectors (float32, ``dimensions`` per row) from their stored form.

    Raises:
        ValueError: the blob is not rows of that many dimensions.
    """
    width = 4 + dimensions
    if not blob or len(blob) % width:
        raise ValueError(f"{len(blob)} bytes are not part vectors of {dimensions} dimensions")
    raw = np.frombuffer(blob, dtype=np.uint8).reshape(-1, width)
    scale = raw[:, :4].copy().view("<f4").astype(np.float32)
    values: npt.NDArray[np.float32] = raw[:, 4:].view(np.int8).astype(np.float32) * scale
    return values


def best_cosines(
    parts: Mapping[str, bytes], hashes: Sequence[str], query: npt.NDArray[np.float32]
) -> list[float | None]:
    """For each text hash, the best cosine of the (unit) ``query`` to one
    of its parts; None where the text has no stored parts."""
    out: list[float | None] = []
    for key in hashes:
        blob = parts.get(key)
        try:
            vectors = unpack(blob, query.shape[0]) if blob else None
        except ValueError:  # parts of another size: not this model's
            vectors = None
        out.append(None if vectors is None else float((vectors @ query).max()))
    return out


def with_parts(
    hits: HitList, parts: Mapping[str, bytes], hashes: Sequence[str], query: npt.NDArray[np.float32]
) -> HitList:
    """``hits`` whose first ``len(hashes)`` (their texts' hashes) carry
    ``stage_scores["part"]``: the best cosine of the query to a part or to
    the whole text (the dense cosine), whichever is higher."""
    best = best_cosines(parts, hashes, query)
    out = list(hits)
    for i, value in enumerate(best):
        hit = out[i]
        dense = hit.stage_scores.get("dense")
        whole = dense if dense is not None else value
        if whole is None:
            continue
        top = whole if value is None else max(value, whole)
        out[i] = replace(hit, stage_scores={**hit.stage_scores, "part": top})
    result = HitList(out, mode=hits.mode, notice=hits.notice)
    result.timings = hits.timings
    return result
