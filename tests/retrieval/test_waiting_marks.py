"""A finished pass over the texts waiting for vectors leaves a mark, and
later passes and counts read only the memories written after it
(store/waiting_sql.py); what would make the mark wrong drops it. Real
SQLite files and the real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.retrieval.test_upgrade import SlowHashing, turns

from mindpalace import Palace
from mindpalace.embed.texts import vector_key
from mindpalace.retrieval import vector_writes
from mindpalace.retrieval.indexing import BULK_TEXTS
from mindpalace.store.base import VectorBatch
from mindpalace.store.vector_rows import VectorCheck


def _deferred(make_palace: Callable[..., Palace]) -> tuple[Palace, SlowHashing, str]:
    model = SlowHashing()
    palace = make_palace(embedder=model)
    return palace, model, vector_key(model.config)


def _newest(palace: Palace) -> tuple[int, str]:
    waiting = palace.store.pending_vectors("none", after_seq=0, limit=0)
    assert waiting.newest is not None
    return waiting.newest


def test_a_finished_pass_marks_and_the_next_reads_only_what_came_after(
    make_palace: Callable[..., Palace],
) -> None:
    palace, _, key = _deferred(make_palace)
    store = palace.store
    assert store.checked_vectors(key).after_seq == 0  # nothing marked yet
    palace.add_messages(turns(BULK_TEXTS), session="first")
    assert palace.wait_for_vectors(timeout=60) == 0
    marked = store.checked_vectors(key).after_seq
    assert marked == _newest(palace)[0] > 0
    # A later bulk write waits; the next pass starts after the mark.
    palace.add_messages(turns(BULK_TEXTS, "sailing"), session="second")
    assert palace.pending_vectors() == BULK_TEXTS
    reads: list[int] = []
    pending = store.pending_vectors

    def spied(model: str, *, after_seq: int = 0, limit: int) -> object:
        reads.append(after_seq)
        return pending(model, after_seq=after_seq, limit=limit)

    store.pending_vectors = spied  # type: ignore[method-assign]
    assert palace.wait_for_vectors(timeout=60) == 0
    assert reads and min(reads) >= marked
    assert store.checked_vectors(key).after_seq == _newest(palace)[0] > marked
    found = palace.recall("sailing trail number 7", limit=3)
    assert all(h.stage_scores.get("dense") is not None for h in found)


def test_the_count_of_waiting_texts_is_exact_after_a_mark(
    make_palace: Callable[..., Palace],
) -> None:
    palace, model, key = _deferred(make_palace)
    palace.add_messages(turns(BULK_TEXTS), session="first")
    assert palace.wait_for_vectors(timeout=60) == 0
    assert palace.store.checked_vectors(key).after_seq > 0
    model.fail = True  # what comes next waits
    palace.add_messages(turns(BULK_TEXTS, "sailing"), session="second")
    # The count from the mark on is the count over every memory.
    every = palace.store.pending_vectors(key, after_seq=0, limit=10 * BULK_TEXTS).rows
    assert len({row[1] for row in every}) == BULK_TEXTS
    assert palace.store.count_pending_vectors(key) == BULK_TEXTS
    assert palace.pending_vectors() == BULK_TEXTS


def test_the_marked_memory_gone_drops_the_mark(make_palace: Callable[..., Palace]) -> None:
    """SQLite gives the next memory the seq after the newest one left: the
    erased newest memory's seq comes back for a new, unembedded text."""
    palace, model, key = _deferred(make_palace)
    palace.add_messages(turns(BULK_TEXTS), session="first")
    assert palace.wait_for_vectors(timeout=60) == 0
    seq, memory_id = _newest(palace)
    assert palace.store.checked_vectors(key).after_seq == seq
    palace.forget(memory_id, hard=True)
    assert palace.store.checked_vectors(key).after_seq == 0
    model.fail = True
    palace.add_messages(turns(BULK_TEXTS, "sailing"), session="second")
    assert palace.store.checked_vectors(key).after_seq == 0
    assert palace.pending_vectors() == BULK_TEXTS
    model.fail = False
    assert palace.wait_for_vectors(timeout=60) == 0


