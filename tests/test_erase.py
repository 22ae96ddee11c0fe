"""Forget means gone: hard forget and ``Palace.erase``, on every backend.

A hard forget takes the memory, every older version of it and every record
derived from them; ``erase`` does so for a whole selection (an agent, a
channel, a session, a person, a filter), as a dry run unless confirmed, and
leaves a receipt without content in the erasure log.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from mindpalace import Palace, Selection, commands, erasure, parse_selection
from mindpalace.arguments import build_parser
from mindpalace.commands import run
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed.texts import embed_text, text_hash
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError
from mindpalace.receipts import ids_digest
from mindpalace.seat import Seat
from mindpalace.selection import SELECTION_KINDS
from mindpalace.store import Store


def _one(store: Store, sql: str, *params: Any) -> Any:
    with store._read() as cur:  # type: ignore[attr-defined]
        return store._exec(cur, sql, params).fetchone()[0]  # type: ignore[attr-defined]


def _count(store: Store, table: str, where: str = "1 = 1", *params: Any) -> int:
    return int(_one(store, f"SELECT COUNT(*) FROM {table} WHERE {where}", *params))


def _vectors_of(store: Store, *texts: str) -> int:
    hashes = [text_hash(t, store.hash_chars()) for t in texts]
    marks = ", ".join("?" for _ in hashes)
    return _count(store, "embeddings", f"text_hash IN ({marks})", *hashes)


# -- hard forget -------------------------------------------------------------------


def test_hard_forget_takes_every_older_version(palace: Palace) -> None:
    first = palace.remember("Alice Chen lives in Lisbon", tags=["home"])
    second = palace.update(first.id, content="Alice Chen lives in Porto")
    third = palace.update(second.id, content="Alice Chen lives in Braga")
    store = palace.store
    assert _count(store, "memories") == 3
    palace.forget(third.id, hard=True)
    for memory in (first, second, third):
        with pytest.raises(NotFoundError):
            palace.get(memory.id)
    with pytest.raises(NotFoundError):
        palace.graph.history(first.id)
    assert _count(store, "memories") == 0
    assert _count(store, "memory_tags") == 0
    assert _count(store, "memory_links") == 0
    assert _count(store, "mentions") == 0
    assert _count(store, "entities") == 0
    assert _vectors_of(store, "Alice Chen lives in Lisbon", "Alice Chen lives in Braga") == 0
    [receipt] = palace.erasures()
    assert receipt.counts.memories == 3 and receipt.counts.versions == 2
    assert receipt.digest == ids_digest([first.id, second.id, third.id])


def test_hard_forget_of_an_older_version_keeps_the_newer(palace: Palace) -> None:
    first = palace.remember("The deploy window is Tuesday")
    second = palace.update(first.id, content="The deploy window is Thursday")
    palace.forget(first.id, hard=True)
    kept = palace.get(second.id)
    assert kept.content == "The deploy window is Thursday" and kept.superseded_by is None
    assert [m.id for m in palace.graph.history(second.id)] == [second.id]
    with pytest.raises(NotFoundError):
        palace.get(first.id)
    assert _count(palace.store, "memories", "superseded_by = ?", first.id) == 0


def test_hard_forget_removes_derived_records(palace: Palace) -> None:
    doomed = palace.remember("Alice Chen manages Bob Stone on Project Falcon", tags=["team", "org"])
    other = palace.remember("Bob Stone reviews Project Falcon designs")
    palace.recall("who manages Bob Stone", limit=5)
    palace.feedback(doomed.id, useful=True)
    store = palace.store
    assert _count(store, "signals", "memory_id = ?", doomed.id) >= 2  # store, feedback
    assert "alice chen" in {e.name.lower() for e in palace.graph.mentions(doomed.id)}

    def recalls() -> list[str]:
        return [str(r) for (r,) in _rows(store, "SELECT data FROM signals WHERE kind = 'recall'")]

    returned = [r for r in recalls() if doomed.id in r]
    assert returned
    kept = len(recalls()) - len(returned)
    edges_before = _count(store, "entity_edges")
    palace.forget(doomed.id, hard=True)
    assert _count(store, "signals", "memory_id = ?", doomed.id) == 0
    assert len(recalls()) == kept  # the recalls that returned it went, with their query
    assert all(doomed.id not in r for r in recalls())
    assert _count(store, "memory_tags") == 0  # the other memory has none
    names = {str(n) for (n,) in _rows(store, "SELECT norm FROM entities")}
    assert "alice chen" not in names  # no memory mentions her any more
    assert {"bob stone"} <= names  # still mentioned by the other memory
    for (left,) in _rows(store, "SELECT mentions FROM entities"):
        assert left == 1
    assert _count(store, "entity_edges") < edges_before
    assert _count(store, "entity_relations") == _count(
        store, "entity_relations r JOIN memories m ON m.seq = r.memory_seq", "m.id = ?", other.id
    )
    assert _vectors_of(store, embed_text(doomed.title, doomed.content)) == 0
    assert _vectors_of(store, embed_text(other.title, other.content)) == 1


def _rows(store: Store, sql: str, *params: Any) -> list[Any]:
    with store._read() as cur:  # type: ignore[attr-defined]
        return list(store._exec(cur, sql, params).fetchall())  # type: ignore[attr-defined]


def test_shared_vector_stays_while_another_memory_uses_it(
    make_palace: Callable[..., Palace],
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    mine = alice.remember("The standup is at nine")
    bob.remember("The standup is at nine")
    alice.forget(mine.id, hard=True)
    assert _vectors_of(alice.store, "The standup is at nine") == 1


def test_edge_counts_follow_the_memories_that_support_them(palace: Palace) -> None:
    a = palace.remember("Alice Chen pairs with Bob Stone")
    b = palace.remember("Yesterday Bob Stone met Alice Chen about billing")

    def edge() -> list[tuple[Any, ...]]:
        return [tuple(r) for r in _rows(palace.store, "SELECT count FROM entity_edges")]

    assert edge() == [(2,)]
    palace.forget(a.id, hard=True)
    assert edge() == [(1,)]
    palace.forget(b.id, hard=True)
    assert edge() == [] and _count(palace.store, "entities") == 0


def _graph(store: Store) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Each entity's mention count and each edge's count, by names."""
    names = {int(seq): str(norm) for seq, norm in _rows(store, "SELECT seq, norm FROM entities")}
    mentions = {
        names[int(e)]: int(n)
        for e, n in _rows(store, "SELECT entity_seq, COUNT(*) FROM mentions GROUP BY entity_seq")
    }
    kept = {
        names[int(seq)]: int(n) for seq, n in _rows(store, "SELECT seq, mentions FROM entities")
    }
    assert kept == mentions  # the kept count is the rows'
    edges = {
        tuple(sorted((names[int(a)], names[int(b)]))): int(n)
        for a, b, n in _rows(store, "SELECT src_seq, dst_seq, count FROM entity_edges")
    }
    return mentions, edges  # type: ignore[return-value]


