"""mindpalace for the OpenAI Agents SDK (``pip install 'mindpalace[openai-agents]'``).

- ``MindPalaceSession``: a ``Session`` (the SDK's protocol) keeping a
  conversation's items as conversation memories: ``Runner.run(agent, text,
  session=MindPalaceSession(palace, "chat-1", agent_id="ann"))``.
- ``memory_tools``: ``memory_store`` and ``memory_recall`` function tools; memory_recall
  answers with the token-budgeted context block.
- ``memory_instructions``: dynamic instructions that add the context block
  for the turn's user input to the agent's own.

Each takes a ``Palace`` (shared engine; scope arguments make a view of it)
or a target: a SQLite path or a ``postgresql://`` URL. All are coroutines
to the SDK, which awaits them on its event loop: the palace's work runs in
a worker thread (``asyncio.to_thread``), never on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from mindpalace.integrations.common import (
    DEFAULT_CONTEXT_TOKENS,
    MODEL_FACING_ERRORS,
    TOOL_FAILED,
    MemoryTools,
    PalaceSource,
    ScopeOptions,
    SessionLog,
    Turn,
    Unpack,
    requires_extra,
    scoped_palace,
)

with requires_extra(__name__, "openai-agents", "openai-agents"):
    from agents import Agent, FunctionTool, RunContextWrapper, TResponseInputItem, function_tool
    from agents.memory import SessionSettings
    from agents.memory.session_settings import resolve_session_limit

__all__ = ["MindPalaceSession", "item_text", "memory_instructions", "memory_tools"]


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # input_text / output_text parts
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        ).strip()
    return ""


def item_text(item: Mapping[str, Any]) -> tuple[str, str]:
    """The role and the text to index of a Responses input item. Tool calls
    and their outputs are indexed as a short note (a tool's output, recall's
    context block above all, must not come back as a memory of its own)."""
    kind = item.get("type", "message")
    if kind == "message" or "role" in item:
        return str(item.get("role", "user")), _content_text(item.get("content"))
    if kind.endswith("_call_output") or kind.endswith("_output"):
        return "tool", "[result of a tool]"
    if kind == "function_call":
        return "assistant", f"[called {item.get('name', 'a tool')}]"
    return "assistant", f"[{kind}]"


def _turn(item: TResponseInputItem) -> Turn:
    payload: Mapping[str, Any] = item
    role, text = item_text(payload)
    return Turn(role=role, text=text.strip() or f"[{role} message]", payload=payload)


class MindPalaceSession:
    """An OpenAI Agents SDK session whose items are mindpalace memories.

    Each item is one conversation turn of ``session_id``
    (``Palace.add_messages``), so recall finds what was said, in this
    session or another; ``get_items`` gives the items back exactly (kept in
    the memory's metadata). ``pop_item`` and ``clear_session`` archive
    turns: they leave the session and recall, but are kept.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        session_id: the conversation's id.
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        session_settings: the SDK's settings (``limit``: items ``get_items``
            gives by default).
    """

    def __init__(
        self,
        palace: PalaceSource,
        session_id: str,
        *,
        session_settings: SessionSettings | None = None,
        **scope: Unpack[ScopeOptions],
    ) -> None:
        self.palace = scoped_palace(palace, **scope)
        self.session_id = session_id
        self.session_settings = session_settings
        self.log = SessionLog(self.palace, session_id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The last ``limit`` items (all when None), oldest first."""
        limit = resolve_session_limit(limit, self.session_settings)
        turns = await asyncio.to_thread(self.log.turns, limit)
        return [self._item(memory) for memory in turns]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Remember ``items`` as the session's next turns."""
        await asyncio.to_thread(self.log.append, [_turn(item) for item in items])

    async def pop_item(self) -> TResponseInputItem | None:
        """Archive the last item and return it (None for an empty session)."""
        memory = await asyncio.to_thread(self.log.pop)
        return None if memory is None else self._item(memory)

    async def clear_session(self) -> None:
        """Archive every item of the session."""
        await asyncio.to_thread(self.log.clear)

    @staticmethod
    def _item(memory: Any) -> TResponseInputItem:
        payload = SessionLog.payload(memory)
        if payload is not None:
            return dict(payload)  # type: ignore[return-value]
        # A turn written by another front end: a plain message.
        role = str(memory.metadata.get("role", "user"))
        role = role if role in ("user", "assistant", "system", "developer") else "user"
        return {"role": role, "content": SessionLog.text(memory)}  # type: ignore[return-value,misc]


def memory_tools(
    palace: PalaceSource,
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    visibility: str = "isolated",
    group: str | None = None,
    **scope: Unpack[ScopeOptions],
) -> list[FunctionTool]:
    """``memory_store`` and ``memory_recall`` function tools for an ``Agent(tools=...)``.

    An invalid argument comes back to the model as the tool's answer,
    naming the valid values; any other failure as a sentence saying no more
    than that the tool failed.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        max_tokens: the budget of memory_recall's context block (256-8192 tokens).
        visibility / group: what ``memory_store`` writes (isolated, shared, group).
    """
    view = scoped_palace(palace, **scope)
    memory = MemoryTools(view, max_tokens=max_tokens, visibility=visibility, group=group)
    # Coroutines: the SDK awaits them on its loop; the palace's work runs
    # in a worker thread. Failures reach the model through _tool_error.
    return [
        function_tool(
            tool.coroutine,
            name_override=tool.name,
            description_override=tool.description,
            failure_error_function=_tool_error,
        )
        for tool in memory.functions()
    ]


def _tool_error(ctx: RunContextWrapper[Any], error: Exception) -> str:
    # Bad arguments: what was wrong and what is valid; anything else opaque.
    if isinstance(error, MODEL_FACING_ERRORS):
        return f"The tool failed: {error}"
    return TOOL_FAILED


def _latest_user_text(items: Iterable[TResponseInputItem]) -> str:
    for item in reversed(list(items)):
        payload: Mapping[str, Any] = item
        role, text = item_text(payload)
        if role == "user" and text.strip():
            return text.strip()
    return ""


def memory_instructions(
    palace: PalaceSource,
    instructions: str = "",
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    **scope: Unpack[ScopeOptions],
) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
    """Dynamic instructions for ``Agent(instructions=...)``: ``instructions``
    followed by the context block (at most ``max_tokens`` tokens) for the
    turn's latest user message, when a memory is relevant. A coroutine
    function: the SDK awaits it, and the recall runs off the event loop.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        instructions: the agent's own instructions.
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
    """
    memory = MemoryTools(scoped_palace(palace, **scope), max_tokens=max_tokens)

    async def with_memories(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        query = _latest_user_text(ctx.turn_input)
        if not query:
            return instructions
        # The SDK calls instructions on its event loop: recall in a thread.
        found = await asyncio.to_thread(memory.instructions, query)
        if found is None:
            return instructions
        return f"{instructions}\n\n{found}".lstrip()

    return with_memories
