"""Importing the files people bring (``Palace.import_file``), on both backends:
each format's fixture in tests/data/imports (written for these tests with
the real exports' structure), detection, forced formats, files in no format,
and turns or notes over the content limit stored as linked parts."""

from __future__ import annotations

import gc
import io
import json
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.errors import ValidationError
from mindpalace.formats import load, read_messages
from mindpalace.formats.chatgpt import read_chatgpt
from mindpalace.formats.claude import read_claude
from mindpalace.models import Memory
from mindpalace.splitting import Part, join_parts

DATA = Path(__file__).parent / "data" / "imports"
CHATGPT = DATA / "chatgpt_conversations.json"
CLAUDE = DATA / "claude_conversations.json"
MEM0 = DATA / "mem0_get_all.json"
NOTES = DATA / "notes"
UTC = timezone.utc
# A conversation's session: its title and the start of its id.
SOURDOUGH = "Sourdough starter schedule (6f3c0c1e)"
BIKE = "Bike commute route (6f3c0c1e)"


@pytest.fixture
def fast(make_palace: Callable[..., Palace]) -> Palace:
    """A palace with the deterministic test embedder (imports embed everything)."""
    return make_palace(settings=Settings(embedder="hashing"))


def _all(palace: Palace) -> list[Memory]:
    return sorted(palace.memories(limit=1000), key=lambda m: (m.created_at, m.id))


def _reassembled(parts: list[Memory], prefix: str = "") -> str:
    """A long text read back from its parts, by their metadata alone."""
    ordered = sorted(parts, key=lambda m: m.metadata["part"])
    return join_parts([Part(m.content.removeprefix(prefix), m.metadata["gap"]) for m in ordered])


# -- ChatGPT -------------------------------------------------------------------------


def test_chatgpt_export_keeps_the_current_branch(fast: Palace) -> None:
    summary = fast.import_file(CHATGPT)
    assert summary.to_dict() == {
        "format": "chatgpt",
        "inserted": 8,
        "skipped": 0,
        "split": 0,
        # system, custom instructions, a regenerated answer, a call to a tool
        # and its output; an edited question and its answer
        "ignored": 7,
        "sessions": 2,
    }
    turns = _all(fast)
    assert [m.content for m in turns] == [
        "user: How often should I feed a rye sourdough starter kept on the counter?",
        "assistant: At room temperature, feed it every 12 hours: discard all but 50 g, then add"
        " 50 g rye flour and 50 g water.",
        "user: [image]\n\nThis is my jar after 8 hours. Is that enough rise?",
        "assistant: Yes: it has roughly doubled, so it is ready to bake with.",
        "user: Which is safer for a bike commute, Elm Street or the river path?",
        "assistant: The river path: it is separated from traffic for most of its length.",
        "user: Is the river path lit at night in winter?",
        "assistant: Only the stretch between the two bridges has lamps; bring a strong front"
        " light.",
    ]
    assert [m.session for m in turns] == [SOURDOUGH] * 4 + [BIKE] * 4
    first = turns[0]
    assert first.created_at == datetime(2025, 11, 16, 10, 0, 10, tzinfo=UTC)
    assert first.category.value == "conversation" and first.store.value == "episodic"
    assert first.metadata["conversation_title"] == "Sourdough starter schedule"
    assert first.metadata["conversation_id"] == "6f3c0c1e-1111-4d2a-9e61-0c5b2d7a1001"
    assert "conversation_title" not in turns[1].metadata  # once a session
    assert "conversation_id" not in turns[1].metadata
    assert first.metadata["message_id"] == "aaa1-q1" and first.metadata["role"] == "user"
    # The turn before is its context, as for any ingested conversation.
    assert turns[1].context == turns[0].content
    # Importing again adds nothing.
    again = fast.import_file(CHATGPT)
    assert (again.inserted, again.skipped) == (0, 8)
    assert len(_all(fast)) == 8


