"""Pydantic AI: the toolset's tools and its context instructions, with
Pydantic AI's own FunctionModel and TestModel, on every backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("pydantic_ai", reason="needs pydantic-ai-slim: mindpalace[pydantic-ai]")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mindpalace import Palace
from mindpalace.integrations.pydantic_ai import MindPalaceToolset, memory_instructions
from mindpalace.skills.tokens import default_counter


def scripted(calls: list[ToolCallPart], answer: str, seen: list[ModelRequest]) -> FunctionModel:
    """A model that makes ``calls`` one per request, then answers; it keeps
    every request it was sent in ``seen``."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        seen.append(request)
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < len(calls):
            return ModelResponse(parts=[calls[made]])
        return ModelResponse(parts=[TextPart(answer)])

    return FunctionModel(respond)


def tool_returns(seen: list[ModelRequest]) -> list[str]:
    return [
        str(part.content)
        for request in seen
        for part in request.parts
        if isinstance(part, ToolReturnPart)
    ]


def test_a_later_run_gets_what_an_earlier_one_stored(
    palace: Palace, reopen: Callable[[], Palace]
) -> None:
    seen: list[ModelRequest] = []
    remember = ToolCallPart(
        "memory_store", {"content": "Ann is allergic to peanuts", "category": "fact"}
    )
    agent = Agent(
        scripted([remember], "Noted.", seen),
        toolsets=[MindPalaceToolset(palace, agent_id="chef")],
    )
    assert agent.run_sync("Ann is allergic to peanuts, keep that in mind.").output == "Noted."
    assert tool_returns(seen)[0].startswith("Remembered as mem_")

    # A later run (another process): the fact is in the instructions, and
    # the recall tool finds it too.
    seen = []
    recall = ToolCallPart("memory_recall", {"query": "Ann allergy"})
    agent = Agent(
        scripted([recall], "No peanuts for Ann.", seen),
        toolsets=[MindPalaceToolset(reopen(), agent_id="chef", max_tokens=256)],
    )
    result = agent.run_sync("Can Ann eat the peanut sauce?")
    assert result.output == "No peanuts for Ann."
    instructions = seen[0].instructions or ""
    assert "│ Ann is allergic to peanuts" in instructions
    block = instructions.split("\n", 1)[1]
    assert default_counter().count(block) <= 256
    [answer] = tool_returns(seen)
    assert "│ Ann is allergic to peanuts" in answer
    assert default_counter().count(answer) <= 256


def test_instructions_alone_and_scope(palace: Palace) -> None:
    palace.for_agent("chef").remember("The walk-in fridge is set to 3 degrees")
    seen: list[ModelRequest] = []
    for agent_id, expected in (("chef", True), ("waiter", False)):
        agent = Agent(
            scripted([], "ok", seen),
            instructions=["Be brief.", memory_instructions(palace, agent_id=agent_id)],
        )
        agent.run_sync("What temperature is the walk-in fridge?")
        assert ("walk-in fridge is set to 3 degrees" in (seen[-1].instructions or "")) is expected
        assert "Be brief." in (seen[-1].instructions or "")


def test_a_bad_argument_is_retried_by_the_model(palace: Palace) -> None:
    seen: list[ModelRequest] = []
    bad = ToolCallPart("memory_store", {"content": "x", "category": "gossip"})
    agent = Agent(scripted([bad], "sorry", seen), toolsets=[MindPalaceToolset(palace)])
    agent.run_sync("remember x")
    [answer] = [p for r in seen for p in r.parts if isinstance(p, ToolReturnPart)]
    assert answer.outcome == "retried"
    assert "valid options: decision" in str(answer.content)
    assert palace.memories() == []


def test_test_model_calls_every_tool(palace: Palace) -> None:
    agent = Agent(TestModel(), toolsets=[MindPalaceToolset(palace, context=False)])
    result = agent.run_sync("anything")
    assert "memory_store" in result.output and "memory_recall" in result.output
    assert len(palace.memories()) == 1
