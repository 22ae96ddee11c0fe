"""mindpalace for LangChain (``pip install 'mindpalace[langchain]'``).

- ``MindPalaceChatMessageHistory``: a ``BaseChatMessageHistory`` keeping a
  session's messages as conversation memories, so what was said in one
  session is recalled in the next.
- ``MindPalaceRetriever``: a ``BaseRetriever`` over recall; each
  ``Document`` carries the memory's id, its score and its fields.
- ``memory_tools``: ``memory_store`` and ``memory_recall`` tools for a tool-calling
  model; memory_recall answers with the token-budgeted context block.
- ``context_runnable``: a runnable from a question to the context block,
  for a prompt's ``{context}``.

Each takes a ``Palace`` (shared engine; scope arguments make a view of it)
or a target: a SQLite path or a ``postgresql://`` URL. Their async methods
(``ainvoke``, ``aget_messages``, ...) await the palace's work in a worker
thread (``asyncio.to_thread``, as ``AsyncPalace`` runs it), so a recall or
a write never blocks the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from mindpalace import reading
from mindpalace.integrations.common import (
    DEFAULT_CONTEXT_TOKENS,
    MemoryTools,
    PalaceSource,
    ScopeOptions,
    SessionLog,
    Turn,
    Unpack,
    check_recall_options,
    hit_metadata,
    requires_extra,
    scoped_palace,
)
from mindpalace.models import Hit, Memory
from mindpalace.palace import Palace
from mindpalace.recall_request import RecallRequest

with requires_extra(__name__, "langchain-core", "langchain"):
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from pydantic import ConfigDict

__all__ = [
    "MindPalaceChatMessageHistory",
    "MindPalaceRetriever",
    "context_runnable",
    "document",
    "memory_tools",
]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _turn(message: BaseMessage) -> Turn:
    tool = message.type == "tool"
    calls = message.tool_calls if isinstance(message, AIMessage) else ()
    return Turn.of(
        _ROLES.get(message.type, message.type),
        message.text,
        message_to_dict(message),
        calls=[call["name"] for call in calls],
        result_of=(message.name or "a tool") if tool else None,
        speaker=None if tool else message.name,
    )


def _message(memory: Memory) -> BaseMessage:
    payload = SessionLog.payload(memory)
    if payload is not None:
        return messages_from_dict([dict(payload)])[0]
    # A turn written by another front end (the CLI, MCP): rebuilt from its role.
    role = str(memory.metadata.get("role", "user"))
    text = SessionLog.text(memory)
    if role in ("user", "human"):
        return HumanMessage(content=text)
    if role in ("assistant", "ai"):
        return AIMessage(content=text)
    if role == "system":
        return SystemMessage(content=text)
    return ChatMessage(role=role, content=text)


class MindPalaceChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history whose messages are mindpalace memories.

    Each message is remembered as one conversation turn of ``session_id``
    (``Palace.add_messages``), so recall finds it later, in this session or
    another; ``messages`` gives the session's messages back exactly (the
    LangChain form is kept in the memory's metadata). ``clear`` archives
    the session's turns: they leave the history and recall, but are kept.

    Example:
        >>> palace = Palace("memories.db")  # doctest: +SKIP
        >>> history = MindPalaceChatMessageHistory(palace, "chat-1", agent_id="support")
        >>> history.add_messages([HumanMessage("My order number is 4417")])
        >>> history.messages

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        session_id: the conversation's id.
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        max_messages: give back only the last this many messages (all, up to
            10,000, when None).
    """

    def __init__(
        self,
        palace: PalaceSource,
        session_id: str,
        *,
        max_messages: int | None = None,
        **scope: Unpack[ScopeOptions],
    ) -> None:
        self.palace = scoped_palace(palace, **scope)
        self.session_id = session_id
        self.max_messages = max_messages
        self.log = SessionLog(self.palace, session_id)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first."""
        return [_message(m) for m in self.log.turns(self.max_messages)]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Remember ``messages`` as the session's next turns."""
        self.log.append([_turn(m) for m in messages])

    def clear(self) -> None:
        """Archive the session's turns."""
        self.log.clear()

    async def aget_messages(self) -> list[BaseMessage]:
        """``messages``, read off the event loop."""
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """``add_messages``, written off the event loop."""
        await asyncio.to_thread(self.add_messages, messages)

    async def aclear(self) -> None:
        """``clear``, off the event loop."""
        await asyncio.to_thread(self.clear)


