"""A user's report: skills imported from SKILL.md files, exported, imported
into another palace, are still skills there (``skills get``, ``activate``,
``context``), as ``migrate`` keeps them."""

from __future__ import annotations

from pathlib import Path

from tests.skills.test_cli_skills import LIBRARY, HashingCli


def test_skills_survive_export_and_import(tmp_path: Path) -> None:
    source = HashingCli(tmp_path / "home", tmp_path / "palace.db")
    source.json("skills", "import", str(LIBRARY))
    source.json("skills", "activate", "schedule a social media post")
    backup = tmp_path / "b.jsonl"
    assert source.json("export", "-o", str(backup))["exported"] >= 30
    copy = HashingCli(tmp_path / "home", tmp_path / "copy.db")
    copy.json("import", str(backup))
    again = tmp_path / "again.jsonl"
    copy.json("export", "-o", str(again))
    assert backup.read_text().splitlines()[1:] == again.read_text().splitlines()[1:]
    skill = copy.json("skills", "get", "schedule-post")
    original = source.json("skills", "get", "schedule-post")
    assert skill["usage"]["activations"] == 1  # the usage signal came along
    assert {**skill, "usage": None} == {**original, "usage": None}
    activated = copy.json("skills", "activate", "schedule a social media post")
    assert activated == source.json("skills", "activate", "schedule a social media post")
    context = copy.run("context", "schedule a social media post")
    assert context.returncode == 0, context.stderr
    assert "schedule-post" in context.stdout