def test_a_text_changed_in_place_or_a_new_model_drops_the_mark(
    make_palace: Callable[..., Palace],
) -> None:
    palace, _, key = _deferred(make_palace)
    store = palace.store
    palace.add_messages(turns(BULK_TEXTS), session="first")
    assert palace.wait_for_vectors(timeout=60) == 0
    check = store.checked_vectors(key)
    newest = _newest(palace)
    assert check.after_seq == newest[0]
    # A memory pointed at another text (what a re-embedding does).
    store.assign_vectors({newest[1]: "f" * 64}, VectorBatch(key, {}))
    assert store.checked_vectors(key).after_seq == 0
    # A pass that began before the change does not mark.
    assert store.mark_checked_vectors(key, check, newest) is False
    assert store.checked_vectors(key).after_seq == 0
    assert palace.pending_vectors() == 1  # the new text waits, found from the start
    fresh = store.checked_vectors(key)
    assert fresh.resets == check.resets + 1
    assert store.mark_checked_vectors(key, fresh, newest) is True
    assert store.checked_vectors(key).after_seq == newest[0]
    # A marked memory that is not the one named: no mark.
    assert store.mark_checked_vectors(key, fresh, (newest[0], "mem_other")) is False
    # The palace's model recorded again: every mark goes.
    config = store.embedding_config()
    assert config is not None
    store.set_embedding_config(config, drop_vectors_except=key)
    assert store.checked_vectors(key) == VectorCheck(0, fresh.resets + 1)


def _skills(folder: Path, version: str) -> Path:
    for n in range(3):
        (folder / f"s{n}").mkdir(parents=True, exist_ok=True)
        (folder / f"s{n}" / "SKILL.md").write_text(
            f"---\nname: skill-{n}\ndescription: Does thing {n} ({version}).\n---\n"
        )
    return folder


def test_skills_saved_again_with_waiting_texts_drop_the_mark(
    make_palace: Callable[..., Palace], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skill saved again keeps its memory (and seq) and takes a new text:
    where that text waits (a bulk import leaves it to the upgrade), the old
    seq is behind the mark, so the mark goes and the next pass finds it."""
    monkeypatch.setattr(vector_writes, "BULK_TEXTS", 2)  # three skills are a bulk write
    palace, _, key = _deferred(make_palace)
    palace.skills.import_path(_skills(tmp_path / "lib", "first"))
    assert palace.wait_for_vectors(timeout=60) == 0
    assert palace.store.checked_vectors(key).after_seq > 0
    result = palace.skills.import_path(_skills(tmp_path / "lib", "second"))
    assert len(result.updated) == 3
    assert palace.store.checked_vectors(key).after_seq == 0
    assert palace.pending_vectors() == 3
    assert palace.wait_for_vectors(timeout=60) == 0
    # Every memory read from the start: none waits.
    assert palace.store.pending_vectors(key, after_seq=0, limit=100).rows == []


@pytest.mark.parametrize("limit", [1, 5])
def test_pending_reads_page_in_write_order_with_the_newest_memory(
    make_palace: Callable[..., Palace], limit: int
) -> None:
    palace, model, key = _deferred(make_palace)
    model.fail = True
    written = palace.add_messages(turns(BULK_TEXTS), session="first")
    seqs: list[int] = []
    after = 0
    while True:
        waiting = palace.store.pending_vectors(key, after_seq=after, limit=limit)
        assert waiting.newest == _newest(palace)
        assert waiting.newest[1] == written[-1].id
        if not waiting.rows:
            break
        assert len(waiting.rows) <= limit
        seqs += [row[0] for row in waiting.rows]
        after = waiting.rows[-1][0]
    assert len(seqs) == BULK_TEXTS and seqs == sorted(seqs)
