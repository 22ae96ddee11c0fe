"""The embedder interface: one abstract method, ``embed_batch``."""

from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.errors import EmbeddingError
from mindpalace.models import EmbeddingConfig

__all__ = ["Embedder", "EmbeddingConfig", "Vectors"]

Vectors = npt.NDArray[np.float32]


class Embedder(abc.ABC):
    """Turns texts into L2-normalised float32 vectors.

    Subclasses implement ``embed_batch`` and set ``config``; everything else
    (single texts, batching of large inputs) is built on it.
    """

    config: EmbeddingConfig

    #: how many texts one ``embed_batch`` call should receive at most
    batch_size: int = 64
    #: what a query is prefixed with before it is embedded: retrieval-tuned
    #: models encode questions and passages differently ("" for symmetric models)
    query_prefix: str = ""
    #: whether the model embeds thousands of texts a second: a bulk write
    #: then embeds inline; a slower model's bulk writes leave their vectors
    #: to a background upgrade (``retrieval/upgrading.py``)
    fast: bool = False

    @abc.abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``: an array of shape (len(texts), dimensions), rows of norm 1.

        Raises:
            EmbeddingError: when the model or service fails.
        """

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed any number of texts in batches of ``batch_size``, grouped by length."""
        if not texts:
            return np.zeros((0, self.config.dimensions), dtype=np.float32)
        # Batches of similar length waste little on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: Vectors = np.empty((len(texts), self.config.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self.embed_batch([texts[i] for i in chunk])
        return out

    def embed_one(self, text: str) -> Vectors:
        """Embed one text as a passage: a vector of shape (dimensions,)."""
        row: Vectors = self.embed_batch([text])[0]
        return row

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query (with the model's ``query_prefix``): a vector
        of shape (dimensions,), comparable with passages' vectors."""
        return self.embed_one(self.query_prefix + text)


def read_model_config(model_dir: Path, provider: str) -> tuple[EmbeddingConfig, dict[str, Any]]:
    """A bundled model folder's ``config.json``: the embedding config and the
    raw settings.

    Raises:
        EmbeddingError: when the folder holds no readable config.
    """
    try:
        meta: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
        config = EmbeddingConfig(
            provider=provider, model=str(meta["name"]), dimensions=int(meta["dimensions"])
        )
    except (OSError, ValueError, KeyError) as exc:
        raise EmbeddingError(f"no embedding model in {model_dir}: {exc}") from exc
    return config, meta


def l2_normalise(matrix: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    m: Vectors = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (m / norms).astype(np.float32, copy=False)
    return out
