"""mindpalace for LlamaIndex (``pip install 'mindpalace[llama-index]'``).

- ``MindPalaceMemoryBlock``: a long-term memory block for LlamaIndex's
  ``Memory``. Whenever the agent reads its memory, the block gives the
  token-budgeted context block for the latest user message (nothing when no
  memory is relevant); messages flushed out of the short-term queue are
  remembered as conversation turns of their session:
  ``Memory.from_defaults(session_id="chat-1",
  memory_blocks=[MindPalaceMemoryBlock(palace, agent_id="ann")])``.
- ``MindPalaceChatStore``: a ``BaseChatStore`` whose keys are sessions and
  whose messages are conversation memories, so every turn is recallable as
  soon as it is said: ``ChatMemoryBuffer.from_defaults(chat_store=store,
  chat_store_key="chat-1")``.
- ``MindPalaceRetriever``: a ``BaseRetriever`` over recall; each
  ``NodeWithScore`` carries the hit's score and a ``TextNode`` whose id is the
  memory's and whose metadata holds its fields.
- ``memory_tools``: ``remember`` and ``recall`` ``FunctionTool``s; recall
  answers with the context block.

Each takes a ``Palace`` (shared engine; scope arguments make a view of it)
or a target: a SQLite path or a ``postgresql://`` URL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from mindpalace import reading
from mindpalace.integrations.common import (
    DEFAULT_CONTEXT_TOKENS,
    MAX_SESSION_TURNS,
    MemoryTools,
    PalaceSource,
    ScopeOptions,
    SessionLog,
    Turn,
    Unpack,
    check_max_tokens,
    check_recall_options,
    hit_metadata,
    requires_extra,
    scoped_palace,
)
from mindpalace.listing import encode_cursor
from mindpalace.models import Hit, Memory
from mindpalace.palace import Palace
from mindpalace.recall_request import RecallRequest
from mindpalace.skills.context import MIN_TOKENS

with requires_extra(__name__, "llama-index-core", "llama-index"):
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import (
        ChatMessage,
        MessageRole,
        TextBlock,
        ToolCallBlock,
    )
    from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.core.storage.chat_store.base import BaseChatStore
    from llama_index.core.tools import FunctionTool

__all__ = [
    "MindPalaceChatStore",
    "MindPalaceMemoryBlock",
    "MindPalaceRetriever",
    "ToolFailure",
    "memory_tools",
    "node",
]

DEFAULT_SESSION = "default"
"""The session of messages put into the memory block without one."""

# Metadata a node shows its reader: the memory's text and what says where
# and when it is from; ids and scores are for code, not for an LLM prompt.
_HIDDEN_FROM_LLM = ["id", "score", "confidence", "agent_id", "session", "store", "type"]


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def _call_name(call: Any) -> str:
    # Tool calls some LLM classes keep in additional_kwargs: OpenAI's objects
    # (call.function.name) or their dict form.
    function = call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
    name = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
    return str(name or "a tool")


def _turn(message: ChatMessage) -> Turn:
    calls = [b.tool_name for b in message.blocks if isinstance(b, ToolCallBlock)]
    calls += [_call_name(call) for call in message.additional_kwargs.get("tool_calls") or ()]
    return Turn.of(
        message.role.value,
        _text(message),
        message.model_dump(mode="json"),
        calls=calls,
        result_of="a tool" if message.role == MessageRole.TOOL else None,
    )


def _message(memory: Memory) -> ChatMessage:
    payload = SessionLog.payload(memory)
    if payload is not None:
        return ChatMessage.model_validate(dict(payload))
    # A turn written by another front end (the CLI, MCP): rebuilt from its role.
    role = str(memory.metadata.get("role", "user"))
    roles = {r.value for r in MessageRole}
    return ChatMessage(
        role=role if role in roles else MessageRole.USER, content=SessionLog.text(memory)
    )


def _latest_user_text(messages: Sequence[ChatMessage] | None) -> str:
    for message in reversed(messages or ()):
        if message.role == MessageRole.USER:
            text = _text(message)
            if text:
                return text
    return ""


class MindPalaceMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory from a palace, as a block of LlamaIndex's ``Memory``.

    Reading: the context block (at most ``max_tokens`` tokens, memories
    quoted as data, dated and attributed) for the latest user message, put
    by ``Memory`` into the system message under the block's name; nothing
    when no memory is relevant. Under the ``Memory``'s token limit the block
    shrinks to what is left (never below 256 tokens) or, below that, drops
    out, unless its ``priority`` is 0.

    Writing: the messages ``Memory`` flushes out of its short-term queue
    become conversation turns of their session, so nothing said is lost
    when it leaves the window, and later sessions recall it.

    Example:
        >>> block = MindPalaceMemoryBlock("memories.db", agent_id="ann")  # doctest: +SKIP
        >>> memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        max_tokens: the budget of the context block (256-8192 tokens).
        name / description / priority / accept_short_term_memory: the
            ``BaseMemoryBlock`` fields.

    Raises:
        ValidationError: a budget outside 256-8192, a bad scope.
    """

    name: str = Field(default="mindpalace", description="The name of the memory block.")
    priority: int = Field(
        default=1, description="Truncation order under the Memory's token limit (0: never)."
    )
    palace: Palace = Field(exclude=True, description="The palace (view) memories come from.")
    max_tokens: int = Field(default=DEFAULT_CONTEXT_TOKENS, description="The block's budget.")

    _last: tuple[str, str, int] | None = PrivateAttr(default=None)

    def __init__(
        self,
        palace: PalaceSource,
        *,
        agent_id: str | None = None,
        groups: Iterable[str] | None = None,
        channel: str | None = None,
        peer: bool | None = None,
        max_tokens: int = DEFAULT_CONTEXT_TOKENS,
        **fields: Any,  # the block's pydantic fields: so the scope is named here
    ) -> None:
        check_max_tokens(max_tokens)
        view = scoped_palace(palace, agent_id=agent_id, groups=groups, channel=channel, peer=peer)
        # pydantic fields: the model's own __init__ validates them.
        super().__init__(palace=view, max_tokens=max_tokens, **fields)  # type: ignore[call-arg]

    def _context(self, query: str, max_tokens: int) -> str:
        block = self.palace.context(query, max_tokens=max_tokens)
        if not block.sources:
            return ""
        self._last = (block.text, query, block.tokens)
        return block.text

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = _latest_user_text(messages)
        if not query:
            return ""
        return await asyncio.to_thread(self._context, query, self.max_tokens)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        sessions: dict[str, list[Turn]] = {}
        for message in messages:
            session = message.additional_kwargs.get("session_id") or DEFAULT_SESSION
            sessions.setdefault(str(session), []).append(_turn(message))
        for session, turns in sessions.items():
            await asyncio.to_thread(SessionLog(self.palace, session).append, turns)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block again for the same message, ``tokens_to_truncate``
        tokens shorter; None (the block drops out) below 256 tokens."""
        if self._last is None or self._last[0] != content:
            return None
        _, query, tokens = self._last
        budget = min(self.max_tokens, tokens - tokens_to_truncate)
        if budget < MIN_TOKENS:
            return None
        return await asyncio.to_thread(self._context, query, budget) or None


class MindPalaceChatStore(BaseChatStore):
    """A LlamaIndex chat store whose messages are mindpalace memories.

    A key is a conversation session; each message is remembered as one
    conversation turn of it (``Palace.add_messages``), so recall finds what
    was said, in this session or another. ``get_messages`` gives the
    messages back exactly (the LlamaIndex form is kept in the memory's
    metadata). Deleting archives: the turns leave the store and recall, but
    are kept.

    Example:
        >>> store = MindPalaceChatStore("memories.db", agent_id="ann")  # doctest: +SKIP
        >>> memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="chat-1")

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).

    Raises:
        ValidationError: a bad scope.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    palace: Palace = Field(exclude=True, description="The palace (view) sessions live in.")

    def __init__(
        self,
        palace: PalaceSource,
        **scope: Unpack[ScopeOptions],
    ) -> None:
        super().__init__(palace=scoped_palace(palace, **scope))  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises the store under."""
        return "MindPalaceChatStore"

    def _log(self, key: str) -> SessionLog:
        return SessionLog(self.palace, key, field="key")

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Make ``messages`` the session's whole history (the turns before
        are archived)."""
        self._log(key).replace([_turn(m) for m in messages])

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The session's messages, oldest first (up to 10,000)."""
        return [_message(m) for m in self._log(key).turns()]

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Remember ``message`` as the session's next turn."""
        self._log(key).append([_turn(message)])

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Archive the session's messages; returns them (None when there
        were none)."""
        log = self._log(key)
        turns = log.turns()
        for memory in turns:
            self.palace.forget(memory.id)
        return [_message(m) for m in turns] or None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Archive the session's ``idx``-th message (from 0, oldest first);
        returns it (None when there is no such message)."""
        turns = self._log(key).turns()
        if not 0 <= idx < len(turns):
            return None
        self.palace.forget(turns[idx].id)
        return _message(turns[idx])

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Archive the session's last message; returns it (None when empty)."""
        memory = self._log(key).pop()
        return None if memory is None else _message(memory)

    def get_keys(self) -> list[str]:
        """The sessions with messages this scope can see, the least recently
        written first (a scan of the scope's conversation turns)."""
        seen: dict[str, None] = {}
        cursor: str | None = None
        while True:
            page = self.palace.memories(
                limit=MAX_SESSION_TURNS, categories="conversation", cursor=cursor
            )
            for memory in page:
                if memory.session:
                    seen[memory.session] = None
            if len(page) < MAX_SESSION_TURNS:
                break
            cursor = encode_cursor(page[-1])
        return list(reversed(seen))