def test_chatgpt_without_current_node_follows_the_latest_answers(tmp_path: Path) -> None:
    data = json.loads(CHATGPT.read_text(encoding="utf-8"))
    for conversation in data:
        del conversation["current_node"]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    turns = read_messages(path)
    assert [t.metadata["message_id"] for t in turns if t.session == BIKE] == [
        "bbb2-q1",
        "bbb2-a1",
        "bbb2-q2",
        "bbb2-a2",
    ]


# -- Claude --------------------------------------------------------------------------


def test_claude_export(fast: Palace) -> None:
    summary = fast.import_file(CLAUDE)
    # tool calls with no text, and a question edited away on another branch
    assert (summary.format, summary.inserted, summary.ignored, summary.sessions) == (
        "claude",
        8,
        2,
        2,
    )
    turns = _all(fast)
    assert turns[0].content == (
        "user: Here are my greenhouse notes. How often should the tomatoes be watered?\n\n"
        "[attached greenhouse-notes.txt]\nTomatoes: 6 plants in grow bags. Peppers: 4 pots."
        " The bags dry out by mid-afternoon in sun."
    )
    assert turns[1].content == (
        "assistant: Water the tomato grow bags every morning, and again mid-afternoon on hot days."
    )  # the reasoning block is left out
    assert turns[2].content == "user: [attached greenhouse-photo.jpg]"
    assert turns[0].created_at == datetime(2025, 11, 19, 8, 0, 5, tzinfo=UTC)
    assert turns[0].metadata["conversation_title"] == "Greenhouse watering plan"
    assert "conversation_title" not in turns[1].metadata  # once a session
    trip = [m.content for m in turns if m.session == "Trip packing list (3b1e2f70)"]
    assert "user: And food?" not in trip
    assert trip[-2:] == [
        "user: Which of those can I rent at the hut instead?",
        "assistant: Most huts rent via ferrata kits and poles; bring your own rain shell.",
    ]


def claude_chain(count: int) -> list[dict[str, object]]:
    """One conversation of ``count`` messages, each naming the one before
    as its parent (as every message of a real export does)."""
    messages: list[dict[str, object]] = []
    parent = "00000000-0000-4000-8000-000000000000"
    for i in range(count):
        messages.append(
            {
                "uuid": f"m{i}",
                "parent_message_uuid": parent,
                "sender": "human" if i % 2 == 0 else "assistant",
                "text": f"message {i}",
                "created_at": "2025-11-19T08:00:05Z",
            }
        )
        parent = f"m{i}"
    return [{"uuid": "chain", "name": "A long chat", "chat_messages": messages}]


def test_one_conversation_reads_the_same_from_either_export() -> None:
    """Both exports go through one walk: the same conversation, written as
    ChatGPT and as Claude write it, gives the same turns (session, role,
    time, ids, first-turn metadata) and the same count of ignored messages."""
    said = [  # (id, role as the walk gives it, text, seconds since 1970)
        ("m1", "user", "Which train gets me to Lyon by noon?", 1_700_000_000),
        ("m2", "system", "You are a travel agent.", 1_700_000_001),
        ("m3", "assistant", "The 9:04 from Paris.", 1_700_000_002),
        ("m4", "assistant", "   ", 1_700_000_003),
    ]
    nodes: dict[str, object] = {"root": {"message": None, "parent": None}}
    parent = "root"
    for key, role, text, at in said:
        content = {"content_type": "text", "parts": [text]}
        message = {"id": key, "author": {"role": role}, "create_time": at, "content": content}
        nodes[key] = {"message": message, "parent": parent}
        parent = key
    chatgpt = {"id": "c0ffee12-trip", "title": "Lyon trip", "mapping": nodes, "current_node": "m4"}
    claude = {
        "uuid": "c0ffee12-trip",
        "name": "Lyon trip",
        "chat_messages": [
            {
                "uuid": key,
                "sender": "human" if role == "user" else role,
                "text": text,
                "created_at": datetime.fromtimestamp(at, UTC).isoformat(),
            }
            for key, role, text, at in said
        ],
    }
    from_chatgpt = read_chatgpt([chatgpt], name="a", file="conversations.json")
    from_claude = read_claude([claude], name="b", file="conversations.json")
    assert from_chatgpt == from_claude
    turns, ignored = from_claude
    assert ignored == 2  # the system prompt and the empty message
    assert [(t.role, t.session, t.metadata) for t in turns] == [
        (
            "user",
            "Lyon trip (c0ffee12)",
            {
                "message_id": "m1",
                "conversation_id": "c0ffee12-trip",
                "conversation_title": "Lyon trip",
            },
        ),
        ("assistant", "Lyon trip (c0ffee12)", {"message_id": "m3"}),
    ]


