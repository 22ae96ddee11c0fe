"""What the four integrations share, checked across all of them: bad budgets,
agent ids and session ids are refused when an integration is built, with the
same error naming what is valid."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mindpalace import Palace
from mindpalace.embed import HashingEmbedder
from mindpalace.errors import ValidationError
from mindpalace.integrations.common import (
    TOOL_FAILED,
    MemoryTools,
    SessionLog,
    Turn,
    scoped_palace,
)

# (module, builder, positional arguments after the palace)
BUDGETED = [
    ("langchain", "memory_tools", ()),
    ("langchain", "context_runnable", ()),
    ("pydantic_ai", "MindPalaceToolset", ()),
    ("pydantic_ai", "memory_instructions", ()),
    ("openai_agents", "memory_tools", ()),
    ("openai_agents", "memory_instructions", ("You plan trips.",)),
    ("llama_index", "memory_tools", ()),
    ("llama_index", "MindPalaceMemoryBlock", ()),
]
SCOPED = [
    *BUDGETED,
    ("langchain", "MindPalaceChatMessageHistory", ("chat-1",)),
    ("langchain", "MindPalaceRetriever", ()),
    ("openai_agents", "MindPalaceSession", ("chat-1",)),
    ("llama_index", "MindPalaceChatStore", ()),
    ("llama_index", "MindPalaceRetriever", ()),
]
SESSIONS = [
    ("langchain", "MindPalaceChatMessageHistory"),
    ("openai_agents", "MindPalaceSession"),
]
PACKAGES = {
    "langchain": "langchain_core",
    "pydantic_ai": "pydantic_ai",
    "openai_agents": "agents",
    "llama_index": "llama_index.core",
}


@pytest.fixture(scope="module")
def checked() -> Iterator[Palace]:
    """One SQLite palace for the checks that refuse before any storage."""
    with Palace(":memory:", embedder=HashingEmbedder()) as opened:
        yield opened


def builder(module: str, name: str) -> Callable[..., Any]:
    pytest.importorskip(PACKAGES[module], reason=f"needs the {module} extra")
    found: Callable[..., Any] = getattr(
        importlib.import_module(f"mindpalace.integrations.{module}"), name
    )
    return found


@pytest.mark.parametrize(("module", "name", "args"), BUDGETED)
@pytest.mark.parametrize("budget", [255, 8193, 0, "1024", True])
def test_every_budget_is_checked_when_built(
    checked: Palace, module: str, name: str, args: tuple[Any, ...], budget: Any
) -> None:
    build = builder(module, name)
    with pytest.raises(ValidationError, match="max_tokens must be an integer from 256 to 8192"):
        build(checked, *args, max_tokens=budget)
    build(checked, *args, max_tokens=256)
    build(checked, *args, max_tokens=8192)


@pytest.mark.parametrize(("module", "name", "args"), SCOPED)
@pytest.mark.parametrize("agent_id", ["", " ", "two words", "<b>"])
def test_every_scope_is_checked_when_built(
    checked: Palace, module: str, name: str, args: tuple[Any, ...], agent_id: str
) -> None:
    build = builder(module, name)
    with pytest.raises(ValidationError, match="agent_id must"):
        build(checked, *args, agent_id=agent_id)


@pytest.mark.parametrize(("module", "name"), SESSIONS)
@pytest.mark.parametrize("session", ["", "   ", "x" * 129, "a\nb"])
def test_every_session_id_is_checked_when_built(
    checked: Palace, module: str, name: str, session: str
) -> None:
    build = builder(module, name)
    with pytest.raises(ValidationError, match="session_id must"):
        build(checked, session)


@pytest.mark.parametrize("module", ["langchain", "llama_index"])
@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"k": 0}, "k must be an integer from 1 to 100"),
        ({"k": 101}, "k must be an integer from 1 to 100"),
        ({"mode": "gossip"}, "conversation"),
        ({"categories": ["fact", "gossip"]}, "decision"),
    ],
)
def test_every_retriever_option_is_checked_when_built(
    checked: Palace, module: str, options: dict[str, Any], named: str
) -> None:
    build = builder(module, "MindPalaceRetriever")
    with pytest.raises(ValidationError, match=named):
        build(checked, **options)


def test_scope_arguments_make_a_view_and_keep_the_rest(checked: Palace) -> None:
    assert scoped_palace(checked) is checked
    team = checked.for_agent("ann", groups=["team"], channel="support")
    view = scoped_palace(team, agent_id="bob")
    assert view.scope.agent_id == "bob"
    assert view.scope.groups == team.scope.groups
    assert view.scope.channel == "support"
    assert scoped_palace(team, channel="sales").scope.agent_id == "ann"


def test_a_memory_tools_budget_is_checked(checked: Palace) -> None:
    with pytest.raises(ValidationError, match="from 256 to 8192"):
        MemoryTools(checked, max_tokens=100)


def test_replacing_a_session_archives_the_old_turns_after_the_new_are_in(
    palace: Palace,
) -> None:
    log = SessionLog(palace, "s")
    old = log.append([Turn(role="user", text="old one"), Turn(role="assistant", text="old two")])
    added = log.replace([Turn(role="user", text="new")])
    assert [m.id for m in log.turns()] == [m.id for m in added]
    found = {hit.memory.id for hit in palace.recall("old one two", categories="conversation")}
    assert not found & {m.id for m in old}
    archived = palace.memories(categories="conversation", include_archived=True)
    assert len(archived) == 3


class Told(Exception):
    """What a framework hands its model (a test's own, as a framework's)."""


def test_tool_functions_report_failures_the_framework_s_way(palace: Palace) -> None:
    store, recall = MemoryTools(palace).functions(bad_arguments=Told, failure=RuntimeError)
    assert (store.name, recall.name) == ("memory_store", "memory_recall")
    with pytest.raises(Told, match="valid options: decision") as told:
        store.function("Dana runs", category="gossip")
    assert isinstance(told.value.__cause__, ValidationError)
    saved = asyncio.run(store.coroutine("Dana runs the Berlin marathon", tags=["running"]))
    assert saved.startswith("Remembered as ")
    assert "Berlin marathon" in recall.function("Berlin marathon")
    assert asyncio.run(recall.coroutine("Berlin marathon")) == recall.function("Berlin marathon")


def test_tool_functions_raise_as_they_are_unless_told(reopen: Callable[[], Palace]) -> None:
    closed = reopen()
    tools = MemoryTools(closed)
    plain_store, _ = tools.functions()
    _, opaque_recall = tools.functions(failure=RuntimeError)
    with pytest.raises(ValidationError, match="category"):
        plain_store.function("x", category="gossip")
    closed.close()
    with pytest.raises(RuntimeError, match=TOOL_FAILED) as failed:
        opaque_recall.function("anything")
    assert failed.value.__cause__ is not None  # the original, for the developer
    with pytest.raises(Exception) as raw:  # whatever a closed palace raises
        plain_store.function("anything")
    assert str(raw.value) != TOOL_FAILED  # the original, not the model's opaque line


def test_a_framework_message_becomes_a_turn_with_its_tool_plumbing_noted() -> None:
    called = Turn.of("assistant", " Let me look. ", {"k": 1}, calls=["memory_recall", "web"])
    assert called.text == "Let me look.\n[called memory_recall, web]"
    assert Turn.of("tool", "the whole context block", {}, result_of="memory_recall").text == (
        "[result of memory_recall]"
    )
    assert Turn.of("assistant", "  ", {}, speaker="bot") == Turn(
        role="assistant", text="(empty message)", payload={}, speaker="bot"
    )
