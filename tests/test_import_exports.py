"""What the chat readers keep, on both backends: OpenAI chats with tool
calls, system prompts left out by every importer, entries numbered from 1,
and sessions named by their conversation's title."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.formats import load
from mindpalace.models import Memory

DATA = Path(__file__).parent / "data" / "imports"
CHATGPT = DATA / "chatgpt_conversations.json"
CLAUDE = DATA / "claude_conversations.json"


@pytest.fixture
def fast(make_palace: Callable[..., Palace]) -> Palace:
    """A palace with the deterministic test embedder (imports embed everything)."""
    return make_palace(settings=Settings(embedder="hashing"))


def _all(palace: Palace) -> list[Memory]:
    return sorted(palace.memories(limit=1000), key=lambda m: (m.created_at, m.id))


# -- OpenAI chats with tool calls; system prompts --------------------------------------

WEATHER = [
    {"role": "system", "content": "You are a travel assistant. Use tools for live data."},
    {"role": "user", "content": "What's the weather in Paris and in Lyon?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9aXk",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_7bQm",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Lyon", "unit": "c"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_9aXk", "content": '{"temp_c": 14, "sky": "rain"}'},
    {"role": "tool", "tool_call_id": "call_7bQm", "content": '{"temp_c": 17, "sky": "sun"}'},
    {"role": "assistant", "content": "Paris: 14 °C and rain. Lyon: 17 °C and sunny."},
]


@pytest.mark.parametrize("fmt", ["openai", "jsonl"])
def test_tool_calls_are_turns_and_system_prompts_are_left_out(
    fast: Palace, tmp_path: Path, fmt: str
) -> None:
    if fmt == "openai":
        path = tmp_path / "trip.json"
        path.write_text(json.dumps({"messages": WEATHER}), encoding="utf-8")
    else:
        path = tmp_path / "trip.jsonl"
        path.write_text("\n".join(json.dumps(m) for m in WEATHER) + "\n", encoding="utf-8")
    summary = fast.import_file(path)
    assert (summary.format, summary.inserted, summary.ignored) == (fmt, 5, 1)  # the system prompt
    turns = _all(fast)
    assert [m.content for m in turns] == [
        "user: What's the weather in Paris and in Lyon?",
        'assistant: called get_weather({"city": "Paris"})\n'
        'called get_weather({"city": "Lyon", "unit": "c"})',
        'get_weather: {"temp_c": 14, "sky": "rain"}',
        'get_weather: {"temp_c": 17, "sky": "sun"}',
        "assistant: Paris: 14 °C and rain. Lyon: 17 °C and sunny.",
    ]
    assert [m.metadata["role"] for m in turns] == ["user", "assistant", "tool", "tool", "assistant"]
    assert turns[1].metadata["tool_call_ids"] == ["call_9aXk", "call_7bQm"]
    assert turns[2].metadata["tool_call_id"] == "call_9aXk"
    assert not any("travel assistant" in m.content for m in turns)


def test_tool_shapes_text_refusals_and_unknown_tools(tmp_path: Path) -> None:
    messages = [
        {"role": "developer", "content": "Answer in French."},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": "not json"}}],
        },
        {"role": "assistant", "content": None, "function_call": {"name": "lookup"}},
        {"role": "function", "name": "lookup", "content": "found it"},
        {"role": "tool", "tool_call_id": "c-unknown", "content": "orphan result"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    ]
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    loaded = load(path)
    assert loaded.ignored == 1
    assert [(m.who, m.content) for m in loaded.messages] == [
        ("assistant", "Let me look.\ncalled search(not json)"),
        ("assistant", "called lookup()"),
        ("lookup", "found it"),
        ("tool", "orphan result"),
        ("assistant", "I can't help with that."),
    ]


def test_every_importer_leaves_system_prompts_out(tmp_path: Path) -> None:
    """One rule: ChatGPT's system message and Claude's (were it to have one)
    are counted as ignored, as OpenAI's and JSON lines' are."""
    claude = json.loads(CLAUDE.read_text(encoding="utf-8"))
    messages = claude[0]["chat_messages"]
    messages.insert(0, {**messages[0], "uuid": "sys", "sender": "system", "text": "Be brief."})
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(claude), encoding="utf-8")
    loaded = load(path)
    assert loaded.ignored == load(CLAUDE).ignored + 1
    assert all("Be brief." not in m.content for m in loaded.messages)
    chatgpt = load(CHATGPT)
    assert all(m.role in ("user", "assistant") for m in chatgpt.messages)
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text('{"role": "system", "content": "x"}\n{"content": "hi"}\n', encoding="utf-8")
    assert (load(jsonl).ignored, len(load(jsonl).messages)) == (1, 1)


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [
        (
            "chat.json",
            [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "checking"},
                {"role": "assistant", "content": None},
            ],
            "chat.json message 3: the message has no content",
        ),
        (
            "chat.json",
            [{"role": "assistant", "content": None, "tool_calls": [{"type": "function"}]}],
            r"chat.json message 1: a tool call is \{'function'",
        ),
        (
            "conversations.json",
            [{"uuid": "c", "chat_messages": [{"sender": "human", "text": "x"}, "oops"]}],
            "conversation 1 message 2: a message must be an object",
        ),
        (
            "conversations.json",
            [{"mapping": {}}, {"mapping": {"n": "not a node"}}],
            "conversations.json conversation 2 node n",
        ),
        ("memories.json", {"results": [{"memory": "ok"}, {"memory": 3}]}, "result 2: 'memory'"),
        (
            "tiny.json",
            {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1_date_time": "1:47 pm on 18 May, 2023",
                "session_1": [{"speaker": "A", "text": "hi"}, {"text": "no speaker"}],
            },
            "tiny.json session_1 turn 2: a turn is an object",
        ),
    ],
    ids=["openai", "tool call", "claude", "chatgpt", "mem0", "locomo"],
)
def test_entries_are_numbered_from_one(
    tmp_path: Path, name: str, data: object, fragment: str
) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValidationError, match=fragment):
        load(path)


# -- sessions named by their conversation's title -----------------------------------------


def test_sessions_are_named_by_title(fast: Palace) -> None:
    fast.import_file(CHATGPT)
    fast.import_file(CLAUDE)
    shown = {s.session for s in fast.timeline.sessions()}  # what the inspector lists
    assert shown == {
        "Sourdough starter schedule (6f3c0c1e)",
        "Bike commute route (6f3c0c1e)",
        "Greenhouse watering plan (3b1e2f70)",
        "Trip packing list (3b1e2f70)",
    }
    recent = fast.recent(2, session="Trip packing list (3b1e2f70)")
    assert recent[-1].content.startswith("assistant: Most huts rent via ferrata kits")
    found = fast.search_messages("river path lit")
    assert [m.memory.session for m in found] == ["Bike commute route (6f3c0c1e)"]


def test_a_renamed_conversation_imported_again_adds_nothing(fast: Palace, tmp_path: Path) -> None:
    """A turn is the same turn by its conversation's id and its time, not by
    the session name the title makes."""
    fast.import_file(CHATGPT)
    data = json.loads(CHATGPT.read_text(encoding="utf-8"))
    data[1]["title"] = "Winter cycling"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    again = fast.import_file(path)
    assert (again.inserted, again.skipped) == (0, 8)


def test_a_palace_of_uuid_sessions_gets_no_copies(
    make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    """Turns imported before sessions were titled (their session the id)
    are the same turns: importing the export again adds nothing."""
    fast = make_palace(settings=Settings(embedder="hashing"))
    old = [
        Message(
            content=m.content,
            role=m.role,
            session=m.conversation_id,
            created_at=m.created_at,
            metadata=m.metadata,
        )
        for m in load(CLAUDE).messages
    ]
    fast.add_messages(old)
    assert fast.import_file(CLAUDE).inserted == 0


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_titles_fit_a_session_name(fast: Palace, tmp_path: Path, fmt: str) -> None:
    long = "Plan\nfor   the " + "very " * 60 + "long trip"
    if fmt == "chatgpt":
        data = json.loads(CHATGPT.read_text(encoding="utf-8"))
        data[0]["title"], data[1]["title"] = long, "Same"
        data.append({**data[1], "id": "6f3c0c1e-3333", "conversation_id": "6f3c0c1e-3333"})
        short, other = "6f3c0c1e", "6f3c0c1e-3333"
    else:
        data = json.loads(CLAUDE.read_text(encoding="utf-8"))
        data[0]["name"], data[1]["name"] = long, "Same"
        data.append({**data[1], "uuid": "3b1e2f70-0003"})
        short, other = "3b1e2f70", "3b1e2f70-0003"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fast.import_file(path)
    sessions = {m.session for m in _all(fast)}
    first = next(s for s in sessions if s.startswith("Plan"))
    assert len(first) <= 128 and first.startswith("Plan for the very very")
    assert first.endswith(f" very\u2026 ({short})")
    # Two conversations of one title and the same start of an id: the
    # second shows its whole id.
    assert sorted(s for s in sessions if s.startswith("Same")) == [
        f"Same ({short})",
        f"Same ({other})",
    ]
