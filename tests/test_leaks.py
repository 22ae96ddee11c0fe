"""No memory ever reaches a reader who may not see it: a stateful property test.

Random agents, groups, channels (ordinary and peer-facing palaces) and
visibilities; writes (remember, remember_many, add_messages, import,
re-remembering), forgets (soft and hard), feedback, and reads through every
surface. A model of who may see what (``visible`` below, the policy of
``mindpalace.scoping`` restated) is checked against each read both ways: no
memory outside the reader's view appears anywhere in the output (its unique
token is searched for in the serialised result, explain data included), and
no visible memory is missing where the surface promises completeness.

Every memory's content carries a unique token (``tk`` + digits), so a leak
is found even where a surface returns text rather than ids.

``SURFACES`` has one entry per read surface; a new surface (the graph's
associative context, skills, the MCP and HTTP tools) joins by adding one
function there. The test runs on every backend of ``conftest.BACKENDS`` and
performs at least ``OPERATIONS`` operations on each.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from mindpalace import NotFoundError, Palace, PermissionDenied, ValidationError
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.texts import vector_key
from mindpalace.engine import Engine
from mindpalace.models import RecallFilters, Scope
from mindpalace.store import Store
from mindpalace.store.postgres import PostgresStore

OPERATIONS = int(os.environ.get("LEAK_OPERATIONS", "10000"))
# Shrinking a failure of this machine takes minutes; LEAK_SHRINK=0 skips it.
PHASES = tuple(p for p in Phase if os.environ.get("LEAK_SHRINK", "1") == "1" or p != Phase.shrink)
STEPS = 100

AGENTS = ("ann", "bob", "cy")
GROUPS = ("red", "blue")
CHANNELS = (None, "peer:1", "peer:2")
WORDS = ("river", "stone", "cloud", "ember", "maple", "frost", "delta", "orbit")
SESSIONS = ("s1", "s2")
TOKEN = re.compile(r"tk\d{7}")
# An id (``mem_`` + 26 Crockford base32 characters): case-folded, its random
# part may spell a token ("...TK3823229..." -> "tk3823229"); removed first.
ID = re.compile(r"[A-Za-z]+_[0-9A-Za-z]{26}(?![0-9A-Za-z])")
EMBEDDER = HashingEmbedder(dimensions=64)


def tokens_in(text: str) -> set[str]:
    """The memory tokens ``text`` names, ids aside."""
    return set(TOKEN.findall(ID.sub(" ", text)))


@dataclass(frozen=True)
class Reader:
    """Whose eyes a palace looks through."""

    agent: str
    groups: tuple[str, ...] = ()
    channel: str | None = None
    peer: bool = False
    management: bool = False


@dataclass
class Rec:
    """The model's copy of one stored memory."""

    id: str
    token: str
    agent: str
    visibility: str
    group: str | None
    channel: str | None
    content: str
    conversation: bool = False
    archived: bool = False
    relation: str | None = None  # the word of "<Token> owns the <Word> service"
    kind: str = "memory"
    project: str | None = None


def visible(rec: Rec, reader: Reader) -> bool:
    """The visibility policy, restated independently of the code under test."""
    if reader.management:
        return True
    in_group = rec.visibility == "group" and rec.group in reader.groups
    shared = rec.visibility == "shared" or in_group
    if not (rec.agent == reader.agent or shared):
        return False
    if reader.peer:
        return rec.channel == reader.channel or (rec.channel is None and shared)
    return rec.channel in (None, reader.channel)


def may_change(rec: Rec, reader: Reader) -> bool:
    """Who may change (forget, complete) a memory it sees, restated from
    ``scoping.check_change``: its agent, through its channel when peer-facing."""
    if reader.management:
        return True
    return rec.agent == reader.agent and (not reader.peer or rec.channel == reader.channel)


