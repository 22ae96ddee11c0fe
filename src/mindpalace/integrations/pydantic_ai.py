"""mindpalace for Pydantic AI (``pip install 'mindpalace[pydantic-ai]'``).

- ``MindPalaceToolset``: a ``FunctionToolset`` with ``remember`` and
  ``recall`` tools and, unless turned off, instructions that put the
  token-budgeted context block for the run's prompt into every request:
  ``Agent(model, toolsets=[MindPalaceToolset(palace, agent_id="ann")])``.
- ``memory_instructions``: those instructions alone, for
  ``Agent(instructions=[...])``.

Both take a ``Palace`` (shared engine; scope arguments make a view of it)
or a target: a SQLite path or a ``postgresql://`` URL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mindpalace.integrations.common import (
    DEFAULT_CONTEXT_TOKENS,
    MemoryTools,
    PalaceSource,
    ScopeOptions,
    Unpack,
    requires_extra,
    scoped_palace,
)

with requires_extra(__name__, "pydantic-ai-slim", "pydantic-ai"):
    from pydantic_ai import FunctionToolset, ModelRetry, RunContext, Tool

__all__ = ["MindPalaceToolset", "memory_instructions", "prompt_text"]


def prompt_text(prompt: str | Sequence[object] | None) -> str:
    """The text of a run's user prompt (its text parts, when it has parts)."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(part for part in prompt if isinstance(part, str))


def _instructions(tools: MemoryTools) -> Callable[[RunContext[Any]], str | None]:
    def mindpalace_context(ctx: RunContext[Any]) -> str | None:
        query = prompt_text(ctx.prompt).strip()
        return tools.instructions(query) if query else None

    return mindpalace_context


def memory_instructions(
    palace: PalaceSource,
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    **scope: Unpack[ScopeOptions],
) -> Callable[[RunContext[Any]], str | None]:
    """An instruction function: the context block (at most ``max_tokens``
    tokens) for the run's prompt, or nothing when no memory is relevant.

    Example::

        agent = Agent(model, instructions=["Be brief.", memory_instructions(palace)])

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
    """
    return _instructions(MemoryTools(scoped_palace(palace, **scope), max_tokens=max_tokens))


class MindPalaceToolset(FunctionToolset[Any]):
    """``memory_store`` and ``memory_recall`` tools, and the context block as
    instructions, for a Pydantic AI agent.

    An invalid argument (an unknown category, an empty text) goes back to
    the model as a retry naming the valid values; any other failure (the
    database, the embedding model) is raised, as Pydantic AI does.

    Example::

        agent = Agent(model, toolsets=[MindPalaceToolset("memories.db", agent_id="ann")])

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        max_tokens: the budget of the context block (256-8192 tokens), in the
            instructions and in recall's answers.
        context: add the context block for the run's prompt to the instructions.
        visibility / group: what ``memory_store`` writes (isolated, shared, group).
    """

    def __init__(
        self,
        palace: PalaceSource,
        *,
        max_tokens: int = DEFAULT_CONTEXT_TOKENS,
        context: bool = True,
        visibility: str = "isolated",
        group: str | None = None,
        **scope: Unpack[ScopeOptions],
    ) -> None:
        view = scoped_palace(palace, **scope)
        self.memory = MemoryTools(view, max_tokens=max_tokens, visibility=visibility, group=group)
        # Pydantic AI runs a plain function in its own threads.
        super().__init__(
            [
                Tool(tool.function, takes_ctx=False, name=tool.name, description=tool.description)
                for tool in self.memory.functions(bad_arguments=ModelRetry)
            ],
            instructions=_instructions(self.memory) if context else None,
        )
