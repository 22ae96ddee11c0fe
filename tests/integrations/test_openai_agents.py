"""OpenAI Agents SDK: the session, the function tools and the dynamic
instructions, run by the SDK's Runner with a scripted offline Model, on
every backend."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs openai-agents: mindpalace[openai-agents]")

from agents import Agent, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from mindpalace import Palace
from mindpalace.integrations.openai_agents import (
    MindPalaceSession,
    memory_instructions,
    memory_tools,
)
from mindpalace.skills.tokens import default_counter

set_tracing_disabled(True)  # offline: no trace export


def message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        role="assistant",
        status="completed",
        type="message",
    )


def call(name: str, **arguments: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(arguments), call_id=f"call_{name}", name=name, type="function_call"
    )


@dataclass
class ScriptedModel(Model):
    """An offline Model: answers each request with the next scripted output,
    keeping what it was sent (instructions and input items)."""

    outputs: list[Any]
    seen: list[tuple[str | None, list[Any]]] = field(default_factory=list)

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.seen.append((system_instructions, items))
        return ModelResponse(output=[self.outputs.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def tool_outputs(model: ScriptedModel) -> list[str]:
    return [
        str(item.get("output"))
        for _, items in model.seen
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_a_later_session_recalls_what_an_earlier_one_stored(
    palace: Palace, reopen: Callable[[], Palace]
) -> None:
    model = ScriptedModel(
        [call("memory_store", content="Priya's flight lands at 18:40 on Friday"), message("Noted.")]
    )
    agent = Agent("travel", model=model, tools=memory_tools(palace, agent_id="travel"))
    session = MindPalaceSession(palace, "monday", agent_id="travel")
    result = Runner.run_sync(agent, "Priya lands Friday at 18:40, remember it.", session=session)
    assert result.final_output == "Noted."
    assert tool_outputs(model)[0].startswith("Remembered as mem_")

    # Later, another process, another session: recall finds it, and the
    # dynamic instructions carry it.
    later = reopen()
    model = ScriptedModel(
        [call("memory_recall", query="Priya flight"), message("18:40 on Friday.")]
    )
    agent = Agent(
        "travel",
        model=model,
        instructions=memory_instructions(later, "You plan trips.", agent_id="travel"),
        tools=memory_tools(later, agent_id="travel", max_tokens=256),
    )
    session = MindPalaceSession(later, "tuesday", agent_id="travel")
    result = Runner.run_sync(agent, "When does Priya's flight land?", session=session)
    assert result.final_output == "18:40 on Friday."
    instructions = model.seen[0][0] or ""
    assert instructions.startswith("You plan trips.")
    assert "│ Priya's flight lands at 18:40 on Friday" in instructions
    [answer] = tool_outputs(model)
    assert "│ Priya's flight lands at 18:40 on Friday" in answer
    assert default_counter().count(answer) <= 256

    # Monday's session comes back item for item and feeds the next run.
    items = asyncio.run(MindPalaceSession(later, "monday", agent_id="travel").get_items())
    assert [i.get("type", "message") for i in items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert items[0]["content"] == "Priya lands Friday at 18:40, remember it."  # type: ignore[typeddict-item]
    model = ScriptedModel([message("ok")])
    agent = Agent("travel", model=model)
    Runner.run_sync(agent, "thanks", session=MindPalaceSession(later, "monday", agent_id="travel"))
    assert len(model.seen[0][1]) == 5


def test_session_limit_pop_clear_and_scope(palace: Palace) -> None:
    async def run() -> None:
        session = MindPalaceSession(palace, "s", agent_id="ann")
        await session.add_items([{"role": "user", "content": "one"}])
        await session.add_items(
            [{"role": "assistant", "content": "two"}, {"role": "user", "content": "one"}]
        )
        assert [i["content"] for i in await session.get_items(limit=2)] == ["two", "one"]  # type: ignore[typeddict-item]
        assert await MindPalaceSession(palace, "s", agent_id="bob").get_items() == []
        popped = await session.pop_item()
        assert popped == {"role": "user", "content": "one"}
        assert len(await session.get_items()) == 2
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None

    asyncio.run(run())


def test_a_bad_argument_goes_back_to_the_model(palace: Palace) -> None:
    model = ScriptedModel([call("memory_store", content="x", category="gossip"), message("sorry")])
    agent = Agent("a", model=model, tools=memory_tools(palace))
    Runner.run_sync(agent, "remember x")
    assert "valid options: decision" in tool_outputs(model)[0]
    assert palace.memories() == []


def test_an_internal_failure_reaches_the_model_as_an_opaque_error(
    reopen: Callable[[], Palace],
) -> None:
    closed = reopen()
    tools = memory_tools(closed)
    closed.close()
    model = ScriptedModel([call("memory_recall", query="anything"), message("sorry")])
    Runner.run_sync(Agent("a", model=model, tools=tools), "what do you know?")
    assert tool_outputs(model) == ["An error occurred while running the tool. Please try again."]
