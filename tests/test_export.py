"""export / import: lossless JSON lines round trip, all-or-nothing import."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from mindpalace import NotFoundError, Palace, ValidationError
from mindpalace.models import Scope


def _fill(p: Palace) -> None:
    p.remember("a decision", category="decision", tags=["x", "y"], title="T", constraint=True)
    p.remember("shared thing", visibility="shared", metadata={"k": [1, "two"]})
    p.remember("valid window", valid_from="2025-01-01T00:00:00Z", valid_to="2026-01-01")
    gone = p.remember("archived one")
    p.forget(gone.id)


def _export(p: Palace) -> str:
    out = io.StringIO()
    p.export_jsonl(out)
    return out.getvalue()


def test_round_trip_is_lossless(palace: Palace, tmp_path: Path) -> None:
    _fill(palace)
    text = _export(palace)
    lines = text.splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "mindpalace-export"
    assert sum("record" not in json.loads(line) for line in lines[1:]) == 4
    with Palace(tmp_path / "restored.db", settings=palace.settings) as restored:
        report = restored.import_jsonl(io.StringIO(text))
        assert (report.inserted, report.skipped) == (4, 0)
        again = _export(restored)
        assert again.splitlines()[1:] == lines[1:]
        original = {m.id: m for m in palace.store.iter_memories(Scope.management())}
        copied = {m.id: m for m in restored.store.iter_memories(Scope.management())}
        assert copied == original
        # importing the same file again writes nothing new
        report = restored.import_jsonl(io.StringIO(text))
        assert (report.inserted, report.skipped) == (0, 4)


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("not json", "line 3 is not JSON"),
        ("[1, 2]", "line 3 is not an object"),
        ('{"kind": "memory", "id": "m", "agent_id": "a", "content": "x"}', "created_at"),
        (
            '{"kind": "memory", "id": "m", "agent_id": "a", "content": "x",'
            ' "created_at": "2026-01-01", "type": "persn"}',
            "line 3: invalid type",
        ),
        ('{"kind": "skill"}', "line 3: invalid kind.*valid options: memory, journal, node"),
    ],
)
def test_a_bad_line_writes_nothing(
    palace: Palace, tmp_path: Path, bad_line: str, message: str
) -> None:
    palace.remember("first good")
    lines = _export(palace).splitlines()
    lines.insert(2, bad_line)
    with Palace(tmp_path / "target.db") as target:
        with pytest.raises(ValidationError, match=message):
            target.import_jsonl(lines)
        assert target.store.stats(Scope.management()).memories == 0
        lines.pop(2)
        assert target.import_jsonl(lines).inserted == 1


def test_wrong_format_header(palace: Palace) -> None:
    with pytest.raises(ValidationError, match="mindpalace-export"):
        palace.import_jsonl(['{"format": "other", "version": 1}'])


def test_imported_memories_are_found_by_meaning(palace: Palace, tmp_path: Path) -> None:
    palace.remember("Alice's favourite is green tea.")
    palace.remember("The deploy pipeline runs on Fridays.")
    text = _export(palace)
    with Palace(tmp_path / "restored.db", settings=palace.settings) as restored:
        restored.import_jsonl(io.StringIO(text))
        hits = restored.recall("what does Alice like to drink?")
        assert hits.mode == "hybrid"
        assert hits[0].memory.content == "Alice's favourite is green tea."
        assert "dense" in hits[0].ranks


def _record(memory_id: str, agent: str, text: str, **more: object) -> str:
    return json.dumps(
        {"id": memory_id, "agent_id": agent, "content": text, "created_at": "2024-01-01", **more}
    )


@pytest.mark.parametrize(
    "hidden",
    [
        {"agent": "bob", "channel": None},  # another agent's isolated memory
        {"agent": "bob", "channel": "peer:1"},  # another agent's channel
        {"agent": "ann", "channel": "peer:9"},  # ann's own, outside the view's channel
    ],
    ids=["other-agent", "other-agent-channel", "own-other-channel"],
)
@pytest.mark.parametrize("peer", [False, True], ids=["agent", "peer"])
def test_an_invisible_id_is_answered_as_an_unknown_one(
    make_palace: Callable[..., Palace], hidden: dict[str, str | None], peer: bool
) -> None:
    """Importing a record under an id the importer cannot see reports what a
    fresh id reports, keeps the record (under a new id) and leaves the
    hidden memory as it was."""
    owner = make_palace(hidden["agent"], channel=hidden["channel"])
    secret = owner.remember("the vault code is 4321")
    channel = "peer:1" if peer else None
    ann = make_palace("ann", channel=channel, peer=peer)
    extra = {"channel": channel} if channel else {}

    def reports(first_id: str, batch_id: str, text: str) -> list[tuple[int, int]]:
        """Import a record, the same again, then a batch of two records
        sharing one id."""
        line = _record(first_id, "ann", text, **extra)
        done = [ann.import_jsonl([line]), ann.import_jsonl([line])]
        done.append(ann.import_jsonl([_record(batch_id, "ann", f"{text} twice", **extra)] * 2))
        return [(r.inserted, r.skipped) for r in done]

    hidden_reports = reports(secret.id, secret.id, "forged over the vault")
    fresh_reports = reports("mem_01FRESH1", "mem_01FRESH2", "a fresh record")
    assert hidden_reports == fresh_reports == [(1, 0), (0, 1), (1, 1)]
    # The hidden memory is unchanged, and still hidden.
    assert owner.get(secret.id) == secret
    with pytest.raises(NotFoundError):
        ann.get(secret.id)
    # The record was kept, under a new id.
    kept = [m for m in ann.engine.store.iter_memories(ann.scope) if "vault" in m.content]
    assert [m.content for m in kept] == ["forged over the vault", "forged over the vault twice"]
    assert secret.id not in {m.id for m in kept}
    assert all(m.agent_id == "ann" for m in kept)


def test_an_own_visible_id_is_skipped_and_supersession_follows_a_new_id(
    make_palace: Callable[..., Palace],
) -> None:
    bob = make_palace("bob")
    hidden = bob.remember("bob's private plan")
    ann = make_palace("ann")
    mine = ann.remember("ann's note")
    report = ann.import_jsonl(
        [
            _record(mine.id, "ann", "ann's note, changed"),  # present: skipped
            _record("mem_01OLDER00000000000000000000", "ann", "old fact", superseded_by=hidden.id),
            _record(hidden.id, "ann", "new fact"),
        ]
    )
    assert (report.inserted, report.skipped) == (2, 1)
    assert ann.get(mine.id).content == "ann's note"
    stored = {m.content: m for m in ann.engine.store.iter_memories(ann.scope)}
    old, new = stored["old fact"], stored["new fact"]
    # The palace holds bob's memory: both records got new ids, fresh or not.
    assert {old.id, new.id}.isdisjoint({hidden.id, "mem_01OLDER00000000000000000000"})
    assert old.superseded_by == new.id  # the link follows the record, not bob's memory
    assert bob.get(hidden.id) == hidden


def _imported_ids(palace: Palace, lines: list[str]) -> tuple[tuple[int, int], set[str]]:
    report = palace.import_jsonl(lines)
    return (report.inserted, report.skipped), {
        m.id for m in palace.engine.store.iter_memories(palace.scope)
    }


@pytest.mark.parametrize("peer", [False, True], ids=["agent", "peer"])
def test_an_import_answers_alike_for_a_hidden_id_and_an_unknown_one(
    make_palace: Callable[..., Palace], tmp_path: Path, peer: bool
) -> None:
    """No oracle: a record, entity or erasure receipt under another scope's
    id and one under an id nobody has are imported alike: the same report,
    new ids for both, nothing else changed; the importer finds neither id."""
    bob = make_palace("bob")
    secret = bob.remember("Bob's vault code is 4321, Alice Chen knows it")
    bob.forget(bob.remember("bob's scratch").id, hard=True)  # leaves a receipt
    receipt = bob.erasures()[0]
    entity = next(iter(bob.engine.store.entities_of([secret.id], bob.scope)[secret.id]))
    channel = "peer:1" if peer else None
    ann = make_palace("ann", channel=channel, peer=peer)

    def lines(memory_id: str, entity_id: str, receipt_id: str, name: str) -> list[str]:
        """An export of ann's (a note naming ``name``, an erasure receipt),
        made in a palace of its own, its ids replaced by those given."""
        with Palace(
            tmp_path / f"{name}.db", agent_id="ann", channel=channel, peer=peer or None
        ) as scratch:
            note = scratch.remember(f"The report names {name} as its author")
            scratch.forget(scratch.remember(f"{name} scratch").id, hard=True)
            mentioned = scratch.engine.store.entities_of([note.id], scratch.scope)[note.id]
            named = next(e for e in mentioned if e.name == name)
            out = io.StringIO()
            scratch.export_jsonl(out)
            text = out.getvalue()
            for old, new in (
                (note.id, memory_id),
                (named.id, entity_id),
                (scratch.erasures()[0].id, receipt_id),
            ):
                text = text.replace(old, new)
        return text.splitlines()

    hidden_lines = lines(secret.id, entity.id, receipt.id, "Alice Chen")
    fresh_ids_named = ("mem_01FRESH000000000000000000", "ent_01FRESH", "era_01FRESH")
    fresh_lines = lines(*fresh_ids_named, "Bruno Diaz")
    hidden_report, _ = _imported_ids(ann, hidden_lines)
    fresh_report, all_ids = _imported_ids(ann, fresh_lines)
    assert hidden_report == fresh_report == (1, 0)
    assert secret.id not in all_ids and fresh_ids_named[0] not in all_ids
    receipts = {r.id for r in ann.erasures()}
    assert len(receipts) == 2 and {receipt.id, "era_01FRESH"}.isdisjoint(receipts)
    out = io.StringIO()
    ann.export_jsonl(out)
    exported = out.getvalue()
    for named in (secret.id, entity.id, receipt.id, *fresh_ids_named):
        assert named not in exported
    # Importing the same lines again adds nothing, hidden or fresh alike.
    again = [_imported_ids(ann, hidden_lines)[0], _imported_ids(ann, fresh_lines)[0]]
    assert again == [(0, 1), (0, 1)]
    assert len(ann.erasures()) == 2
    assert bob.get(secret.id) == secret
    # the same receipt, but for the disk cleanup, which may have finished since
    assert [replace(r, cleanup=receipt.cleanup) for r in bob.erasures()] == [receipt]


def test_a_backup_into_a_palace_of_its_own_keeps_its_ids(
    make_palace: Callable[..., Palace],
) -> None:
    """With nothing else in the palace there is nothing to hide: a scoped
    restore keeps every id."""
    ann = make_palace("ann")
    line = _record("mem_01KEPT0000000000000000000", "ann", "kept as it was")
    assert ann.import_jsonl([line]).inserted == 1
    assert ann.get("mem_01KEPT0000000000000000000").content == "kept as it was"


def test_a_skill_larger_than_the_metadata_cap_round_trips(palace: Palace, tmp_path: Path) -> None:
    """A skill memory's metadata is its definition, as large as its text:
    the 16 KiB cap on metadata leaves room for it (and for no more)."""
    folder = tmp_path / "big"
    folder.mkdir()
    line = 'Check the "gauge" \\ dial.\n'  # quotes and backslashes grow as JSON
    sections = "\n".join(f"## Step {n}\n" + line * 400 for n in range(4))
    (folder / "SKILL.md").write_text(
        f"---\nname: big-skill\ndescription: A long procedure.\n---\n{sections}", encoding="utf-8"
    )
    palace.skills.import_path(folder)
    text = _export(palace)
    skill_line = next(line for line in text.splitlines() if '"name": "big-skill"' in line)
    assert len(json.dumps(json.loads(skill_line)["metadata"])) > 30_000
    with Palace(tmp_path / "restored.db", settings=palace.settings) as restored:
        assert restored.import_jsonl(io.StringIO(text)).inserted == 1
        assert restored.skills.get("big-skill").sections == palace.skills.get("big-skill").sections
    record = json.loads(skill_line)
    record["metadata"]["padding"] = "x" * (6 * len(record["content"]) + 16 * 1024)
    with (
        Palace(tmp_path / "padded.db", settings=palace.settings) as padded,
        pytest.raises(ValidationError, match="line 1: metadata is"),
    ):
        padded.import_jsonl([json.dumps(record)])
