"""Bad bytes and hostile shapes at the entry points of the Python API: a lone
surrogate, a megabyte query, metadata nested thousands deep or holding an
integer too long to print. Each is a ``ValidationError`` naming what is
wrong, and nothing is written, on every backend."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from mindpalace import Palace, ValidationError
from mindpalace.conversations import Message
from mindpalace.validation import MAX_METADATA_BYTES

BAD = "bad \ud800 text"  # a lone surrogate: what a JSON "\ud800" escape decodes to

Call = Callable[[Palace, str], object]

# (name, call with the bad text in one argument, the field the error names)
CALLS: list[tuple[str, Call, str]] = [
    ("remember content", lambda p, s: p.remember(s), "content"),
    ("remember title", lambda p, s: p.remember("ok", title=s), "title"),
    ("remember context", lambda p, s: p.remember("ok", context=s), "context"),
    ("remember session", lambda p, s: p.remember("ok", session=s), "session"),
    ("remember tags", lambda p, s: p.remember("ok", tags=[s]), "tags"),
    ("remember project", lambda p, s: p.remember("ok", project=s), "project"),
    ("remember channel", lambda p, s: p.remember("ok", channel=s), "channel"),
    (
        "remember group",
        lambda p, s: p.remember("ok", visibility="group", group=s),
        "group",
    ),
    ("remember metadata value", lambda p, s: p.remember("ok", metadata={"k": s}), "metadata"),
    ("remember metadata key", lambda p, s: p.remember("ok", metadata={s: 1}), "metadata"),
    (
        "remember_many",
        lambda p, s: p.remember_many([{"content": "fine"}, {"content": s}]),
        "content",
    ),
    ("recall", lambda p, s: p.recall(s), "query"),
    ("recall tags", lambda p, s: p.recall("x", tags=[s]), "tags"),
    ("recall projects", lambda p, s: p.recall("x", projects=[s]), "project"),
    ("search", lambda p, s: p.search(s), "query"),
    ("search project", lambda p, s: p.search("x", project=s), "project"),
    ("context", lambda p, s: p.context(s), "query"),
    ("what_do_i_know", lambda p, s: p.family.what_do_i_know(s), "topic"),
    ("why_did_we", lambda p, s: p.family.why_did_we(s), "query"),
    ("who_owns", lambda p, s: p.family.who_owns(s), "name"),
    ("depends_on", lambda p, s: p.family.depends_on(s), "name"),
    ("preflight", lambda p, s: p.family.preflight(s), "action"),
    ("search_messages", lambda p, s: p.search_messages(s), "phrase"),
    ("search_messages session", lambda p, s: p.search_messages("x", session=s), "session"),
    ("recent session", lambda p, s: p.recent(session=s), "session"),
    ("entities", lambda p, s: p.graph.entities(s), "query"),
    ("get", lambda p, s: p.get(s), "id"),
    ("forget", lambda p, s: p.forget(s), "id"),
    ("feedback", lambda p, s: p.feedback(s, useful=True), "id"),
    ("history", lambda p, s: p.graph.history(s), "id"),
    ("mentions", lambda p, s: p.graph.mentions(s), "id"),
    ("complete_issue", lambda p, s: p.personal.complete_issue(s), "id"),
    ("journal", lambda p, s: p.personal.journal(s), "content"),
    ("add_node", lambda p, s: p.personal.add_node(s, "a note"), "name"),
    ("add_issue", lambda p, s: p.personal.add_issue(s, project="home"), "content"),
    ("add_spec", lambda p, s: p.personal.add_spec("a spec", project=s), "project"),
    ("activate skills", lambda p, s: p.skills.activate(s), "query"),
    ("find skills", lambda p, s: p.skills.find([s]), "tags"),
    ("for_agent", lambda p, s: p.for_agent(s), "agent_id"),
    ("for_agent channel", lambda p, s: p.for_agent("ann", channel=s), "channel"),
    ("add_messages", lambda p, s: p.add_messages([Message(s)]), "content"),
    ("add_messages session", lambda p, s: p.add_messages([Message("hi", session=s)]), "session"),
]


def _snapshot(palace: Palace) -> list[tuple[str, str, float, int]]:
    every = palace.memories(limit=10_000, include_archived=True, include_superseded=True)
    return [(m.id, m.content, m.strength, m.access_count) for m in every]


@pytest.mark.parametrize(("name", "call", "field"), CALLS, ids=[c[0] for c in CALLS])
def test_a_lone_surrogate_is_a_validation_error(
    palace: Palace, name: str, call: Call, field: str
) -> None:
    palace.remember("We chose SQLite because many processes share one file")
    before = _snapshot(palace)
    with pytest.raises(ValidationError) as caught:
        call(palace, BAD)
    message = str(caught.value)
    assert field in message
    assert "lone surrogate (U+D800)" in message
    assert _snapshot(palace) == before


def test_an_undecodable_byte_is_named(palace: Palace) -> None:
    """A command-line argument with a byte that is not UTF-8 arrives as a
    surrogate escape (U+DC80-U+DCFF); the error names the byte."""
    with pytest.raises(ValidationError, match="byte 0xFF that is not UTF-8"):
        palace.remember(b"caf\xff".decode("utf-8", "surrogateescape"))
    assert _snapshot(palace) == []


def test_a_megabyte_entity_query_is_refused_before_sqlite(palace: Palace) -> None:
    palace.remember("Alice owns the Billing service")
    with pytest.raises(ValidationError, match="query has 1000000 characters; it must have 0-10000"):
        palace.graph.entities("a" * 1_000_000)
    assert isinstance(palace.graph.entities("!%_" * 3333), list)  # the longest, all escapes


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _listed(depth: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


def _cycle() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (_nested(100_000), "metadata is nested more than 32 deep"),
        ({"list": _listed(33)}, "32 deep"),
        (_cycle(), "nested more than 32 deep"),
        ({"n": 10**5000}, "JSON-serialisable: Exceeds the limit"),
    ],
    ids=["deep", "deep list", "cycle", "huge integer"],
)
def test_hostile_metadata_is_refused(palace: Palace, metadata: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        palace.remember("ok", metadata=metadata)
    with pytest.raises(ValidationError, match=message):
        palace.remember_many([{"content": "fine"}, {"content": "ok", "metadata": metadata}])
    assert _snapshot(palace) == []


def test_metadata_at_the_depth_limit_is_kept(palace: Palace) -> None:
    memory = palace.remember("ok", metadata=_nested(31))
    assert palace.get(memory.id).metadata == _nested(31)


def _sized(size: int) -> dict[str, str]:
    """Metadata of exactly ``size`` bytes of JSON."""
    return {"notes": "x" * (size - len(json.dumps({"notes": ""})))}


# Every way a caller's metadata is written (REST and MCP call these).
METADATA_WRITES: list[tuple[str, Callable[[Palace, Any], object]]] = [
    ("remember", lambda p, m: p.remember("ok", metadata=m)),
    (
        "remember_many",
        lambda p, m: p.remember_many([{"content": "fine"}, {"content": "ok", "metadata": m}]),
    ),
    ("update", lambda p, m: p.update(p.memories()[0].id, metadata=m)),
    ("add_messages", lambda p, m: p.add_messages([Message("hi", metadata=m)])),
    (
        "import_jsonl",
        lambda p, m: p.import_jsonl(
            [
                json.dumps(
                    {"id": "mem_x", "agent_id": "ann", "content": "x", "created_at": "2024-01-01"}
                    | {"metadata": m}
                )
            ]
        ),
    ),
]


@pytest.mark.parametrize(("name", "write"), METADATA_WRITES, ids=[w[0] for w in METADATA_WRITES])
def test_metadata_over_16_kib_is_refused_on_every_write(
    make_palace: Callable[..., Palace], name: str, write: Callable[[Palace, Any], object]
) -> None:
    palace = make_palace("ann")
    palace.remember("The harbour opens at dawn")
    before = _snapshot(palace)
    with pytest.raises(ValidationError) as caught:
        write(palace, _sized(MAX_METADATA_BYTES + 1))
    assert caught.value.field == "metadata"
    # (A turn's metadata holds a few fields of its own besides the caller's.)
    assert re.search(
        r"metadata is 16[34]\d\d bytes of JSON; a memory's metadata is at most 16 KiB"
        r" \(16384 bytes\)",
        str(caught.value),
    )
    assert _snapshot(palace) == before
    under = _sized(MAX_METADATA_BYTES - 200)
    write(palace, under)
    assert any(under.items() <= m.metadata.items() for m in palace.memories(limit=100))


def test_metadata_at_the_cap_is_kept_and_counted_in_bytes(palace: Palace) -> None:
    memory = palace.remember("ok", metadata=_sized(MAX_METADATA_BYTES))
    assert palace.get(memory.id).metadata == _sized(MAX_METADATA_BYTES)
    with pytest.raises(ValidationError, match="at most 16 KiB"):
        palace.remember("ok", metadata={"notes": "\u00e9" * 8200})  # 8,200 characters, 2 bytes each


def test_a_query_may_still_hold_nul(palace: Palace) -> None:
    palace.remember("the harbour at dawn")
    assert palace.graph.entities("harbour\x00") == []
    assert palace.search_messages("harbour\x00 dawn") == []
