"""The parts of long texts: how a text is cut, how their vectors are kept,
and what the re-ranker reads of them. Real SQLite files and the real
PostgreSQL server (``make_palace`` runs on both)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder, from_settings
from mindpalace.embed.texts import embed_text, text_hash, vector_key
from mindpalace.errors import ConfigError
from mindpalace.models import Hit, HitList
from mindpalace.retrieval import parts, vector_writes
from mindpalace.retrieval.indexing import BULK_TEXTS
from mindpalace.store import migrate, vector_bytes

from .memories import memory
from .test_upgrade import SlowHashing

# Sentences each at least PART_CHARS long, so that each is a part of its own.
FILLER = "x" * parts.PART_CHARS


def sentence(words: str) -> str:
    return f"{words} {FILLER}."


SMOKER = sentence("I just got a smoker for brisket and ribs")
LONG = " ".join(
    [
        sentence("Here are some pasta recipes with tomatoes and basil"),
        sentence("A carbonara needs eggs, cheese and pepper"),
        SMOKER,
        sentence("Lasagna takes an afternoon but feeds a crowd"),
    ]
)


def _parts_of(palace: Palace, text: str) -> np.ndarray | None:
    assert palace.semantic.embedder is not None
    model = vector_key(palace.semantic.embedder.config)
    key = text_hash(text, palace.engine.store.hash_chars())
    blob = palace.engine.store.part_vectors(model, [key]).get(key)
    return None if blob is None else parts.unpack(blob, palace.semantic.embedder.config.dimensions)


def test_a_text_is_cut_at_sentence_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parts, "PARTED_CHARS", 0)  # the cutting rules alone
    assert parts.split("One short sentence.") == []
    assert parts.split("Short. Also short. Still short.") == []  # one part: none kept
    assert parts.split(LONG) == [
        sentence("Here are some pasta recipes with tomatoes and basil"),
        sentence("A carbonara needs eggs, cheese and pepper"),
        SMOKER,
        sentence("Lasagna takes an afternoon but feeds a crowd"),
    ]
    # Line breaks end a part too; a short tail joins the part before it.
    lines = f"{sentence('first line')}\n{sentence('second line')}\nok"
    assert parts.split(lines) == [sentence("first line"), f"{sentence('second line')} ok"]
    # Short sentences run together until a part is long enough.
    short = " ".join(["Tiny one."] * 40)
    cut = parts.split(short)
    assert len(cut) > 1 and all(len(p) >= parts.PART_CHARS for p in cut[:-1])
    assert " ".join(cut) == short


def test_a_text_of_a_few_sentences_has_no_parts() -> None:
    tail = "Maria owns the office and the keys to the archive room, locked at six."
    few = " ".join([sentence("Kenji owns billing"), tail])
    assert len(few) < parts.PARTED_CHARS and len(tail) >= parts.PART_CHARS // 4
    assert parts.split(few) == []  # two parts' worth, but short: its whole vector reads both
    longer = " ".join(sentence(f"point {i}") for i in range(5))
    assert len(longer) >= parts.PARTED_CHARS
    assert len(parts.split(longer)) == 5
    assert parts.split(longer[: parts.PARTED_CHARS - 1]) == []


def test_a_very_long_text_has_at_most_max_parts() -> None:
    text = " ".join(sentence(f"point {i}") for i in range(parts.MAX_PARTS * 3))
    cut = parts.split(text)
    assert len(cut) == parts.MAX_PARTS
    assert " ".join(cut) == text  # nothing dropped: the rest is the last part


def test_part_vectors_round_trip_within_a_thousandth() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(5, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    back = parts.unpack(parts.pack(matrix), 384)
    assert back.shape == (5, 384)
    assert np.abs((back * matrix).sum(axis=1) - 1.0).max() < 2e-3
    assert len(parts.pack(matrix)) == 5 * (4 + 384)  # a quarter of float32's size
    zeros = parts.unpack(parts.pack(np.zeros((2, 8), np.float32)), 8)
    assert not zeros.any()
    with pytest.raises(ValueError, match="not part vectors of 384 dimensions"):
        parts.unpack(b"\x00" * 100, 384)


def test_the_best_part_is_what_the_reranker_reads() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    stored = {
        "long": parts.pack(np.array([[0.0, 1.0], [0.9, 0.1]], dtype=np.float32)),
        "odd": b"\x01\x02\x03",  # not vectors of this size: ignored
    }
    assert parts.best_cosines(stored, ["long", "none", "odd"], query) == [
        pytest.approx(0.9, abs=0.01),
        None,
        None,
    ]
    hits = HitList(
        [
            Hit(memory("a", "s"), 1.0, stage_scores={"dense": 0.3}),
            Hit(memory("b", "s"), 0.9, stage_scores={"dense": 0.5}),
            Hit(memory("c", "s"), 0.8, stage_scores={"dense": 0.7}),
        ],
        mode="hybrid",
        notice="n",
    )
    hits.timings = {"dense": 1.0}
    out = parts.with_parts(hits, stored, ["long", "none"], query)
    # The better of the part and the whole; the whole where no parts are
    # kept; hits past the window unchanged; the list's attributes kept.
    assert [h.stage_scores.get("part") for h in out] == [pytest.approx(0.9, abs=0.01), 0.5, None]
    assert (out.mode, out.notice, out.timings) == ("hybrid", "n", {"dense": 1.0})


def test_a_write_keeps_the_parts_of_a_long_text(make_palace: Callable[..., Palace]) -> None:
    model = HashingEmbedder()
    palace = make_palace(embedder=model)
    long = palace.remember(LONG)
    short = palace.remember("A short note about tea.")
    kept = _parts_of(palace, embed_text(long.title, long.content))
    assert kept is not None and kept.shape == (4, model.config.dimensions)
    expected = model.embed(parts.split(embed_text(long.title, long.content)))
    assert np.abs((kept * expected).sum(axis=1) - 1.0).max() < 2e-3
    assert _parts_of(palace, embed_text(short.title, short.content)) is None


def test_recall_reads_a_passing_mention_in_a_long_text(make_palace: Callable[..., Palace]) -> None:
    model = HashingEmbedder()
    palace = make_palace(embedder=model)
    palace.add_messages([Message(LONG, role="user")], session="cooking")
    palace.remember("Brisket wants a long smoke.")
    hits = palace.recall("smoker for brisket", limit=5)
    long = next(h for h in hits if "smoker" in h.memory.content)
    # The sentence is closer to the query than the whole message is, and
    # the value is its cosine.
    query = model.embed(["smoker for brisket"])[0]
    pieces = model.embed(parts.split(embed_text(long.memory.title, long.memory.content)))
    assert long.stage_scores["part"] == pytest.approx(float((pieces @ query).max()), abs=0.01)
    assert long.stage_scores["part"] > 2 * long.stage_scores["dense"]
    short = next(h for h in hits if h.memory.content.startswith("Brisket"))
    assert short.stage_scores["part"] == short.stage_scores["dense"]


def test_the_background_upgrade_keeps_parts_too(make_palace: Callable[..., Palace]) -> None:
    model = SlowHashing()
    model.gate = threading.Event()
    palace = make_palace(embedder=model)
    messages = [Message(f"turn {i}. {LONG}", role="user") for i in range(BULK_TEXTS)]
    stored = palace.add_messages(messages, session="bulk")
    assert palace.pending_vectors() == BULK_TEXTS
    text = embed_text(stored[3].title, stored[3].content)
    assert _parts_of(palace, text) is None  # waiting with its vector
    model.gate.set()
    assert palace.wait_for_vectors(timeout=60) == 0
    kept = _parts_of(palace, text)
    assert kept is not None and kept.shape[0] == len(parts.split(text))


def test_reindex_gives_older_texts_their_parts(tmp_path: Path) -> None:
    path = tmp_path / "palace.db"
    with Palace(path, embedder=HashingEmbedder()) as palace:
        long = palace.remember(LONG)
        text = embed_text(long.title, long.content)
        assert _parts_of(palace, text) is not None
    # As a palace written before parts were kept.
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM part_vectors")
    with Palace(path, embedder=HashingEmbedder()) as palace:
        assert _parts_of(palace, text) is None
        assert palace.reindex() == 0  # every whole text has its vector
        kept = _parts_of(palace, text)
        assert kept is not None and kept.shape[0] == 4


def test_a_palace_copied_to_another_backend_keeps_its_parts(
    tmp_path: Path, postgres_url: str
) -> None:
    source = tmp_path / "a.db"
    with Palace(source, embedder=HashingEmbedder()) as palace:
        long = palace.remember(LONG)
        text = embed_text(long.title, long.content)
        before = _parts_of(palace, text)
    report = migrate(source, postgres_url)
    assert report.identical
    assert "part_vectors" in {t.table for t in report.tables}
    with Palace(postgres_url, embedder=HashingEmbedder()) as copy:
        after = _parts_of(copy, text)
    assert before is not None and after is not None and np.array_equal(before, after)


def test_recall_in_the_database_reads_the_parts_too(postgres_url: str) -> None:
    """PostgreSQL recalling in the database (pgvector): the parts stay out
    of the rows dense search ranks, and the re-ranker still reads them."""
    palace = Palace(postgres_url, embedder=HashingEmbedder(), settings=Settings(index="database"))
    try:
        palace.add_messages([Message(LONG, role="user")], session="cooking")
        palace.remember("Brisket wants a long smoke.")
        hits = palace.recall("smoker for brisket", limit=5)
        assert len(hits) == 2  # the parts are not memories
        long = next(h for h in hits if "smoker" in h.memory.content)
        assert long.stage_scores["part"] > 2 * long.stage_scores["dense"]
    finally:
        palace.close()


def test_a_whole_text_gets_the_same_vector_as_without_parts() -> None:
    """The bundled model quantises its activations per batch: the parts are
    embedded in a run of their own, so they do not move the whole's vector."""
    model = from_settings(Settings(embedder="local"))
    texts = {text_hash(t, 32): t for t in (LONG, "A short note about tea.")}
    batch = vector_writes.embedded_batch(model, "m", list(texts), texts)
    alone = model.embed(list(texts.values()))
    for row, key in enumerate(texts):
        assert batch.vectors[key] == vector_bytes.to_blob(alone[row])
    assert set(batch.parts) == {text_hash(LONG, 32)}


def test_parts_can_be_turned_off(make_palace: Callable[..., Palace]) -> None:
    settings = Settings.from_env({"MINDPALACE_PARTS": "off"})
    assert not settings.parts and Settings.from_env({}).parts
    palace = make_palace(embedder=HashingEmbedder(), settings=settings)
    long = palace.remember(LONG)
    assert _parts_of(palace, embed_text(long.title, long.content)) is None
    hit = palace.recall("smoker for brisket", limit=3)[0]
    assert hit.stage_scores["part"] == hit.stage_scores["dense"]  # the whole alone
    with pytest.raises(ConfigError, match="MINDPALACE_PARTS") as error:
        Settings.from_env({"MINDPALACE_PARTS": "maybe"})
    assert "on" in str(error.value) and "off" in str(error.value)