@dataclass
class World:
    """Everything stored, and the palaces looking at it."""

    store: Store
    clock: Callable[[], Any]
    recs: dict[str, Rec] = field(default_factory=dict)
    palaces: dict[tuple[Reader, bool], Palace] = field(default_factory=dict)
    engines: dict[tuple[bool, str], Engine] = field(default_factory=dict)

    def palace(self, reader: Reader, *, text_only: bool = False) -> Palace:
        """The reader's view; every reader shares one engine (one per search
        mode), as the servers' agents do, so warm indexes serve every scope.
        On PostgreSQL every other reader recalls in the database
        (``MINDPALACE_INDEX=database``), the others in process."""
        key = (reader, text_only)
        if key not in self.palaces:
            pg = isinstance(self.store, PostgresStore)
            index = "database" if pg and not text_only and len(self.palaces) % 2 else "process"
            engine = self.engines.get((text_only, index))
            if engine is None:
                engine = self.engines[(text_only, index)] = Engine(
                    store=self.store,
                    settings=Settings(embedder="none" if text_only else "hashing", index=index),
                    embedder=None if text_only else EMBEDDER,
                    clock=self.clock,
                )
                if pg:  # candidates from pgvector's index
                    self.store.ann_in_store = True
                    engine.semantic.ann_rows = 1
            self.palaces[key] = Palace(
                engine=engine,
                agent_id=reader.agent,
                groups=reader.groups,
                channel=reader.channel,
                peer=reader.peer,
                management=reader.management,
            )
        return self.palaces[key]

    def by_token(self) -> dict[str, Rec]:
        return {r.token: r for r in self.recs.values()}


@dataclass
class Probe:
    """One read: who reads, what the model says they see, and a target."""

    world: World
    reader: Reader
    palace: Palace
    target: Rec | None
    word: str

    def sees(self, rec: Rec) -> bool:
        return visible(rec, self.reader)

    def seen_ids(self, *, archived: bool, conversation: bool | None = None) -> set[str]:
        return {
            r.id
            for r in self.world.recs.values()
            if self.sees(r)
            and (archived or not r.archived)
            and (conversation is None or r.conversation == conversation)
        }

    def no_leak(self, output: object) -> None:
        """No token of a memory the reader may not see occurs in ``output``."""
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        tokens = self.world.by_token()
        for token in tokens_in(text):
            rec = tokens.get(token)
            at = text.find(token)
            assert rec is not None, f"unknown token {token} in: ...{text[at - 200 : at + 200]}"
            assert self.sees(rec), f"{self.reader} saw {rec}"


# -- surfaces: one function per read path ----------------------------------------------------


def _recall(probe: Probe, *, text_only: bool) -> None:
    palace = probe.world.palace(probe.reader, text_only=text_only)
    target = probe.target
    query = f"about {target.token.capitalize()} {probe.word}" if target else probe.word
    hits = palace.recall(query, limit=20)
    probe.no_leak([h.to_dict(explain=True) for h in hits])
    # The notice may quote the query (the reader's own words), nothing else.
    probe.no_leak((hits.notice or "").replace(target.token if target else "", ""))
    ids = {h.memory.id for h in hits}
    assert ids <= probe.seen_ids(archived=False)
    # Graph propagation reaches only what the reader may see.
    reached = {a.memory_id for h in hits for a in h.associative_context}
    assert reached <= probe.seen_ids(archived=False)
    if target is not None and probe.sees(target) and not target.archived:
        assert target.id in ids, f"{probe.reader} missed its visible {target}"


def surface_recall_hybrid(probe: Probe) -> None:
    _recall(probe, text_only=False)


def surface_recall_text(probe: Probe) -> None:
    _recall(probe, text_only=True)


def surface_get(probe: Probe) -> None:
    if probe.target is None:
        return
    if probe.sees(probe.target):
        got = probe.palace.get(probe.target.id)
        assert got.id == probe.target.id and got.archived == probe.target.archived
        probe.no_leak(got.to_dict())
    else:
        with pytest.raises(NotFoundError) as caught:
            probe.palace.get(probe.target.id)
        probe.no_leak(str(caught.value))


def surface_list(probe: Probe) -> None:
    everything = probe.palace.memories(limit=10_000, include_archived=True)
    probe.no_leak([m.to_dict() for m in everything])
    assert {m.id for m in everything} == probe.seen_ids(archived=True)
    live = probe.palace.memories(limit=10_000)
    assert {m.id for m in live} == probe.seen_ids(archived=False)


