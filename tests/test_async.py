"""``AsyncPalace``: Palace's API as coroutines, on real SQLite files.

The event loop must stay free while a call runs (a heartbeat coroutine
ticks through a slow bulk write), concurrent awaits must all land, and
errors must be Palace's own classes.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from mindpalace import (
    AsyncPalace,
    ContextBlock,
    HitList,
    NotFoundError,
    Palace,
    PermissionDenied,
    StorageError,
    ValidationError,
)
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.base import Vectors

HASHING = Settings(embedder="hashing")
# Palace's public methods that are not coroutines on AsyncPalace, and why.
NOT_COROUTINES = {
    "open": "a constructor, as Palace.open",
    "for_agent": "makes a view (microseconds, no I/O)",
    "now": "reads the clock",
}


class SlowHashing(HashingEmbedder):
    """The hashing embedder, taking ``delay`` seconds per batch (a real,
    deterministic model that is merely slow)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.delay)
        return super().embed_batch(texts)


# -- the API is Palace's ---------------------------------------------------------------


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member) and not isinstance(member, type)
    }


def test_every_palace_method_has_an_async_counterpart() -> None:
    palace_methods = _public_methods(Palace)
    assert palace_methods - {"close"} <= _public_methods(AsyncPalace)
    for name in sorted(palace_methods - set(NOT_COROUTINES)):
        assert inspect.iscoroutinefunction(getattr(AsyncPalace, name)), name


@pytest.mark.parametrize("name", sorted(_public_methods(Palace) - {"close", "open"}))
def test_signatures_and_docs_are_palaces(name: str) -> None:
    sync, async_ = getattr(Palace, name), getattr(AsyncPalace, name)
    params = list(inspect.signature(sync).parameters.values())[1:]
    async_params = list(inspect.signature(async_).parameters.values())[1:]
    assert [(p.name, p.kind, p.default) for p in async_params] == [
        (p.name, p.kind, p.default) for p in params
    ]
    assert async_.__doc__
    assert async_.__name__ == name


def test_bad_thread_count_names_the_range(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="threads"):
        AsyncPalace(tmp_path / "p.db", threads=0, settings=HASHING)


# -- remember, recall, update, forget, context ---------------------------------------------


def test_remember_recall_update_forget_context(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncPalace(tmp_path / "p.db", settings=HASHING) as palace:
            memory = await palace.remember(
                "We chose SQLite because many processes share one file",
                category="decision",
                tags=["storage"],
            )
            hits = await palace.recall("why sqlite", limit=5)
            assert isinstance(hits, HitList)
            assert hits[0].memory.id == memory.id
            assert (await palace.get(memory.id)).content == memory.content

            changed = await palace.update(memory.id, content="We chose PostgreSQL for replicas")
            assert changed.id != memory.id
            assert (await palace.recall("postgresql replicas"))[0].memory.id == changed.id

            block = await palace.context("chose PostgreSQL for replicas", max_tokens=256)
            assert isinstance(block, ContextBlock)
            assert "PostgreSQL" in block.text

            assert (await palace.forget(changed.id)).id == changed.id
            assert all(h.memory.id != changed.id for h in await palace.recall("postgresql"))
            assert (await palace.stats()).archived == 1

    asyncio.run(scenario())


def test_views_share_the_engine_and_scope_their_calls(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncPalace(tmp_path / "p.db", settings=HASHING) as palace:
            alice, bob = palace.for_agent("alice"), palace.for_agent("bob")
            assert alice.engine is palace.engine
            mine = await alice.remember("Alice keeps the release checklist")
            assert await bob.recall("release checklist") == []
            with pytest.raises(NotFoundError):
                await bob.get(mine.id)
            shared = await alice.remember("The office opens at nine", visibility="shared")
            with pytest.raises(PermissionDenied):
                await bob.forget(shared.id)
            await bob.close()  # a view's close leaves the engine open
            assert (await alice.get(mine.id)).id == mine.id
            with pytest.raises(StorageError, match="closed"):
                await bob.stats()
        with pytest.raises(StorageError, match="closed"):
            await alice.stats()  # its opener closed

    asyncio.run(scenario())


def test_open_takes_a_url_and_run_reaches_the_features(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncPalace.open(f"sqlite:///{tmp_path / 'p.db'}", settings=HASHING) as palace:
            await palace.remember("Alice owns the Billing service")
            answer = await palace.run(lambda p: p.family.who_owns("Billing"))
            assert "Alice" in str(answer.to_dict())
            report = await palace.doctor()
            assert report.ok, report.problems

    asyncio.run(scenario())


# -- concurrency ---------------------------------------------------------------------------


def test_concurrent_writes_and_recalls_all_land(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncPalace(tmp_path / "p.db", settings=HASHING) as palace:
            memories, recalls = await asyncio.gather(
                asyncio.gather(*(palace.remember(f"pelican sighting {i}") for i in range(20))),
                asyncio.gather(*(palace.recall("pelican sighting", limit=20) for _ in range(20))),
            )
            assert len({m.id for m in memories}) == 20
            assert all(isinstance(hits, HitList) for hits in recalls)
            listed = await palace.memories(limit=100)
            assert {m.id for m in listed} == {m.id for m in memories}
            assert len(await palace.recall("pelican sighting", limit=20)) == 20

    asyncio.run(scenario())


def test_the_event_loop_stays_responsive_during_a_slow_call(tmp_path: Path) -> None:
    ticks: list[float] = []

    async def heartbeat(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        model = SlowHashing(delay=0.4)
        async with AsyncPalace(tmp_path / "p.db", embedder=model, settings=HASHING) as palace:
            stop = asyncio.Event()
            beating = asyncio.create_task(heartbeat(stop))
            await asyncio.sleep(0)
            started = time.monotonic()
            records = [{"content": f"bulk note {i} about otters"} for i in range(40)]
            stored = await palace.remember_many(records)
            ended = time.monotonic()
            stop.set()
            await beating
        assert len(stored) == 40
        assert ended - started >= 0.4
        during = [t for t in ticks if started <= t <= ended]
        assert len(during) >= 10, f"{len(during)} ticks in {ended - started:.2f} s"

    asyncio.run(scenario())


# -- errors ---------------------------------------------------------------------------------


def test_errors_are_palaces_own(tmp_path: Path) -> None:
    with (
        Palace(tmp_path / "sync.db", settings=HASHING) as sync_palace,
        pytest.raises(ValidationError) as sync_error,
    ):
        sync_palace.remember("x", category="nonsense")

    async def scenario() -> None:
        async with AsyncPalace(tmp_path / "p.db", settings=HASHING) as palace:
            with pytest.raises(ValidationError) as error:
                await palace.remember("x", category="nonsense")
            assert type(error.value) is type(sync_error.value)
            assert str(error.value) == str(sync_error.value)
            assert error.value.field == "category"
            assert "decision" in error.value.valid and "fact" in error.value.valid
            assert "decision" in str(error.value)
            with pytest.raises(NotFoundError):
                await palace.get("mem_01M80ZW991W4M5495K3P5QZ9C5")
            with pytest.raises(ValidationError, match="limit"):
                await palace.recall("x", limit=0)
            assert await palace.memories() == []  # nothing was written

    asyncio.run(scenario())
