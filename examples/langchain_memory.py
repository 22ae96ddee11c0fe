"""mindpalace as a LangChain agent's memory: one session stores, a later one recalls.

Runs offline with langchain-core's fake chat model; with ``OPENAI_API_KEY``
set and ``langchain-openai`` installed it asks a real model instead.

    python3 -m venv .venv && .venv/bin/pip install -q '.[langchain]'
    .venv/bin/python examples/langchain_memory.py [palace.db | postgresql://...]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from mindpalace import Palace
from mindpalace.integrations.langchain import MindPalaceChatMessageHistory, memory_tools

SYSTEM = (
    "You are a helpful assistant."
    " Use the memory_store and memory_recall tools for anything lasting."
)


def chat_model(scripted: list[AIMessage | str]) -> BaseChatModel:
    """A real model when a key is set, else the scripted fake one."""
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - only with a key

        model: BaseChatModel = ChatOpenAI(model="gpt-4o-mini")
        return model
    return GenericFakeChatModel(messages=iter(scripted))


def turn(palace: Palace, session: str, question: str, scripted: list[AIMessage | str]) -> str:
    """One turn of a tool-calling agent whose history lives in the palace."""
    tools = {t.name: t for t in memory_tools(palace, agent_id="assistant")}
    model: Any = chat_model(scripted)
    if os.environ.get("OPENAI_API_KEY"):
        model = model.bind_tools(list(tools.values()))
    history = MindPalaceChatMessageHistory(palace, session, agent_id="assistant")
    new: list[BaseMessage] = [HumanMessage(question)]
    while True:
        reply = model.invoke([SystemMessage(SYSTEM), *history.messages, *new])
        new.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = tools[call["name"]].invoke(call)
            print(f"  [{call['name']}] {result.content!s}")
            new.append(result)
    history.add_messages(new)
    return str(reply.content)


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "palace.db")
    with Palace(target) as palace:
        print("monday:", "My dog is called Biscuit.")
        print(
            "  ->",
            turn(
                palace,
                "monday",
                "Please remember: my dog is called Biscuit.",
                [
                    AIMessage(
                        "",
                        tool_calls=[
                            {
                                "name": "memory_store",
                                "args": {"content": "The user's dog is called Biscuit"},
                                "id": "call_1",
                            }
                        ],
                    ),
                    "I'll remember that Biscuit is your dog.",
                ],
            ),
        )
        print("tuesday:", "What is my dog called?")
        print(
            "  ->",
            turn(
                palace,
                "tuesday",
                "What is my dog called?",
                [
                    AIMessage(
                        "",
                        tool_calls=[
                            {"name": "memory_recall", "args": {"query": "dog name"}, "id": "call_2"}
                        ],
                    ),
                    "Your dog is called Biscuit.",
                ],
            ),
        )


if __name__ == "__main__":
    main()
