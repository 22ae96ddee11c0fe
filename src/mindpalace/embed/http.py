"""An embedder for OpenAI-compatible ``/embeddings`` endpoints (OpenAI, Ollama,
vLLM, llama.cpp server, ...). Standard library only."""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from mindpalace.embed.base import Embedder, EmbeddingConfig, Vectors, l2_normalise
from mindpalace.errors import EmbeddingError

__all__ = ["HTTPEmbedder"]


class HTTPEmbedder(Embedder):
    """Embeds through ``POST {base_url}/embeddings``.

    Args:
        base_url: e.g. ``http://localhost:11434/v1`` for Ollama.
        model: the model name the service knows.
        api_key_env: name of the environment variable holding the API key
            (the key itself is never passed around or stored).
        dimensions: the vector size the model returns (e.g. 1536, 768).
        timeout: seconds per request.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimensions: int,
        api_key_env: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._api_key_env = api_key_env
        self._timeout = timeout
        self.batch_size = batch_size
        self.config = EmbeddingConfig("openai-compatible", model, dimensions)

    def _request(self, texts: Sequence[str]) -> Vectors:
        headers = {"Content-Type": "application/json"}
        if self._api_key_env:
            key = os.environ.get(self._api_key_env)
            if not key:
                raise EmbeddingError(f"environment variable {self._api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps({"model": self._model, "input": list(texts)}).encode()
        request = urllib.request.Request(self._url, data=body, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                payload: Any = json.load(response)
        except (
            urllib.error.URLError,
            http.client.HTTPException,
            TimeoutError,
            OSError,
            ValueError,
        ) as exc:
            raise EmbeddingError(f"embedding service at {self._url} failed: {exc}") from exc
        try:
            rows = sorted(payload["data"], key=lambda item: item["index"])
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"unexpected response from {self._url}: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingError(
                f"{self._url} returned {matrix.shape[0]} vectors for {len(texts)} texts"
            )
        return l2_normalise(matrix)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` with one request."""
        matrix = self._request(texts)
        expected = self.config.dimensions
        if matrix.shape[1] != expected:
            raise EmbeddingError(
                f"{self._url} returned {matrix.shape[1]}-d vectors, not {expected}"
            )
        return matrix
