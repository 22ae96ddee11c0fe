"""Conversation turns: reading files, ingesting them with context, recent."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mindpalace import Category, Palace, StoreKind, ValidationError
from mindpalace.conversations import Message, clock_time, spoken_date
from mindpalace.formats import read_conversation, read_messages

T0 = datetime(2026, 3, 2, 9, 5, tzinfo=timezone.utc)

# A small conversation written for these tests.
CHAT = [
    {"speaker": speaker, "content": text, "timestamp": f"2026-03-02T09:0{minute}:00Z"}
    for minute, (speaker, text) in enumerate(
        [
            ("Ines", "Where do we hold the design review?"),
            ("Tomas", "In the Lisbon office, room 4."),
            ("Ines", "thanks!"),
            ("Tomas", "Bring the latency charts."),
            ("Ines", "thanks!"),
        ],
        start=5,
    )
]


def _jsonl(tmp_path: Path, rows: list[dict[str, object]], name: str = "chat.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_spoken_date() -> None:
    assert spoken_date(datetime(2023, 5, 18, 13, 47)) == "1:47 pm on 18 May, 2023"
    assert spoken_date(datetime(2023, 5, 8, 0, 5)) == "12:05 am on 8 May, 2023"


@pytest.mark.parametrize(
    ("sent", "spoken", "clock"),
    [
        ("2026-03-02T09:30:00+01:00", "9:30 am on 2 March, 2026 (UTC+01:00)", "09:30 UTC+01:00"),
        ("2026-03-02T09:30:00-05:30", "9:30 am on 2 March, 2026 (UTC-05:30)", "09:30 UTC-05:30"),
        ("2026-03-02T09:30:00+00:00", "9:30 am on 2 March, 2026", "09:30 UTC"),
    ],
)
def test_times_people_read_name_their_zone(sent: str, spoken: str, clock: str) -> None:
    """A turn sent at 09:30+01:00 reads 9:30 in UTC+01:00, never a bare 8:30."""
    moment = datetime.fromisoformat(sent)
    assert spoken_date(moment) == spoken
    assert clock_time(moment) == f"2026-03-02 {clock}"


def test_a_turn_keeps_the_writers_zone_in_its_title(palace: Palace) -> None:
    sent = datetime.fromisoformat("2026-03-02T09:30:00+01:00")
    (turn,) = palace.add_messages([Message("Meet at the weir?", speaker="Ann", created_at=sent)])
    assert turn.title == "9:30 am on 2 March, 2026 (UTC+01:00)"
    assert turn.created_at == sent  # stored as the same instant (ISO 8601 with its offset)


def test_read_jsonl(tmp_path: Path) -> None:
    messages = read_messages(_jsonl(tmp_path, CHAT), session="review")
    assert len(messages) == 5
    assert messages[1] == Message(
        content="In the Lisbon office, room 4.",
        role="user",
        speaker="Tomas",
        session="review",
        created_at=datetime(2026, 3, 2, 9, 6, tzinfo=timezone.utc),
    )


def test_read_openai(tmp_path: Path) -> None:
    path = tmp_path / "thread.json"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {"role": "user", "content": [{"type": "text", "text": "Plan the sprint"}]},
                    {"role": "assistant", "content": "Here is a plan.", "name": "planner"},
                ]
            }
        )
    )
    loaded = read_conversation(path)
    messages = loaded.messages
    assert [m.who for m in messages] == ["user", "planner"]  # the system prompt left out
    assert loaded.ignored == 1
    assert messages[0].content == "Plan the sprint"
    assert {m.session for m in messages} == {"thread"}


def test_read_locomo_shape(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(
        json.dumps(
            {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:47 pm on 18 May, 2023",
                "session_1": [
                    {
                        "speaker": "Ana",
                        "dia_id": "D1:1",
                        "text": "Look at this!",
                        "blip_caption": "a photo of a red bike",
                    },
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice bike."},
                ],
                "session_2_date_time": "9:00 am on 20 May, 2023",
                "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Rode it today?"}],
                "qa": [],
            }
        )
    )
    messages = read_messages(path)
    assert [m.session for m in messages] == ["tiny:1", "tiny:1", "tiny:2"]
    assert messages[0].content == "Look at this! [shared a photo: a photo of a red bike]"
    assert messages[0].created_at == datetime(2023, 5, 18, 13, 47, tzinfo=timezone.utc)
    assert messages[2].metadata["dia_id"] == "D2:1"


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ('{"content": "ok"}\nnot json\n', "jsonl", "line 2 is not JSON"),
        ('{"role": "user"}\n', "jsonl", "line 1: the message has no content"),
        ('{"content": "x", "timestamp": "soon"}\n', "jsonl", "line 1: .*ISO 8601"),
        ('{"a": 1}', "openai", "list of messages"),
        ("{}", "yaml", "valid options: auto, jsonl, openai, locomo"),
    ],
)
def test_read_errors(tmp_path: Path, text: str, fmt: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValidationError, match=message):
        read_messages(path, format=fmt)


def test_add_messages_makes_contextual_turns(palace: Palace, tmp_path: Path) -> None:
    stored = palace.add_messages(read_messages(_jsonl(tmp_path, CHAT), session="review"))
    assert len(stored) == 5 and len({m.id for m in stored}) == 5  # "thanks!" twice: two turns
    first, second = stored[0], stored[1]
    assert second.content == "Tomas: In the Lisbon office, room 4."
    assert (second.category, second.store) == (Category.CONVERSATION, StoreKind.EPISODIC)
    assert second.session == "review"
    assert second.context == first.content
    assert first.context is None
    assert second.title == "9:06 am on 2 March, 2026"  # sent as 09:06Z: UTC, named nowhere
    assert second.metadata["speaker"] == "Tomas" and second.metadata["role"] == "user"


def test_context_continues_across_calls(palace: Palace) -> None:
    first = palace.add_messages(
        [Message("Where is the standup?", speaker="Ana", created_at=T0)], session="s"
    )
    second = palace.add_messages([Message("Room 2.", speaker="Ben", created_at=T0)], session="s")
    assert second[0].context == first[0].content


def test_reingest_is_idempotent(palace: Palace, tmp_path: Path) -> None:
    path = _jsonl(tmp_path, CHAT)
    palace.add_messages(read_messages(path, session="review"))
    again = palace.add_messages(read_messages(path, session="review"))
    assert palace.stats().memories == 5
    assert len(again) == 5


def test_the_answer_is_found_through_the_question_before_it(palace: Palace) -> None:
    palace.add_messages(
        [
            Message("Where do we hold the design review?", speaker="Ines", created_at=T0),
            Message("In the Lisbon office, room 4.", speaker="Tomas", created_at=T0),
            Message("Unrelated: the coffee machine is fixed.", speaker="Ana", created_at=T0),
        ],
        session="review",
    )
    hits = palace.recall("design review location")
    assert hits and "Lisbon" in " ".join(h.memory.content for h in hits[:2])


def test_recent(palace: Palace, tmp_path: Path) -> None:
    palace.add_messages(read_messages(_jsonl(tmp_path, CHAT), session="review"))
    palace.add_messages([Message("other chat", speaker="Zed", created_at=T0)], session="other")
    palace.remember("a plain fact, not a turn")
    last = palace.recent(2, session="review")
    assert [m.content for m in last] == ["Tomas: Bring the latency charts.", "Ines: thanks!"]
    assert len(palace.recent(50)) == 6
    with pytest.raises(ValidationError, match="1 to 1000"):
        palace.recent(0)


def test_cli_ingest_and_recent(tmp_path: Path, make_palace: Callable[..., Palace]) -> None:
    path = _jsonl(tmp_path, CHAT)
    db = tmp_path / "cli.db"
    env_cmd = [sys.executable, "-m", "mindpalace.cli", "--db", str(db)]
    out = subprocess.run(
        [*env_cmd, "ingest", str(path), "--session", "review"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["ingested"] == 5 and report["sessions"] == 1
    out = subprocess.run(
        [*env_cmd, "recent", "--n", "2"], capture_output=True, text=True, check=True
    )
    assert [m["content"] for m in json.loads(out.stdout)] == [
        "Tomas: Bring the latency charts.",
        "Ines: thanks!",
    ]
    bad = subprocess.run(
        [*env_cmd, "ingest", str(path), "--format", "xml"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "valid options: auto, jsonl, openai, locomo" in bad.stderr


def test_turns_survive_export_and_import(palace: Palace, tmp_path: Path) -> None:
    import io

    palace.add_messages(read_messages(_jsonl(tmp_path, CHAT), session="review"))
    out = io.StringIO()
    palace.export_jsonl(out)
    with Palace(tmp_path / "copy.db", settings=palace.settings) as copy:
        report = copy.import_jsonl(io.StringIO(out.getvalue()))
        assert (report.inserted, report.skipped) == (5, 0)  # both "thanks!" kept
        again = copy.add_messages(read_messages(_jsonl(tmp_path, CHAT), session="review"))
        assert len(again) == 5 and copy.stats().memories == 5


def test_turns_without_timestamps_reingest_idempotently(palace: Palace, tmp_path: Path) -> None:
    rows = [{"speaker": s, "content": c} for s, c in (("a", "hi"), ("b", "hi"), ("a", "bye"))]
    path = _jsonl(tmp_path, rows, "plain.jsonl")
    palace.add_messages(read_messages(path, session="s"))
    palace.add_messages(read_messages(path, session="s"))
    assert palace.stats().memories == 3


def test_search_messages_finds_the_exact_phrase_with_context(
    palace: Palace, tmp_path: Path
) -> None:
    palace.add_messages(read_messages(_jsonl(tmp_path, CHAT), session="review"))
    palace.remember("A fact mentioning the lisbon office, not a turn.")
    matches = palace.search_messages("LISBON office")
    assert len(matches) == 1
    match = matches[0]
    assert match.memory.content == "Tomas: In the Lisbon office, room 4."
    assert [m.content for m in match.before] == ["Ines: Where do we hold the design review?"]
    assert [m.content for m in match.after] == ["Ines: thanks!"]
    wide = palace.search_messages("lisbon office", around=3)[0]
    assert len(wide.before) == 1 and len(wide.after) == 3
    assert palace.search_messages("office room 5") == []
    newest_first = palace.search_messages("thanks!", around=0)
    assert [m.memory.created_at.minute for m in newest_first] == [9, 7]
    with pytest.raises(ValidationError, match="must not be empty"):
        palace.search_messages("  ")
    with pytest.raises(ValidationError, match="0 to 10"):
        palace.search_messages("x", around=11)


def test_a_turn_that_is_not_a_message_is_named_and_nothing_is_stored(palace: Palace) -> None:
    with pytest.raises(ValidationError, match=r"turn 2 of 2: a turn must be a Message .*not dict"):
        palace.add_messages([Message("Room 4."), {"role": "user", "content": "hi"}])  # type: ignore[list-item]
    assert palace.memories(limit=10) == []


def test_cli_search_messages(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, CHAT)
    base = [sys.executable, "-m", "mindpalace.cli", "--db", str(tmp_path / "c.db")]
    subprocess.run([*base, "ingest", str(path)], capture_output=True, check=True)
    out = subprocess.run(
        [*base, "search-messages", "latency charts"], capture_output=True, text=True, check=True
    )
    (match,) = json.loads(out.stdout)
    assert match["content"] == "Tomas: Bring the latency charts."
    assert [m["content"] for m in match["before"]] == ["Ines: thanks!"]


def test_a_long_previous_turn_gives_its_start_as_context(palace: Palace) -> None:
    """A reply's keyword context is the start of the turn before it: a long
    message's later words do not find the next turn too."""
    from mindpalace.transcripts import CONTEXT_CHARS

    long = "Here is the full itinerary for the Kyoto trip. " + "We walk a lot. " * 40
    long += "Finally we take the sleeper train to Sapporo."
    stored = palace.add_messages(
        [
            Message(long, speaker="Ana", created_at=T0),
            Message("Sounds great.", speaker="Ben", created_at=T0),
        ],
        session="trip",
    )
    assert stored[1].context == stored[0].content[:CONTEXT_CHARS].rstrip()
    assert "Kyoto" in (stored[1].context or "") and "Sapporo" not in (stored[1].context or "")
    hits = palace.recall("sleeper train to Sapporo", limit=1)
    assert hits[0].memory.id == stored[0].id
