"""Importing the files people have, on both backends: ChatGPT's and Claude's
data exports as downloaded (a zip with the vendors' entry names, pictures
and all) and unzipped (a folder, or a folder in a folder), zips refused
safely (no conversations.json, a zip bomb, a damaged one), OpenAI chats
with tool calls, system prompts left out by every importer, entries
numbered from 1, sessions named by their conversation's title, and mem0
memories imported for the agents their ``user_id`` names."""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.formats import exports, load, read_conversation
from mindpalace.formats.exports import MAX_ENTRY_BYTES
from mindpalace.models import Memory

DATA = Path(__file__).parent / "data" / "imports"
CHATGPT = DATA / "chatgpt_conversations.json"
CLAUDE = DATA / "claude_conversations.json"
MEM0 = DATA / "mem0_get_all.json"
# Bytes that are not UTF-8 (0xB6 is what the zip's own bytes first tripped on).
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xb6\xff\xfe" + bytes(range(256))
# What sits beside conversations.json in each vendor's export.
BESIDE = {
    "chatgpt": {
        "chat.html": b"<html><body><h1>ChatGPT Data Export</h1></body></html>",
        "user.json": b'{"id": "user-abc", "email": "mira@example.org"}',
        "message_feedback.json": b"[]",
        "shared_conversations.json": b"[]",
        "file-4Xz9PqLmN2-IMG_2041.png": PNG,
        "dalle-generations/file-7Hq2-a-bike.webp": b"RIFF\xb6\x00\x00\x00WEBPVP8 " + PNG,
    },
    "claude": {
        "users.json": b'[{"uuid": "u-1", "full_name": "Mira", "email_address": "m@example.org"}]',
        "projects.json": b'[{"uuid": "p-1", "name": "Garden", "docs": []}]',
    },
}
SOURCE = {"chatgpt": CHATGPT, "claude": CLAUDE}


@pytest.fixture
def fast(make_palace: Callable[..., Palace]) -> Palace:
    """A palace with the deterministic test embedder (imports embed everything)."""
    return make_palace(settings=Settings(embedder="hashing"))


def _all(palace: Palace) -> list[Memory]:
    return sorted(palace.memories(limit=1000), key=lambda m: (m.created_at, m.id))


