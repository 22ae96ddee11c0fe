"""Typed relations found by rules at write time (graph/relations.py), and
their storage: a migration step, scoped reads, cascades."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.graph.extract import extract_mentions
from mindpalace.graph.relations import (
    _CUE,
    _PATTERN,
    RELATION_KINDS,
    _whole_words,
    extract_graph,
    extract_relations,
)
from mindpalace.store.migrations import MIGRATIONS

CASES = [
    ("Alice owns the Billing service", {("alice", "owns", "billing")}),
    ("The Billing service is owned by Alice", {("alice", "owns", "billing")}),
    ("Billing is now owned by Alice.", {("alice", "owns", "billing")}),
    ("Dana is the owner of Payments", {("dana", "owns", "payments")}),
    ("Bob now owns Billing", {("bob", "owns", "billing")}),
    ("The Auth API is maintained by Bob Smith", {("bob smith", "maintains", "auth api")}),
    ("Carol leads Project Falcon", {("carol", "leads", "project falcon")}),
    ("Project Falcon is led by Carol", {("carol", "leads", "project falcon")}),
    ("Erin manages the Payments team", {("erin", "manages", "payments")}),
    ("the API depends on Redis", {("api", "depends_on", "redis")}),
    (
        "Checkout requires Redis and Postgres",
        {("checkout", "depends_on", "redis"), ("checkout", "depends_on", "postgres")},
    ),
    ("The Search API relies on Elasticsearch", {("search api", "depends_on", "elasticsearch")}),
    (
        "Redis is a dependency of Checkout and Search",
        {("checkout", "depends_on", "redis"), ("search", "depends_on", "redis")},
    ),
    ("Postgres is required by Billing", {("billing", "depends_on", "postgres")}),
    (
        "Bob owns Billing, but Alice maintains Search and Checkout.",
        {
            ("bob", "owns", "billing"),
            ("alice", "maintains", "search"),
            ("alice", "maintains", "checkout"),
        },
    ),
    # No relation: negations, no second name, names too far apart or across clauses.
    ("Checkout no longer depends on Redis", set()),
    ("Checkout does not depend on Redis", set()),
    ("Nobody owns Billing", set()),
    ("Alice owns a small boat", set()),
    ("Alice met Bob about Project Falcon on Tuesday", set()),
    ("Alice said that after the long review of every single part Bob owns it", set()),
    ("Alice, who is nice, owns Billing", set()),
]


def triples(text: str) -> set[tuple[str, str, str]]:
    relations, _ = extract_relations(text, extract_mentions([text]))
    return {(r.subject, r.kind, r.object) for r in relations}


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_rules(text: str, expected: set[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


def test_joined_names_are_split_into_linked_parts() -> None:
    mentions, relations = extract_graph(["Checkout requires Redis and Postgres"])
    norms = {m.norm for m in mentions}
    assert {"redis", "postgres", "checkout"} <= norms
    assert {r.object for r in relations} == {"redis", "postgres"}


names = st.sampled_from(["Alice", "Bob Smith", "Billing", "Redis", "Project Falcon", "Search"])
verbs = st.sampled_from(
    ["owns", "is owned by", "maintains", "depends on", "requires", "leads", "likes", "met"]
)


@given(st.lists(st.tuples(names, verbs, names), min_size=1, max_size=4))
def test_relations_join_mentions_of_the_text(parts: list[tuple[str, str, str]]) -> None:
    """Whatever the text: every relation joins two different mentions the
    write links, of a known kind, stated by a sentence of the text."""
    text = ". ".join(" ".join(p) for p in parts) + "."
    mentions, relations = extract_graph([text])
    linked = {m.norm for m in mentions}
    for relation in relations:
        assert relation.kind in RELATION_KINDS
        assert relation.subject != relation.object
        assert {relation.subject, relation.object} <= linked
        assert relation.sentence.rstrip(".") in text


def test_migration_step_creates_the_table(tmp_path: Path) -> None:
    assert "typed relations between entities" in {m.name for m in MIGRATIONS}
    with Palace(tmp_path / "p.db", settings=Settings(embedder="none")) as palace:
        palace.remember("Alice owns the Billing service")
    con = sqlite3.connect(tmp_path / "p.db")
    try:
        rows = con.execute("SELECT kind, sentence FROM entity_relations").fetchall()
    finally:
        con.close()
    assert rows == [("owns", "Alice owns the Billing service")]


def test_hard_delete_cascades(make_palace) -> None:  # type: ignore[no-untyped-def]
    palace = make_palace("ann")
    memory = palace.remember("The Checkout API depends on Redis")
    assert not palace.family.depends_on("Redis").empty
    palace.forget(memory.id, hard=True)
    assert palace.family.depends_on("Redis").empty
    assert palace.store.relations(["redis"], palace.scope, kinds=["depends_on"]) == []


def test_a_channel_sees_its_relations_only(make_palace) -> None:  # type: ignore[no-untyped-def]
    owner = make_palace("coach")
    peer1 = make_palace("coach", channel="peer:1", peer=True)
    peer2 = make_palace("coach", channel="peer:2", peer=True)
    peer1.remember("Zoe owns the Garden plan")
    owner.remember("Yann owns the Garden plan")  # the agent's own note: no peer sees it
    assert {g.name for g in peer1.family.who_owns("Garden plan").groups} == {"Zoe"}
    assert peer2.family.who_owns("Garden plan").empty
    assert {g.name for g in owner.family.who_owns("Garden plan").groups} == {"Yann"}


# -- where a name occurs as a whole word ---------------------------------------------


_PIECES = st.sampled_from(
    [
        "Redis",
        "Red",
        "redis",
        "Redis2",
        "_Redis",
        " ",
        ", ",
        ".",
        "-",
        "é",
        "Ⅻ",
        "٣",
        "__",
        "Rediss",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["Redis", "Red", "Rediss", "é", "Ⅻ"]), st.lists(_PIECES, max_size=30))
def test_whole_words_are_what_the_word_boundary_pattern_finds(
    surface: str, pieces: list[str]
) -> None:
    sentence = "".join(pieces)
    pattern = re.compile(rf"(?<!\w){re.escape(surface)}(?!\w)")
    assert _whole_words(surface, sentence) == [m.span() for m in pattern.finditer(sentence)]


@settings(max_examples=300, deadline=None)
@given(st.from_regex(_PATTERN))
def test_every_relation_phrase_holds_a_cue(text: str) -> None:
    # Sentences without a cue are skipped before names are located in them:
    # a text the phrase pattern matches must hold a cue.
    assert _CUE.search(text)
