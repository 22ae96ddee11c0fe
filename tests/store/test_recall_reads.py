"""The merged reads of a recall (``query_facts``, ``seed_graph``,
``hydrate``) answer as the single-purpose reads they merge, under the
caller's scope, on every backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import Category, RecallFilters, Scope
from mindpalace.store import Store
from mindpalace.store.fragments import scope_clause
from mindpalace.store.graph_rows import heaviest
from mindpalace.store.recall_sql import FOLLOWED, QueryReads
from mindpalace.store.same_as_sql import answering

ANY = RecallFilters()
# The names "What about Alice Moreno and Kafka?" may use (retrieval.graphstage.query_names).
NAMES = ("alice", "alice moreno", "alice moreno and kafka", "kafka", "moreno", "moreno kafka")


def _palace(store: Store, agent: str) -> Palace:
    return Palace(store=store, agent_id=agent, settings=Settings(agent_id=agent, embedder="none"))


@pytest.fixture
def pair(store: Store) -> tuple[Palace, Palace]:
    """Ann and Bob over one store: Ann's memories, Bob's private ones, and
    a constraint each about Alice Moreno and Project Falcon."""
    ann = _palace(store, "ann")
    bob = _palace(store, "bob")
    ann.remember_many(
        [
            {"content": "Alice Moreno moved the Kafka cluster to Project Falcon", "tags": ["ops"]},
            {"content": "Alice Moreno and Bruno reviewed the Falcon rollout"},
            {"content": "Bruno wrote the Kafka runbook", "category": "lesson"},
            {"content": "we came back from the offsite in Lisbon"},
        ]
    )
    ann.remember(
        "Never page Alice Moreno about Project Falcon at night", constraint=True, category="rule"
    )
    bob.remember_many(
        [
            {"content": "Zoltan keeps the zookeeper notes"},
            {"content": "Alice Moreno owes Bob a zookeeper review"},
        ]
    )
    bob.remember(
        "Never merge Project Falcon without Alice Moreno", constraint=True, category="rule"
    )
    return ann, bob


def test_query_facts_matches_the_single_reads(store: Store, pair: tuple[Palace, Palace]) -> None:
    ann, _ = pair
    scope = ann.scope
    filters = RecallFilters(tags=("ops",))
    reads = QueryReads(
        salient=("kafka", "falcon", "zoltan"),
        keyword=("kafka", "runbook"),
        keyword_limit=10,
        substring=("runbo",),
        substring_limit=5,
        events=(("offsite",), ("lisbon", "offsite")),
        event_limit=30,
        allowed=True,
        names=NAMES,
    )
    facts = store.query_facts(reads, scope, ANY)
    assert facts.complete
    assert facts.present == store.terms_present(list(reads.salient), scope)
    assert facts.present == {"kafka", "falcon"}  # Bob's zoltan is not Ann's to see
    assert list(facts.keyword) == store.search_text(["kafka", "runbook"], scope, ANY, limit=10)
    assert list(facts.substring) == store.search_substring(["runbo"], scope, ANY, limit=5)
    assert [list(e) for e in facts.events] == [
        store.search_text(["offsite"], scope, ANY, limit=30),
        store.search_text(["lisbon", "offsite"], scope, ANY, limit=30),
    ]
    assert facts.allowed == store.ids_matching(scope, ANY)
    narrowed = store.query_facts(QueryReads(allowed=True), scope, filters)
    assert narrowed.allowed == store.ids_matching(scope, filters) and len(narrowed.allowed) == 1
    # Constraints: Ann's own, tied to the entity the query names; never Bob's.
    assert [(m.content, key) for m, key in facts.constraints] == [
        ("Never page Alice Moreno about Project Falcon at night", "alice moreno")
    ]
    keys = {k for found in store.resolve_names(list(NAMES), scope).values() for k in found}
    assert "alice moreno" in keys


def test_query_facts_constraints_follow_scope_filters_and_aliases(
    store: Store, pair: tuple[Palace, Palace]
) -> None:
    ann, bob = pair
    by_alias = QueryReads(names=("falcon",))  # what Project Falcon answers to
    assert [
        (m.content, key) for m, key in store.query_facts(by_alias, ann.scope, ANY).constraints
    ] == [("Never page Alice Moreno about Project Falcon at night", "project falcon")]
    assert [m.content for m, _ in store.query_facts(by_alias, bob.scope, ANY).constraints] == [
        "Never merge Project Falcon without Alice Moreno"
    ]
    lessons = RecallFilters(categories=(Category.LESSON,))
    assert store.query_facts(by_alias, ann.scope, lessons).constraints == ()
    nobody = store.query_facts(QueryReads(names=("zoltan",)), ann.scope, ANY)
    assert nobody.constraints == ()
    # Only names the caller can see resolve: Zoltan is Bob's.
    assert store.query_facts(QueryReads(names=("zoltan",)), bob.scope, ANY).constraints == ()


def test_query_facts_stops_after_the_gate(store: Store, pair: tuple[Palace, Palace]) -> None:
    ann, _ = pair
    reads = QueryReads(
        salient=("kafka", "zoltan", "quokka"),
        min_salient=2,
        keyword=("kafka",),
        keyword_limit=10,
        allowed=True,
        names=("alice",),
    )
    facts = store.query_facts(reads, ann.scope, ANY)
    assert not facts.complete
    assert facts.present == {"kafka"}
    assert facts.keyword == () and facts.allowed is None and facts.constraints == ()
    archived = ann.remember("the quokka enclosure")
    ann.forget(archived.id)
    assert store.query_facts(reads, ann.scope, ANY).present == {"kafka"}
    with_archived = RecallFilters(include_archived=True)
    assert store.query_facts(reads, ann.scope, with_archived).present == {"kafka", "quokka"}


def test_seed_graph_matches_the_single_reads(store: Store, pair: tuple[Palace, Palace]) -> None:
    ann, bob = pair
    scope = ann.scope
    seeds = [h.memory.id for h in ann.recall("Kafka cluster", limit=2)]
    theirs = [h.memory.id for h in bob.recall("zookeeper", limit=2)]
    graph = store.seed_graph(
        [*seeds, *theirs], scope, ANY, neighbours=5, max_degree=50, members=True
    )
    assert graph.entities == store.entities_of([*seeds, *theirs], scope)
    assert set(graph.entities) == set(seeds)  # Bob's memories are not Ann's to read
    norms = sorted({e.norm for found in graph.entities.values() for e in found})
    first = store.entity_members(norms, scope, ANY, max_degree=50)
    # Only entities two to max_degree visible memories mention are followed.
    follow = [n for n in norms if 2 <= first.get(n, (0, []))[0] <= 50]
    assert follow != norms  # some entity is mentioned once: not followed
    assert graph.co == store.co_occurring(follow, scope, per_entity=5)
    assert graph.co  # the memories name several entities together
    far = {o for pairs in graph.co.values() for o, _ in pairs}
    assert graph.members == store.entity_members(sorted({*norms, *far}), scope, ANY, max_degree=50)
    assert "zoltan" not in (graph.members or {})
    bare = store.seed_graph(seeds, scope, ANY, neighbours=0, max_degree=50)
    assert bare.co == {} and bare.members is None and bare.entities == graph.entities
    # A caller counting mentions itself (a warm index) decides the same way.
    counted = store.seed_graph(
        seeds,
        scope,
        ANY,
        neighbours=5,
        max_degree=50,
        degrees=lambda keys: {k: first[k][0] for k in keys if k in first},
    )
    assert counted.co == graph.co and counted.members is None
    hubs = store.seed_graph(
        seeds, scope, ANY, neighbours=5, max_degree=50, degrees=lambda keys: dict.fromkeys(keys, 51)
    )
    assert hubs.co == {}


def test_seed_graph_follows_a_bounded_number_of_entities(store: Store) -> None:
    """The second hop's work is bounded by counts, not by time: seeds
    naming many entities have at most FOLLOWED of them followed."""
    palace = _palace(store, "ann")
    names = [f"Project {chr(65 + i // 26)}{chr(97 + i % 26)}x" for i in range(FOLLOWED + 16)]
    half = len(names) // 2
    seeds = [
        palace.remember("Status: " + "; ".join(names[:half])).id,
        palace.remember("Backlog: " + "; ".join(names[half:])).id,
    ]
    # Each project is named again with a partner, so it co-occurs with someone.
    palace.remember_many(
        [{"content": f"{name} pairs with Partner {name.split()[1]}q"} for name in names]
    )
    graph = store.seed_graph(seeds, palace.scope, ANY, neighbours=5, max_degree=50, members=True)
    assert sum(len(found) for found in graph.entities.values()) > FOLLOWED
    assert graph.co and len(graph.co) <= FOLLOWED
    assert (
        store.seed_graph(seeds, palace.scope, ANY, neighbours=5, max_degree=50, members=True)
        == graph
    )


def test_hydrate_reads_visible_memories_and_own_feedback(
    store: Store, pair: tuple[Palace, Palace]
) -> None:
    ann, bob = pair
    mine = [h.memory.id for h in ann.recall("Kafka", limit=3)]
    theirs = [h.memory.id for h in bob.recall("zookeeper", limit=3)]
    ann.feedback(mine[0], useful=True)
    read = store.hydrate([*mine, *theirs], ann.scope, feedback_on=mine)
    assert read.memories == store.get_many([*mine, *theirs], ann.scope)
    assert set(read.memories) == set(mine)
    assert read.feedback == store.feedback_counts(mine, agent_id="ann", channel=None)
    assert read.feedback == {mine[0]: (1, 0)}
    assert store.hydrate(mine, bob.scope, feedback_on=mine).feedback == {}
    assert store.hydrate([], ann.scope).memories == {}


def test_terms_present_counts_only_live_memories_the_reader_sees(
    store: Store, pair: tuple[Palace, Palace]
) -> None:
    """The word probe: a word of another agent's private memory, of an
    archived memory (unless asked), or of a deleted memory is not present;
    a shared memory's word is, to every reader; an updated memory's old
    version is kept (superseded, live), and its words with it."""
    ann, bob = pair
    words = ["kafka", "zoltan", "heron", "ocelot", "quokka", "lynx", "absent"]
    assert store.terms_present(words, ann.scope) == {"kafka"}
    assert store.terms_present(words, bob.scope) == {"zoltan"}
    bob.remember("the heron nests by the quarry", visibility="shared")
    archived = ann.remember("an ocelot sleeps in the archive")
    ann.forget(archived.id)
    edited = ann.remember("a quokka smiles")
    ann.update(edited.id, content="a lynx hides")
    deleted = ann.remember("zoltan visits")  # Ann's own memory of Bob's word
    ann.forget(deleted.id, hard=True)
    live = {"kafka", "heron", "lynx", "quokka"}
    assert store.terms_present(words, ann.scope) == live
    assert store.terms_present(words, ann.scope, include_archived=True) == {*live, "ocelot"}
    assert store.terms_present(words, bob.scope) == {"zoltan", "heron"}


def _co_occurring_by_join(
    store: Store, norms: list[str], scope: Scope, per_entity: int
) -> dict[str, list[tuple[str, float]]]:
    """The neighbours as one join over every edge defines them: each end
    read as the entity its name is the same as, the heaviest edge of two
    ends that share a key, an end that is the key itself left out, the
    heaviest first (ties by key)."""
    core = cast(Any, store)
    s_sql, s_params = scope_clause(scope, "a")
    a_sql, a_params = answering("a", norms)
    directions = [
        "SELECT COALESCE(ar.norm, a.norm), COALESCE(br.norm, b.norm), g.weight"
        f" FROM entity_edges g JOIN entities a ON a.seq = g.{near}"
        f" JOIN entities b ON b.seq = g.{far} LEFT JOIN entities ar ON ar.seq = a.same_as"
        f" LEFT JOIN entities br ON br.seq = b.same_as WHERE {a_sql} AND {s_sql}"
        for near, far in (("src_seq", "dst_seq"), ("dst_seq", "src_seq"))
    ]
    found: dict[str, dict[str, float]] = {}
    with core._read() as cur:
        rows = core._exec(
            cur, " UNION ALL ".join(directions), [*a_params, *s_params, *a_params, *s_params]
        ).fetchall()
    for a, b, weight in rows:
        if a != b:
            kept = found.setdefault(str(a), {})
            kept[str(b)] = max(kept.get(str(b), 0.0), float(weight))
    return {
        key: sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:per_entity]
        for key, values in found.items()
    }


def test_co_occurring_names_only_the_heaviest_edges_and_answers_as_the_join(store: Store) -> None:
    """The neighbours are read from the edges alone, the heaviest named
    first: the answer is the one join over every edge gives, under each
    scope, with linked short names, ties and busy entities."""
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    people = [f"Person{chr(65 + i)} Quill" for i in range(30)]
    texts = [f"Kafka met {people[i]} and {people[(i * 7) % 30]} at Falcon" for i in range(30)]
    texts += [f"Kafka and Zephyr were both down, said {people[i % 5]}" for i in range(12)]
    texts += ["Alice Moreno runs Kafka", "Alice said Kafka is fine", "Alice and Zephyr"]
    ann.remember_many([{"content": t} for t in texts])
    bob.remember_many([{"content": f"Kafka and {p} in Bob's notes"} for p in people[:3]])
    assert ann.graph.join_entities("Alice", "Alice Moreno")
    core = cast(Any, store)
    with core._read() as cur:  # a short name read as the full one: "Alice" is Alice Moreno
        linked = core._exec(cur, "SELECT COUNT(*) FROM entities WHERE same_as IS NOT NULL")
        assert linked.fetchone()[0] > 0
    keys = ["kafka", "falcon", "zephyr", "alice moreno", "alice", "personb quill", "nobody"]
    for palace in (ann, bob):
        for per_entity in (1, 2, 5, 40):
            got = store.co_occurring(keys, palace.scope, per_entity=per_entity)
            assert got == _co_occurring_by_join(store, keys, palace.scope, per_entity)
    assert len(store.co_occurring(["kafka"], ann.scope, per_entity=5)["kafka"]) == 5


def _heaviest_by_definition(
    edges: dict[str, list[tuple[float, int]]], roots: dict[int, str], per_entity: int
) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for key, found in edges.items():
        kept: dict[str, float] = {}
        for negated, seq in found:
            other = roots[seq]
            if other != key:
                kept[other] = max(kept.get(other, -1.0), -negated)
        if kept:
            out[key] = sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))[:per_entity]
    return out


@given(
    st.dictionaries(
        st.sampled_from("abcd"),
        st.lists(  # past one round of names (16 to 24 ends) and not
            st.tuples(st.sampled_from([0.1, 0.5, 0.5, 1.0, 2.0]), st.integers(0, 40)),
            max_size=90,
        ),
        max_size=4,
    ),
    st.dictionaries(st.integers(0, 40), st.sampled_from("abcdefgh"), min_size=41, max_size=41),
    st.integers(1, 6),
)
def test_heaviest_names_ends_until_the_answer_cannot_change(
    edges: dict[str, list[tuple[float, int]]], roots: dict[int, str], per_entity: int
) -> None:
    asked: list[int] = []

    def named(seqs: Sequence[int]) -> dict[int, str]:
        asked.extend(seqs)
        return {s: roots[s] for s in seqs}

    negated = {k: [(-w, s) for w, s in found] for k, found in edges.items()}
    expected = _heaviest_by_definition({k: list(v) for k, v in negated.items()}, roots, per_entity)
    assert heaviest(negated, per_entity, named) == expected
    assert len(asked) == len(set(asked))  # no end named twice


def test_heaviest_names_few_ends_of_a_busy_entity() -> None:
    edges = {"kafka": [(-1.0 / (i + 1), i) for i in range(5000)]}
    asked: list[int] = []

    def named(seqs: Sequence[int]) -> dict[int, str]:
        asked.extend(seqs)
        return {s: f"e{s:05d}" for s in seqs}

    assert heaviest(edges, 5, named) == {"kafka": [(f"e{i:05d}", 1.0 / (i + 1)) for i in range(5)]}
    assert len(asked) <= 40


def test_heaviest_names_every_end_tied_with_the_last_kept() -> None:
    """Ties go by key: an end as heavy as the last kept, past the first
    round of names, may still come first."""
    edges = {"kafka": [(-1.0, seq) for seq in range(40)]}
    roots = {seq: "zed" if seq < 39 else "abe" for seq in range(40)}
    assert heaviest(edges, 1, lambda seqs: {s: roots[s] for s in seqs}) == {"kafka": [("abe", 1.0)]}
