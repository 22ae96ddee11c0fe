"""Retention rules, on every backend: set, list, remove (one rule per
combination, clear errors naming the valid values, the permission rule);
``apply`` as a dry run and for real, one receipt per run in the erasure log;
the background run (``run_due``, ``background``) taking turns through the
palace; the command line, ``stats`` and ``doctor``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mindpalace import Palace
from mindpalace.arguments import build_parser
from mindpalace.commands import run
from mindpalace.config import Settings
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError
from mindpalace.retention import JOB_AGENT, background, run_due
from mindpalace.store import Store

OLD = datetime(2025, 6, 1, tzinfo=timezone.utc)  # the clock starts 2026-01-01


def _contents(store: Store) -> list[str]:
    admin = Palace(store=store, management=True, settings=Settings())
    return sorted(m.content for m in admin.memories(include_archived=True, include_superseded=True))


def _seed(alice: Palace, bob: Palace) -> None:
    alice.remember(
        "Old chat turn about herons", store="episodic", category="conversation", created_at=OLD
    )
    alice.remember("Old semantic fact about kilns", created_at=OLD)
    alice.remember("Fresh chat turn about herons", store="episodic", category="conversation")
    bob.remember("Bob's old chat turn", store="episodic", category="conversation", created_at=OLD)


# -- rules ----------------------------------------------------------------------------


def test_set_list_remove(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    admin = make_palace("ops", management=True)
    chats = alice.retention.set(90, store="episodic", category="conversation")
    assert (chats.days, chats.agent_id, chats.store and chats.store.value) == (
        90,
        "alice",
        "episodic",
    )
    again = alice.retention.set(30, store="EPISODIC ", category="conversation")
    assert again.id == chats.id and again.days == 30  # the same combination: new days
    scratch = admin.retention.set(7, store="sensory", every_agent=True)
    assert scratch.agent_id is None and scratch.set_by == "ops"
    bobs = admin.retention.set(10, agent_id="bob", type="task")
    assert [r.id for r in alice.retention.list()] == [chats.id, scratch.id]
    assert [r.id for r in bob.retention.list()] == [scratch.id, bobs.id]
    assert len(admin.retention.list()) == 3
    assert alice.retention.remove(chats.id).id == chats.id
    assert [r.id for r in alice.retention.list()] == [scratch.id]
    with pytest.raises(NotFoundError):
        alice.retention.remove(chats.id)
    with pytest.raises(NotFoundError):  # not among the rules alice sees
        alice.retention.remove(bobs.id)


@pytest.mark.parametrize(
    ("days", "options", "field", "says"),
    [
        (0, {}, "days", "from 1 to 36500"),
        (40_000, {}, "days", "from 1 to 36500"),
        ("ninety", {}, "days", "whole number"),
        (True, {}, "days", "whole number"),
        (9, {"store": "attic"}, "store", "valid options: sensory, episodic"),
        (9, {"category": "idea"}, "category", "decision"),
        (9, {"type": "gadget"}, "type", "person"),
        (9, {"agent_id": "bo b"}, "agent_id", "agent_id"),
        (9, {"agent_id": "bob", "every_agent": True}, "agent_id", "one agent or every agent"),
        (9, {"every_agent": True}, "every_agent", "at least one of store, category, type"),
    ],
)
def test_bad_rules_name_what_is_valid(
    make_palace: Callable[..., Palace], days: Any, options: dict[str, Any], field: str, says: str
) -> None:
    admin = make_palace("ops", management=True)
    with pytest.raises(ValidationError) as caught:
        admin.retention.set(days, **options)
    assert caught.value.field == field and says in str(caught.value)
    assert admin.retention.list() == []


def test_who_may_set_and_remove_rules(make_palace: Callable[..., Palace]) -> None:
    alice = make_palace("alice")
    with pytest.raises(PermissionDenied, match=r"may not set retention rule .* agent 'bob'"):
        alice.retention.set(9, agent_id="bob")
    with pytest.raises(PermissionDenied, match="every agent's memories"):
        alice.retention.set(9, store="sensory", every_agent=True)
    peer = make_palace("alice", channel="peer-coach:1", peer=True)
    with pytest.raises(PermissionDenied, match="peer-facing view"):
        peer.retention.set(9)
    shared = make_palace("ops", management=True).retention.set(7, store="sensory", every_agent=True)
    with pytest.raises(PermissionDenied, match=f"may not remove retention rule '{shared.id}'"):
        alice.retention.remove(shared.id)
    assert [r.id for r in alice.retention.list()] == [shared.id]


# -- apply -----------------------------------------------------------------------------


def test_apply_is_a_dry_run_until_confirmed(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    _seed(alice, bob)
    rule = alice.retention.set(90, store="episodic", category="conversation")
    before = _contents(store)
    dry = alice.retention.apply()
    assert dry.id is None and dry.counts.memories == 1
    assert _contents(store) == before and alice.erasures() == []
    done = alice.retention.apply(confirm=True)
    assert done.erased and done.counts.memories == 1 and done.digest == dry.digest
    assert _contents(store) == [
        "Bob's old chat turn",  # bob's: alice's rule reaches alice's memories only
        "Fresh chat turn about herons",  # younger than 90 days
        "Old semantic fact about kilns",  # not a chat turn
    ]
    (logged,) = alice.erasures()
    assert logged.id == done.id
    (reached,) = logged.selection["rules"]
    assert logged.selection["kind"] == "retention"
    assert reached["id"] == rule.id and reached["memories"] == 1 and reached["days"] == 90
    assert reached["cutoff"].startswith("2025-10-03T12:")  # the clock's day, 90 days back
    assert "heron" not in json.dumps(logged.to_dict()).lower()
    assert alice.retention.apply(confirm=True).counts.memories == 0  # nothing left to erase


def test_apply_takes_older_versions_and_archived_memories(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    alice = make_palace("alice")
    old = alice.remember("Draft note v1", store="sensory", created_at=OLD)
    alice.forget(old.id)  # archived: retention keeps nothing past its days
    kept = alice.remember("Draft note kept", store="sensory")
    alice.retention.set(7, store="sensory")
    receipt = alice.retention.apply(confirm=True)
    assert receipt.counts.memories == 1
    assert _contents(store) == [kept.content]


def test_every_agent_rules_through_each_view(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    admin = make_palace("ops", management=True)
    _seed(alice, bob)
    admin.retention.set(90, store="episodic", every_agent=True)
    assert alice.retention.apply(confirm=True).counts.memories == 1  # her own only
    assert "Bob's old chat turn" in _contents(store)
    assert admin.retention.apply(confirm=True).counts.memories == 1  # bob's, through management
    assert "Bob's old chat turn" not in _contents(store)


def test_run_due_takes_turns_and_leaves_no_empty_receipts(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    job = make_palace(JOB_AGENT, management=True)
    assert run_due(job, every=3600) is None  # no rule: nothing is claimed
    assert store.retention_ran_at() is None
    _seed(alice, bob)
    make_palace("ops", management=True).retention.set(
        90, store="episodic", category="conversation", every_agent=True
    )
    receipt = run_due(job, every=3600)
    assert receipt is not None and receipt.counts.memories == 2 and receipt.agent_id == JOB_AGENT
    assert store.retention_ran_at() is not None
    bob.remember("Bob's other old turn", store="episodic", category="conversation", created_at=OLD)
    assert run_due(job, every=3600) is None  # another ran within the hour
    later = job.now() + timedelta(hours=2)
    assert run_due(job, every=3600, now=later) is not None
    assert run_due(job, every=3600, now=later + timedelta(hours=2)) is None  # nothing left
    assert len(job.erasures()) == 2  # the empty run left no receipt


def test_background_applies_the_rules(make_palace: Callable[..., Palace], store: Store) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    _seed(alice, bob)
    alice.retention.set(90, store="episodic", category="conversation")
    job = make_palace(JOB_AGENT, management=True)
    with background(job, every=1) as ran:
        assert ran.wait(30)
        deadline = time.monotonic() + 30
        while "Old chat turn about herons" in _contents(store) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "Old chat turn about herons" not in _contents(store)
    assert [r.agent_id for r in job.erasures()] == [JOB_AGENT]
    with background(job, every=0) as ran:  # 0: no thread at all
        assert not ran.wait(0.2)


# -- command line, stats, doctor ----------------------------------------------------


def _cli(db: Path, *argv: str) -> tuple[int, str, str]:
    return run(build_parser().parse_args(["--db", str(db), "--agent", "ann", *argv]))


def test_cli_rules_stats_and_doctor(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    monkeypatch.setenv("MINDPALACE_RETENTION_EVERY", "0")
    db = tmp_path / "p.db"
    with Palace(db, agent_id="ann", settings=Settings(embedder="hashing")) as ann:
        ann.remember("Scratch idea from last year", store="sensory", created_at=OLD)
        ann.remember("Scratch idea from today", store="sensory")
    code, out, _ = _cli(db, "retention", "set", "7", "--store", "sensory")
    rule = json.loads(out)
    assert code == 0 and rule["store"] == "sensory" and rule["agent_id"] == "ann"
    code, out, _ = _cli(db, "retention", "list", "--plain")
    assert rule["id"] in out and "sensory memories of agent ann" in out
    code, out, _ = _cli(db, "stats")
    assert [r["id"] for r in json.loads(out)["retention"]] == [rule["id"]]
    code, out, _ = _cli(db, "doctor")
    (check,) = [c for c in json.loads(out)["checks"] if c["name"] == "retention"]
    assert not check["ok"] and "1 memories have outlived their rule" in check["detail"]
    assert check["fix"].endswith("--all-agents retention apply --yes")
    code, out, _ = _cli(db, "retention", "apply", "--plain")
    assert code == 0 and out.startswith("Would erase 1 memories (dry run")
    code, out, _ = _cli(db, "retention", "apply", "--yes")
    assert code == 0 and json.loads(out)["counts"]["memories"] == 1
    code, out, _ = _cli(db, "erasures", "--plain")
    assert "retention" in out and "scratch" not in out.lower()
    code, out, _ = _cli(db, "doctor")
    (check,) = [c for c in json.loads(out)["checks"] if c["name"] == "retention"]
    assert check["ok"] and "0 memories have outlived" in check["detail"]
    code, out, _ = _cli(db, "retention", "remove", rule["id"], "--plain")
    assert code == 0 and out.startswith("Removed. Rule ")
    assert json.loads(_cli(db, "retention", "list")[1]) == []


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["retention", "set", "0"], "days must be a whole number from 1 to 36500"),
        (["retention", "set", "7", "--store", "attic"], "valid options: sensory, episodic"),
        (["retention", "set", "7", "--category", "idea"], "valid options: decision"),
        (["retention", "set", "7", "--type", "gadget"], "valid options: person"),
    ],
)
def test_cli_refuses_bad_rules_before_opening(tmp_path: Path, argv: list[str], says: str) -> None:
    db = tmp_path / "never.db"
    code, out, err = _cli(db, *argv)
    assert code == 2 and out == "" and says in err, err
    assert err.startswith("mindpalace retention set: error:")
    assert not db.exists()


def test_cli_permission_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    db = tmp_path / "p.db"
    code, _, err = _cli(db, "retention", "set", "7", "--store", "sensory", "--every-agent")
    assert code == 1 and "every agent's memories" in err and "--all-agents" in err
    code, out, _ = _cli(
        db, "--all-agents", "retention", "set", "7", "--store", "sensory", "--every-agent"
    )
    assert code == 0 and json.loads(out)["agent_id"] is None
