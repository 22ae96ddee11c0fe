"""mindpalace as a Pydantic AI agent's memory: one run stores, a later one recalls.

Runs offline with Pydantic AI's FunctionModel playing the model; with
``OPENAI_API_KEY`` set (and ``pydantic-ai-slim[openai]`` installed) it asks
``openai:gpt-4o-mini`` instead.

    python3 -m venv .venv && .venv/bin/pip install -q '.[pydantic-ai]'
    .venv/bin/python examples/pydantic_ai_memory.py [palace.db | postgresql://...]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mindpalace import Palace
from mindpalace.integrations.pydantic_ai import MindPalaceToolset


def model(call: ToolCallPart, answer: str) -> Model | str:
    """A real model when a key is set, else one that makes ``call`` and answers."""
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4o-mini"

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(answer)])

    return FunctionModel(respond)


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "palace.db")
    with Palace(target) as palace:
        memory = MindPalaceToolset(palace, agent_id="chef", max_tokens=512)
        first = Agent(
            model(
                ToolCallPart("memory_store", {"content": "Ann is allergic to peanuts"}), "Noted."
            ),
            instructions="You are a kitchen assistant. Remember lasting facts with the tool.",
            toolsets=[memory],
        )
        question = "Ann is allergic to peanuts, please keep that in mind."
        print(question, "->", first.run_sync(question).output)

        later = Agent(
            model(ToolCallPart("memory_recall", {"query": "Ann allergy"}), "No: Ann is allergic."),
            instructions="You are a kitchen assistant.",
            toolsets=[memory],
        )
        question = "Can Ann have the satay with peanut sauce?"
        result = later.run_sync(question)
        print(question, "->", result.output)
        request = result.all_messages()[0]
        if isinstance(request, ModelRequest):
            print("\nThe request's instructions carried:\n" + (request.instructions or ""))


if __name__ == "__main__":
    main()
