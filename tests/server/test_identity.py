"""Tokens to agents, and one palace per agent over one shared store."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.errors import ConfigError
from mindpalace.server import require_extra
from mindpalace.web.identity import (
    AuthError,
    Caller,
    PalacePool,
    TokenTable,
    is_loopback,
    load_tokens,
)

TABLE = TokenTable.parse(
    ["alice=t-alice", " bob = t-bob ", "# comment", "", "*=t-shared", "admin: ops =t-ops"],
    origin="test",
)


@pytest.mark.parametrize(
    ("authorization", "header", "agent"),
    [
        ("Bearer t-alice", None, "alice"),
        ("bearer t-bob", "mallory", "bob"),  # a per-agent token ignores the header
        ("Bearer t-shared", "carol", "carol"),
        ("Bearer  t-shared ", " carol ", "carol"),
    ],
)
def test_identify_a_valid_caller(authorization: str, header: str | None, agent: str) -> None:
    assert TABLE.identify(authorization, header) == Caller(agent)


@pytest.mark.parametrize("header", [None, "mallory"])
def test_an_admin_token_is_marked_admin(header: str | None) -> None:
    assert TABLE.identify("Bearer t-ops", header) == Caller("ops", admin=True)


@pytest.mark.parametrize(
    ("authorization", "header", "message"),
    [
        (None, None, "missing bearer token"),
        ("", "alice", "missing bearer token"),
        ("Bearer ", None, "missing bearer token"),
        ("Basic t-alice", None, "missing bearer token"),
        ("t-alice", None, "missing bearer token"),
        ("Bearer t-nobody", "alice", "unknown bearer token"),
        ("Bearer T-ALICE", None, "unknown bearer token"),
        ("Bearer t-shared", None, "needs the x-mindpalace-agent-id header"),
        ("Bearer t-shared", "", "needs the x-mindpalace-agent-id header"),
        ("Bearer t-shared", "x" * 200, "needs the x-mindpalace-agent-id header"),
    ],
)
def test_no_valid_identity_fails_closed(
    authorization: str | None, header: str | None, message: str
) -> None:
    with pytest.raises(AuthError, match=message):
        TABLE.identify(authorization, header)


def test_the_table_keeps_no_token_in_clear() -> None:
    assert "t-alice" not in repr(TABLE)
    assert all(len(key) == 64 for key in TABLE.agents)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (["alice"], "expected AGENT=TOKEN"),
        (["=token"], "expected AGENT=TOKEN"),
        (["alice="], "expected AGENT=TOKEN"),
        (["alice=same", "bob=same"], "already listed"),
        (["# only a comment", ""], "lists no token"),
        (["al\x01ice=t"], "entry 1"),
        (["admin:*=t"], "an admin token acts as one agent"),
        (["admin:=t"], "an admin token acts as one agent"),
        (["admin:ops=t", "ops=t"], "already listed"),
    ],
)
def test_malformed_token_lists_are_refused(entries: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TokenTable.parse(entries, origin="here")


def test_load_tokens_sources(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice=file-token\n")
    assert load_tokens(str(tokens), env_tokens=None, default_agent="d").identify(
        "Bearer file-token", None
    ) == Caller("alice")
    from_env = load_tokens("env", env_tokens="bob=env-token", default_agent="d")
    assert from_env.identify("Bearer env-token", None) == Caller("bob")
    anonymous = load_tokens("none", env_tokens="bob=env-token", default_agent="solo")
    assert anonymous.identify(None, None) == Caller("solo")
    with pytest.raises(ConfigError, match="MINDPALACE_TOKENS is not set"):
        load_tokens("env", env_tokens=None, default_agent="d")
    with pytest.raises(ConfigError, match="cannot read the tokens file"):
        load_tokens(str(tmp_path / "missing"), env_tokens=None, default_agent="d")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),  # noqa: S104 - the address under test
        ("10.0.0.1", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_pool_shares_store_and_semantic_index(make_palace: Callable[..., Palace]) -> None:
    base = make_palace("alice")
    pool = PalacePool(base, size=2)
    bob = pool.for_agent("bob")
    assert pool.for_agent("bob") is bob
    assert bob.scope.agent_id == "bob"
    assert bob.store is base.store
    assert bob.semantic is base.semantic
    note = bob.remember("Bob's note about herons")
    assert [h.memory.id for h in pool.for_agent("bob").recall("herons")] == [note.id]
    assert base.recall("herons") == []  # isolated: alice does not see it


def test_pool_gives_the_management_view_to_admins_only(
    make_palace: Callable[..., Palace],
) -> None:
    """Even over a management palace (as ``--all-agents`` opened one), an
    agent's view is scoped; only ``admin=True`` is unscoped."""
    base = make_palace("alice", management=True)
    pool = PalacePool(base)
    alice, ops = pool.for_agent("alice"), pool.for_agent("ops", admin=True)
    assert alice is not base
    assert not alice.scope.unscoped
    assert ops.scope.unscoped
    assert ops.scope.agent_id == "ops"
    assert pool.for_agent("ops") is not ops
    assert not pool.for_agent("ops").scope.unscoped
    note = pool.for_agent("bob").remember("Bob's note about kingfishers")
    assert alice.recall("kingfishers") == []
    assert [h.memory.id for h in ops.recall("kingfishers")] == [note.id]


def test_pool_keeps_the_most_recent_agents(make_palace: Callable[..., Palace]) -> None:
    pool = PalacePool(make_palace("alice"), size=2)
    first = pool.for_agent("a1")
    pool.for_agent("a2")
    pool.for_agent("a3")  # evicts the least recently used
    assert pool.for_agent("a3") is not first
    assert pool.for_agent("a1") is not first  # rebuilt after eviction


def test_require_extra_passes_when_installed() -> None:
    require_extra()


def test_a_missing_server_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the package index and from a clone of the repository alike."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    with pytest.raises(ConfigError) as missing:
        require_extra()
    message = str(missing.value)
    assert "(missing: mcp)" in message
    assert "pip install 'mindpalace[server]'" in message
    assert "from a clone of the repository: pip install '.[server]'" in message
