"""Write rules under concurrency: numbering and supersession run inside the
write transaction, so writers racing on one palace (real OS processes, a
SQLite file or a PostgreSQL database) never number two issues of a project
alike, and every new fact sees the facts committed before it.

Each writer opens its palace, says ``ready`` and waits for ``go`` on
standard input, so all of them write at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest

from mindpalace import Palace, writing
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.draft import Draft
from mindpalace.store import candidates_sql

WRITER = """
import sys
from mindpalace import Palace

target, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Palace(target) as palace:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        palace.personal.add_issue(f"Race issue w{worker} i{i}", project="Race")
        palace.remember(f"Apollo status is w{worker}x{i}")
print("done", flush=True)
"""

PROCESSES = 4
PER_PROCESS = 10


def run_writers(tmp_path: Path, target: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env.update(HOME=str(tmp_path), MINDPALACE_EMBEDDER="none", MINDPALACE_BUSY_TIMEOUT="60")
    errors = [tmp_path / f"writer{n}.err" for n in range(PROCESSES)]
    with ExitStack() as stack:
        procs = []
        for n in range(PROCESSES):
            proc = subprocess.Popen(
                [sys.executable, "-c", WRITER, target, str(n), str(PER_PROCESS)],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stack.enter_context(errors[n].open("w")),
                text=True,
            )
            stack.enter_context(proc)  # on exit: close its pipes, wait for it
            stack.callback(lambda p=proc: p.poll() is None and p.kill())
            procs.append(proc)
        for proc in procs:  # every palace is open before anyone writes
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        outputs = []
        for proc in procs:
            assert proc.stdout is not None
            outputs.append(proc.stdout.read())
            proc.wait(timeout=120)
    for proc, output, error in zip(procs, outputs, errors, strict=True):
        assert (proc.returncode, error.read_text(), output) == (0, "", "done\n")


def test_racing_writers_number_issues_uniquely_and_supersede_in_order(
    store_target: str, tmp_path: Path
) -> None:
    Palace(store_target, settings=Settings(embedder="none")).close()  # schema before the race
    run_writers(tmp_path, store_target)
    total = PROCESSES * PER_PROCESS
    with Palace(store_target, settings=Settings(embedder="none")) as palace:
        issues = palace.memories(limit=1000, kinds="issue", projects=["Race"])
        numbers = Counter(m.metadata["issue_number"] for m in issues)
        assert len(issues) == total
        assert numbers == Counter(range(1, total + 1))
        facts = palace.memories(limit=1000, kinds="memory", include_superseded=True)
        assert len(facts) == total
        # Each fact replaced the one current before it: one chain, one current fact.
        current = [m for m in facts if m.superseded_by is None]
        assert len(current) == 1
        assert len({m.superseded_by for m in facts}) == total


# -- the same rules inside one batch ---------------------------------------------------


def test_a_batch_numbers_its_issues_after_the_projects_last(palace: Palace) -> None:
    palace.personal.add_issue("Gate sticks", project="Shed")
    palace.remember("Old fence", kind="issue", project="Shed", metadata={"issue_number": 7})
    written = palace.remember_many(
        [
            {"content": "Roof leaks", "kind": "issue", "project": "Shed"},
            {"content": "Door squeaks", "kind": "issue", "project": "Garden"},
            {"content": "Gate sticks", "kind": "issue", "project": "Shed"},  # already there
            {
                "content": "Given",
                "kind": "issue",
                "project": "Shed",
                "metadata": {"issue_number": 9},
            },
            {"content": "Window cracked", "kind": "issue", "project": "Shed"},
            {"content": "Not an issue", "project": "Shed"},
        ]
    )
    numbers = [m.metadata.get("issue_number") for m in written]
    # after the project's highest (7), the batch's own numbers included; the
    # duplicate is the existing issue (#1) and takes no number
    assert numbers == [8, 1, 1, 9, 10, None]


def test_a_later_fact_of_a_batch_replaces_an_earlier_one(palace: Palace) -> None:
    before = palace.remember("Apollo status is green")
    first, second = palace.remember_many(
        [{"content": "Apollo status is amber"}, {"content": "Apollo status is red"}]
    )
    assert palace.get(before.id).superseded_by == first.id
    assert palace.get(first.id).superseded_by == second.id
    assert [m.id for m in palace.graph.history(second.id)] == [before.id, first.id, second.id]


def counted_look_ups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many memories each of the supersession rule's look-ups reads,
    appended as they happen."""
    counted: list[int] = []
    look_up = candidates_sql.CandidatesSql._look_up

    def counting(
        self: candidates_sql.CandidatesSql, cur: object, seqs: list[int], *rest: object
    ) -> None:
        counted.append(len(seqs))
        look_up(self, cur, seqs, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(candidates_sql.CandidatesSql, "_look_up", counting)
    return counted


def test_a_names_mentions_are_read_past_those_of_closed_facts(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write reads a name's newest mentions a page at a time, and goes on
    to older pages while the name has too few current facts: newer facts
    that were archived or replaced do not hide the one it replaces."""
    monkeypatch.setattr(candidates_sql, "FIRST_MENTIONS", 2)
    read = counted_look_ups(monkeypatch)
    before = palace.remember("Apollo status is green")
    for i in range(9):
        palace.forget(palace.remember(f"Apollo budget review number {i} is booked").id)
    read.clear()
    after = palace.remember("Apollo status is red")
    assert palace.get(before.id).superseded_by == after.id
    # A first page of two, then a larger one that reached the green fact.
    assert read[0] == 2 and len(read) >= 2 and sum(read) <= 10, read


def test_reading_mentions_a_page_at_a_time_keeps_the_candidates_of_a_full_read(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Facts written in date order: the candidates a write keeps are those
    of reading every mention of its names, however small the pages."""
    for i in range(90):
        # Apollo in every fact, Zeus in the 40 oldest only, Hera in every tenth.
        who = ["Apollo", *(["Zeus"] if i < 40 else []), *(["Hera"] if i % 10 == 0 else [])]
        fact = palace.remember(f"The team of {', '.join(who)} reviewed line {i}.")
        if i % 7 == 0:
            palace.forget(fact.id)  # archived: not a candidate
    new = writing.new_memory(palace.seat, Draft("Apollo status is red, Zeus agreed, Hera too"))
    assert {m.norm for m in new.mentions} == {"apollo", "zeus", "hera"}
    store = palace.engine.store

    share = candidates_sql.first_page

    def candidates(first: int) -> list[tuple[str, frozenset[str]]]:
        monkeypatch.setattr(candidates_sql, "first_page", lambda limit, names: first)
        with store._read() as cur:  # type: ignore[attr-defined]
            found = store._fact_candidates(  # type: ignore[attr-defined]
                cur, sorted(m.norm for m in new.mentions), new
            )
        return [(c.id, frozenset(c.norms)) for c in found]

    whole = candidates(10**6)
    assert len(whole) == 50
    # Zeus's page of old facts fills the count before Apollo's newer ones
    # are all read: Apollo is read on, Zeus no further.
    for first in (1, 2, 5, 16, 17, 30):  # 17: the share of 50 among three names
        assert candidates(first) == whole
    assert share(50, 3) == 17


def test_a_write_looks_up_about_as_many_memories_as_it_keeps(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Look-ups go newest first over all of a write's names and stop once
    the ``limit`` newest current facts are known: a write naming six
    things, each in 40 current facts, looks up about 50 memories, not a
    page of each name's, and keeps what reading every mention keeps."""
    names = ["Apollo", "Zeus", "Hera", "Athena", "Ares", "Hermes"]
    for i in range(120):
        palace.remember(f"The team of {names[i % 6]}, {names[(i + 1) % 6]} reviewed line {i}.")
    new = writing.new_memory(palace.seat, Draft("Apollo status is red, " + ", ".join(names)))
    norms = sorted(m.norm for m in new.mentions)
    assert len(norms) == 6
    store = palace.engine.store

    def candidates() -> list[str]:
        with store._read() as cur:  # type: ignore[attr-defined]
            found = store._fact_candidates(cur, norms, new)  # type: ignore[attr-defined]
        return [c.id for c in found]

    whole_page = candidates_sql.first_page
    monkeypatch.setattr(candidates_sql, "first_page", lambda limit, names: 10**6)
    whole = candidates()
    monkeypatch.setattr(candidates_sql, "first_page", whole_page)
    counted = counted_look_ups(monkeypatch)
    assert candidates() == whole and len(whole) == 50
    assert sum(counted) <= 60, counted


def test_chat_that_names_the_subject_does_not_hide_the_fact_it_replaces(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write reads the newest mentions of its names by memories that may
    be replaced (facts, decisions...), not every turn that names them: the
    old fact is found though more chat about the subject followed it than
    the write looks at."""
    monkeypatch.setattr(candidates_sql, "RECENT_MENTIONS", 3)
    before = palace.remember("Apollo status is green")
    palace.add_messages(
        [Message(f"Apollo came up again in standup, note {i}", role="user") for i in range(6)]
    )
    note = palace.remember("Apollo notes: the demo went fine", category="lesson")
    after = palace.remember("Apollo status is red")
    assert palace.get(before.id).superseded_by == after.id
    assert palace.get(note.id).superseded_by is None
    store = palace.engine.store
    with store._read() as cur:  # type: ignore[attr-defined]
        marks = {
            str(memory_id): int(fact)
            for memory_id, fact in store._exec(  # type: ignore[attr-defined]
                cur,
                "SELECT m.id, x.fact FROM mentions x JOIN memories m ON m.seq = x.memory_seq",
            ).fetchall()
        }
    assert marks[before.id] == marks[after.id] == 1
    assert marks[note.id] == 0 and sum(marks.values()) == 2


def test_a_batch_reads_each_older_fact_once_and_sees_what_it_closed_or_revived(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writes of one batch share what they read of older facts; every
    write's candidates are still those a fresh read gives at that point,
    after earlier writes of the batch closed a fact or revived one."""
    fresh: list[bool] = []
    candidates = candidates_sql.CandidatesSql._fact_candidates

    def checked(self: candidates_sql.CandidatesSql, cur: object, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        found = candidates(self, cur, *args, **kw)  # type: ignore[arg-type]
        again = candidates(self, cur, *args, **{**kw, "read": None})  # type: ignore[arg-type]
        fresh.append(found == again)
        return found

    monkeypatch.setattr(candidates_sql.CandidatesSql, "_fact_candidates", checked)
    green = palace.remember("Apollo status is green")
    budget = palace.remember("Apollo budget is 5k")
    palace.forget(budget.id)  # archived: not a candidate until written again
    amber, red, _, again, six = palace.remember_many(
        [
            {"content": "Apollo status is amber"},  # closes green
            {"content": "Apollo status is red"},  # closes amber, not green again
            {"content": "Apollo owner is Kim"},
            {"content": "Apollo budget is 5k"},  # the archived fact, revived
            {"content": "Apollo budget is 6k"},  # closes the revived one
        ]
    )
    assert again.id == budget.id
    assert palace.get(green.id).superseded_by == amber.id
    assert palace.get(amber.id).superseded_by == red.id
    assert palace.get(budget.id).superseded_by == six.id
    assert fresh and all(fresh), fresh
