"""Regressions found in review: scope on import and session support, the
warm index and late vectors, Unicode matching, the gate and archived memories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindpalace import Palace, PermissionDenied
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.base import Vectors
from mindpalace.errors import EmbeddingError
from mindpalace.models import Scope

HASHING = Settings(embedder="hashing")
TEXT = Settings(embedder="none")


def _line(memory_id: str, agent: str, text: str) -> str:
    return json.dumps(
        {"id": memory_id, "agent_id": agent, "content": text, "created_at": "2024-01-01"}
    )


def test_import_cannot_write_as_another_agent(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Palace(db, agent_id="victim", settings=TEXT) as victim:
        victim.remember("my bank pin is 4321")
    with Palace(db, agent_id="attacker", settings=TEXT) as attacker:
        for text in ("my bank pin is 1111", "my bank pin is 4321"):
            with pytest.raises(PermissionDenied):
                attacker.import_jsonl([_line("mem_x", "victim", text)])
        assert attacker.import_jsonl([_line("mem_y", "attacker", "mine")]).inserted == 1
    with Palace(db, settings=TEXT, management=True) as admin:
        assert admin.import_jsonl([_line("mem_z", "victim", "restored")]).inserted == 1
        assert admin.store.stats(Scope.management()).memories == 3


def test_invisible_memories_do_not_change_session_support(tmp_path: Path) -> None:
    def run(with_intruder: bool) -> list[tuple[str, float]]:
        db = tmp_path / f"s{with_intruder}.db"
        a = Palace(db, agent_id="a", settings=HASHING)
        b = Palace(db, agent_id="b", settings=HASHING)
        a.remember("we talked about the volcano trip", session="s1")
        if with_intruder:
            b.remember("private note of agent b on cooking", session="s1")
        a.remember("it was in Iceland last summer", session="s1")
        return [(h.memory.content, round(h.score, 6)) for h in a.recall("volcano trip")]

    assert run(True) == run(False)


class Flaky(HashingEmbedder):
    fail = False

    def embed_batch(self, texts: list[str]) -> Vectors:  # type: ignore[override]
        if self.fail:
            raise EmbeddingError("down")
        return super().embed_batch(texts)


def test_a_memory_stored_without_vector_waits_for_reindex(tmp_path: Path) -> None:
    embedder = Flaky()
    palace = Palace(tmp_path / "p.db", settings=HASHING, embedder=embedder)
    palace.remember("warmup")
    palace.recall("warmup")
    embedder.fail = True
    lost = palace.remember("zebra crossing quartz")
    embedder.fail = False
    palace.remember("zebra crossing quartz", visibility="shared")  # same text: vector now exists
    index = palace.semantic.dense()
    row = index.row_of(lost.id) if index is not None else None
    assert index is not None and row is not None  # searchable by its words meanwhile
    assert not index.embedded[row]  # consistent: no stale hash lends it a vector
    palace.reindex()
    index = palace.semantic.dense()
    row = index.row_of(lost.id) if index is not None else None
    assert index is not None and row is not None and index.embedded[row]


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("Ich wohne in der Straße am Fluss", "wo ist die Straße"),
        ("Meeting about \uff21\uff22\uff23 corp", "what about \uff21\uff22\uff23"),  # full-width
    ],
)
def test_unicode_words_match_as_the_index_folds_them(
    tmp_path: Path, stored: str, query: str
) -> None:
    palace = Palace(tmp_path / "p.db", settings=HASHING)
    memory = palace.remember(stored)
    hits = palace.recall(query)
    assert [h.memory.id for h in hits][:1] == [memory.id]


def test_substring_fallback_folds_non_ascii_case(tmp_path: Path) -> None:
    palace = Palace(tmp_path / "p.db", settings=TEXT)
    memory = palace.remember("Ölpreisentwicklung im Mai")
    assert [h.memory.id for h in palace.recall("ölpreis")] == [memory.id]


def test_gate_sees_archived_memories_when_asked(tmp_path: Path) -> None:
    palace = Palace(tmp_path / "p.db", settings=HASHING)
    memory = palace.remember("Kubernetes cluster migrated")
    palace.forget(memory.id)
    assert len(palace.recall("what about Kubernetes")) == 0
    hits = palace.recall("what about Kubernetes", include_archived=True)
    assert [h.memory.id for h in hits] == [memory.id]
