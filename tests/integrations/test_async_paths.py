"""The integrations' async paths, with the real frameworks: the same
results as the sync ones, and the event loop keeps running while the
palace works (a ticker task keeps ticking during a slow recall)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mindpalace import Palace
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.base import Vectors

T = TypeVar("T")
# The embedder's pause per call while slow; a blocked loop would tick once.
PAUSE = 0.3
TICK = 0.01


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder, pausing on every call while ``slow`` is set
    (a model on a busy machine)."""

    slow = False

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if self.slow:
            time.sleep(PAUSE)
        return super().embed_batch(texts)


@pytest.fixture
def slow() -> SlowEmbedder:
    return SlowEmbedder()


@pytest.fixture
def palace(tmp_path: Path, slow: SlowEmbedder) -> Iterator[Palace]:
    # A stopped clock: the two calls compared see the same recency.
    now = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
    with Palace(tmp_path / "palace.db", embedder=slow, clock=lambda: now) as opened:
        opened.remember("We chose SQLite for the embedded store", category="decision")
        opened.remember("Priya prefers window seats on long flights")
        opened.remember("The billing service depends on Redis")
        yield opened


def ticking(work: Awaitable[T]) -> tuple[T, int]:
    """``work``'s result, and how often a concurrent task ticked meanwhile."""

    async def go() -> tuple[T, int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(TICK)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker starts before the work
        try:
            result = await work
        finally:
            done.set()
            await task
        return result, ticks

    return asyncio.run(go())


def free(ticks: int) -> bool:
    """The loop ran through the pause (a blocked loop ticks once or twice)."""
    return ticks >= PAUSE / TICK / 3


def test_langchain_retriever(palace: Palace, slow: SlowEmbedder) -> None:
    from mindpalace.integrations.langchain import MindPalaceRetriever

    retriever = MindPalaceRetriever(palace, k=3)
    slow.slow = True
    found, ticks = ticking(retriever.ainvoke("which database for the store"))
    assert free(ticks), ticks
    expected = retriever.invoke("which database for the store")
    assert [(d.id, d.page_content, d.metadata) for d in found] == [
        (d.id, d.page_content, d.metadata) for d in expected
    ]
    assert found[0].page_content == "We chose SQLite for the embedded store"


def test_langchain_tools_and_runnable(palace: Palace, slow: SlowEmbedder) -> None:
    from mindpalace.integrations.langchain import context_runnable, memory_tools

    store, recall = memory_tools(palace)
    runnable = context_runnable(palace)
    slow.slow = True
    answer, ticks = ticking(recall.ainvoke({"query": "seat preference"}))
    assert free(ticks), ticks
    assert answer == recall.invoke({"query": "seat preference"})
    assert "window seats" in answer
    # Another question: a query's vector is cached once embedded.
    block, ticks = ticking(runnable.ainvoke("where Priya sits"))
    assert free(ticks), ticks
    assert block == runnable.invoke("where Priya sits")
    assert "window seats" in block
    stored, ticks = ticking(store.ainvoke({"content": "Priya flies from Lisbon"}))
    assert free(ticks), ticks
    assert [h.memory.content for h in palace.recall("Lisbon", limit=1)] == [
        "Priya flies from Lisbon"
    ]
    assert "mem_" in stored
    refused = asyncio.run(store.ainvoke({"content": "x", "category": "gossip"}))
    assert refused == store.invoke({"content": "x", "category": "gossip"})
    assert "valid options" in refused


def test_langchain_chat_history(palace: Palace, slow: SlowEmbedder) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from mindpalace.integrations.langchain import MindPalaceChatMessageHistory

    history = MindPalaceChatMessageHistory(palace, "trip-1")
    said = [HumanMessage("Book me a window seat"), AIMessage("Done: seat 14A")]
    slow.slow = True
    _, ticks = ticking(history.aadd_messages(said))
    assert free(ticks), ticks
    read, _ = ticking(history.aget_messages())
    assert read == history.messages
    assert [m.text for m in read] == ["Book me a window seat", "Done: seat 14A"]
    asyncio.run(history.aclear())
    assert history.messages == []


def test_openai_agents_instructions_and_tools(palace: Palace, slow: SlowEmbedder) -> None:
    from agents import Agent, RunContextWrapper
    from agents.tool_context import ToolContext

    from mindpalace.integrations.openai_agents import memory_instructions, memory_tools

    agent = Agent(name="planner", instructions=memory_instructions(palace, "You plan trips."))
    context: RunContextWrapper[Any] = RunContextWrapper(context=None)
    context.turn_input = [{"role": "user", "content": "where does Priya like to sit"}]
    slow.slow = True
    prompt, ticks = ticking(agent.get_system_prompt(context))
    assert free(ticks), ticks
    block = palace.context("where does Priya like to sit", max_tokens=1024)
    assert prompt is not None and prompt.startswith("You plan trips.")
    assert prompt.endswith(block.text) and "window seats" in prompt
    recall = next(t for t in memory_tools(palace) if t.name == "memory_recall")
    call = ToolContext(context=None, tool_name="memory_recall", tool_call_id="1", tool_arguments="")
    answer, ticks = ticking(recall.on_invoke_tool(call, '{"query": "seat preference"}'))
    assert free(ticks), ticks
    assert answer == palace.context("seat preference", max_tokens=1024).text


def test_llama_index_retriever_and_tools(palace: Palace, slow: SlowEmbedder) -> None:
    from mindpalace.integrations.llama_index import MindPalaceRetriever, memory_tools

    retriever = MindPalaceRetriever(palace, k=3)
    slow.slow = True
    nodes, ticks = ticking(retriever.aretrieve("which database for the store"))
    assert free(ticks), ticks
    expected = retriever.retrieve("which database for the store")
    assert [(n.node.node_id, n.score) for n in nodes] == [
        (n.node.node_id, n.score) for n in expected
    ]
    recall = next(t for t in memory_tools(palace) if t.metadata.name == "memory_recall")
    output, ticks = ticking(recall.acall(query="seat preference"))
    assert free(ticks), ticks
    assert output.content == recall.call(query="seat preference").content
    assert "window seats" in output.content
