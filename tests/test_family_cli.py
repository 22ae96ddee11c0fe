"""The recall-family commands, run as real subprocesses on a real SQLite file:
JSON out, ``--plain``, exit 2 with the valid options on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from test_cli import Cli

MODES = ["general", "decision", "project", "people", "workflow", "conversation"]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cli, dict[str, str]]:
    base = tmp_path_factory.mktemp("family")
    cli = Cli(base / "home", base / "palace.db")
    ids: dict[str, str] = {}
    for role, content, *options in [
        ("old", "We use Supabase for the Atlas backend", "--category", "decision"),
        ("lesson", "Lesson: Supabase deadlocked under load", "--category", "lesson"),
        ("new", "We now use Convex for the Atlas backend", "--category", "decision"),
        ("owner", "Alice owns the Billing service"),
        ("deps", "The Checkout API depends on Redis"),
        (
            "rule",
            "Never deploy the Billing service on Fridays",
            "--category",
            "rule",
            "--constraint",
        ),
    ]:
        ids[role] = cli.remember(content, *options)["id"]
    return cli, ids


def answer(cli: Cli, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = cli.json(*args)
    assert "injection_block" not in result and "injectionBlock" not in result  # context's job
    for group in result["groups"]:
        for memory in group["memories"]:
            assert 0 <= memory["score"] <= 1 and 0 <= memory["confidence"] <= 1
    return result


def test_recall_mode(team: tuple[Cli, dict[str, str]]) -> None:
    cli, ids = team
    hits = cli.json("recall", "Atlas backend Supabase", "--mode", "decision", "--explain")
    assert hits[0]["id"] == ids["new"]
    assert "mode" in hits[0]["explain"]["scores"]


def test_what_do_i_know(team: tuple[Cli, dict[str, str]]) -> None:
    cli, ids = team
    result = answer(cli, "what-do-i-know", "Supabase", "--per-group", "2")
    groups = {g["name"]: [m["id"] for m in g["memories"]] for g in result["groups"]}
    assert ids["lesson"] in groups["lessons"]
    every = [m["id"] for g in result["groups"] for m in g["memories"]]
    assert ids["old"] not in every  # superseded


def test_why_did_we(team: tuple[Cli, dict[str, str]]) -> None:
    cli, ids = team
    result = answer(cli, "why-did-we", "choose Convex for the Atlas backend")
    roles = {m["id"]: m["relation"] for m in result["groups"][0]["memories"]}
    assert roles[ids["new"]] == "decision" and roles[ids["old"]] == "superseded"


def test_who_owns_and_depends_on(team: tuple[Cli, dict[str, str]]) -> None:
    cli, ids = team
    owners = answer(cli, "who-owns", "the Billing service")
    assert [g["name"] for g in owners["groups"]] == ["Alice"]
    deps = answer(cli, "depends-on", "Redis")
    assert deps["groups"][0]["memories"][0]["id"] == ids["deps"]
    needs = answer(cli, "depends-on", "Checkout API", "--direction", "dependencies")
    assert [g["name"] for g in needs["groups"]] == ["Redis"]


def test_preflight(team: tuple[Cli, dict[str, str]]) -> None:
    cli, ids = team
    result = answer(cli, "preflight", "deploy the Billing service")
    constraints = next(g for g in result["groups"] if g["name"] == "constraints")
    assert constraints["memories"][0]["id"] == ids["rule"]


def test_plain_output(team: tuple[Cli, dict[str, str]]) -> None:
    cli, _ = team
    out = cli.run("--plain", "who-owns", "Billing").stdout
    assert "\nAlice:\n" in out and "[owns]" in out and "Alice owns the Billing service" in out
    empty = cli.run("--plain", "who-owns", "Kubernetes").stdout
    assert "Try a broader query or remove filters." in empty


def test_empty_answers_are_not_errors(team: tuple[Cli, dict[str, str]]) -> None:
    cli, _ = team
    result = answer(cli, "what-do-i-know", "quantum gardening")
    assert result["groups"] == [] and result["hint"] == "Try a broader query or remove filters."
    assert cli.json("recall", "quantum gardening", "--mode", "decision") == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["recall", "x", "--mode", "decisions"], MODES),
        (["depends-on", "Redis", "--direction", "up"], ["dependents", "dependencies"]),
        (["what-do-i-know", "x", "--limit", "0"], ["1", "100"]),
        (["what-do-i-know", ""], ["topic"]),
        (["why-did-we", "x", "--limit", "99"], ["1", "50"]),
        (["who-owns", " "], ["name"]),
        (["preflight", "x", "--limit", "21"], ["1", "20"]),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: list[str], expected: list[str]) -> None:
    cli = Cli(tmp_path / "home", tmp_path / "palace.db")
    result = cli.run(*args)
    assert result.returncode == 2, result.stderr
    for word in expected:
        assert word in result.stderr
    assert result.stdout == ""
