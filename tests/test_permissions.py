"""Who may change which memory (``scoping.check_change``), through the
Python API: every action on every kind of memory, by an ordinary view, a
peer-facing view and the management view of one agent, on every backend.

A refused action raises ``PermissionDenied`` naming the action, the memory
and why, and leaves the memory exactly as it was (not archived, still
recalled, no new version); a memory the view cannot see is not found.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mindpalace import NotFoundError, Palace, PermissionDenied, ValidationError
from mindpalace.config import Settings
from mindpalace.models import Memory
from mindpalace.scoping import ACTIONS, check_change

MakePalace = Callable[..., Palace]

AGENT = "coach"
CHANNEL = "peer-coach:1"
WORD = "zephyr"

# kind of memory -> (its owner, remember's options)
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "own": (AGENT, {}),
    "own_in_channel": (AGENT, {"channel": CHANNEL}),
    "own_shared": (AGENT, {"visibility": "shared"}),  # unchannelled, shared
    "own_group": (AGENT, {"visibility": "group", "group": "staff"}),
    "others_shared": ("bob", {"visibility": "shared"}),
    "others_group": ("bob", {"visibility": "group", "group": "staff"}),
}

ALLOW, REFUSE, UNSEEN = "allowed", "refused", "not found"

# The rule for every action but feedback: view -> kind of memory -> outcome.
CHANGE = {
    "agent": {
        "own": ALLOW,
        "own_in_channel": ALLOW,
        "own_shared": ALLOW,
        "own_group": ALLOW,
        "others_shared": REFUSE,
        "others_group": REFUSE,
    },
    "peer": {
        "own": UNSEEN,  # the agent's isolated notes: no peer sees them
        "own_in_channel": ALLOW,
        "own_shared": REFUSE,  # every peer of the agent reads it: none changes it
        "own_group": REFUSE,
        "others_shared": REFUSE,
        "others_group": REFUSE,
    },
    "management": dict.fromkeys(KINDS, ALLOW),
}
# Feedback judges a memory without changing it: wherever the view sees it.
FEEDBACK = {
    view: {kind: UNSEEN if outcome == UNSEEN else ALLOW for kind, outcome in kinds.items()}
    for view, kinds in CHANGE.items()
}

# What the tests call (forget soft and hard are one action of the rule).
CALLS = ("forget", "forget_hard", "update", "restore", "complete", "feedback")


def expected(view: str, kind: str, call: str) -> str:
    return (FEEDBACK if call == "feedback" else CHANGE)[view][kind]


def _settings(agent: str) -> Settings:
    return Settings(agent_id=agent, embedder="none")


def _view(make_palace: MakePalace, view: str) -> Palace:
    options: dict[str, Any] = {
        "agent": {"groups": ["staff"], "channel": CHANNEL},
        "peer": {"groups": ["staff"], "channel": CHANNEL, "peer": True},
        "management": {"management": True},
    }[view]
    return make_palace(AGENT, settings=_settings(AGENT), **options)


def _seed(make_palace: MakePalace, kind: str, *, issue: bool) -> Memory:
    owner, options = KINDS[kind]
    writer = make_palace(owner, settings=_settings(owner))
    if issue:
        options = {**options, "kind": "issue", "project": "Garden"}
    return writer.remember(f"{WORD} note of kind {kind.replace('_', ' ')}", **options)


def _act(palace: Palace, call: str, memory_id: str) -> Any:
    if call == "forget":
        return palace.forget(memory_id)
    if call == "forget_hard":
        return palace.forget(memory_id, hard=True)
    if call == "update":
        return palace.update(memory_id, content=f"{WORD} note, corrected")
    if call == "restore":
        return palace.restore(memory_id)
    if call == "complete":
        return palace.personal.complete_issue(memory_id)
    return palace.feedback(memory_id, useful=True)


def _everything(admin: Palace) -> list[Memory]:
    return admin.memories(include_archived=True, include_superseded=True)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("view", list(CHANGE))
def test_who_may_change_which_memory(
    make_palace: MakePalace, view: str, kind: str, call: str
) -> None:
    memory = _seed(make_palace, kind, issue=call == "complete")
    admin = make_palace(AGENT, settings=_settings(AGENT), management=True)
    if call == "restore":
        admin.forget(memory.id)
    before, stored = admin.get(memory.id), _everything(admin)
    palace = _view(make_palace, view)
    outcome = expected(view, kind, call)

    if outcome == ALLOW:
        result = _act(palace, call, memory.id)
        after = admin.memories(include_archived=True, include_superseded=True)
        if call == "forget":
            assert admin.get(memory.id).archived
            assert memory.id not in {h.memory.id for h in admin.recall(WORD, limit=20)}
        elif call == "forget_hard":
            with pytest.raises(NotFoundError):
                admin.get(memory.id)
        elif call == "update":
            assert result.id != memory.id
            assert admin.get(memory.id).superseded_by == result.id
        elif call == "restore":
            assert not admin.get(memory.id).archived
        elif call == "complete":
            assert admin.get(memory.id).completed is True
        else:
            assert result is not None and result.memory_id == memory.id
            assert after == stored  # feedback changes no memory
        return

    error = NotFoundError if outcome == UNSEEN else PermissionDenied
    with pytest.raises(error) as caught:
        _act(palace, call, memory.id)
    message = str(caught.value)
    assert memory.id in message
    if outcome == REFUSE:
        action = "forget" if call == "forget_hard" else call
        assert f"may not {action} memory" in message
        assert "only it may" not in message
        owner = KINDS[kind][0]
        if owner == AGENT:  # the agent's own memory, refused to its peer-facing view
            assert "peer-facing" in message and "belongs to" not in message
        else:
            assert f"belongs to agent {owner!r}" in message
    # Nothing changed: the same memory, no new version, recalled as before.
    assert admin.get(memory.id) == before
    assert _everything(admin) == stored
    recalled = memory.id in {h.memory.id for h in admin.recall(WORD, limit=20)}
    assert recalled is (call != "restore")  # restore's memory stays archived


def test_an_unknown_action_names_the_valid_ones(make_palace: MakePalace) -> None:
    memory = _seed(make_palace, "own", issue=False)
    palace = _view(make_palace, "agent")
    with pytest.raises(ValidationError) as caught:
        check_change(palace.scope, memory, "archive")
    assert caught.value.valid == ACTIONS
    assert "valid options: forget, update, restore, complete, feedback, erase" in str(caught.value)


@pytest.mark.parametrize("action", ACTIONS)
def test_erase_and_every_action_follow_the_peer_rule(make_palace: MakePalace, action: str) -> None:
    """``check_change`` itself, for the actions no facade call reaches yet (erase)."""
    shared = _seed(make_palace, "own_shared", issue=False)
    mine = _seed(make_palace, "own_in_channel", issue=False)
    peer = _view(make_palace, "peer")
    check_change(peer.scope, mine, action)
    check_change(_view(make_palace, "management").scope, shared, action)
    check_change(_view(make_palace, "agent").scope, shared, action)
    if action == "feedback":
        check_change(peer.scope, shared, action)
        return
    with pytest.raises(PermissionDenied, match=f"may not {action} memory .*: it is unchannelled"):
        check_change(peer.scope, shared, action)


def test_an_import_refusal_says_why_without_blaming_the_owner(make_palace: MakePalace) -> None:
    peer = _view(make_palace, "peer")
    unchannelled = {"id": "mem_x", "agent_id": AGENT, "content": "x", "created_at": "2025-01-01"}
    with pytest.raises(PermissionDenied) as caught:
        peer.import_jsonl([json.dumps(unchannelled)])
    message = str(caught.value)
    assert "may not import memory 'mem_x'" in message and "unchannelled" in message
    assert "belongs to" not in message
    foreign = {**unchannelled, "agent_id": "bob", "channel": CHANNEL}
    with pytest.raises(PermissionDenied, match="belongs to agent 'bob', not to 'coach'"):
        peer.import_jsonl([json.dumps(foreign)])
