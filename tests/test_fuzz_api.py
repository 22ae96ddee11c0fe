"""Fuzz every public entry point of the Python API with hostile values
(``hostile``): lone surrogates, control characters, huge strings, deep
nesting, huge integers, values of the wrong type. The property: a call
either succeeds or raises a ``ValidationError`` or ``NotFoundError`` (or
``PermissionDenied``: all say what the caller got wrong), never anything
else, and a call that raises leaves the palace as it was. Every backend;
the hashing embedder."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import to_json, values
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError
from mindpalace.store import Store
from mindpalace.validation import EXPORT_FORMAT, EXPORT_VERSION

REFUSALS = (ValidationError, NotFoundError, PermissionDenied)
HEADER = json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION})

Entry = tuple[Callable[..., object], dict[str, Any]]

# Each entry point with valid arguments; the test makes some of them hostile.
ENTRY_POINTS: dict[str, Entry] = {
    "remember": (
        lambda p, content, **kw: p.remember(content, **kw),
        {
            "content": "We chose SQLite for the store",
            "title": None,
            "context": None,
            "session": None,
            "type": "unknown",
            "store": "semantic",
            "category": "fact",
            "tags": None,
            "source": "manual",
            "visibility": "isolated",
            "group": None,
            "channel": None,
            "constraint": False,
            "confidence": 1.0,
            "valid_from": None,
            "valid_to": None,
            "created_at": None,
            "metadata": None,
            "kind": None,
            "project": None,
            "completed": None,
        },
    ),
    "remember_many": (
        lambda p, **record: p.remember_many([{"content": "a first, fine record"}, record]),
        {"content": "a second record", "title": None, "tags": None, "metadata": None},
    ),
    "recall": (
        lambda p, query, **kw: p.recall(query, **kw),
        {
            "query": "why sqlite",
            "limit": 10,
            "types": None,
            "stores": None,
            "categories": None,
            "tags": None,
            "visibility": None,
            "created_after": None,
            "created_before": None,
            "mode": None,
            "kinds": None,
            "projects": None,
            "completed": None,
        },
    ),
    "search": (
        lambda p, query, **kw: p.search(query, **kw),
        {"query": "sqlite", "kinds": None, "project": None, "limit": 10},
    ),
    "context": (
        lambda p, query, **kw: p.context(query, **kw),
        {"query": "store", "max_tokens": 2048},
    ),
    "memories": (
        lambda p, **kw: p.memories(**kw),
        {
            "limit": 50,
            "offset": 0,
            "tags": None,
            "sessions": None,
            "sources": None,
            "projects": None,
            "created_after": None,
        },
    ),
    "recent": (lambda p, **kw: p.recent(**kw), {"limit": 20, "session": None}),
    "search_messages": (
        lambda p, phrase, **kw: p.search_messages(phrase, **kw),
        {"phrase": "plan", "limit": 20, "around": 1, "session": None},
    ),
    "get": (lambda p, memory_id: p.get(memory_id), {"memory_id": "mem_0"}),
    "forget": (lambda p, memory_id, **kw: p.forget(memory_id, **kw), {"memory_id": "mem_0"}),
    "feedback": (
        lambda p, memory_id, **kw: p.feedback(memory_id, **kw),
        {"memory_id": "mem_0", "useful": True},
    ),
    "what_do_i_know": (
        lambda p, topic, **kw: p.family.what_do_i_know(topic, **kw),
        {"topic": "storage", "limit": 25, "per_group": 5},
    ),
    "why_did_we": (
        lambda p, query, **kw: p.family.why_did_we(query, **kw),
        {"query": "choose SQLite", "limit": 10},
    ),
    "who_owns": (
        lambda p, name, **kw: p.family.who_owns(name, **kw),
        {"name": "Billing", "limit": 10},
    ),
    "depends_on": (
        lambda p, name, **kw: p.family.depends_on(name, **kw),
        {"name": "Redis", "direction": "dependents", "limit": 10},
    ),
    "preflight": (
        lambda p, action, **kw: p.family.preflight(action, **kw),
        {"action": "deploy", "limit": 5},
    ),
    "entities": (
        lambda p, **kw: p.graph.entities(**kw),
        {"query": None, "types": None, "limit": 50, "offset": 0},
    ),
    "mentions": (lambda p, memory_id: p.graph.mentions(memory_id), {"memory_id": "mem_0"}),
    "history": (lambda p, memory_id: p.graph.history(memory_id), {"memory_id": "mem_0"}),
    "journal": (
        lambda p, text, **kw: p.personal.journal(text, **kw),
        {"text": "Walked by the river", "date": None, "title": None, "project": None},
    ),
    "add_node": (
        lambda p, name, note: p.personal.add_node(name, note),
        {"name": "River", "note": "a river"},
    ),
    "add_issue": (
        lambda p, note, **kw: p.personal.add_issue(note, **kw),
        {"note": "the timer is broken", "project": "home", "completed": False},
    ),
    "add_spec": (
        lambda p, note, **kw: p.personal.add_spec(note, **kw),
        {"note": "the timer waters at dawn", "project": "home"},
    ),
    "complete_issue": (
        lambda p, memory_id, **kw: p.personal.complete_issue(memory_id, **kw),
        {"memory_id": "mem_0", "completed": True},
    ),
    "activate_skills": (
        lambda p, query, **kw: p.skills.activate(query, **kw),
        {"query": "review code", "limit": 5},
    ),
    "get_skill": (lambda p, name: p.skills.get(name), {"name": "code-review"}),
    "find_skills": (
        lambda p, tags, **kw: p.skills.find(tags, **kw),
        {"tags": "review", "limit": 20},
    ),
    "for_agent": (
        lambda p, agent_id, **kw: p.for_agent(agent_id, **kw).stats(),
        {"agent_id": "ann", "groups": (), "channel": None},
    ),
    "add_messages": (
        lambda p, content, role, speaker, session, atomic: p.add_messages(
            [Message("hello there"), Message(content, role=role, speaker=speaker, session=session)],
            atomic=atomic,
        ),
        {"content": "hi", "role": "user", "speaker": None, "session": None, "atomic": False},
    ),
    "import_jsonl": (
        lambda p, record: p.import_jsonl([HEADER, to_json(record)]),
        {"record": {}},
    ),
}


def _state(palace: Palace) -> object:
    every = palace.memories(limit=10_000, include_archived=True, include_superseded=True)
    return palace.stats(), [m.to_dict() for m in every]


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(ENTRY_POINTS)))
    arguments = dict(ENTRY_POINTS[name][1])
    for key in draw(st.sets(st.sampled_from(sorted(arguments)), min_size=1)):
        arguments[key] = draw(values)
    return name, arguments


@pytest.fixture
def fuzzed(store: Store) -> Palace:
    """A palace with something for every entry point to find."""
    palace = Palace(store=store, settings=Settings(agent_id="default"), embedder=HashingEmbedder())
    palace.remember("We chose SQLite for the store", category="decision", tags=["storage"])
    palace.remember("Ann owns the Billing service; it depends on Redis")
    palace.add_messages([Message("What is the rollback plan?", speaker="Ann")], session="s1")
    palace.personal.add_issue("the timer is broken", project="home")
    palace.skills.import_path(Path(__file__).parent.parent / "examples" / "skills" / "code-review")
    return palace


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=calls())
def test_hostile_arguments_are_refused_cleanly(
    fuzzed: Palace, call: tuple[str, dict[str, Any]]
) -> None:
    name, arguments = call
    before = _state(fuzzed)
    try:
        ENTRY_POINTS[name][0](fuzzed, **arguments)
    except REFUSALS:
        assert _state(fuzzed) == before, f"{name} refused the call but changed the palace"