def document(hit: Hit) -> Document:
    """A recall hit as a LangChain ``Document``: the memory's text, its id,
    and in ``metadata`` its score and fields."""
    return Document(page_content=hit.memory.content, id=hit.memory.id, metadata=hit_metadata(hit))


class MindPalaceRetriever(BaseRetriever):
    """A LangChain retriever over ``Palace.recall`` (hybrid keyword and
    embedding search, within the palace's scope).

    Example:
        >>> retriever = MindPalaceRetriever("memories.db", agent_id="alice", k=5)  # doctest: +SKIP
        >>> retriever.invoke("why did we pick sqlite")

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        k: how many documents at most (1-100).
        mode: the recall mode (general, decision, project, people, workflow,
            conversation).
        categories: keep only memories of these categories.

    Raises:
        ValidationError: a bad ``k``, mode, category or scope, naming the
            valid values.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    palace: Palace
    k: int = 4
    mode: str | None = None
    categories: list[str] | None = None

    def __init__(
        self,
        palace: PalaceSource,
        *,
        agent_id: str | None = None,
        groups: Iterable[str] | None = None,
        channel: str | None = None,
        peer: bool | None = None,
        **fields: Any,  # the retriever's pydantic fields: so the scope is named here
    ) -> None:
        view = scoped_palace(palace, agent_id=agent_id, groups=groups, channel=channel, peer=peer)
        check_recall_options(fields.get("k", 4), fields.get("mode"), fields.get("categories"))
        # pydantic fields: the model's own __init__ validates them.
        super().__init__(palace=view, **fields)  # type: ignore[call-arg]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [document(hit) for hit in self._recall(query)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = await asyncio.to_thread(self._recall, query)
        return [document(hit) for hit in hits]

    def _recall(self, query: str) -> list[Hit]:
        request = RecallRequest.of(query, limit=self.k, mode=self.mode, categories=self.categories)
        return reading.recall(self.palace.seat, request)


def memory_tools(
    palace: PalaceSource,
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    visibility: str = "isolated",
    group: str | None = None,
    **scope: Unpack[ScopeOptions],
) -> list[BaseTool]:
    """``memory_store`` and ``memory_recall`` tools for a tool-calling model.

    ``memory_recall`` answers with the context block (at most ``max_tokens``
    tokens, memories quoted as data); ``memory_store`` stores one memory with
    ``visibility`` (and ``group``). An invalid argument comes back to the
    model as the tool's answer, naming the valid values; any other failure
    (the database, the embedding model) is raised, as LangChain does.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
    """
    tools = MemoryTools(
        scoped_palace(palace, **scope), max_tokens=max_tokens, visibility=visibility, group=group
    )
    return [
        StructuredTool.from_function(
            tool.function,
            coroutine=tool.coroutine,
            name=tool.name,
            description=tool.description,
            handle_tool_error=True,
        )
        for tool in tools.functions(bad_arguments=ToolException)
    ]


def context_runnable(
    palace: PalaceSource,
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    **scope: Unpack[ScopeOptions],
) -> RunnableLambda[str, str]:
    """A runnable from a question to the context block for it (at most
    ``max_tokens`` tokens), e.g. ``{"context": context_runnable(palace),
    "question": RunnablePassthrough()} | prompt | model``; ``ainvoke`` reads
    the palace off the event loop.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
    """
    tools = MemoryTools(scoped_palace(palace, **scope), max_tokens=max_tokens)

    async def acontext(question: str) -> str:
        return await asyncio.to_thread(tools.context, question)

    return RunnableLambda(tools.context, afunc=acontext, name="mindpalace_context")
