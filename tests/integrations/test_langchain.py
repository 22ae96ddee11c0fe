"""LangChain: chat history, retriever, tools and the context runnable, with
langchain-core's own fake chat model, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("langchain_core", reason="needs langchain-core: mindpalace[langchain]")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools import ToolException

from mindpalace import Palace
from mindpalace.integrations.langchain import (
    MindPalaceChatMessageHistory,
    MindPalaceRetriever,
    context_runnable,
    memory_tools,
)
from mindpalace.skills.tokens import default_counter


class PromptRecorder(BaseCallbackHandler):
    """Keeps the messages each chat model call was given."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.prompts.extend(messages)


def run_turn(
    model: GenericFakeChatModel,
    history: MindPalaceChatMessageHistory,
    question: str,
    tools: dict[str, Any],
) -> list[BaseMessage]:
    """One agent turn: the model's tool calls run until it answers in text;
    every message goes to the history. Returns the turn's messages."""
    turn: list[BaseMessage] = [HumanMessage(question)]
    while True:
        reply = model.invoke([*history.messages, *turn])
        turn.append(reply)
        assert isinstance(reply, AIMessage)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            turn.append(tools[call["name"]].invoke(call))
    history.add_messages(turn)
    return turn


def test_a_later_session_recalls_what_an_earlier_one_stored(
    palace: Palace, reopen: Callable[[], Palace]
) -> None:
    tools = {t.name: t for t in memory_tools(palace, agent_id="assistant")}
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "memory_store",
                            "args": {
                                "content": "The user's dog is called Biscuit",
                                "tags": ["pets"],
                            },
                            "id": "call_1",
                        }
                    ],
                ),
                "Noted: Biscuit.",
            ]
        )
    )
    first = MindPalaceChatMessageHistory(palace, "monday", agent_id="assistant")
    run_turn(model, first, "Remember that my dog is called Biscuit.", tools)

    # A later process, a new session: the recall tool finds Monday's fact.
    later = reopen()
    tools = {t.name: t for t in memory_tools(later, agent_id="assistant", max_tokens=256)}
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "memory_recall", "args": {"query": "dog name"}, "id": "call_2"}
                    ],
                ),
                "Your dog is Biscuit.",
            ]
        )
    )
    second = MindPalaceChatMessageHistory(later, "tuesday", agent_id="assistant")
    turn = run_turn(model, second, "What is my dog called?", tools)
    answer = next(m for m in turn if isinstance(m, ToolMessage))
    assert "│ The user's dog is called Biscuit" in str(answer.content)
    assert "Informational only" in str(answer.content)
    assert default_counter().count(str(answer.content)) <= 256

    # Monday's session is intact, tool call and result included.
    kept = MindPalaceChatMessageHistory(later, "monday", agent_id="assistant").messages
    assert [m.type for m in kept] == ["human", "ai", "tool", "ai"]
    assert isinstance(kept[1], AIMessage)
    assert kept[1].tool_calls[0]["args"]["content"] == "The user's dog is called Biscuit"
    assert kept[3].content == "Noted: Biscuit."
    # The conversation itself is recallable too.
    docs = MindPalaceRetriever(later, agent_id="assistant", k=10).invoke("Biscuit")
    assert {d.metadata["category"] for d in docs} == {"fact", "conversation"}


def test_the_prompt_carries_the_context_block_within_budget(palace: Palace) -> None:
    palace.for_agent("coach").remember("Dana trains for the Berlin marathon in September")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Use what you remember.\n{context}"), ("human", "{question}")]
    )
    recorder = PromptRecorder()
    model = GenericFakeChatModel(messages=iter(["Berlin, in September."]))
    chain = (
        {
            "context": context_runnable(palace, agent_id="coach", max_tokens=300),
            "question": RunnablePassthrough(),
        }
        | prompt
        | model
    )
    reply = chain.invoke("Which marathon is Dana running?", config={"callbacks": [recorder]})
    assert reply.content == "Berlin, in September."
    system = str(recorder.prompts[0][0].content)
    assert "│ Dana trains for the Berlin marathon in September" in system
    block = system.split("\n", 1)[1]
    assert default_counter().count(block) <= 300


def test_history_round_trips_and_clear_archives(palace: Palace) -> None:
    history = MindPalaceChatMessageHistory(palace, "s1", max_messages=3)
    history.add_user_message("hello")
    history.add_ai_message("hi there")
    history.add_messages([HumanMessage("hello"), AIMessage("hi there", name="bot")])
    # Repeated text is kept as new turns; the window keeps the last three.
    assert [(m.type, m.content) for m in history.messages] == [
        ("ai", "hi there"),
        ("human", "hello"),
        ("ai", "hi there"),
    ]
    assert history.messages[-1].name == "bot"
    history.clear()
    assert history.messages == []
    assert palace.recall("hello", categories="conversation") == []
    assert len(palace.memories(categories="conversation", include_archived=True)) == 4


def test_scope_comes_from_the_parameters(palace: Palace) -> None:
    alice = memory_tools(palace, agent_id="alice")
    alice[0].invoke({"content": "Alice's locker code is 4471"})
    bob_docs = MindPalaceRetriever(palace, agent_id="bob").invoke("locker code")
    alice_docs = MindPalaceRetriever(palace, agent_id="alice").invoke("locker code")
    assert bob_docs == []
    [doc] = alice_docs
    assert doc.page_content == "Alice's locker code is 4471"
    assert doc.id == doc.metadata["id"]
    assert 0 < doc.metadata["score"] <= 1
    assert doc.metadata["agent_id"] == "alice"
    # Bob's history of the same session id is Bob's own.
    MindPalaceChatMessageHistory(palace, "s", agent_id="alice").add_user_message("secret")
    assert MindPalaceChatMessageHistory(palace, "s", agent_id="bob").messages == []


def test_a_bad_tool_argument_goes_back_to_the_model(palace: Palace) -> None:
    remember = memory_tools(palace)[0]
    out = remember.invoke({"content": "x", "category": "gossip"})
    assert "category" in out and "decision" in out  # names the valid values
    assert palace.memories() == []


def test_an_internal_failure_is_raised_not_told_to_the_model(
    reopen: Callable[[], Palace],
) -> None:
    closed = reopen()
    recall = memory_tools(closed)[1]
    closed.close()
    with pytest.raises(Exception) as raised:
        recall.invoke({"query": "anything"})
    assert not isinstance(raised.value, ToolException)
