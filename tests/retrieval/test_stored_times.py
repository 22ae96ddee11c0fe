"""The times a memory states, read when it is written and kept with it
(retrieval/time/stored.py): the kept form gives back what reading the text
gives, every write path keeps it, recall ranks the same with it as without
it, and a form of another reader is read again."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest

from bench.everyday import load, palace_files
from mindpalace import Palace, transcripts
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval.time import stored
from mindpalace.retrieval.time.temporal import TimeMention, find_times

from .test_temporal import REF, TABLE

UTC = timezone.utc
NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)

#: What ``find_times`` finds in the corpus below, by ``stored.VERSION``. A
#: change of what it finds must come with a new version (older palaces'
#: kept forms are then read again at recall) and its digest here; so must
#: a change of the corpus (the everyday palaces), with the same version.
DIGESTS = {"1": "ead325c8"}


def _corpus() -> list[tuple[str, datetime]]:
    """Texts with the time each was written: the phrase table of
    test_temporal, and every fact and turn of the everyday palaces."""
    texts = [(f"We talked about it {phrase}.", REF) for phrase, _, _ in TABLE]
    for path in palace_files():
        palace = load(path)
        texts += [(f.content, f.created) for f in palace.facts]
        texts += [(t.content, c.date) for c in palace.conversations for t in c.turns]
    return texts


def _form(mentions: list[TimeMention]) -> list[tuple[object, ...]]:
    return [
        (m.text, m.start, m.end, m.interval.start, m.interval.end, m.label, m.relative)
        for m in mentions
    ]


def test_the_kept_form_gives_back_what_reading_the_text_gives() -> None:
    corpus = _corpus()
    assert len(corpus) > 1000
    timed = 0
    for text, written in corpus:
        read = find_times(text, stored.reference(written))
        kept = stored.written(text, written)
        assert _form(stored.decode(kept, text) or []) == _form(read), text
        assert _form(stored.stated(text, written, kept)) == _form(read)
        timed += bool(read)
    assert timed > 300  # the corpus states times, in many forms


def test_a_change_of_what_the_reader_finds_comes_with_a_new_version() -> None:
    digest = hashlib.sha256()
    for text, written in _corpus():
        digest.update(stored.written(text, written).encode())
    found = digest.hexdigest()[:8]
    assert DIGESTS.get(stored.VERSION) == found, (
        f"find_times now finds {found}: if it finds or resolves anything differently,"
        " bump stored.VERSION and record the new digest in DIGESTS"
    )


def test_a_form_of_another_reader_or_none_is_read_again() -> None:
    text = "The audit moved to 3 December 2026."
    read = _form(find_times(text, NOW))
    assert read
    for kept in (None, "0:[]", "1:not json", "1:[[1,2]]", "1:[[0,4,null,null,0]]", "x"):
        assert stored.decode(kept, text) is None
        assert _form(stored.stated(text, NOW, kept)) == read
    assert stored.decode(stored.VERSION + ":", text) == []
    # Kept: what the write read, even where the text would read otherwise now.
    other = stored.written("We met yesterday.", NOW - timedelta(days=30))
    assert _form(stored.stated(text, NOW, other)) != read


def test_hostile_text_is_kept_as_data() -> None:
    text = 'On 3 May 2026 "},{]\\u0000 ⟨script⟩ 👩🏽‍💻 said: ]]] then 4 May 2026'
    kept = stored.written(text, NOW)
    decoded = stored.decode(kept, text)
    assert decoded is not None and [m.text for m in decoded] == ["On 3 May 2026", "4 May 2026"]
    assert json.loads(kept.split(":", 1)[1])[0][5] == "3 May 2026"


class _Clock:
    def __init__(self) -> None:
        self.at = NOW

    def __call__(self) -> datetime:
        return self.at


def _palace(path: Path, clock: _Clock | None = None) -> Palace:
    return Palace(
        path,
        agent_id="ann",
        embedder=HashingEmbedder(dimensions=32),
        clock=clock or _Clock(),
        settings=Settings(agent_id="ann", signals=False),
    )


def _kept(path: Path) -> dict[str, str | None]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT content, stated_times FROM memories").fetchall())
    finally:
        db.close()


def test_every_write_path_keeps_the_times_its_text_states(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with _palace(path) as p:
        first = p.remember("The beta shipped yesterday, after last week's freeze.")
        p.remember(
            "Kenji Sato joined on 2 November 2026.",
            created_at=datetime(2026, 11, 3, tzinfo=timezone(timedelta(hours=-8))),
        )
        p.remember_many([{"content": "The audit is on 3 December."}, {"content": "No time."}])
        p.add_messages(
            [
                Message(
                    content="see you next Friday",
                    role="user",
                    speaker="Ann",
                    session="s1",
                    created_at=datetime(2026, 10, 1, 18, tzinfo=UTC),
                )
            ]
        )
        p.update(first.id, content="The beta shipped on 25 November 2026.")
        out = io.StringIO()
        p.export_jsonl(out)
    with _palace(tmp_path / "q.db") as q:
        q.import_jsonl(io.StringIO(out.getvalue()).readlines())
    for db in (path, tmp_path / "q.db"):
        kept = _kept(db)
        assert len(kept) >= 5
        with _palace(db) as p:
            for memory in p.memories(limit=50, include_superseded=True):
                assert kept[memory.content] is not None, memory.content
                assert stored.decode(kept[memory.content], memory.content) is not None
                assert _form(stored.stated(memory.content, memory.created_at, None)) == _form(
                    stored.decode(kept[memory.content], memory.content) or []
                ), memory.content
    kept = _kept(path)
    assert stored.decode(kept["No time."], "No time.") == []
    # Read against the time each was written, not the time of the write.
    turn = next(text for text in kept if text.endswith("see you next Friday"))
    said = stored.decode(kept[turn], turn) or []
    assert [m.interval.start for m in said] == [datetime(2026, 10, 2, tzinfo=UTC)]
    joined = stored.decode(kept["Kenji Sato joined on 2 November 2026."], "") or []
    assert [m.label for m in joined] == ["2 November 2026"]


@pytest.mark.parametrize(
    "zone",
    [UTC, None, timezone(timedelta(hours=-8)), timezone(timedelta(hours=9))],
    ids=["utc", "naive", "minus-8", "plus-9"],
)
def test_a_turn_read_once_keeps_what_the_write_reads_and_its_date_context(
    tmp_path: Path, zone: timezone | None
) -> None:
    # Conversation ingest reads a turn's times once for its date context
    # and its kept form: each must be what reading it alone would give,
    # in every zone (late evening, where UTC is another day), for a long
    # turn cut into parts, and for a speaker named like a month.
    when = datetime(2026, 5, 8, 23, 30, tzinfo=zone)
    long = " ".join(
        f"On day {i} we met again, and the launch moved from yesterday to next Friday."
        for i in range(40)
    )
    turns = [
        ("May", "I went yesterday, and the audit is on 3 December."),
        ("Ann", "see you next Friday"),
        ("Ann", "Nothing with a time in it."),
        ("Kenji", long + " The review is the week after 12 June 2026."),
    ]
    path = tmp_path / "p.db"
    settings = Settings(agent_id="ann", signals=False, max_content_chars=1500)
    with Palace(
        path, agent_id="ann", embedder=HashingEmbedder(dimensions=32), settings=settings
    ) as p:
        p.add_messages(
            [
                Message(content=text, role="user", speaker=who, session="s1", created_at=when)
                for who, text in turns
            ]
        )
        stored_turns = p.memories(limit=50, categories="conversation")
    kept = _kept(path)
    assert len(stored_turns) >= len(turns) + 1  # the long turn is in parts
    for memory in stored_turns:
        content = memory.content
        assert kept[content] == stored.written(content, memory.created_at), content
        who = str(memory.metadata["speaker"])
        text = content[len(who) + 2 :]
        dates = transcripts.date_context(text, when)
        lines = (memory.context or "").splitlines()
        assert [line for line in lines if line.startswith("when: ")] == dates, content
    month = next(m for m in stored_turns if m.content.startswith("May: "))
    labels = (month.context or "").removeprefix("when: ").split("; ")
    assert "May 2026" not in labels and labels[-1] == "3 December 2025"  # not the speaker
    said = stored.decode(kept[month.content], month.content) or []
    assert [m.label for m in said][-1] == "3 December 2025"
    # Without a date context the turn still keeps what the write reads.
    bare = tmp_path / "bare.db"
    with Palace(
        bare, agent_id="ann", embedder=HashingEmbedder(dimensions=32), settings=settings
    ) as p:
        p.add_messages(
            [Message(content=turns[0][1], role="user", speaker="May", created_at=when)],
            dates=False,
        )
        [plain] = p.memories(limit=5, categories="conversation")
    assert "when: " not in (plain.context or "")
    assert _kept(bare)[plain.content] == stored.written(plain.content, plain.created_at)


def test_recall_ranks_the_same_with_the_kept_times_as_without(tmp_path: Path) -> None:
    texts = [
        "The beta launched on 18 November 2026.",
        "Kenji: report by Thursday.",
        "We chose PostgreSQL in October 2026 for the billing service.",
        "The offsite was last week, in Lisbon.",
        "Maria joined the team two weeks ago.",
        "The billing service moved to the new cluster yesterday.",
        "Nothing dated here about billing.",
    ]
    questions = [
        "what happened last week",
        "what did we decide in October 2026",
        "when did Maria join",
        "what happened on 18 November",
        "billing service since November",
    ]
    path = tmp_path / "p.db"
    with _palace(path) as p:
        for i, text in enumerate(texts):
            p.remember(text, created_at=NOW - timedelta(days=3 * i))
        assert all(v is not None for v in _kept(path).values())
        kept = {q: [(h.memory.id, h.score, h.gates) for h in p.recall(q)] for q in questions}
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE memories SET stated_times = NULL")
    db.close()
    with _palace(path) as p:
        read = {q: [(h.memory.id, h.score, h.gates) for h in p.recall(q)] for q in questions}
    assert kept == read
    assert any("time: " in gate for hits in kept.values() for _, _, gates in hits for gate in gates)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_backend_keeps_and_returns_the_form(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    target: str = (
        str(tmp_path / "p.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    )
    with Palace.open(target, agent_id="ann", embedder=HashingEmbedder(dimensions=32)) as p:
        m = p.remember("The review is on 9 December 2026.")
        got = p.get(m.id)
        assert got.stated_times == stored.written(m.content, got.created_at)
        assert got.stated_times is not None and "9 December 2026" in got.stated_times
        assert "stated_times" not in got.to_dict()
        hits = p.recall("what is on 9 December 2026")
        assert hits and hits[0].memory.id == m.id
        assert hits[0].memory.stated_times == got.stated_times
        # Kept again where missing or of another reader, on this backend too.
        store = cast(Any, p.engine.store)
        with store._mutate() as cur:
            store._exec(cur, "UPDATE memories SET stated_times = ?", ("0:[]",))
        form = stored.VERSION + ":"
        assert [r.seq for r in store.times_to_keep(form, after_seq=0, limit=5)] != []
        assert stored.keep_all(p.engine.store) == 1
        assert store.times_to_keep(form, after_seq=0, limit=5) == []
        assert p.get(m.id).stated_times == got.stated_times


def test_reindex_keeps_the_times_of_memories_written_before(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with _palace(path) as p:
        for i in range(7):
            p.remember(f"Release {i} went out {i + 1} days ago, before 1 December 2026.")
        p.remember("Nothing dated.")
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE memories SET stated_times = NULL WHERE content LIKE 'Release 1%'")
        db.execute("UPDATE memories SET stated_times = '0:[]' WHERE content LIKE 'Release 2%'")
        db.execute("UPDATE memories SET stated_times = NULL WHERE content = 'Nothing dated.'")
    db.close()
    with _palace(path) as p:
        rows = p.engine.store.times_to_keep(stored.VERSION + ":", after_seq=0, limit=100)
        assert sorted(r.content[:9] for r in rows) == ["Nothing d", "Release 1", "Release 2"]
        assert stored.keep_all(p.engine.store, batch=2) == 3
        assert p.engine.store.times_to_keep(stored.VERSION + ":", after_seq=0, limit=100) == []
        p.reindex()
    for content, kept in _kept(path).items():
        assert kept == stored.written(content, NOW), content