def test_a_claude_chain_of_100000_messages_reads_in_linear_time() -> None:
    """The branch was followed with a list (``in`` on it at every step):
    20,000 messages took 2.3 s and 100,000 took 48 s (21x for 5x the
    messages). Read in linear time, ten times the messages take about ten
    times as long (13-16x here), where the old walk took about eighty. The bound
    is relative, so a loaded machine slows both; the collector is held off
    while timing (its full passes grow with everything alive, which makes
    any allocating loop look worse than linear on a busy machine)."""

    def timed(data: list[dict[str, object]], count: int) -> float:
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            turns, ignored = read_claude(data, name="chain", file="conversations.json")
            took = time.perf_counter() - start
        finally:
            gc.enable()
        assert (len(turns), ignored) == (count, 0)
        assert turns[0].content == "message 0" and turns[-1].content == f"message {count - 1}"
        return took

    chains = {count: claude_chain(count) for count in (10_000, 100_000)}
    took: dict[int, list[float]] = {count: [] for count in chains}
    for _ in range(4):  # interleaved, the fastest of each: a load that comes and goes hits both
        for count, data in chains.items():
            took[count].append(timed(data, count))
    small, large = min(took[10_000]), min(took[100_000])
    assert large <= 40 * small, (small, large)


def chatgpt_chain(count: int, title: str) -> list[dict[str, object]]:
    """One ChatGPT conversation of ``count`` turns on one branch."""
    nodes: dict[str, object] = {"root": {"id": "root", "message": None, "parent": None}}
    parent = "root"
    for i in range(count):
        nodes[f"n{i}"] = {
            "id": f"n{i}",
            "parent": parent,
            "message": {
                "id": f"n{i}",
                "author": {"role": "user" if i % 2 == 0 else "assistant"},
                "create_time": 1_763_287_210 + i,
                "content": {"content_type": "text", "parts": [f"turn {i} about the garden"]},
            },
        }
        parent = f"n{i}"
    return [
        {
            "id": "conv-1",
            "title": title,
            "create_time": 1_763_287_200,
            "mapping": nodes,
            "current_node": parent,
        }
    ]


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_a_conversation_title_is_kept_once(fast: Palace, tmp_path: Path, fmt: str) -> None:
    """The title was copied into every turn's metadata: 300 turns under an
    8 KiB title stored 2.4 MB of titles. It is on the session's first turn
    now (a session has no record of its own)."""
    title = "Garden plan " + "x" * 8000
    if fmt == "chatgpt":
        data: list[dict[str, object]] = chatgpt_chain(300, title)
    else:
        data = claude_chain(300)
        data[0]["name"] = title
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert fast.import_file(path).inserted == 300
    turns = _all(fast)
    titled = [m for m in turns if "conversation_title" in m.metadata]
    assert [m.id for m in titled] == [turns[0].id]
    assert titled[0].metadata["conversation_title"] == title
    stored = sum(len(json.dumps(m.metadata)) for m in turns)
    assert stored < len(title) + 300 * 200, stored