def surface_export(probe: Probe) -> None:
    out = io.StringIO()
    count = probe.palace.export_jsonl(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    memories = [line for line in lines if "record" not in line]
    signals = [line for line in lines if line.get("record") == "signal"]
    others = [line for line in lines if line.get("record") not in (None, "signal")]
    # Memories and the records about them (skills, links, entities) show
    # only what the reader sees.
    probe.no_leak(memories)
    probe.no_leak(others)
    # Signals are the reader's own (its queries are its own text); the
    # management view exports every agent's, queries of past runs included.
    if not probe.reader.management:
        assert {line["agent_id"] for line in signals} <= {probe.reader.agent}
    assert count == len(memories)
    assert {line["id"] for line in memories} == probe.seen_ids(archived=True)


def surface_stats(probe: Probe) -> None:
    stats = probe.palace.stats()
    assert stats.memories == len(probe.seen_ids(archived=True))
    assert stats.archived == len(probe.seen_ids(archived=True) - probe.seen_ids(archived=False))
    assert set(stats.by_agent) <= {
        probe.world.recs[i].agent for i in probe.seen_ids(archived=False)
    }


def surface_recent(probe: Probe) -> None:
    turns = probe.palace.recent(1000)
    probe.no_leak([m.to_dict() for m in turns])
    assert {m.id for m in turns} == probe.seen_ids(archived=False, conversation=True)


def surface_search_messages(probe: Probe) -> None:
    target = probe.target
    phrase = target.token if target is not None else probe.word
    matches = probe.palace.search_messages(phrase, limit=100, around=2)
    probe.no_leak([m.to_dict() for m in matches])
    live = probe.seen_ids(archived=False, conversation=True)
    assert {m.memory.id for m in matches} <= live
    if target is not None and target.conversation and target.id in live:
        assert target.id in {m.memory.id for m in matches}


def surface_training_pairs(probe: Probe) -> None:
    pairs = [p.to_dict() for p in probe.palace.signals.pairs()]
    for pair in pairs:
        rec = probe.world.recs.get(pair["memory_id"])
        # a pair names only memories the reader could see when judging them
        assert rec is None or probe.sees(rec) or probe.reader.management


def surface_graph(probe: Probe) -> None:
    entities = probe.palace.graph.entities(limit=1000)
    probe.no_leak([e.to_dict() for e in entities])
    target = probe.target
    if target is not None and probe.sees(target):
        probe.no_leak([e.to_dict() for e in probe.palace.graph.mentions(target.id)])
        chain = probe.palace.graph.history(target.id)
        probe.no_leak([m.to_dict() for m in chain])
        assert {m.id for m in chain} <= probe.seen_ids(archived=True)


def surface_context(probe: Probe) -> None:
    target = probe.target
    query = f"about {target.token} {probe.word}" if target else probe.word
    block = probe.palace.context(query, max_tokens=1024)
    # The block restates the task (the reader's own words), nothing else.
    probe.no_leak(json.dumps(block.to_dict(), ensure_ascii=False).replace(query, ""))


def surface_family(probe: Probe) -> None:
    """The recall family: topic scan, decision trace, preflight, and the
    ownership and dependency answers read from typed relations (asked about
    every word some relation names, visible or not)."""
    target = probe.target
    query = f"about {target.token} {probe.word}" if target else probe.word
    family = probe.palace.family
    live = probe.seen_ids(archived=False)
    answers = [
        family.what_do_i_know(query, limit=100, per_group=20),
        family.why_did_we(query),
        family.preflight(query),
    ]
    related = sorted({r.relation for r in probe.world.recs.values() if r.relation})
    owners: dict[str, set[str]] = {}
    for word in related:
        owned = family.who_owns(word.capitalize(), limit=50)
        owners[word] = {i.memory.id for i in owned.items}
        answers += [owned, family.depends_on(word.capitalize(), direction="dependencies")]
    for answer in answers:
        shown = answer.to_dict()
        shown.pop("query")  # the reader's own words
        # Owners are named by capitalised tokens: compare case-folded.
        probe.no_leak(json.dumps(shown, ensure_ascii=False).lower())
        assert {i.memory.id for i in answer.items} <= live
    # Nothing visible is missing: every live relation the reader sees answers.
    for rec in probe.world.recs.values():
        if rec.relation and rec.id in live:
            assert rec.id in owners[rec.relation], f"{probe.reader} missed {rec}"


def _search(probe: Probe, *, text_only: bool) -> None:
    palace = probe.world.palace(probe.reader, text_only=text_only)
    target = probe.target
    query = f"about {target.token.capitalize()} {probe.word}" if target else probe.word
    results = palace.search(query, limit=100)
    said = target.token if target else probe.word
    probe.no_leak([r.to_dict() for r in results])
    # notice, hint and suggestions may quote the reader's own words, nothing else
    words = [results.notice or "", results.hint or "", *results.suggestions]
    probe.no_leak(" ".join(words).replace(said, "").replace(said.capitalize(), ""))
    ids = {r.memory.id for r in results}
    assert ids <= probe.seen_ids(archived=False)
    if target is not None and probe.sees(target) and not target.archived:
        assert target.id in ids, f"{probe.reader} missed its visible {target}"
    # narrowed by the query to one kind: that kind only, still only what it may see
    journal = palace.search(f"my journal entries about {said}", limit=100)
    probe.no_leak([r.to_dict() for r in journal])
    assert {r.memory.id for r in journal} <= {
        i for i in probe.seen_ids(archived=False) if probe.world.recs[i].kind == "journal"
    }
    if (
        target is not None
        and target.kind == "journal"
        and target.id in probe.seen_ids(archived=False)
    ):
        assert target.id in {r.memory.id for r in journal}


def surface_nearest(probe: Probe) -> None:
    """The store's own nearest-neighbour search (pgvector on PostgreSQL)."""
    target = probe.target
    text = target.content if target else probe.word
    found = probe.palace.store.nearest(
        vector_key(EMBEDDER.config),
        EMBEDDER.embed_one(text),
        probe.palace.scope,
        RecallFilters(),
        limit=50,
    )
    if found is None:  # the backend has no such index
        return
    assert set(found) <= probe.seen_ids(archived=False)
    if target is not None and probe.sees(target) and not target.archived:
        assert target.id in found, f"{probe.reader} missed its visible {target}"


def surface_search_hybrid(probe: Probe) -> None:
    _search(probe, text_only=False)


def surface_search_text(probe: Probe) -> None:
    _search(probe, text_only=True)


def surface_projects(probe: Probe) -> None:
    """Exactly the projects of live memories the reader sees, counted."""
    expected: dict[str, int] = {}
    for memory_id in probe.seen_ids(archived=False):
        project = probe.world.recs[memory_id].project
        if project:
            expected[project] = expected.get(project, 0) + 1
    assert probe.palace.personal.projects() == expected


SURFACES: dict[str, Callable[[Probe], None]] = {
    "family": surface_family,
    "context": surface_context,
    "graph": surface_graph,
    "recall": surface_recall_hybrid,
    "recall-text": surface_recall_text,
    "get": surface_get,
    "list": surface_list,
    "export": surface_export,
    "stats": surface_stats,
    "recent": surface_recent,
    "search-messages": surface_search_messages,
    "search": surface_search_hybrid,
    "search-text": surface_search_text,
    "projects": surface_projects,
    "nearest": surface_nearest,
    "training-pairs": surface_training_pairs,
}


# -- the machine ---------------------------------------------------------------------------------

readers = st.builds(
    Reader,
    agent=st.sampled_from(AGENTS),
    groups=st.sets(st.sampled_from(GROUPS)).map(lambda g: tuple(sorted(g))),
    channel=st.sampled_from(CHANNELS),
    peer=st.booleans(),
).map(lambda r: Reader(r.agent, r.groups, r.channel, peer=r.peer and r.channel is not None))
any_reader = st.one_of(readers, readers, readers, st.just(Reader("ann", management=True)))
scopes = st.sampled_from(
    [("isolated", None), ("shared", None), ("group", "red"), ("group", "blue")]
)
picks = st.integers(min_value=0, max_value=10**6)
words = st.sampled_from(WORDS)


class Counter:
    """Operations performed, over every run of the machine."""

    operations = 0
    tokens = itertools.count()


def leak_machine(world_factory: Callable[[], World]) -> type[RuleBasedStateMachine]:
    """The state machine over a fresh ``World`` per run."""

    class Leaks(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.world = world_factory()

        def teardown(self) -> None:
            # Wipe the store for the next run (it is shared by every run):
            # every memory and what derives from it, in one erasure (one by
            # one, the wipe took 40% of the test on PostgreSQL).
            store = self.world.store
            ids = [memory.id for memory in store.iter_memories(Scope.management())]
            if ids:
                store.erase(ids, sweep=None, text_hashes=(), receipt=None)
            assert not list(store.iter_memories(Scope.management()))

        def _token(self) -> str:
            return f"tk{next(Counter.tokens):07d}"

        def _pick(self, index: int) -> Rec | None:
            recs = sorted(self.world.recs)
            return self.world.recs[recs[index % len(recs)]] if recs else None

        def _stored(self, memory: Any, token: str, *, conversation: bool = False) -> None:
            self.world.recs[memory.id] = Rec(
                kind=memory.kind.value,
                project=memory.project,
                id=memory.id,
                token=token,
                agent=memory.agent_id,
                visibility=memory.visibility.value,
                group=memory.group,
                channel=memory.channel,
                content=memory.content,
                conversation=conversation,
            )

        @initialize(writer=readers, scope=scopes, word=words)
        def first(self, writer: Reader, scope: tuple[str, str | None], word: str) -> None:
            self.remember(writer, scope, word)

        @rule(writer=readers, scope=scopes, word=words)
        def remember(self, writer: Reader, scope: tuple[str, str | None], word: str) -> None:
            Counter.operations += 1
            token = self._token()
            memory = self.world.palace(writer).remember(
                f"{token} {word} notes #{word} @{token}", visibility=scope[0], group=scope[1]
            )
            self._stored(memory, token)

        @rule(
            writer=readers,
            scope=scopes,
            word=words,
            kind=st.sampled_from(["journal", "node", "issue", "spec"]),
            project=st.sampled_from([None, "alpha", "beta"]),
        )
        def remember_kind(
            self,
            writer: Reader,
            scope: tuple[str, str | None],
            word: str,
            kind: str,
            project: str | None,
        ) -> None:
            """Personal data of each kind (issues numbered within what the writer sees)."""
            Counter.operations += 1
            token = self._token()
            palace = self.world.palace(writer)
            text = f"{token} {word} {kind} entry"
            where = {"visibility": scope[0], "group": scope[1]}
            if kind == "journal":
                memory = palace.personal.journal(text, project=project, **where)
            elif kind == "node":
                memory = palace.personal.add_node(f"{word} node", text, project=project, **where)
            elif kind == "issue":
                memory = palace.personal.add_issue(text, project=project or "alpha", **where)
            else:
                memory = palace.remember(text, kind="spec", project=project, **where)
            self._stored(memory, token)

        @rule(writer=readers, scopes_=st.lists(scopes, min_size=1, max_size=3), word=words)
        def remember_many(
            self, writer: Reader, scopes_: list[tuple[str, str | None]], word: str
        ) -> None:
            Counter.operations += 1
            tokens = [self._token() for _ in scopes_]
            records = [
                {"content": f"{t} {word} batch #{word} @{t}", "visibility": v, "group": g}
                for t, (v, g) in zip(tokens, scopes_, strict=True)
            ]
            for memory, token in zip(
                self.world.palace(writer).remember_many(records), tokens, strict=True
            ):
                self._stored(memory, token)

        @rule(writer=readers, scope=scopes, word=words)
        def remember_relation(
            self, writer: Reader, scope: tuple[str, str | None], word: str
        ) -> None:
            """A typed relation, linked at write time (an event: no supersession)."""
            Counter.operations += 1
            token = self._token()
            memory = self.world.palace(writer).remember(
                f"{token} {word}: {token.capitalize()} owns the {word.capitalize()} service; "
                f"the {word.capitalize()} service depends on {token.capitalize()}db",
                visibility=scope[0],
                group=scope[1],
                category="event",
            )
            self._stored(memory, token)
            self.world.recs[memory.id].relation = word

        @rule(writer=readers, session=st.sampled_from(SESSIONS), n=st.integers(1, 3), word=words)
        def add_messages(self, writer: Reader, session: str, n: int, word: str) -> None:
            Counter.operations += 1
            tokens = [self._token() for _ in range(n)]
            turns = [Message(f"{t} {word} said", speaker="Sam") for t in tokens]
            stored = self.world.palace(writer).add_messages(turns, session=session)
            for memory, token in zip(stored, tokens, strict=True):
                self._stored(memory, token, conversation=True)

        @rule(
            writer=readers,
            owner=st.sampled_from(AGENTS),
            scope=scopes,
            word=words,
            pick=st.one_of(st.none(), picks),
        )
        def import_record(
            self,
            writer: Reader,
            owner: str,
            scope: tuple[str, str | None],
            word: str,
            pick: int | None,
        ) -> None:
            """An import under a fresh id, or under a stored memory's id
            (``pick``: any scope's): the report and what is stored never
            tell whether a memory outside the writer's view has the id."""
            Counter.operations += 1
            token = self._token()
            taken = self._pick(pick) if pick is not None else None
            own = taken is not None and taken.agent == writer.agent and visible(taken, writer)
            if own:
                return  # an own memory's id: skipped (test_export covers it)
            record = {
                "id": taken.id if taken is not None else f"mem_import_{next(Counter.tokens)}",
                "agent_id": owner,
                "content": f"{token} {word} imported",
                "created_at": "2025-01-01T00:00:00+00:00",
                "visibility": scope[0],
                "group": scope[1],
                "channel": writer.channel,
            }
            palace = self.world.palace(writer)
            if owner != writer.agent:
                with pytest.raises(PermissionDenied):
                    palace.import_jsonl([json.dumps(record)])
                return
            report = palace.import_jsonl([json.dumps(record)])
            assert (report.inserted, report.skipped) == (1, 0)
            found = [
                m
                for m in palace.engine.store.iter_memories(palace.scope)
                if m.content == record["content"]
            ]
            assert len(found) == 1
            hidden = any(
                not (rec.agent == writer.agent and visible(rec, writer))
                for rec in self.world.recs.values()
            )
            if hidden or taken is not None:  # new ids for all, taken or not
                assert found[0].id != record["id"]
            if taken is not None:  # the memory that has the id is still its owner's
                owner_view = self.world.palace(Reader(taken.agent, channel=taken.channel))
                assert owner_view.get(taken.id).agent_id == taken.agent
            self._stored(found[0], token)

        @rule(writer=readers, channel=st.sampled_from(CHANNELS), word=words)
        def peer_writes_elsewhere(self, writer: Reader, channel: str | None, word: str) -> None:
            Counter.operations += 1
            if not writer.peer or channel in (None, writer.channel):
                return
            with pytest.raises(ValidationError, match="own channel"):
                self.world.palace(writer).remember(f"{self._token()} {word}", channel=channel)

        @rule(pick=picks)
        def remember_again(self, pick: int) -> None:
            """The owner writes the same text in the same scope: same memory, revived."""
            Counter.operations += 1
            rec = self._pick(pick)
            if rec is None or rec.conversation:
                return
            owner = Reader(rec.agent, channel=rec.channel)
            memory = self.world.palace(owner).remember(
                rec.content, visibility=rec.visibility, group=rec.group
            )
            assert memory.id == rec.id
            rec.archived = False

        @rule(reader=any_reader, pick=picks, hard=st.booleans())
        def forget(self, reader: Reader, pick: int, hard: bool) -> None:
            Counter.operations += 1
            rec = self._pick(pick)
            if rec is None:
                return
            palace = self.world.palace(reader)
            if not visible(rec, reader):
                with pytest.raises(NotFoundError):
                    palace.forget(rec.id, hard=hard)
            elif not may_change(rec, reader):
                with pytest.raises(PermissionDenied):
                    palace.forget(rec.id, hard=hard)
            else:
                palace.forget(rec.id, hard=hard)
                if hard:  # no trace may remain anywhere: its token is unknown now
                    del self.world.recs[rec.id]
                else:
                    rec.archived = True

        @rule(reader=any_reader, pick=picks, completed=st.booleans())
        def complete_issue(self, reader: Reader, pick: int, completed: bool) -> None:
            """Only the owner (or management; a peer-facing view: in its own
            channel) changes an issue's state; the refusals name nothing the
            reader may not see."""
            Counter.operations += 1
            rec = self._pick(pick)
            if rec is None:
                return
            palace = self.world.palace(reader)
            if not visible(rec, reader):
                with pytest.raises(NotFoundError) as caught:
                    palace.personal.complete_issue(rec.id, completed=completed)
                assert rec.token not in str(caught.value)
            elif rec.kind != "issue":  # a visible memory: what it is may be said
                with pytest.raises(ValidationError, match="not an issue"):
                    palace.personal.complete_issue(rec.id, completed=completed)
            elif not may_change(rec, reader):
                with pytest.raises(PermissionDenied):
                    palace.personal.complete_issue(rec.id, completed=completed)
            else:
                assert palace.personal.complete_issue(rec.id, completed=completed).completed is (
                    completed
                )

        @rule(reader=any_reader, pick=picks, useful=st.booleans())
        def feedback(self, reader: Reader, pick: int, useful: bool) -> None:
            Counter.operations += 1
            rec = self._pick(pick)
            if rec is None:
                return
            palace = self.world.palace(reader)
            if visible(rec, reader):
                assert palace.feedback(rec.id, useful=useful) is not None
            else:
                with pytest.raises(NotFoundError):
                    palace.feedback(rec.id, useful=useful)

        @rule(
            surface=st.sampled_from(sorted(SURFACES)),
            reader=any_reader,
            pick=picks,
            aim=st.booleans(),
            word=words,
        )
        def read(self, surface: str, reader: Reader, pick: int, aim: bool, word: str) -> None:
            Counter.operations += 1
            probe = Probe(
                world=self.world,
                reader=reader,
                palace=self.world.palace(reader),
                target=self._pick(pick) if aim else None,
                word=word,
            )
            SURFACES[surface](probe)

    return Leaks


def test_tokens_are_not_read_inside_ids() -> None:
    """A case-folded id may spell a token; only the text's own tokens count."""
    shown = json.dumps({"id": "mem_01M8KN5Q4MZRTK3823229NVMWA", "content": "tk0000042 river"})
    assert TOKEN.findall(shown.lower()) == ["tk3823229", "tk0000042"]
    assert tokens_in(shown.lower()) == {"tk0000042"}
    assert tokens_in("@tk0000001 and Tk0000002db".lower()) == {"tk0000001", "tk0000002"}


def test_peer_palace_without_channel_fails_closed(store: Store) -> None:
    with pytest.raises(ValidationError, match="needs the peer's channel"):
        Palace(store=store, agent_id="ann", peer=True, settings=Settings(embedder="none"))


def test_no_leaks_through_any_surface(store: Store, clock: Callable[[], Any]) -> None:
    """At least ``OPERATIONS`` random operations on this backend, zero leaks."""
    machine = leak_machine(lambda: World(store=store, clock=clock))
    start = Counter.operations
    runs = 0
    while Counter.operations - start < OPERATIONS:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=25,
                stateful_step_count=STEPS,
                deadline=None,
                database=None,
                phases=PHASES,
                suppress_health_check=list(HealthCheck),
            ),
        )
        runs += 1
    assert Counter.operations - start >= OPERATIONS


