"""mindpalace as a LlamaIndex agent's memory: one session stores, a later one recalls.

Runs offline with llama-index-core's mock function-calling LLM playing a
scripted model; with ``OPENAI_API_KEY`` set (and ``llama-index-llms-openai``
installed) it asks ``gpt-4o-mini`` instead.

    python3 -m venv .venv && .venv/bin/pip install -q '.[llama-index]'
    .venv/bin/python examples/llama_index_memory.py [palace.db | postgresql://...]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import LLM, ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory

from mindpalace import Palace
from mindpalace.integrations.llama_index import MindPalaceMemoryBlock, memory_tools

SYSTEM = (
    "You are an office assistant."
    " Use the memory_store and memory_recall tools for anything lasting."
)


def model(tool: str, arguments: dict[str, str], answer: str) -> LLM:
    """A real model when a key is set, else one that calls ``tool`` and answers."""
    if os.environ.get("OPENAI_API_KEY"):
        from llama_index.llms.openai import OpenAI  # noqa: PLC0415 - only with a key

        real: LLM = OpenAI(model="gpt-4o-mini")
        return real
    replies = [
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="call_1", tool_name=tool, tool_kwargs=arguments)],
        ),
        ChatMessage(role="assistant", content=answer),
    ]

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        return replies.pop(0)

    return MockFunctionCallingLLM(response_generator=respond)


async def turn(palace: Palace, session: str, question: str, llm: LLM) -> Memory:
    """One turn of a tool-calling agent whose long-term memory is the palace."""
    agent = FunctionAgent(
        llm=llm, tools=memory_tools(palace, agent_id="office"), system_prompt=SYSTEM
    )
    memory = Memory.from_defaults(
        session_id=session,
        memory_blocks=[MindPalaceMemoryBlock(palace, agent_id="office", max_tokens=512)],
    )
    print(f"{session}: {question}")
    handler = agent.run(user_msg=question, memory=memory)
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            print(f"  [{event.tool_name}] {event.tool_output.content!s}")
    print("  ->", await handler)
    return memory


async def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "palace.db")
    with Palace(target) as palace:
        await turn(
            palace,
            "monday",
            "The spare keys of the Porto office are in drawer 3. Please remember that.",
            model(
                "memory_store",
                {"content": "The Porto office's spare keys are in drawer 3"},
                "Noted: drawer 3.",
            ),
        )
        memory = await turn(
            palace,
            "tuesday",
            "Where are the Porto office's spare keys?",
            model("memory_recall", {"query": "Porto office spare keys"}, "In drawer 3."),
        )
        system = (await memory.aget())[0]
        print("\nThe memory block given with the last question:\n" + str(system.content))


if __name__ == "__main__":
    asyncio.run(main())