def test_a_title_over_the_metadata_cap_is_refused_by_name(fast: Palace, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_chain(3, "t" * 20_000)), encoding="utf-8")
    with pytest.raises(ValidationError, match="a memory's metadata is at most 16 KiB"):
        fast.import_file(path)
    assert _all(fast) == []


# -- mem0 ----------------------------------------------------------------------------


def test_mem0_get_all(fast: Palace) -> None:
    summary = fast.import_file(MEM0)
    assert (summary.format, summary.inserted, summary.ignored) == ("mem0", 3, 2)  # 2 relations
    by_text = {m.content: m for m in _all(fast)}
    oat = by_text["Prefers oat milk in coffee"]
    assert oat.tags == ("food", "preferences")
    assert oat.created_at == datetime(2025, 10, 2, 16, 15, 22, 417210, tzinfo=UTC)
    assert oat.source.value == "import" and oat.agent_id == fast.scope.agent_id
    assert oat.metadata["source"] == "chat"
    assert oat.metadata["mem0"]["user_id"] == "mira"
    assert oat.metadata["mem0"]["id"] == "8d2c1c6e-3e0b-4c55-b0a3-000000000001"
    marathon = by_text["Is training for a half marathon in April"]
    assert marathon.metadata["mem0"]["agent_id"] == "coach"
    assert by_text["Allergic to hazelnuts"].metadata["mem0"]["run_id"] == "onboarding-2"
    assert fast.import_file(MEM0).skipped == 3


def test_mem0_older_output_is_a_bare_list(fast: Palace, tmp_path: Path) -> None:
    items = json.loads(MEM0.read_text(encoding="utf-8"))["results"]
    path = tmp_path / "memories.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    assert fast.import_file(path).to_dict()["inserted"] == 3


# -- Markdown ------------------------------------------------------------------------


def test_a_folder_of_notes_is_a_memory_per_note(fast: Palace) -> None:
    summary = fast.import_file(NOTES)
    assert (summary.format, summary.inserted, summary.ignored) == ("markdown", 3, 1)  # empty.md
    notes = {m.title: m for m in _all(fast)}
    assert set(notes) == {"Deploying the shop", "Alice Moreau", "Garden journal"}
    deploy = notes["Deploying the shop"]
    assert deploy.content.startswith("Deploy with `make release`")
    assert deploy.tags == ("ops", "release") and deploy.category.value == "rule"
    assert deploy.created_at == datetime(2025, 9, 14, tzinfo=UTC)
    assert deploy.metadata == {"path": "deploy.md", "front_matter": {"owner": "dana"}}
    alice = notes["Alice Moreau"]  # no title: its first heading, taken out of the text
    assert alice.content == "Alice reviews pull requests in the morning and prefers green tea."
    assert alice.tags == ("team", "people")
    assert alice.metadata == {"path": "team/alice.md", "front_matter": {"aliases": ["Ali"]}}
    assert alice.category.value == "fact" and alice.source.value == "import"
    assert "# not a heading" in notes["Garden journal"].content


def test_notes_by_section(fast: Palace) -> None:
    summary = fast.import_file(NOTES, sections=True)
    assert summary.inserted == 6
    by_title = {m.title: m.content for m in _all(fast)}
    assert by_title["Garden journal"] == "Notes from the allotment."
    assert by_title["Garden journal / Spring"] == "Sowed broad beans under fleece."
    assert by_title["Garden journal / Spring / Problems"] == "Slugs ate the lettuce seedlings."
    summer = by_title["Garden journal / Summer"]
    assert "# not a heading" in summer and summer.endswith("Harvested the first courgettes.")
    assert "Garden journal / Autumn" not in by_title  # a heading with nothing under it
    section = next(m for m in _all(fast) if m.title == "Garden journal / Spring / Problems")
    assert section.metadata["section"] == "Spring / Problems"


