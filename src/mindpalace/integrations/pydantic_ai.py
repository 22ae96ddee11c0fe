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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mindpalace.integrations.common import (
    DEFAULT_CONTEXT_TOKENS,
    MODEL_FACING_ERRORS,
    RECALL_DESCRIPTION,
    REMEMBER_DESCRIPTION,
    MemoryTools,
    PalaceSource,
    missing_extra,
    scoped_palace,
)

try:
    from pydantic_ai import FunctionToolset, ModelRetry, RunContext, Tool
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise missing_extra(__name__, "pydantic-ai-slim", "pydantic-ai") from exc

__all__ = ["MindPalaceToolset", "memory_instructions", "prompt_text"]

HEADING = "Memories that may help (from earlier conversations):"


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
        if not query:
            return None
        block = tools.palace.context(query, max_tokens=tools.max_tokens)
        return f"{HEADING}\n{block.text}" if block.sources else None

    return mindpalace_context


def memory_instructions(
    palace: PalaceSource,
    *,
    agent_id: str | None = None,
    groups: Iterable[str] | None = None,
    channel: str | None = None,
    peer: bool | None = None,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
) -> Callable[[RunContext[Any]], str | None]:
    """An instruction function: the context block (at most ``max_tokens``
    tokens) for the run's prompt, or nothing when no memory is relevant.

    Example::

        agent = Agent(model, instructions=["Be brief.", memory_instructions(palace)])

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
    """
    view = scoped_palace(palace, agent_id=agent_id, groups=groups, channel=channel, peer=peer)
    return _instructions(MemoryTools(view, max_tokens=max_tokens))


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
        agent_id: str | None = None,
        groups: Iterable[str] | None = None,
        channel: str | None = None,
        peer: bool | None = None,
        max_tokens: int = DEFAULT_CONTEXT_TOKENS,
        context: bool = True,
        visibility: str = "isolated",
        group: str | None = None,
    ) -> None:
        view = scoped_palace(palace, agent_id=agent_id, groups=groups, channel=channel, peer=peer)
        self.memory = MemoryTools(view, max_tokens=max_tokens, visibility=visibility, group=group)
        memory = self.memory

        def memory_store(
            content: str, category: str = "fact", tags: list[str] | None = None
        ) -> str:
            try:
                return memory.memory_store(content, category, tags or ())
            except MODEL_FACING_ERRORS as exc:
                raise ModelRetry(str(exc)) from exc

        def memory_recall(query: str) -> str:
            try:
                return memory.memory_recall(query)
            except MODEL_FACING_ERRORS as exc:
                raise ModelRetry(str(exc)) from exc

        super().__init__(
            [
                Tool(
                    memory_store,
                    takes_ctx=False,
                    name="memory_store",
                    description=REMEMBER_DESCRIPTION,
                ),
                Tool(
                    memory_recall,
                    takes_ctx=False,
                    name="memory_recall",
                    description=RECALL_DESCRIPTION,
                ),
            ],
            instructions=_instructions(memory) if context else None,
        )
