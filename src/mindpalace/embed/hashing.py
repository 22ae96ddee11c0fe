"""A deterministic embedder for tests: feature hashing of words and trigrams.

Real and repeatable, not a mock: texts sharing words or word pieces get
similar vectors, and the same text always gets the same vector, with no model
file and no randomness across processes (hashing is ``blake2b``, not
``hash()``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from mindpalace.embed.base import Embedder, EmbeddingConfig, Vectors, l2_normalise

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if value >> 63 else -1.0)


class HashingEmbedder(Embedder):
    """Signed feature hashing of lower-cased words (weight 1) and their
    character trigrams (weight 0.5) into ``dimensions`` buckets."""

    fast = True

    def __init__(self, dimensions: int = 256) -> None:
        self.config = EmbeddingConfig(provider="hashing", model="hashing-v1", dimensions=dimensions)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Hash each text's words and trigrams into one normalised vector."""
        dims = self.config.dimensions
        out = np.zeros((len(texts), dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.casefold()):
                index, sign = _bucket("w:" + word, dims)
                out[row, index] += sign
                padded = f"#{word}#"
                for i in range(len(padded) - 2):
                    index, sign = _bucket("t:" + padded[i : i + 3], dims)
                    out[row, index] += 0.5 * sign
        return l2_normalise(out)