def test_one_note_and_front_matter_shapes(fast: Palace, tmp_path: Path) -> None:
    note = tmp_path / "Quick idea.markdown"
    note.write_text(
        "---\ntags: idea later\ncreated: 2025-01-02T03:04:05Z\nstatus: 'draft' # a comment\n"
        "---\nBuild a bird feeder from the old gutter.\n",
        encoding="utf-8",
    )
    assert fast.import_file(note).inserted == 1
    (memory,) = _all(fast)
    assert memory.title == "Quick idea"  # the file's name
    assert memory.tags == ("idea", "later")
    assert memory.created_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert memory.metadata["front_matter"] == {"status": "draft"}


def test_a_bad_note_names_its_file(fast: Palace, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Fine note.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("---\ncategory: gossip\n---\nHmm.\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"b\.md.*valid options: decision"):
        fast.import_file(tmp_path)
    (tmp_path / "b.md").write_text("---\ndate: last week\n---\nHmm.\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"b\.md front matter: .*ISO 8601"):
        fast.import_file(tmp_path)
    (tmp_path / "b.md").write_bytes(b"caf\xe9\n")
    with pytest.raises(ValidationError, match=r"b\.md line 1 is not UTF-8"):
        fast.import_file(tmp_path)
    assert _all(fast) == []  # one transaction: the good note is not written either


# -- detection ------------------------------------------------------------------------


def test_every_format_is_detected(fast: Palace, tmp_path: Path) -> None:
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text('{"speaker": "Ana", "content": "hi"}\n{"content": "hello"}\n')
    openai = tmp_path / "thread.json"
    openai.write_text(json.dumps({"messages": [{"role": "user", "content": "plan it"}]}))
    locomo = tmp_path / "tiny.json"
    locomo.write_text(
        json.dumps(
            {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:47 pm on 18 May, 2023",
                "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "Look!"}],
            }
        )
    )
    fast.remember("The shop opens at nine.")
    export = tmp_path / "backup.jsonl"
    with export.open("w", encoding="utf-8") as out:
        fast.export_jsonl(out)
    found = {
        path.name: load(path).format
        for path in (jsonl, openai, locomo, export, CHATGPT, CLAUDE, MEM0, NOTES)
    }
    assert found == {
        "chat.jsonl": "jsonl",
        "thread.json": "openai",
        "tiny.json": "locomo",
        "backup.jsonl": "export",
        CHATGPT.name: "chatgpt",
        CLAUDE.name: "claude",
        MEM0.name: "mem0",
        "notes": "markdown",
    }
    assert fast.import_file(export).to_dict()["format"] == "export"


@pytest.mark.parametrize(
    "text",
    [
        "name,email\nAna,ana@example.org\n",
        "key: value\n",
        '{"title": "a JSON object of no known shape"}\n',
        "[1, 2, 3]",
        "   \n",
    ],
    ids=["csv", "yaml", "json object", "json list", "blank"],
)
def test_a_file_in_no_known_format_names_the_formats(
    fast: Palace, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "mystery.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        fast.import_file(path)
    message = str(caught.value)
    if text.strip():
        for name in ("export", "jsonl", "openai", "locomo", "chatgpt", "claude", "mem0"):
            assert name in message
        assert "markdown" in message
    else:
        assert "empty" in message
    assert _all(fast) == []


def test_a_forced_format_reads_only_that(fast: Palace) -> None:
    with pytest.raises(ValidationError, match="message 1: the message has no content"):
        fast.import_file(CHATGPT, format="openai")
    with pytest.raises(ValidationError, match="valid options: auto, jsonl, openai, locomo"):
        fast.import_file(CHATGPT, format="chatgtp")
    with pytest.raises(ValidationError, match="not a folder or a Markdown"):
        fast.import_file(MEM0, format="markdown")
    assert fast.import_file(CLAUDE, format="claude").inserted == 8


def test_a_conversation_reader_refuses_memories() -> None:
    with pytest.raises(ValidationError, match="mem0 memories, not a conversation: import it"):
        read_messages(MEM0)
    with pytest.raises(ValidationError, match="valid options: auto, jsonl, openai, locomo"):
        read_messages(MEM0, format="mem0")


def test_hostile_shapes_are_named(fast: Palace, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    cases = [
        ([{"mapping": {"n": "not a node"}}], "node n: a node must be an object"),
        ([{"mapping": []}], None),  # not a ChatGPT export at all: no format
        (
            [{"mapping": {"n": {"message": {"author": {"role": "user"}, "create_time": 1e30,
              "content": {"content_type": "text", "parts": ["x"]}}, "parent": None}}}],
            "not a time we read",
        ),
        ([{"chat_messages": [{"sender": "human", "text": "x", "created_at": "soon"}]}], "ISO"),
        ({"results": [{"memory": ["not", "text"]}]}, "'memory' must be text"),
    ]  # fmt: skip
    for data, fragment in cases:
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(ValidationError, match=fragment or "none of the formats we read"):
            fast.import_file(path)
    # A parent cycle ends the branch instead of looping.
    loop = {"a": {"message": None, "parent": "b"}, "b": {"message": None, "parent": "a"}}
    path.write_text(json.dumps([{"mapping": loop, "current_node": "a"}]), encoding="utf-8")
    assert fast.import_file(path).inserted == 0
    assert _all(fast) == []


# -- long text ------------------------------------------------------------------------


def _long_text(chars: int) -> str:
    paragraph = " ".join(
        f"Sentence {i} of the pasted design document explains one more detail." for i in range(40)
    )
    text = "\n\n".join(paragraph for _ in range(chars // len(paragraph) + 1))
    return text[:chars].rstrip()


def test_a_200000_character_turn_is_stored_as_linked_parts(fast: Palace, tmp_path: Path) -> None:
    long = _long_text(200_000)
    rows = [
        {"timestamp": "2026-03-02T09:00:00Z", "speaker": "Ana", "content": "Here is the spec."},
        {"timestamp": "2026-03-02T09:01:00Z", "speaker": "Ana", "content": long},
        {"timestamp": "2026-03-02T09:05:00Z", "speaker": "Ben", "content": "Reading it now."},
    ]
    path = tmp_path / "design.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    summary = fast.import_file(path)
    assert summary.split == 1 and summary.inserted > 3
    memories = _all(fast)
    parts = [m for m in memories if "part" in m.metadata]
    limit = fast.settings.max_content_chars
    assert len(parts) == summary.inserted - 2 == parts[0].metadata["parts"] >= 4
    assert all(len(m.content) <= limit for m in parts)
    assert {(m.session, m.created_at) for m in parts} == {
        ("design", datetime(2026, 3, 2, 9, 1, tzinfo=UTC))
    }
    assert {m.metadata["part_of"] for m in parts} == {"design|2026-03-02T09:01:00+00:00"}
    assert all(m.content.startswith("Ana: ") for m in parts)
    # Cut at paragraph or sentence ends, never inside a word.
    assert all(m.content.endswith(".") for m in parts[:-1])
    assert _reassembled(parts, "Ana: ") == long
    # The turn after it has (the start of) the last part as its context.
    after = next(m for m in memories if m.content == "Ben: Reading it now.")
    last = max(parts, key=lambda m: m.metadata["part"])
    assert after.context and last.content.startswith(after.context)
    assert fast.import_file(path).inserted == 0  # again: nothing new


def test_parts_survive_export_and_import(fast: Palace, tmp_path: Path) -> None:
    long = _long_text(120_000)
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"speaker": "Ana", "content": long}) + "\n", encoding="utf-8")
    fast.add_messages(read_messages(path))
    first = io.StringIO()
    fast.export_jsonl(first)
    with Palace(tmp_path / "copy.db", settings=Settings(embedder="hashing")) as copy:
        assert copy.import_file(_saved(tmp_path, first)).inserted == 3
        again = io.StringIO()
        copy.export_jsonl(again)
        parts = _all(copy)
    assert again.getvalue().split("\n")[1:] == first.getvalue().split("\n")[1:]
    assert _reassembled(parts, "Ana: ") == long


def _saved(tmp_path: Path, export: io.StringIO) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text(export.getvalue(), encoding="utf-8")
    return path


def test_a_long_note_and_a_long_attachment_are_split(fast: Palace, tmp_path: Path) -> None:
    long = _long_text(130_000)
    (tmp_path / "spec.md").write_text(f"---\ntags: [spec]\n---\n{long}\n", encoding="utf-8")
    summary = fast.import_file(tmp_path / "spec.md")
    assert (summary.inserted, summary.split) == (3, 1)
    parts = _all(fast)
    assert {m.title for m in parts} == {"spec"} and all(m.tags == ("spec",) for m in parts)
    assert [m.metadata["part"] for m in sorted(parts, key=lambda m: m.metadata["part"])] == [
        1,
        2,
        3,
    ]
    assert {m.metadata["part_of"] for m in parts} == {"spec.md"}
    assert _reassembled(parts) == long
    data = json.loads(CLAUDE.read_text(encoding="utf-8"))
    data[0]["chat_messages"][0]["attachments"][0]["extracted_content"] = long
    (tmp_path / "conversations.json").write_text(json.dumps(data), encoding="utf-8")
    claude = fast.import_file(tmp_path / "conversations.json")
    assert claude.split == 1 and claude.inserted == 8 + 2


def test_text_past_a_hundred_parts_is_refused(fast: Palace, tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps({"content": "word " * 1_100_000}) + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="more than 100 parts"):
        fast.import_file(path)
    assert _all(fast) == []


# -- any JSON at all ------------------------------------------------------------------

_KEYS = (
    "mapping message parent children current_node author role content content_type parts"
    " create_time recipient metadata chat_messages sender text uuid created_at attachments"
    " files extracted_content file_name results memory categories messages session_1"
    " speaker_a speaker parent_message_uuid current_leaf_message_uuid id title name type"
).split()
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=6), inner, max_size=6)
    ),
    max_leaves=40,
)
_SHAPES = [
    lambda v: v,
    lambda v: [{"mapping": v, "current_node": "n"}],
    lambda v: [{"mapping": {"n": v}, "current_node": "n"}],
    lambda v: [
        {
            "mapping": {
                "n": {
                    "message": {
                        "author": {"role": v},
                        "recipient": v,
                        "create_time": v,
                        "content": {"content_type": v, "parts": v},
                    }
                }
            },
            "current_node": "n",
        }
    ],
    lambda v: [
        {
            "mapping": {"n": {"message": {"author": {"role": "user"}, "content": v}}},
            "current_node": "n",
        }
    ],
    lambda v: [{"chat_messages": [v]}],
    lambda v: [{"chat_messages": [{"sender": v, "content": v, "text": v, "files": v}]}],
    lambda v: {"results": [v]},
    lambda v: {"messages": [v]},
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_JSON, shape=st.sampled_from(range(len(_SHAPES))))
def test_any_json_is_read_or_refused_by_name(value: object, shape: int) -> None:
    """Whatever a file holds, reading it gives turns or notes of the right
    types, or a ValidationError: never another exception."""
    text = json.dumps(_SHAPES[shape](value))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversations.json"
        path.write_text(text, encoding="utf-8")
        try:
            loaded = load(path)
        except ValidationError:
            return
    for turn in loaded.messages:
        assert isinstance(turn.content, str) and isinstance(turn.role, str)
        assert turn.created_at is None or turn.created_at.tzinfo is not None
    for note in loaded.notes:
        assert isinstance(note.content, str) and all(isinstance(t, str) for t in note.tags)
