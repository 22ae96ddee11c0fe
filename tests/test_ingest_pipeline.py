"""Bulk ingest's pipeline (embed batch k while k-1 is written): the same
memories as one batch, one transaction a batch, progress after each."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from mindpalace import Palace, ValidationError
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.base import Vectors
from mindpalace.embed.texts import embed_text, text_hash, vector_key

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
TURNS = [
    Message(
        text,
        speaker="Ines" if i % 2 else "Tomas",
        created_at=T0 + timedelta(minutes=i),
        session=f"s{i // 7}",
    )
    for i, text in enumerate(
        f"turn {i}: we met {day} about the {topic}"
        for i, (day, topic) in enumerate(
            zip(
                ["yesterday", "on Monday", "today", "last week"] * 6,
                ["budget", "design review", "latency charts", "release", "thanks!", "lunch"] * 4,
                strict=True,
            )
        )
    )
]


class FailingEmbedder(HashingEmbedder):
    """The hashing model, failing on its ``fail_on``-th call (an unexpected
    error, not an EmbeddingError, so ingest stops)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.calls = 0
        self.fail_on = fail_on

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("the model fell over")
        return super().embed_batch(texts)


def _palace(embedder: HashingEmbedder) -> Palace:
    return Palace(":memory:", embedder=embedder, clock=lambda: T0)


def _snapshot(palace: Palace) -> list[tuple[object, ...]]:
    memories = palace.memories(limit=1000, categories="conversation")
    return sorted(
        (m.content, m.title, m.context, m.session, m.created_at, str(dict(m.metadata)))
        for m in memories
    )


@pytest.mark.parametrize("batch", [1, 5, 7, 23])
def test_pipelined_ingest_writes_what_one_batch_writes(batch: int) -> None:
    whole, piped = _palace(HashingEmbedder()), _palace(HashingEmbedder())
    whole.add_messages(TURNS, batch=len(TURNS))
    stored = piped.add_messages(TURNS, batch=batch)
    assert [m.content for m in stored] == [f"{t.who}: {t.content}" for t in TURNS]
    assert _snapshot(piped) == _snapshot(whole)
    key = vector_key(piped.semantic.embedder.config)  # type: ignore[union-attr]
    chars = piped.store.hash_chars()
    hashes = [text_hash(embed_text(m.title, m.content), chars) for m in stored]
    assert not piped.store.missing_vectors(key, hashes)
    index = piped.semantic.dense()
    assert index is not None and len(index.table) == len(TURNS)


def test_failing_embed_mid_ingest_leaves_no_partial_batch() -> None:
    palace = _palace(FailingEmbedder(fail_on=3))
    with pytest.raises(RuntimeError, match="fell over"):
        palace.add_messages(TURNS, batch=5)
    kept = palace.memories(limit=1000, categories="conversation")
    # Batches 1 and 2 were embedded and written; batch 3's embedding
    # failed, so nothing of it (or after it) is there.
    assert len(kept) == 10
    assert {m.content for m in kept} == {f"{t.who}: {t.content}" for t in TURNS[:10]}


def test_invalid_turn_keeps_earlier_batches() -> None:
    palace = _palace(HashingEmbedder())
    turns = [*TURNS[:10], Message("x" * 10**7, speaker="Ines", created_at=T0)]
    with pytest.raises(ValidationError):
        palace.add_messages(turns, batch=5)
    assert len(palace.memories(limit=1000, categories="conversation")) == 10


def test_progress_is_called_after_each_batch() -> None:
    seen: list[tuple[int, int]] = []
    _palace(HashingEmbedder()).add_messages(
        TURNS, batch=10, progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(10, 24), (20, 24), (24, 24)]


def test_same_vectors_as_sequential_with_the_local_model() -> None:
    from mindpalace.embed import LocalEmbedder

    model = LocalEmbedder()
    whole = Palace(":memory:", embedder=model, clock=lambda: T0)
    piped = Palace(":memory:", embedder=model, clock=lambda: T0)
    whole.add_messages(TURNS, batch=len(TURNS))
    piped.add_messages(TURNS, batch=4)
    assert _snapshot(piped) == _snapshot(whole)
    a, b = whole.semantic.dense(), piped.semantic.dense()
    assert a is not None and b is not None
    va = {whole.get(i).content: a.table.matrix[n] for n, i in enumerate(a.table.ids)}
    vb = {piped.get(i).content: b.table.matrix[n] for n, i in enumerate(b.table.ids)}
    assert va.keys() == vb.keys()
    cosines = [float(np.dot(va[h], vb[h])) for h in va]
    assert min(cosines) >= 0.98
