"""The warm dense index follows the palace: appends without a reload,
rebuilds when existing rows change, and sees other processes' writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder

MakePalace = Callable[..., Palace]


def _dense_ids(palace: Palace, query: str) -> list[str]:
    return [h.memory.id for h in palace.recall(query, limit=20) if "dense" in h.ranks]


def test_new_memories_are_appended_not_reloaded(make_palace: MakePalace) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    first = palace.remember("the kafka cluster has three brokers")
    assert _dense_ids(palace, "kafka brokers") == [first.id]
    index = palace.semantic.dense()
    assert index is not None and len(index) == 1
    second = palace.remember("kafka brokers restart every night")
    grown = palace.semantic.dense()
    assert grown is not None and len(grown) == 2
    assert grown.epoch == index.epoch  # appended, not rebuilt
    assert grown.table.matrix.shape == (2, 256)
    assert set(_dense_ids(palace, "kafka brokers")) == {first.id, second.id}


def test_archive_and_delete_rebuild(make_palace: MakePalace) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    keep = palace.remember("postgres vacuum runs weekly")
    gone = palace.remember("postgres replicas lag at night")
    palace.recall("postgres")
    before = palace.semantic.dense()
    assert before is not None
    palace.forget(gone.id)
    after = palace.semantic.dense()
    assert after is not None and after.epoch != before.epoch
    assert _dense_ids(palace, "postgres replicas") == [keep.id]
    palace.forget(keep.id, hard=True)
    assert _dense_ids(palace, "postgres") == []


def test_writes_of_another_palace_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    settings = Settings(embedder="hashing")
    with Palace(path, settings=settings) as reader, Palace(path, settings=settings) as writer:
        writer.remember("the release train leaves on thursday")
        assert len(reader.recall("release train")) == 1
        late = writer.remember("release notes go to the wiki")
        assert late.id in _dense_ids(reader, "release notes wiki")
        writer.forget(late.id)
        assert late.id not in _dense_ids(reader, "release notes wiki")