def test_the_graph_left_is_the_graph_of_what_is_left(
    make_palace: Callable[..., Palace], tmp_path: Any
) -> None:
    """After erasing one session, the names and their co-occurrence edges
    are those a palace of the other session's memories alone holds: every
    edge only the erased memories supported goes, shared edges lose their
    count, names no memory mentions any more go with their edges."""
    rnd = __import__("random").Random(7)
    people = ["Alice Chen", "Bob Stone", "Carol Diaz", "Dan Wu", "Eve Park", "Ines Moreau"]
    words = "falcon budget river garden schema deploy ledger harbour violin orchard".split()
    texts = []
    for i in range(24):
        who = rnd.sample(people[:4] if i % 2 else people, k=rnd.choice([2, 3]))
        said = ". ".join(f"{name} spoke about the {rnd.choice(words)}" for name in who)
        texts.append((f"s{i % 2}", f"{said}. Meeting {i}."))
    texts.append(("s1", "Zora Lind checked the orchard. Meeting 99."))
    ann = make_palace("ann")
    for session, text in texts:
        ann.remember(text, session=session)
    # An edge no memory's names gave (as an import may write one): it goes
    # with the name only erased memories mention, and is counted.
    with ann.store._write() as cur:  # type: ignore[attr-defined]
        ann.store._exec(  # type: ignore[attr-defined]
            cur,
            "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
            " SELECT a.seq, b.seq, 1, 0.5, 0 FROM entities a, entities b"
            " WHERE a.norm = 'ines moreau' AND b.norm = 'zora lind'",
        )
    before = _graph(ann.store)
    assert ("ines moreau", "zora lind") in before[1]
    receipt = ann.erase(Selection.session("s0"), confirm=True)
    assert receipt.counts.memories == 12
    assert ann.erase(Selection.session("s0")).counts.memories == 0
    with Palace(tmp_path / "rest.db", agent_id="ann") as rest:
        for session, text in texts:
            if session == "s1":
                rest.remember(text, session=session)
        expected = _graph(rest.store)
    after = _graph(ann.store)
    assert after == expected
    assert after != before and "ines moreau" in before[0] and "ines moreau" not in after[0]
    assert receipt.counts.entities == len(before[0]) - len(after[0])
    assert receipt.counts.entity_edges == len(before[1]) - len(after[1])
    assert receipt.counts.mentions == sum(before[0].values()) - sum(after[0].values())


