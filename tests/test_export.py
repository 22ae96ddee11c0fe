"""export / import: lossless JSON lines round trip, all-or-nothing import."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mindpalace import Palace, ValidationError
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
    assert len(lines) == 1 + 4
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