def vendor_zip(path: Path, vendor: str, *, folder: str = "", data: bytes | None = None) -> Path:
    """An export shaped as ``vendor`` ships it: conversations.json beside the
    vendor's other files (under ``folder``, where a tool wrapped them)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(folder + "conversations.json", data or SOURCE[vendor].read_bytes())
        for name, content in BESIDE[vendor].items():
            archive.writestr(folder + name, content)
    return path


def vendor_folder(root: Path, vendor: str) -> Path:
    """An export unzipped into ``root``."""
    root.mkdir(parents=True)
    (root / "conversations.json").write_bytes(SOURCE[vendor].read_bytes())
    for name, content in BESIDE[vendor].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return root


# -- exports as downloaded and unzipped -----------------------------------------------


@pytest.mark.parametrize("vendor", ["chatgpt", "claude"])
def test_an_export_as_downloaded(fast: Palace, tmp_path: Path, vendor: str) -> None:
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    archive = vendor_zip(downloads / f"{vendor}-export.zip", vendor)
    summary = fast.import_file(archive)
    bare = load(SOURCE[vendor])
    assert (summary.format, summary.inserted, summary.ignored, summary.sessions) == (
        vendor,
        len(bare.messages),
        bare.ignored,
        2,
    )
    assert [p.name for p in downloads.iterdir()] == [archive.name]  # nothing extracted
    # The same conversations as the bare file: importing that adds nothing.
    assert fast.import_file(SOURCE[vendor]).inserted == 0


@pytest.mark.parametrize("vendor", ["chatgpt", "claude"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["flat", "wrapped"])
def test_an_export_unzipped(tmp_path: Path, vendor: str, wrapped: bool) -> None:
    root = tmp_path / "export"
    vendor_folder(root / "data-2025-11-20" if wrapped else root, vendor)
    if wrapped:
        (root / "__MACOSX").mkdir()  # what a Mac's unzip leaves beside it
    loaded = load(root)
    assert loaded.format == vendor
    assert loaded.messages == load(SOURCE[vendor]).messages
    where = "export/data-2025-11-20/conversations.json" if wrapped else "export/conversations.json"
    assert loaded.messages[0].origin is not None and loaded.messages[0].origin.startswith(where)


def test_a_zip_wrapped_in_a_folder_and_forced_formats(fast: Palace, tmp_path: Path) -> None:
    archive = vendor_zip(tmp_path / "export.zip", "claude", folder="claude-export/")
    assert load(archive).format == "claude"
    assert load(archive, format="claude").format == "claude"
    with pytest.raises(ValidationError, match="conversation 1: a conversation has a 'mapping'"):
        load(archive, format="chatgpt")
    with pytest.raises(ValidationError, match=r"export.zip is a zip archive: .*--format auto"):
        load(archive, format="jsonl")
    assert read_conversation(archive).format == "claude"  # ingest reads it too


def test_an_export_of_no_conversations(tmp_path: Path) -> None:
    for vendor in ("chatgpt", "claude"):
        archive = vendor_zip(tmp_path / f"{vendor}.zip", vendor, data=b"[]")
        loaded = load(archive)
        assert (loaded.format, loaded.messages) == (vendor, ())


def test_notes_folders_are_still_notes(tmp_path: Path) -> None:
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "idea.md").write_text("Plant garlic in October.\n", encoding="utf-8")
    assert load(notes).format == "markdown"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "photo.png").write_bytes(PNG)
    with pytest.raises(ValidationError) as caught:
        load(empty)
    assert "no Markdown notes" in str(caught.value) and "conversations.json" in str(caught.value)
    with pytest.raises(ValidationError, match=r"holds no conversations\.json"):
        load(empty, format="chatgpt")


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        (
            {"chat.html": b"<html></html>", "photo.png": PNG},
            r"photos.zip is a zip archive with no conversations.json: we read a ChatGPT or"
            r" Claude data export",
        ),
        (
            {"a/conversations.json": b"[]", "b/conversations.json": b"[]"},
            r"photos.zip holds several exports \(a/conversations.json, b/conversations.json\)",
        ),
        (
            {"conversations.json": b'{"title": "not a chat"}'},
            "neither a ChatGPT export .* nor a Claude one",
        ),
        ({"conversations.json": b"\xb6\xb6"}, "conversations.json line 1 is not UTF-8"),
        ({"deep/er/conversations.json": b"[]"}, "no conversations.json"),
    ],
    ids=["no conversations", "two exports", "another shape", "not utf-8", "too deep"],
)
def test_a_zip_that_is_no_export_is_refused_by_name(
    fast: Palace, tmp_path: Path, entries: dict[str, bytes], fragment: str
) -> None:
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for name, content in entries.items():
            out.writestr(name, content)
    with pytest.raises(ValidationError, match=fragment):
        fast.import_file(archive)
    assert _all(fast) == []


def _declare_size(archive: Path, size: int) -> None:
    """Rewrite the uncompressed size the archive's central directory
    declares for its one entry (what a zip bomb's header may say)."""
    data = bytearray(archive.read_bytes())
    at = data.rindex(b"PK\x01\x02")
    data[at + 24 : at + 28] = struct.pack("<I", size)
    archive.write_bytes(bytes(data))


def test_a_zip_bomb_is_refused_unread(fast: Palace, tmp_path: Path) -> None:
    (tmp_path / "Downloads").mkdir()
    archive = tmp_path / "Downloads" / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("conversations.json", b"[" + b" " * 5_000_000 + b"]")
    assert archive.stat().st_size < 20_000  # 5 MB of spaces squeeze to a few kilobytes
    _declare_size(archive, MAX_ENTRY_BYTES + 1)
    with pytest.raises(ValidationError) as caught:
        fast.import_file(archive)
    assert str(caught.value) == (
        "bomb.zip/conversations.json is 1,073,741,825 bytes uncompressed, over the"
        " 1,073,741,824 we read from an archive (a damaged archive or a zip bomb): unzip it"
        " and import the file"
    )
    assert [p.name for p in archive.parent.iterdir()] == ["bomb.zip"]  # nothing extracted
    # A header that understates the size: only that much is read, and the
    # checksum tells the archive is damaged.
    _declare_size(archive, 1000)
    with pytest.raises(ValidationError, match=r"bomb\.zip is a damaged zip archive"):
        fast.import_file(archive)
    assert _all(fast) == []


def test_a_zip_is_read_a_chunk_at_a_time_under_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes actually read are counted as well as the declared size."""
    archive = vendor_zip(tmp_path / "export.zip", "chatgpt")
    size = len(CHATGPT.read_bytes())
    monkeypatch.setattr(exports, "MAX_ENTRY_BYTES", size - 1)
    with pytest.raises(ValidationError, match=f"is {size:,} bytes uncompressed, over the"):
        load(archive)
    monkeypatch.setattr(exports, "MAX_ENTRY_BYTES", size)
    assert load(archive).format == "chatgpt"
    lines = list(exports._capped(_Chunks([b"ab\ncd", b"\n", b"e" * 5, b"f\ng"]), "x"))
    assert lines == [b"ab\n", b"cd\n", b"eeeeef\n", b"g"]
    monkeypatch.setattr(exports, "MAX_ENTRY_BYTES", 8)
    with pytest.raises(ValidationError, match="x is 11 bytes uncompressed"):
        list(exports._capped(_Chunks([b"ab\ncd", b"\n", b"e" * 5]), "x"))


class _Chunks:
    """A stream that gives its chunks as they are (a header can lie)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    def read(self, size: int = -1) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""


def test_a_damaged_zip_is_refused_by_name(fast: Palace, tmp_path: Path) -> None:
    archive = vendor_zip(tmp_path / "export.zip", "claude")
    data = archive.read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[:200] + data[-22:])  # the directory, no data
    with pytest.raises(ValidationError, match=r"cut\.zip is a damaged zip archive"):
        fast.import_file(tmp_path / "cut.zip")
    locked = bytearray(vendor_zip(tmp_path / "locked.zip", "claude").read_bytes())
    at = locked.index(b"PK\x01\x02")  # conversations.json's entry: marked encrypted
    locked[at + 8] |= 1
    (tmp_path / "locked.zip").write_bytes(bytes(locked))
    with pytest.raises(ValidationError, match=r"locked\.zip is a zip archive we cannot read"):
        fast.import_file(tmp_path / "locked.zip")
    assert _all(fast) == []


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


