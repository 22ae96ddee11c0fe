"""Embedders: the bundled models (MiniLM int8 ONNX by default, the
retrieval-tuned bge-small-en-v1.5, a static table for speed),
OpenAI-compatible services, and a deterministic hashing embedder for tests."""

from __future__ import annotations

import functools

from mindpalace.config import EMBEDDERS, Settings
from mindpalace.embed.base import Embedder
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.embed.http import HTTPEmbedder
from mindpalace.embed.local import BGE_DIR, LocalEmbedder
from mindpalace.embed.static import StaticEmbedder, WordTable
from mindpalace.errors import ConfigError

__all__ = [
    "Embedder",
    "HTTPEmbedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "StaticEmbedder",
    "WordTable",
    "from_settings",
    "word_table",
]


@functools.cache
def _bundled(name: str) -> Embedder:
    """One instance of each bundled model per process: palaces of several
    agents in one process share its memory and its load time."""
    if name == "bge":
        return LocalEmbedder(BGE_DIR)
    return LocalEmbedder() if name == "local" else StaticEmbedder()


@functools.cache
def word_table() -> WordTable:
    """Single words in the bundled static model's table, for the process:
    the same table a palace of the static model embeds with (loaded once)."""
    model = _bundled("static")
    assert isinstance(model, StaticEmbedder)
    return WordTable(model)


def from_settings(settings: Settings) -> Embedder | None:
    """The embedder ``settings`` name; ``None`` for keyword search only.

    Raises:
        ConfigError: an unknown embedder name, or the http embedder without
            its URL, model or size.
    """
    if settings.embedder == "none":
        return None
    if settings.embedder in ("local", "bge", "static"):
        return _bundled(settings.embedder)
    if settings.embedder == "hashing":
        return HashingEmbedder()
    if settings.embedder == "http":
        if not (settings.embed_url and settings.embed_model and settings.embed_dimensions):
            raise ConfigError(
                "the http embedder needs MINDPALACE_EMBED_URL, MINDPALACE_EMBED_MODEL"
                " and MINDPALACE_EMBED_DIMS"
            )
        return HTTPEmbedder(
            settings.embed_url,
            settings.embed_model,
            dimensions=settings.embed_dimensions,
            api_key_env=settings.embed_key_env,
        )
    raise ConfigError(
        f"invalid embedder {settings.embedder!r}", setting="embedder", valid=EMBEDDERS
    )
