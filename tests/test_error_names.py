"""Errors name the argument as the caller spelled it on that surface, with
the valid forms: ``--after`` on the command line (not the library's
``created_after``). The command line runs in this process on a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindpalace.arguments import build_parser, option_for
from mindpalace.commands import run
from mindpalace.errors import ValidationError


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    monkeypatch.setenv("MINDPALACE_DAEMON", "off")
    db = str(tmp_path / "palace.db")

    def call(*args: str) -> tuple[int, str, str]:
        return run(build_parser().parse_args(["--db", db, *args]))

    return call


@pytest.mark.parametrize(
    ("args", "fragments", "internal"),
    [
        (
            ["list", "--after", "yesterday"],
            ["--after must be", "2026-03-02T09:30+01:00"],
            "created_after",
        ),
        (["list", "--before", "soon"], ["--before must be", "ISO 8601"], "created_before"),
        (["list", "--type", "gizmo"], ["invalid --type 'gizmo'", "valid options: person"], "types"),
        (["list", "--category", "idea"], ["invalid --category 'idea'", "decision"], "categories"),
        (["recall", "x", "--mode", "fast"], ["invalid --mode 'fast'", "general"], "mode "),
        (
            ["context", "x", "--max-tokens", "5"],
            ["--max-tokens must be", "256 to 8192"],
            "max_tokens",
        ),
        (["remember", "x", "--store", "attic"], ["invalid --store 'attic'", "semantic"], "store "),
    ],
)
def test_command_line_errors_name_the_option(
    cli: object, args: list[str], fragments: list[str], internal: str
) -> None:
    code, out, err = cli(*args)  # type: ignore[operator]
    assert code == 2 and out == ""
    for fragment in fragments:
        assert fragment in err, err
    assert internal not in err.replace(f"--{internal.strip()}", ""), err


def test_an_unknown_field_keeps_its_name() -> None:
    assert option_for("no_such_thing", "list") is None
    assert option_for("created_after", "list") == "--after"
    assert option_for("types", "list") == "--type"


def test_renamed_keeps_the_message_and_the_options() -> None:
    error = ValidationError("types", "gizmo", valid=["person", "tool"])
    renamed = error.renamed("--type")
    assert renamed.field == "--type" and renamed.valid == ("person", "tool")
    assert str(renamed) == "invalid --type 'gizmo'; valid options: person, tool"
    unmentioned = ValidationError("id", "x", reason="no memory like that").renamed("memory_id")
    assert str(unmentioned) == "memory_id: no memory like that"