# -- mem0: memories for the agents their user_id names -----------------------------------


def _mem0(tmp_path: Path, users: list[str | None]) -> Path:
    items = [
        {"id": f"m{i}", "memory": f"Likes trail number {i}", "created_at": "2025-10-02T09:15:22Z"}
        | ({"user_id": user} if user is not None else {})
        for i, user in enumerate(users)
    ]
    path = tmp_path / "memories.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    return path


def test_mem0_user_ids_become_agents(make_palace: Callable[..., Palace], tmp_path: Path) -> None:
    admin = make_palace(management=True, settings=Settings(embedder="hashing"))
    path = _mem0(tmp_path, ["mira", "sam", None, "mira"])
    summary = admin.import_file(path, agent_from="user_id")
    assert summary.inserted == 4
    owners = {m.content: m.agent_id for m in admin.memories(limit=100)}
    assert owners == {
        "Likes trail number 0": "mira",
        "Likes trail number 1": "sam",
        "Likes trail number 2": "default",  # no user_id: the importing agent's
        "Likes trail number 3": "mira",
    }
    mira = make_palace("mira", settings=Settings(agent_id="mira", embedder="hashing"))
    assert sorted(m.content for m in mira.memories(limit=100)) == [
        "Likes trail number 0",
        "Likes trail number 3",
    ]
    assert all(m.metadata["mem0"]["user_id"] == "mira" for m in mira.memories(limit=100))
    assert admin.import_file(path, agent_from="user_id").skipped == 4
    by_agent = admin.import_file(MEM0, agent_from="agent_id")
    assert by_agent.inserted == 3
    coach = [m for m in admin.memories(limit=100) if m.agent_id == "coach"]
    assert [m.content for m in coach] == ["Is training for a half marathon in April"]


def test_mem0_without_agent_from_keeps_user_ids_in_metadata(fast: Palace) -> None:
    fast.import_file(MEM0)
    memories = _all(fast)
    assert {m.agent_id for m in memories} == {"default"}
    assert {m.metadata["mem0"]["user_id"] for m in memories} == {"mira"}


def test_mem0_agent_mapping_errors(
    make_palace: Callable[..., Palace], fast: Palace, tmp_path: Path
) -> None:
    admin = make_palace(management=True, settings=Settings(embedder="hashing"))
    with pytest.raises(ValidationError, match="valid options: user_id, agent_id"):
        admin.import_file(MEM0, agent_from="user")
    bad = _mem0(tmp_path, ["mira", "Mira Lopez"])
    with pytest.raises(ValidationError) as caught:
        admin.import_file(bad, agent_from="user_id")
    assert str(caught.value).startswith(
        "memories.json result 2: user_id is not an agent id: user_id must be 1-128 ASCII"
        " letters, digits, '_', '.', ':', '@', '+' or '-'"
    )
    with pytest.raises(ValidationError, match="maps mem0 output's ids to agents; this is a claude"):
        admin.import_file(CLAUDE, agent_from="user_id")
    # Another agent's memories need the management view.
    with pytest.raises(PermissionDenied, match=r"it is for agent 'mira'.*--all-agents"):
        fast.import_file(_mem0(tmp_path, ["default", "mira"]), agent_from="user_id")
    assert _all(fast) == [] and admin.memories(limit=10) == []
    # Its own agent's only: no management needed.
    assert fast.import_file(_mem0(tmp_path, ["default", None]), agent_from="user_id").inserted == 2
