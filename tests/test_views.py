"""One engine, many agents: ``Palace.for_agent`` views share one engine."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindpalace import ConfigError, Palace, ValidationError
from mindpalace.config import Settings
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.engine import Engine


@pytest.fixture
def base(store_target: str) -> Iterator[Palace]:
    palace = Palace(store_target, settings=Settings(embedder="none"), embedder=HashingEmbedder())
    yield palace
    palace.close()


def test_views_share_one_engine_and_semantic_index(base: Palace) -> None:
    alice = base.for_agent("alice")
    bob = alice.for_agent("bob", groups=["ops"])
    assert alice.engine is base.engine and bob.engine is base.engine
    assert alice.semantic is base.semantic is bob.semantic
    assert alice.store is base.store
    assert (alice.scope.agent_id, bob.scope.agent_id, bob.scope.groups) == (
        "alice",
        "bob",
        ("ops",),
    )


def test_a_view_is_made_in_well_under_a_millisecond(base: Palace) -> None:
    base.for_agent("warm-up")
    n = 2000
    started = time.perf_counter()
    for i in range(n):
        base.for_agent(f"agent-{i}", channel="peer-1")
    per_view = (time.perf_counter() - started) / n
    assert per_view < 0.001, f"{per_view * 1e6:.0f} us per view"


def test_views_see_only_their_scope(base: Palace) -> None:
    alice, bob = base.for_agent("alice"), base.for_agent("bob")
    private = alice.remember("Alice keeps the deploy key in the blue vault")
    shared = alice.remember("The standup is at nine", visibility="shared")
    assert [h.memory.id for h in bob.recall("deploy key vault")] == []
    assert {m.id for m in bob.memories()} == {shared.id}
    assert {m.id for m in alice.memories()} == {private.id, shared.id}
    # Features built on a view act through its scope too.
    assert bob.family.what_do_i_know("deploy key").empty
    assert bob.stats().memories == 1


def test_a_peer_view_needs_its_channel(base: Palace) -> None:
    with pytest.raises(ValidationError, match="channel"):
        base.for_agent("coach", peer=True)
    peer = base.for_agent("coach", channel="peer-coach:1", peer=True)
    assert peer.scope.peer and peer.scope.channel == "peer-coach:1"


def test_closing_a_view_leaves_the_engine_open(base: Palace) -> None:
    view = base.for_agent("alice")
    with view:
        view.remember("first")
    assert [m.content for m in base.for_agent("alice").memories()] == ["first"]


def test_an_engine_palace_takes_no_engine_arguments(base: Palace, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="settings, target"):
        Palace(tmp_path / "other.db", engine=base.engine, settings=Settings())
    view = Palace(engine=base.engine, management=True)
    assert view.scope.unscoped and view.engine is base.engine


def test_an_engine_alone_has_no_scope(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "e.db", settings=Settings(embedder="none"))
    try:
        assert not hasattr(engine, "scope")
        first = Palace(engine=engine, agent_id="a")
        first.remember("kept by a")
        assert Palace(engine=engine, agent_id="b").memories() == []
    finally:
        engine.close()