def node(hit: Hit) -> NodeWithScore:
    """A recall hit as a LlamaIndex ``NodeWithScore``: the hit's score and a
    ``TextNode`` with the memory's text, its id, and in ``metadata`` its
    fields (ids and scores hidden from the LLM's view of the node)."""
    text_node = TextNode(
        id_=hit.memory.id,
        text=hit.memory.content,
        metadata=hit_metadata(hit),
        excluded_llm_metadata_keys=list(_HIDDEN_FROM_LLM),
        excluded_embed_metadata_keys=list(_HIDDEN_FROM_LLM),
    )
    return NodeWithScore(node=text_node, score=hit.score)


class MindPalaceRetriever(BaseRetriever):
    """A LlamaIndex retriever over ``Palace.recall`` (hybrid keyword and
    embedding search, within the palace's scope), for query engines and
    anything else that takes a retriever.

    Example:
        >>> retriever = MindPalaceRetriever("memories.db", agent_id="ann", k=5)  # doctest: +SKIP
        >>> retriever.retrieve("why did we pick sqlite")

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        k: how many nodes at most (1-100).
        mode: the recall mode (general, decision, project, people, workflow,
            conversation).
        categories: keep only memories of these categories.

    Raises:
        ValidationError: a bad ``k``, mode, category or scope, naming the
            valid values.
    """

    def __init__(
        self,
        palace: PalaceSource,
        *,
        agent_id: str | None = None,
        groups: Iterable[str] | None = None,
        channel: str | None = None,
        peer: bool | None = None,
        k: int = 4,
        mode: str | None = None,
        categories: Sequence[str] | None = None,
        **options: Any,  # BaseRetriever's own: so the scope is named here
    ) -> None:
        self.palace = scoped_palace(
            palace, agent_id=agent_id, groups=groups, channel=channel, peer=peer
        )
        check_recall_options(k, mode, categories)
        self.k = k
        self.mode = mode
        self.categories = None if categories is None else list(categories)
        super().__init__(**options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = RecallRequest.of(
            query_bundle.query_str, limit=self.k, mode=self.mode, categories=self.categories
        )
        hits = reading.recall(self.palace.seat, request)
        return [node(hit) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


class ToolFailure(RuntimeError):
    """A memory tool's failure as its model sees it: LlamaIndex agents send
    the message of a tool's exception back to the model."""


def memory_tools(
    palace: PalaceSource,
    *,
    max_tokens: int = DEFAULT_CONTEXT_TOKENS,
    visibility: str = "isolated",
    group: str | None = None,
    **scope: Unpack[ScopeOptions],
) -> list[FunctionTool]:
    """``memory_store`` and ``memory_recall`` tools for a LlamaIndex agent
    (``FunctionAgent(tools=...)``).

    ``memory_recall`` answers with the context block (at most ``max_tokens``
    tokens, memories quoted as data); ``memory_store`` stores one memory with
    ``visibility`` (and ``group``). An invalid argument comes back to the
    model as the tool's error, naming the valid values; any other failure
    as a ``ToolFailure`` that says no more than that the tool failed.

    Args:
        palace: a ``Palace`` or a target (SQLite path, ``postgresql://`` URL).
        agent_id / groups / channel / peer: the scope (``Palace.for_agent``).
        max_tokens: the budget of memory_recall's context block (256-8192 tokens).
        visibility / group: what ``memory_store`` writes (isolated, shared, group).

    Raises:
        ValidationError: a budget outside 256-8192, a bad scope.
    """
    view = scoped_palace(palace, **scope)
    memory = MemoryTools(view, max_tokens=max_tokens, visibility=visibility, group=group)
    # Bad arguments reach the model as they are (what was wrong, what is
    # valid); anything else as a ToolFailure that says no more.
    return [
        FunctionTool.from_defaults(
            tool.function, async_fn=tool.coroutine, name=tool.name, description=tool.description
        )
        for tool in memory.functions(failure=ToolFailure)
    ]