# Palace's public methods that are not reads, each with the reason it needs no surface.
NOT_READS = {
    "open": "constructor",
    "for_agent": "constructor of another scope's view (whose reads are those below)",
    "close": "lifecycle",
    "remember": "write (a rule above)",
    "remember_many": "write (a rule above)",
    "add_messages": "write (a rule above)",
    "import_jsonl": "write (a rule above)",
    "import_file": "write as the view's own agent (export: import_jsonl's rule above; mem0"
    " agent_from: other agents only through the management view, test_import_exports.py)",
    "forget": "write (a rule above)",
    "erase": "write, scoped like forget (tests/test_erase.py)",
    "erasures": "the view's agent's erasure receipts: counts and digests, no memory content"
    " (tests/test_erase.py)",
    "update": "write, scoped like forget (tests/test_update.py)",
    "restore": "write, scoped like update (tests/test_inspect.py)",
    "feedback": "signal write (a rule above)",
    "reindex": "maintenance; re-embeds, returns a count",
    "pending_vectors": "maintenance; a palace-wide count of texts waiting for vectors, no content",
    "wait_for_vectors": "maintenance; embeds what waits, returns a count",
    "now": "the palace's clock",
    "doctor": "maintenance; palace-wide health: model names, counts, paths, no content",
}
READS = {
    "recall": "recall",
    "get": "get",
    "memories": "list",
    "export_jsonl": "export",
    "stats": "stats",
    "recent": "recent",
    "search_messages": "search-messages",
    "search": "search",
    "context": "context",
}


def test_surface_list_covers_the_read_api() -> None:
    """Every public method of Palace is a read with a surface here, or a
    named non-read: a new read method must join SURFACES."""
    public = {n for n in dir(Palace) if not n.startswith("_") and callable(getattr(Palace, n))}
    assert public == set(READS) | set(NOT_READS)
    assert set(READS.values()) <= set(SURFACES)
