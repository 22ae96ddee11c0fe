"""mindpalace as an OpenAI Agents SDK agent's memory: one session stores,
a later one recalls.

Runs offline with a small scripted ``Model`` (the SDK ships no offline
model); with ``OPENAI_API_KEY`` set it asks ``gpt-4o-mini`` instead.

    python3 -m venv .venv && .venv/bin/pip install -q '.[openai-agents]'
    .venv/bin/python examples/openai_agents_memory.py [palace.db | postgresql://...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    ModelResponse,
    Runner,
    ToolCallOutputItem,
    Usage,
    set_tracing_disabled,
)
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


class Scripted(Model):
    """Calls one tool, then answers: enough to show the memory offline."""

    def __init__(self, tool: str, arguments: dict[str, str], answer: str) -> None:
        self.outputs: list[Any] = [
            ResponseFunctionToolCall(
                arguments=json.dumps(arguments), call_id="call_1", name=tool, type="function_call"
            ),
            ResponseOutputMessage(
                id="msg_1",
                content=[ResponseOutputText(text=answer, type="output_text", annotations=[])],
                role="assistant",
                status="completed",
                type="message",
            ),
        ]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=[self.outputs.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def model(tool: str, arguments: dict[str, str], answer: str) -> Model | str:
    if os.environ.get("OPENAI_API_KEY"):
        return "gpt-4o-mini"
    set_tracing_disabled(True)
    return Scripted(tool, arguments, answer)


def ask(agent: Agent[Any], question: str, session: MindPalaceSession) -> None:
    """One run: the question, what the memory tools answered, the reply."""
    print(f"{session.session_id}: {question}")
    result = Runner.run_sync(agent, question, session=session)
    for item in result.new_items:
        if isinstance(item, ToolCallOutputItem):
            print(f"  [tool] {item.output!s}")
    print("  ->", result.final_output)


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "palace.db")
    with Palace(target) as palace:
        tools = memory_tools(palace, agent_id="travel")
        instructions = memory_instructions(
            palace, "You plan trips. Remember lasting facts with the tool.", agent_id="travel"
        )
        first = Agent(
            "travel",
            instructions=instructions,
            tools=tools,
            model=model("memory_store", {"content": "Priya's flight lands 18:40 Friday"}, "Noted."),
        )
        ask(
            first,
            "Priya's flight lands at 18:40 on Friday. Remember that.",
            MindPalaceSession(palace, "monday", agent_id="travel"),
        )

        later = Agent(
            "travel",
            instructions=instructions,
            tools=tools,
            model=model("memory_recall", {"query": "Priya flight"}, "At 18:40 on Friday."),
        )
        ask(
            later,
            "When should I pick Priya up?",
            MindPalaceSession(palace, "tuesday", agent_id="travel"),
        )


if __name__ == "__main__":
    main()
