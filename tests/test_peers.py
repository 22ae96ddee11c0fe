"""Peer-facing palaces (seed 003 "peer-first fallback"): a peer call sees its
channel plus what is explicitly shared, never widens, and writes only into
its own channel; the management view is explicit."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import ConfigError, Palace, PermissionDenied, ValidationError
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.models import RecallFilters, Scope

MakePalace = Callable[..., Palace]


def _coach(make_palace: MakePalace, **options: object) -> Palace:
    return make_palace("coach", embedder=HashingEmbedder(), **options)


def test_peer_sees_its_channel_and_explicitly_shared_only(make_palace: MakePalace) -> None:
    operator = _coach(make_palace)
    private = operator.remember("coach private notes about pricing sessions")
    kb = operator.remember("shared kb: sessions last fifty minutes", visibility="shared")
    team = operator.remember("team kb: sessions start on time", visibility="group", group="staff")
    client_a = _coach(make_palace, channel="peer-coach:511", peer=True, groups=["staff"])
    client_b = _coach(make_palace, channel="peer-coach:999", peer=True)
    mine = client_a.remember("client prefers morning sessions")
    seen_a = {h.memory.id for h in client_a.recall("sessions", limit=20)}
    seen_b = {h.memory.id for h in client_b.recall("sessions", limit=20)}
    assert seen_a == {mine.id, kb.id, team.id}
    assert seen_b == {kb.id}
    assert private.id not in seen_a | seen_b
    assert {m.id for m in client_b.memories(limit=100)} == {kb.id}
    # The same agent through the same channel but not peer-facing sees its notes.
    plain = _coach(make_palace, channel="peer-coach:511")
    assert private.id in {m.id for m in plain.memories(limit=100)}


def test_peer_without_channel_fails_closed(make_palace: MakePalace) -> None:
    with pytest.raises(ValidationError, match="needs the peer's channel"):
        _coach(make_palace, peer=True)
    with pytest.raises(ValidationError, match="cannot have management"):
        _coach(make_palace, peer=True, channel="peer-coach:1", management=True)
    # The environment switch makes every palace peer-facing.
    settings = Settings.from_env({"MINDPALACE_PEER": "on", "MINDPALACE_EMBEDDER": "none"})
    with pytest.raises(ValidationError, match="needs the peer's channel"):
        make_palace("coach", settings=settings)
    with pytest.raises(ConfigError, match="valid options: on, off"):
        Settings.from_env({"MINDPALACE_PEER": "maybe"})


def test_a_rejected_scope_leaves_no_palace_open(tmp_path: Path) -> None:
    """A palace refused for its scope closes the store it had opened: no
    descriptor of its files stays open, no thread keeps writing beside them."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc to list open descriptors")

    def opened() -> list[str]:
        names = []
        for fd in fds.iterdir():
            try:
                names.append(os.readlink(fd))
            except OSError:
                continue  # closed while listing
        return [name for name in names if name.startswith(str(tmp_path))]

    settings = Settings(embedder="none")
    with pytest.raises(ValidationError, match="needs the peer's channel"):
        Palace(tmp_path / "p.db", agent_id="coach", peer=True, settings=settings)
    assert (tmp_path / "p.db").exists() and opened() == []


def test_a_peer_scope_without_channel_sees_nothing(make_palace: MakePalace) -> None:
    operator = _coach(make_palace)
    operator.remember("shared kb entry", visibility="shared")
    scope = Scope(agent_id="coach", peer=True)  # built by hand, bypassing the check
    everything = RecallFilters(include_archived=True)
    assert operator.store.list_memories(scope, everything, limit=10) == []
    index = operator.semantic.dense()
    assert index is not None and len(index) == 1
    assert not index.mask(scope, everything).any()


def test_peer_writes_only_into_its_channel(make_palace: MakePalace) -> None:
    client = _coach(make_palace, channel="peer-coach:511", peer=True)
    with pytest.raises(ValidationError, match="own channel; valid options: peer-coach:511"):
        client.remember("planted in another client's channel", channel="peer-coach:999")
    assert client.remember("fine", channel="peer-coach:511").channel == "peer-coach:511"
    unchannelled = json.dumps(
        {"id": "mem_x", "agent_id": "coach", "content": "x", "created_at": "2025-01-01"}
    )
    with pytest.raises(PermissionDenied):
        client.import_jsonl([unchannelled])


def test_management_read_is_explicit(make_palace: MakePalace) -> None:
    client = _coach(make_palace, channel="peer-coach:511", peer=True)
    client.remember("client secret")
    _coach(make_palace).remember("operator note")
    assert {m.content for m in _coach(make_palace).memories()} == {"operator note"}
    admin = _coach(make_palace, management=True)
    assert {m.content for m in admin.memories()} == {"client secret", "operator note"}


def test_turn_context_never_copies_what_its_readers_cannot_see(make_palace: MakePalace) -> None:
    """A conversation turn is indexed with the turn before it; that turn must be
    one every reader of the new turn may read (found by the leak test)."""
    operator = _coach(make_palace)
    operator.add_messages([Message("zanzibar budget is private", speaker="op")], session="s")
    peer = _coach(make_palace, channel="peer-coach:511", peer=True)
    [turn] = peer.add_messages([Message("hello there", speaker="client")], session="s")
    assert turn.context is None
    assert peer.recall("zanzibar") == []
    later = peer.add_messages([Message("second turn", speaker="client")], session="s")
    assert later[0].context == "client: hello there"  # its own previous turn is fine


def test_a_hard_deleted_turn_leaves_no_copy_in_the_next_turns_context(
    make_palace: MakePalace,
) -> None:
    palace = _coach(make_palace)
    first, second = palace.add_messages(
        [Message("the zanzibar code is 4711", speaker="op"), Message("noted", speaker="me")],
        session="s",
    )
    assert second.context == first.content
    palace.forget(first.id, hard=True)
    assert palace.get(second.id).context is None
    assert palace.recall("zanzibar") == []
