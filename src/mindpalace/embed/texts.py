"""What a memory is embedded from, and what its vector is kept under.

The write side (remember, import, ingest, skills, restore, erasure) and the
read side (``retrieval``) both need these, so they live with the embedders,
below both: ``embed_text`` (the text a memory is embedded from),
``text_hash`` (a vector's key: unchanged text is never embedded again),
``vector_key`` (the model a vector belongs to) and ``Progress`` (the
callback of a long embedding run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from mindpalace.models import EmbeddingConfig

__all__ = ["Progress", "embed_text", "text_hash", "vector_key"]

#: called with (done, total) as a long embedding run goes
Progress = Callable[[int, int], None]


def embed_text(title: str | None, content: str) -> str:
    """The text a memory is embedded from: its title and content.

    Search context (e.g. a conversation's previous turn) is indexed for
    keywords only: on the LoCoMo development split, adding it to the embedded
    text made dense retrieval's first hit worse (BENCHMARKS.md).
    """
    return f"{title}\n{content}" if title else content


def vector_key(config: EmbeddingConfig) -> str:
    """What vectors are stored under: provider, model and size together, so
    vectors of two configs sharing a model name are never mixed."""
    return f"{config.provider}/{config.model}/{config.dimensions}"


def text_hash(text: str, chars: int) -> str:
    """Key of a vector: SHA-256 of the exact text embedded, its first
    ``chars`` hex digits (the palace's key length, ``Store.hash_chars``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:chars]