def test_a_deleted_turn_leaves_no_copy_in_the_next_turns_context(palace: Palace) -> None:
    when = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
    turns = palace.add_messages(
        [
            Message("my locker code is 4417 and the gym is on Elm", speaker="ann", created_at=when),
            Message("noted, I will remember the locker", speaker="bot", created_at=when),
            Message("thanks", speaker="ann", created_at=when),
        ],
        session="gym",
    )
    after = palace.get(turns[1].id)
    assert after.context is not None and "4417" in after.context
    palace.forget(turns[0].id, hard=True)
    kept = palace.get(turns[1].id)
    assert kept.context is None or "4417" not in kept.context
    assert not palace.search_messages("4417")


def test_soft_forget_is_unchanged(palace: Palace) -> None:
    memory = palace.remember("Archive me, do not delete me")
    palace.forget(memory.id)
    assert palace.get(memory.id).archived
    assert palace.erasures() == []


def test_hard_forget_of_another_agents_memory_is_refused(
    make_palace: Callable[..., Palace],
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    shared = bob.remember("Bob's shared runbook", visibility="shared")
    with pytest.raises(PermissionDenied):
        alice.forget(shared.id, hard=True)
    with pytest.raises(PermissionDenied):
        alice.erase(Selection.memory(shared.id), confirm=True)
    assert bob.get(shared.id).content == "Bob's shared runbook"
    with pytest.raises(NotFoundError):
        alice.forget("mem_00000000000000000000000000", hard=True)


# -- erase by selection -----------------------------------------------------------------


def test_dry_run_writes_nothing_and_counts_what_the_erasure_removes(palace: Palace) -> None:
    first = palace.remember("Alice Chen owns billing", tags=["org"])
    palace.update(first.id, content="Alice Chen owns payments")
    palace.remember("Carol runs the standup", session="s1")
    generation = palace.store.generation()
    preview = palace.erase(Selection.agent())
    assert not preview.erased and preview.id is None
    assert palace.store.generation() == generation
    assert _count(palace.store, "memories") == 3 and palace.erasures() == []
    done = palace.erase(Selection.agent(), confirm=True)
    assert done.erased and done.id is not None
    assert done.counts == preview.counts and done.digest == preview.digest
    assert done.counts.memories == 3 and done.counts.tags == 2 and done.counts.vectors >= 3
    assert _count(palace.store, "memories") == 0


def test_erase_agent_takes_its_memories_signals_and_scorer_only(
    make_palace: Callable[..., Palace],
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    alice.remember("Alice's secret plan for the launch")
    alice.remember("Alice's note in a chat", channel="chat-1")
    kept = bob.remember("Bob's own plan for the launch", visibility="shared")
    alice.recall("launch plan")
    alice.feedback(kept.id, useful=True)  # a signal of alice's about bob's memory
    store = alice.store
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    store.save_scorer(agent_id="alice", channel=None, data={"w": [1.0]}, at=now)
    store.save_scorer(agent_id="bob", channel=None, data={"w": [2.0]}, at=now)
    receipt = alice.erase(Selection.agent(), confirm=True)
    assert receipt.counts.memories == 2 and receipt.counts.scorer_weights == 1
    assert _count(store, "memories", "agent_id = ?", "alice") == 0
    assert _count(store, "signals", "agent_id = ?", "alice") == 0
    assert _count(store, "scorer_weights", "agent_id = ?", "alice") == 0
    assert _count(store, "scorer_weights", "agent_id = ?", "bob") == 1
    assert bob.get(kept.id).content == "Bob's own plan for the launch"


def test_erase_channel_and_session(make_palace: Callable[..., Palace]) -> None:
    agent = make_palace("coach")
    agent.remember("Client 511 wants to run a marathon", channel="peer:511")
    agent.remember("Client 512 prefers swimming", channel="peer:512")
    agent.remember("Plan for session one", session="one")
    agent.remember("Plan for session two", session="two")
    gone = agent.erase(Selection.channel("peer:511"), confirm=True)
    assert gone.counts.memories == 1
    assert _count(agent.store, "memories", "channel = ?", "peer:511") == 0
    assert _count(agent.store, "memories", "channel = ?", "peer:512") == 1
    assert agent.erase(Selection.session("one"), confirm=True).counts.memories == 1
    assert [m.content for m in agent.memories()] == ["Plan for session two"]


def test_erase_an_entity_takes_every_memory_mentioning_it(palace: Palace) -> None:
    palace.remember("Dana Whitfield joined the data team")
    palace.remember("Lunch with Dana Whitfield on Friday")
    kept = palace.remember("The data team moved to the third floor")
    receipt = palace.erase(Selection.entity("dana whitfield"), confirm=True)
    assert receipt.counts.memories == 2
    assert receipt.selection["value"] == ("sha256:" + hashlib.sha256(b"dana whitfield").hexdigest())
    assert "dana" not in json.dumps(receipt.to_dict()).lower()
    assert [m.id for m in palace.memories()] == [kept.id]
    assert "dana whitfield" not in {e.name.lower() for e in palace.graph.entities()}


def test_erase_by_filter(palace: Palace) -> None:
    palace.remember("Old chat line", category="conversation", created_at="2024-01-01")
    palace.remember("New chat line", category="conversation", created_at="2026-01-01")
    palace.remember("Old decision", category="decision", created_at="2024-01-01")
    selection = Selection.matching(categories="conversation", created_before="2025-01-01")
    assert palace.erase(selection, confirm=True).counts.memories == 1
    assert sorted(m.content for m in palace.memories()) == ["New chat line", "Old decision"]


def test_management_erases_a_channel_of_every_agent(
    make_palace: Callable[..., Palace],
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    alice.remember("alice in the room", channel="room")
    bob.remember("bob in the room", channel="room")
    bob.remember("bob elsewhere")
    admin = make_palace("admin", management=True)
    assert alice.erase(Selection.channel("room")).counts.memories == 1  # its own only
    assert admin.erase(Selection.channel("room"), confirm=True).counts.memories == 2
    assert _count(admin.store, "memories") == 1
    assert [r.id for r in admin.erasures()] and alice.erasures() == []


def test_a_peer_view_erases_only_its_channel(make_palace: Callable[..., Palace]) -> None:
    agent = make_palace("coach")
    agent.remember("the coach's own note")
    peer = make_palace("coach", channel="peer:1", peer=True)
    peer.remember("what peer one said")
    make_palace("coach", channel="peer:2", peer=True).remember("what peer two said")
    with pytest.raises(ValidationError) as other:
        peer.erase(Selection.channel("peer:2"))
    assert other.value.valid == ("peer:1",)
    assert peer.erase(Selection.agent(), confirm=True).counts.memories == 1
    assert sorted(m.content for m in agent.memories()) == ["the coach's own note"]
    assert _count(agent.store, "memories") == 2  # peer two's memory is there


def test_receipts_hold_no_content_and_are_listed_newest_first(palace: Palace) -> None:
    a = palace.remember("Zebra crossings near the school")
    b = palace.remember("Quartz watches are accurate")
    first = palace.erase(Selection.memory(a.id), confirm=True)
    second = palace.erase(Selection.memory(b.id), confirm=True)
    log = palace.erasures()
    assert [r.id for r in log] == [second.id, first.id]
    # the same receipt, but for the disk cleanup, which may have finished since
    assert replace(log[0], cleanup=second.cleanup) == second
    text = json.dumps([r.to_dict() for r in log]).lower()
    assert "zebra" not in text and "quartz" not in text
    assert first.digest == hashlib.sha256(a.id.encode()).hexdigest()
    assert [replace(r, cleanup=second.cleanup) for r in palace.erasures(limit=1)] == [second]


def test_the_erasure_log_is_exported_and_imported(
    make_palace: Callable[..., Palace], tmp_path: Any
) -> None:
    source = make_palace("alice")
    memory = source.remember("Something to erase")
    source.remember("Something to keep")
    receipt = source.erase(Selection.memory(memory.id), confirm=True)
    out = io.StringIO()
    source.export_jsonl(out)
    lines = out.getvalue().splitlines()
    assert any(json.loads(line).get("record") == "erasure" for line in lines)
    target = Palace(tmp_path / "copy.db", agent_id="alice")
    try:
        target.import_jsonl(lines)
        # Nothing of the erased rows was ever in the copy: nothing to clean up.
        assert target.erasures() == [replace(receipt, cleanup="done")]
        target.import_jsonl(lines)  # again: nothing twice
        assert target.erasures() == [replace(receipt, cleanup="done")]
    finally:
        target.close()


# -- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value", "options", "says"),
    [
        ("everything", None, {}, "valid options: memory, agent, channel"),
        (None, None, {}, "valid options"),
        ("channel", None, {}, "needs its channel"),
        ("entity", "   ", {}, "needs its name"),
        ("memory", "", {}, "needs its id"),
        ("agent", "alice", {}, "takes no value"),
        ("filter", None, {}, "at least one of"),
        ("filter", None, {"types": "planet"}, "valid options: person"),
        ("filter", None, {"categories": "gossip"}, "valid options: decision"),
        ("filter", None, {"stores": "attic"}, "valid options: sensory"),
        ("filter", None, {"created_before": "soon"}, "ISO 8601"),
        ("session", "s1", {"types": "person"}, "kind 'filter' only"),
        ("entity", "x" * 201, {}, "at most 200"),
    ],
)
def test_bad_selections_are_refused_naming_the_options(
    kind: Any, value: Any, options: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError) as bad:
        parse_selection(kind, value, **options)
    assert says in str(bad.value)


def test_bad_arguments_to_erase(palace: Palace) -> None:
    with pytest.raises(ValidationError) as bad:
        palace.erase("agent")  # type: ignore[arg-type]
    assert "Selection.agent()" in str(bad.value)
    with pytest.raises(ValidationError):
        palace.erase(Selection.agent(), confirm="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as direct:
        Selection(kind="all")
    assert set(direct.value.valid) == set(SELECTION_KINDS)
    with pytest.raises(NotFoundError):
        palace.erase(Selection.memory("mem_00000000000000000000000000"))
    with pytest.raises(ValidationError):
        palace.erasures(limit=0)
    with pytest.raises(ValidationError) as nameless:
        palace.erase(Selection.entity("!!!"))
    assert "no letters" in str(nameless.value)


# -- command line -------------------------------------------------------------------------


def _cli(db: Any, *argv: str) -> tuple[int, str, str]:
    return run(build_parser().parse_args(["--db", str(db), "--agent", "ann", *argv]))


def test_cli_erase_is_a_dry_run_unless_yes(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    db = tmp_path / "p.db"
    assert _cli(db, "remember", "Erin Frost moved to Oslo")[0] == 0
    code, out, _ = _cli(db, "erase", "entity", "Erin Frost")
    preview = json.loads(out)
    assert code == 0 and preview["erased"] is False and preview["counts"]["memories"] == 1
    code, out, _ = _cli(db, "erase", "entity", "Erin Frost", "--yes")
    done = json.loads(out)
    assert code == 0 and done["erased"] is True and done["digest"] == preview["digest"]
    code, out, _ = _cli(db, "erasures")
    assert [r["id"] for r in json.loads(out)] == [done["id"]]
    assert "oslo" not in out.lower() and "erin" not in out.lower()


class _Stderr(io.StringIO):
    """Standard error that notes when the command says it waits for the cleanup."""

    def __init__(self) -> None:
        super().__init__()
        self.noticed = threading.Event()

    def write(self, text: str) -> int:
        if "waiting for the cleanup" in text:
            self.noticed.set()
        return super().write(text)


def test_cli_says_why_it_waits_for_the_cleanup(tmp_path: Any, monkeypatch: Any) -> None:
    """A command whose erasure's cleanup outlasts the notice's delay says on
    standard error what it waits for (the cleanup is held here by a reader
    whose snapshot keeps the WAL), then exits once the cleanup is done."""
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    monkeypatch.setattr(commands, "_CLEANUP_NOTICE_AFTER", 0.2)
    db = tmp_path / "p.db"
    assert _cli(db, "remember", "Erin Frost moved to Oslo")[0] == 0
    writer = sqlite3.connect(db)
    writer.execute("INSERT INTO palace_meta (key, value) VALUES ('test_hold', 1)")
    writer.commit()
    reader = sqlite3.connect(db, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM palace_meta").fetchone()
    writer.close()
    stderr = _Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)

    def release() -> None:
        stderr.noticed.wait(30)
        reader.rollback()
        reader.close()

    releasing = threading.Thread(target=release)
    releasing.start()
    try:
        code, out, _ = _cli(db, "erase", "entity", "Erin Frost", "--yes")
    finally:
        stderr.noticed.set()
        releasing.join()
    assert code == 0 and json.loads(out)["erased"] is True
    assert "mindpalace erase: the erasure is committed; waiting for the cleanup" in (
        stderr.getvalue()
    )
    code, out, _ = _cli(db, "erasures")
    assert [r["cleanup"] for r in json.loads(out)] == ["done"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["erase", "everything"], "valid options: memory, agent, channel, session, entity, filter"),
        (["erase", "channel"], "needs its channel"),
        (["erase", "filter", "--store", "attic"], "valid options: sensory"),
        (["erase", "agent", "--before", "2020-01-01"], "kind 'filter' only"),
    ],
)
def test_cli_erase_refuses_bad_input_before_opening(
    tmp_path: Any, argv: list[str], says: str
) -> None:
    db = tmp_path / "never.db"
    code, out, err = _cli(db, *argv)
    assert code == 2 and out == "" and says in err
    assert not db.exists()


def test_erase_runs_in_a_seat_as_the_other_operations_do(
    make_palace: Callable[..., Palace],
) -> None:
    """``erasure.erase(seat, selection)``: the seat's scope decides what it
    reaches, as ``Palace.erase`` (which delegates to it) does."""
    ann, bob = make_palace("ann"), make_palace("bob")
    mine = ann.remember("ann's note", session="s-1")
    theirs = bob.remember("bob's note", session="s-1")
    seat = Seat(ann.engine, ann.scope)
    dry = erasure.erase(seat, Selection.session("s-1"))
    assert dry.id is None and dry.counts.memories == 1
    receipt = erasure.erase(seat, Selection.session("s-1"), confirm=True)
    assert receipt.counts.memories == 1 and receipt.agent_id == "ann"
    with pytest.raises(NotFoundError):
        ann.get(mine.id)
    assert bob.get(theirs.id).id == theirs.id
    with pytest.raises(NotFoundError):
        erasure.forget_hard(seat, theirs.id)  # bob's isolated note: ann cannot see it


def test_an_erasure_of_everything_a_seat_may_change_needs_no_look_for_versions(
    make_palace: Callable[..., Palace],
) -> None:
    """An agent's erasure (and a peer-facing view's of its channel) reaches
    every memory the seat may change, so it does not look for their older
    versions: what it erases is what the look would have added to."""
    coach = make_palace("coach")
    peer = make_palace("coach", channel="peer:1", peer=True)
    other = make_palace("other")
    for view, tag in ((coach, "own"), (peer, "peer")):
        first = view.remember(f"The {tag} deploy window is Tuesday")
        second = view.update(first.id, content=f"The {tag} deploy window is Thursday")
        view.update(second.id, content=f"The {tag} deploy window is Friday")
        view.forget(view.remember(f"An archived {tag} note").id)
    other.remember("The other agent's deploy window is Monday", visibility="shared")
    for view, selection in (
        (coach, Selection.agent()),
        (peer, Selection.agent()),
        (peer, Selection.channel("peer:1")),
    ):
        seat = Seat(view.engine, view.scope)
        assert erasure._closed(seat.scope, selection)
        chosen = erasure._chosen(seat, selection, "erase")
        looked = erasure.erase_memories(seat, chosen, selection.to_dict(), confirm=False)
        assert looked.counts.versions == 0  # the look finds nothing outside
        quick = erasure.erase(seat, selection)
        assert (quick.counts, quick.digest) == (looked.counts, looked.digest)
    admin = make_palace("admin", management=True)
    assert not erasure._closed(admin.scope, Selection.agent())
    assert not erasure._closed(coach.scope, Selection.channel("peer:1"))
    assert peer.erase(Selection.agent(), confirm=True).counts.memories == 4
    assert coach.erase(Selection.agent(), confirm=True).counts.memories == 4
    assert _count(coach.store, "memories", "agent_id = ?", "coach") == 0
    assert _count(coach.store, "memories") == 1


_NOTES = [
    ("ann", "isolated", "Alice Chen moved the billing ledger to the harbour office"),
    ("bob", "shared", "Bob Stone and Alice Chen reviewed the billing ledger budget"),
    ("ann", "shared", "the harbour office opens at nine on weekdays"),
    ("bob", "isolated", "Bob Stone keeps the deploy scripts in the ops repository"),
    ("bob", "shared", "Carol Diaz said the deploy froze on Friday night"),
    ("ann", "isolated", "Carol Diaz planned the orchard offsite agenda with Alice Chen"),
    ("bob", "shared", "the billing budget review is due next week, says Carol Diaz"),
    ("ann", "shared", "Dan Wu fixed the deploy on Saturday morning"),
    ("ann", "isolated", "the ledger of the orchard offsite lists twelve guests"),
    ("bob", "shared", "Dan Wu and Bob Stone tuned the harbour office network"),
    ("bob", "isolated", "Carol Diaz and Dan Wu met Ines Moreau about the quarterly plan"),
    ("ann", "isolated", "Ines Moreau sent the quarterly plan to the whole team"),
]
_ASKED = [
    "billing ledger",
    "who fixed the deploy",
    "harbour office",
    "Carol Diaz",
    "orchard",
    "what did Ines Moreau do",
    "Dan Wu",
]


def _palace_of(target: str, agent: str) -> Palace:
    # On PostgreSQL recall runs in the database, which reads the counts an
    # erasure keeps (keys, partitions, the palace's length).
    index = "database" if target.startswith("postgresql") else "process"
    return Palace(
        target,
        agent_id=agent,
        settings=Settings(agent_id=agent, signals=False, index=index),
        clock=lambda: datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc),
    )


def _write(target: str, agents: tuple[str, ...]) -> None:
    for n, (agent, visibility, text) in enumerate(_NOTES):
        if agent in agents:
            with _palace_of(target, agent) as palace:
                palace.remember(
                    text,
                    visibility=visibility,
                    created_at=datetime(2026, 2, 1 + n, 9, 0, tzinfo=timezone.utc),
                )


def _answers(target: str) -> list[list[tuple[str, float]]]:
    with _palace_of(target, "ann") as palace:
        return [
            [(h.memory.content, round(h.score, 5)) for h in palace.recall(q, limit=10)]
            for q in _ASKED
        ]


def test_after_an_agent_is_erased_the_others_recall_as_if_it_never_wrote(
    backend: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """Another agent's recall after the erasure equals its recall in a
    palace the erased agent never wrote to: the erased agent's shared
    memories are gone from it, and so is everything they counted for (the
    keyword statistics, the names and their edges, the cosines' range)."""
    if backend == "sqlite":
        both, rest = str(tmp_path / "both.db"), str(tmp_path / "rest.db")
    else:
        server = request.getfixturevalue("postgres_server")
        both, rest = server.create(), server.create()
        request.addfinalizer(lambda: (server.drop(both), server.drop(rest)))
    _write(both, ("ann", "bob"))
    _write(rest, ("ann",))
    before = _answers(both)
    assert before != _answers(rest)  # bob's shared memories are in ann's hits
    with _palace_of(both, "bob") as bob:
        receipt = bob.erase(Selection.agent(), confirm=True)
    assert receipt.counts.memories == 6
    assert _answers(both) == _answers(rest)
