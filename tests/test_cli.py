"""The ``mindpalace`` command, run as a real subprocess against real SQLite files.

Every call gets ``HOME`` and ``TMPDIR`` inside ``tmp_path`` and no ``MINDPALACE_*``
or ``XDG_DATA_HOME`` from the outer environment, so nothing touches the real
user directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.keyword_rows import KEYWORD_ROWS

from mindpalace import Palace
from mindpalace.cli import build_parser, main
from mindpalace.store.migrations import latest_version

MEMORY_TYPES = ["person", "project", "system", "tool", "concept", "skill", "task", "unknown"]
STORES = ["sensory", "episodic", "semantic", "procedural", "prospective"]
CATEGORIES = [
    "decision",
    "lesson",
    "person",
    "rule",
    "event",
    "fact",
    "goal",
    "workflow",
    "conversation",
]
VISIBILITIES = ["isolated", "shared", "group"]
SOURCES = ["manual", "skill", "pipeline", "import"]
COMMANDS = [
    "remember",
    "recall",
    "personal-search",
    "complete",
    "get",
    "forget",
    "erase",
    "erasures",
    "retention",
    "update",
    "list",
    "stats",
    "export",
    "import",
    "ingest",
    "search-messages",
    "recent",
    "reindex",
    "feedback",
    "signals",
    "context",
    "skills",
    "migrate",
    "demo",
    "doctor",
    "entities",
    "history",
    "consolidate",
    "what-do-i-know",
    "why-did-we",
    "who-owns",
    "depends-on",
    "preflight",
    "mcp",
    "serve",
    "ui",
    "daemon",
]

ID_RE = re.compile(r"^mem_[0-9A-HJKMNP-TV-Z]{26}$")
HIT_FIELDS = {
    "id",
    "title",
    "content",
    "type",
    "store",
    "category",
    "tags",
    "score",
    "created_at",
    "source",
    "agent_id",
}
SQLITE_DECISION = "We chose SQLite for the embedded store because many processes share one file."


# -- helpers --------------------------------------------------------------------------


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    """The listed commands (older names still read, but not listed, left out)."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest for choice in action._choices_actions}
            return {name: p for name, p in action.choices.items() if name in listed}
    raise AssertionError("build_parser() has no subcommands")


def test_older_command_names_still_work_unlisted(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    db = str(tmp_path / "p.db")
    run_cli(env, "--db", db, "remember", "Hiked the ridge", "--kind", "journal")
    old = run_cli(env, "--db", db, "search", "hiking")
    new = run_cli(env, "--db", db, "personal-search", "hiking")
    assert old.returncode == new.returncode == 0 and old.stdout == new.stdout
    assert json.loads(new.stdout)["results"][0]["content"] == "Hiked the ridge"
    turns = run_cli(env, "--db", db, "recent", "--n", "5")
    assert turns.returncode == 0, turns.stderr
    listed = run_cli(env, "--help").stdout
    assert "personal-search" in listed and not re.search(r"^\s+search\s", listed, re.M)


def _command_help(name: str) -> str:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    raise AssertionError(f"no help entry for {name}")


PARSER_COMMANDS = sorted(_subparsers())


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The outer environment minus anything that could point at a real palace."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MINDPALACE_") and k not in {"XDG_DATA_HOME", "APPDATA"}
    }
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(HOME=str(home), TMPDIR=str(tmp), **extra)
    return env


def run_cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def ok_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def db_snapshot(db: Path) -> tuple[int, str]:
    """Row count and a digest of every stored row (memories and their tags)."""
    con = sqlite3.connect(db)
    try:
        memories = con.execute("SELECT * FROM memories ORDER BY seq").fetchall()
        tags = con.execute("SELECT * FROM memory_tags ORDER BY memory_seq, tag").fetchall()
    finally:
        con.close()
    digest = hashlib.sha256(repr((memories, tags)).encode()).hexdigest()
    return len(memories), digest


def row_count(db: Path, where: str = "1 = 1", params: tuple[Any, ...] = ()) -> int:
    con = sqlite3.connect(db)
    try:
        return int(
            con.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params).fetchone()[0]
        )
    finally:
        con.close()


class Cli:
    """Runs the command against one palace file (``--db`` first unless told not to)."""

    def __init__(self, home: Path, db: Path) -> None:
        self.home = home
        self.db = db
        self.env = clean_env(home)

    def run(
        self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(env or self.env, "--db", str(self.db), *args, stdin=stdin)

    def json(self, *args: str, stdin: str | None = None) -> Any:
        return ok_json(self.run(*args, stdin=stdin))

    def remember(self, content: str, *options: str) -> dict[str, Any]:
        memory: dict[str, Any] = self.json("remember", content, *options)
        return memory


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home", tmp_path / "palace.db")


@pytest.fixture
def default_db(tmp_path: Path) -> Path:
    """Where the per-user palace lands with HOME=tmp_path/home and no XDG_DATA_HOME."""
    return tmp_path / "home" / ".local" / "share" / "mindpalace" / "memories.db"


SEED = [
    # content, options
    (SQLITE_DECISION, ["--category", "decision", "--tags", "storage,architecture"]),
    (
        "Alice prefers green tea and reviews pull requests in the morning.",
        ["--category", "person", "--type", "person", "--tags", "team"],
    ),
    (
        "Deploy with make release; never push tags by hand.",
        ["--category", "rule", "--type", "tool", "--tags", "deploy", "--store", "procedural"],
    ),
    (
        "Lesson: run the migration test from an empty file before every release.",
        ["--category", "lesson", "--tags", "storage,release"],
    ),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cli, list[dict[str, Any]]]:
    """A palace holding SEED, shared by read-only tests."""
    base = tmp_path_factory.mktemp("seeded")
    cli = Cli(base / "home", base / "palace.db")
    memories = [cli.remember(content, *options) for content, options in SEED]
    return cli, memories


# -- help -----------------------------------------------------------------------------


def test_parser_has_exactly_the_documented_commands() -> None:
    assert sorted(COMMANDS) == PARSER_COMMANDS


@pytest.mark.parametrize("command", PARSER_COMMANDS)
def test_every_command_and_option_has_help(command: str) -> None:
    sub = _subparsers()[command]
    assert _command_help(command).strip()
    assert (sub.description or "").strip()
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert (action.help or "").strip(), f"{command} {action.option_strings or action.dest}"
    text = sub.format_help()
    assert text.startswith(f"usage: mindpalace {command}")
    assert (sub.description or "") in " ".join(text.split())


@pytest.mark.parametrize("command", PARSER_COMMANDS)
def test_command_help_exits_zero_in_process(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: mindpalace {command}")
    assert_help_has_examples(out, command)


def assert_help_has_examples(out: str, command: str) -> None:
    """Examples of the command, and the global options named once, not listed."""
    examples = out.split("\nexamples:\n", 1)[1]
    assert re.search(rf"^  (\S+=\S+ )?mindpalace .*{command}", examples, re.MULTILINE), out
    assert "Global options (--db, --agent," in examples  # accepted after the command too
    usage_and_options = out.split("\nexamples:\n", 1)[0]
    for option in ("--db", "--agent", "--groups", "--channel", "--plain", "--all-agents"):
        whole = rf"{option}(?![\w-])"  # --agent, not import's --agent-from
        in_usage = re.search(rf"\[{whole}", usage_and_options)
        assert not in_usage, (command, option)  # not in the usage
        listed = re.search(rf"^\s+{whole}", usage_and_options, re.MULTILINE)
        assert not listed, (command, option)  # nor among the options


@pytest.mark.parametrize("command", ["import", "activate", "get", "find", "consolidate"])
def test_skills_command_help_has_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["skills", command, "--help"])
    assert_help_has_examples(capsys.readouterr().out, f"skills {command}")


@pytest.mark.parametrize("command", ["remember", "recall", "import"])
def test_command_help_exits_zero_as_subprocess(command: str, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    result = run_cli(env, command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: mindpalace {command}")
    assert _command_help(command) in " ".join(result.stdout.split())
    assert not (tmp_path / "home" / ".local").exists()  # help opens no palace


def test_top_level_help_lists_every_command(tmp_path: Path) -> None:
    result = run_cli(clean_env(tmp_path / "home"), "--help")
    assert result.returncode == 0
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\s+\S", result.stdout, re.MULTILINE), command


def test_version(tmp_path: Path) -> None:
    import mindpalace

    result = run_cli(clean_env(tmp_path / "home"), "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"mindpalace {mindpalace.__version__}"


def test_no_command_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(clean_env(tmp_path / "home"))
    assert result.returncode == 2
    assert "COMMAND" in result.stderr


# -- remember / recall ----------------------------------------------------------------


def test_remember_prints_the_stored_memory(cli: Cli) -> None:
    memory = cli.remember(
        "We chose SQLite because many processes share one file.",
        "--category",
        "decision",
        "--tags",
        "storage,architecture",
    )
    assert ID_RE.match(memory["id"])
    assert memory["content"] == "We chose SQLite because many processes share one file."
    assert memory["category"] == "decision"
    assert memory["tags"] == ["storage", "architecture"]
    assert memory["agent_id"] == "default"
    assert memory["type"] == "unknown"
    assert memory["store"] == "semantic"
    assert memory["source"] == "manual"
    assert memory["visibility"] == "isolated"
    assert memory["archived"] is False
    assert memory["strength"] == 0.5
    created = datetime.fromisoformat(memory["created_at"])
    assert created.utcoffset() is not None
    assert memory["updated_at"] == memory["created_at"]
    # ... and it is really in the file
    con = sqlite3.connect(cli.db)
    try:
        row = con.execute(
            "SELECT content, category, tags FROM memories WHERE id = ?", (memory["id"],)
        ).fetchone()
    finally:
        con.close()
    assert row == (memory["content"], "decision", '["storage", "architecture"]')


def test_remember_all_options(cli: Cli) -> None:
    memory = cli.remember(
        "Release train leaves every second Tuesday.",
        "--title",
        "Release cadence",
        "--type",
        "Project",
        "--store",
        "episodic",
        "--category",
        "event",
        "--source",
        "pipeline",
        "--visibility",
        "shared",
        "--constraint",
        "--confidence",
        "0.75",
        "--valid-from",
        "2026-01-01",
        "--valid-to",
        "2026-12-31T00:00:00Z",
        "--metadata",
        '{"ticket": 42}',
    )
    assert memory["title"] == "Release cadence"
    assert memory["type"] == "project"  # case-insensitive
    assert (memory["store"], memory["category"], memory["source"]) == (
        "episodic",
        "event",
        "pipeline",
    )
    assert memory["visibility"] == "shared"
    assert memory["constraint"] is True
    assert memory["confidence"] == 0.75
    assert memory["valid_from"] == "2026-01-01T00:00:00+00:00"
    assert memory["valid_to"] == "2026-12-31T00:00:00+00:00"
    assert memory["metadata"] == {"ticket": 42}


def test_remember_reads_standard_input(cli: Cli) -> None:
    memory = cli.json("remember", "-", "--tags", "stdin", stdin="  piped text about kafka  \n")
    assert memory["content"] == "piped text about kafka"
    assert cli.json("get", memory["id"])["content"] == "piped text about kafka"


def test_recall_prints_hits(cli: Cli) -> None:
    sqlite_memory = cli.remember(SQLITE_DECISION, "--category", "decision", "--tags", "storage")
    other = cli.remember("SQLite files are backed up nightly to the NAS.", "--tags", "ops")
    unrelated = cli.remember("Alice prefers green tea.", "--category", "person")

    hits = cli.json("recall", "why sqlite")

    assert isinstance(hits, list)
    assert {h["id"] for h in hits[:2]} == {sqlite_memory["id"], other["id"]}
    for hit in hits:
        assert set(hit) >= HIT_FIELDS, HIT_FIELDS - set(hit)
        assert isinstance(hit["tags"], list)
        assert 0.0 <= hit["score"] <= 1.0
        assert hit["agent_id"] == "default"
        assert "explain" not in hit
        datetime.fromisoformat(hit["created_at"])
    assert hits[0]["score"] > 0
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    # a memory without the word may follow (embedding search), never ahead of one with it
    for hit in hits[2:]:
        assert hit["id"] == unrelated["id"]
        assert hit["score"] < hits[1]["score"]
    by_id = {h["id"]: h for h in hits}
    top = by_id[sqlite_memory["id"]]
    assert (top["content"], top["category"], top["tags"], top["type"], top["store"]) == (
        SQLITE_DECISION,
        "decision",
        ["storage"],
        "unknown",
        "semantic",
    )
    assert (top["title"], top["source"]) == (None, "manual")


def test_recall_limit_and_explain(cli: Cli) -> None:
    for i in range(3):
        cli.remember(f"kafka note number {i}")
    hits = cli.json("recall", "kafka", "--limit", "2", "--explain")
    assert len(hits) == 2
    for hit in hits:
        assert hit["explain"]["ranks"]
        assert isinstance(hit["explain"]["scores"], dict)
    assert len(cli.json("recall", "kafka", "--limit", "1")) == 1


def test_recall_on_an_empty_palace_is_an_empty_list(cli: Cli) -> None:
    assert cli.json("recall", "anything at all") == []
    assert cli.run("--plain", "recall", "anything").stdout == "(nothing)\n"


@pytest.mark.parametrize(
    "variant",
    [
        SQLITE_DECISION,
        SQLITE_DECISION.upper(),
        "  " + SQLITE_DECISION.replace(" ", " \n\t ") + "  ",
    ],
    ids=["identical", "case", "whitespace"],
)
def test_same_text_twice_returns_same_id_and_higher_strength(cli: Cli, variant: str) -> None:
    first = cli.remember(SQLITE_DECISION, "--category", "decision")
    second = cli.remember(variant, "--category", "decision")
    assert second["id"] == first["id"]
    assert second["content"] == SQLITE_DECISION  # the first text is kept
    assert second["strength"] > first["strength"]
    assert second["strength"] == pytest.approx(0.6)
    assert row_count(cli.db) == 1


# -- invalid input: exit 2, options named, nothing written ----------------------------

INVALID = [
    pytest.param(["remember", "x", "--type", "persn"], MEMORY_TYPES, {}, id="type"),
    pytest.param(["remember", "x", "--store", "longterm"], STORES, {}, id="store"),
    pytest.param(["remember", "x", "--category", "opinion"], CATEGORIES, {}, id="category"),
    pytest.param(["remember", "x", "--visibility", "public"], VISIBILITIES, {}, id="visibility"),
    pytest.param(["remember", "x", "--source", "robot"], SOURCES, {}, id="source"),
    pytest.param(["recall", "sqlite", "--limit", "0"], ["1", "100"], {}, id="limit-0"),
    pytest.param(["recall", "sqlite", "--limit", "101"], ["1", "100"], {}, id="limit-101"),
    pytest.param(["recall", "sqlite", "--type", "persn"], MEMORY_TYPES, {}, id="recall-type"),
    pytest.param(["recall", "sqlite", "--category", "x"], CATEGORIES, {}, id="recall-category"),
    pytest.param(["list", "--store", "longterm"], STORES, {}, id="list-store"),
    pytest.param(["list", "--limit", "0"], ["1", "10000"], {}, id="list-limit"),
    pytest.param(["remember", ""], ["empty"], {}, id="empty"),
    pytest.param(["remember", " \n\t "], ["empty"], {}, id="blank"),
    pytest.param(
        ["remember", "y" * 101], ["101", "100"], {"MINDPALACE_MAX_CONTENT": "100"}, id="oversize"
    ),
    pytest.param(["remember", "x", "--visibility", "group"], ["group"], {}, id="group-missing"),
    pytest.param(["remember", "x", "--group", "ops"], ["group"], {}, id="group-not-group"),
    pytest.param(["remember", "x", "--confidence", "1.5"], ["confidence"], {}, id="confidence"),
    pytest.param(["remember", "x", "--metadata", "{bad"], ["metadata"], {}, id="metadata-json"),
    pytest.param(["remember", "x", "--metadata", "[1]"], ["metadata"], {}, id="metadata-list"),
    pytest.param(
        ["remember", "x", "--valid-from", "2026-02-01", "--valid-to", "2026-01-01"],
        ["--valid-to is before --valid-from"],
        {},
        id="valid-range",
    ),
    pytest.param(["remember", "x", "--valid-from", "soon"], ["ISO 8601"], {}, id="valid-from"),
]


@pytest.mark.parametrize(("args", "named", "extra_env"), INVALID)
def test_invalid_input_exits_2_naming_options_and_writes_nothing(
    cli: Cli, args: list[str], named: list[str], extra_env: dict[str, str]
) -> None:
    with Palace(cli.db) as palace:  # seeded in-process: only the call under test is a subprocess
        palace.remember("We chose SQLite because many processes share one file.", tags="storage")
    before_rows = db_snapshot(cli.db)
    assert before_rows[0] == 1
    before_bytes = cli.db.read_bytes()

    result = cli.run(*args, env={**cli.env, **extra_env})

    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"mindpalace {args[0]}: error: ")
    assert "Traceback" not in result.stderr
    for name in named:
        assert name in result.stderr, (name, result.stderr)
    assert db_snapshot(cli.db) == before_rows
    assert cli.db.read_bytes() == before_bytes


def test_invalid_type_suggests_the_close_match(cli: Cli) -> None:
    result = cli.run("remember", "x", "--type", "persn")
    assert result.returncode == 2
    assert "did you mean 'person'" in result.stderr


def test_content_at_the_limit_is_accepted(cli: Cli) -> None:
    env = {**cli.env, "MINDPALACE_MAX_CONTENT": "100"}
    result = cli.run("remember", "z" * 100, env=env)
    assert ok_json(result)["content"] == "z" * 100


@pytest.mark.parametrize("args", [["recall", "x", "--limit", "ten"], ["remember"]])
def test_argparse_errors_exit_2(cli: Cli, args: list[str]) -> None:
    result = cli.run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: mindpalace" in result.stderr


# -- get / forget / list / stats ------------------------------------------------------


def test_get_prints_the_memory(cli: Cli) -> None:
    memory = cli.remember(SQLITE_DECISION, "--tags", "storage")
    got = cli.json("get", memory["id"])
    entities = got.pop("entities")
    assert got == memory
    assert isinstance(entities, list)


@pytest.mark.parametrize("command", [["get"], ["forget"], ["forget", "--hard"]])
def test_unknown_id_exits_1(cli: Cli, command: list[str]) -> None:
    cli.remember("something")
    result = cli.run(*command, "mem_00000000000000000000000000")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no memory" in result.stderr
    assert row_count(cli.db) == 1


def test_soft_forget_archives_and_hides(cli: Cli) -> None:
    gone = cli.remember("SQLite was chosen over Postgres for the embedded store.")
    kept = cli.remember("SQLite backups run nightly.")

    assert cli.json("forget", gone["id"]) == {"forgotten": gone["id"], "hard": False}

    archived = cli.json("get", gone["id"])
    assert archived["archived"] is True
    assert archived["content"] == gone["content"]
    assert row_count(cli.db, "id = ? AND archived = 1", (gone["id"],)) == 1

    assert [h["id"] for h in cli.json("recall", "sqlite")] == [kept["id"]]
    assert {h["id"] for h in cli.json("recall", "sqlite", "--include-archived")} == {
        gone["id"],
        kept["id"],
    }
    assert [m["id"] for m in cli.json("list")] == [kept["id"]]
    assert {m["id"] for m in cli.json("list", "--include-archived")} == {gone["id"], kept["id"]}


def test_hard_forget_deletes(cli: Cli) -> None:
    gone = cli.remember("Zeppelin notes to delete", "--tags", "a,b")
    kept = cli.remember("Zeppelin notes to keep")

    assert cli.json("forget", gone["id"], "--hard") == {"forgotten": gone["id"], "hard": True}

    result = cli.run("get", gone["id"])
    assert result.returncode == 1
    assert "no memory" in result.stderr
    assert [h["id"] for h in cli.json("recall", "zeppelin", "--include-archived")] == [kept["id"]]
    con = sqlite3.connect(cli.db)
    try:
        assert con.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1
        assert con.execute("SELECT COUNT(*) FROM memory_tags").fetchone()[0] == 0
        matches = con.execute(KEYWORD_ROWS, ["zeppelin"]).fetchone()[0]
        assert matches == 1
    finally:
        con.close()


def test_forget_of_another_agents_memory_is_refused(cli: Cli) -> None:
    memory = cli.remember("shared knowledge about deploys", "--visibility", "shared")
    result = cli.run("--agent", "intruder", "forget", memory["id"], "--hard")
    assert result.returncode == 1
    assert "belongs to agent 'default'" in result.stderr
    assert cli.json("get", memory["id"])["archived"] is False


def test_a_peer_forgets_only_its_own_channels_memories(cli: Cli) -> None:
    shared = cli.remember("the studio opens at nine for every client", "--visibility", "shared")
    peer = ("--channel", "peer-coach:1", "--peer")
    mine = cli.json(*peer, "remember", "client one prefers mornings")
    assert mine["channel"] == "peer-coach:1"
    for hard in ([], ["--hard"]):
        refused = cli.run(*peer, "forget", shared["id"], *hard)
        assert refused.returncode == 1
        assert f"may not forget memory {shared['id']!r}" in refused.stderr
        assert "peer-facing" in refused.stderr and "only it may" not in refused.stderr
    assert cli.json("get", shared["id"])["archived"] is False
    assert shared["id"] in {h["id"] for h in cli.json("recall", "studio opens")}
    assert cli.json(*peer, "forget", mine["id"]) == {"forgotten": mine["id"], "hard": False}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([], [3, 2, 1, 0]),
        (["--category", "decision"], [0]),
        (["--category", "decision,lesson"], [3, 0]),
        (["--tags", "storage"], [3, 0]),
        (["--tags", "team,deploy"], [2, 1]),
        (["--tags", "nosuchtag"], []),
        (["--type", "person"], [1]),
        (["--type", "unknown"], [3, 0]),
        (["--type", "tool", "--category", "rule"], [2]),
        (["--type", "tool", "--category", "lesson"], []),
        (["--store", "procedural"], [2]),
        (["--limit", "2"], [3, 2]),
        (["--limit", "2", "--offset", "2"], [1, 0]),
    ],
    ids=lambda v: " ".join(map(str, v)) or "none",
)
def test_list_filters(
    seeded: tuple[Cli, list[dict[str, Any]]], filters: list[str], expected: list[int]
) -> None:
    cli, memories = seeded
    listed = cli.json("list", *filters)
    assert [m["id"] for m in listed] == [memories[i]["id"] for i in expected]


@pytest.mark.parametrize(
    ("filters", "field", "allowed", "expected"),
    [
        (["--category", "lesson"], "category", {"lesson"}, [3]),
        (["--category", "lesson,decision"], "category", {"lesson", "decision"}, [0, 3]),
        (["--tags", "architecture"], "tags", {"architecture"}, [0]),
        (["--type", "person"], "type", {"person"}, []),  # no person memory has the words
        (["--store", "procedural"], "store", {"procedural"}, [2]),
    ],
)
def test_recall_filters(
    seeded: tuple[Cli, list[dict[str, Any]]],
    filters: list[str],
    field: str,
    allowed: set[str],
    expected: list[int],
) -> None:
    cli, memories = seeded
    hits = cli.json("recall", "storage release sqlite", *filters)
    for hit in hits:
        values = set(hit[field]) if field == "tags" else {hit[field]}
        assert values & allowed, (hit[field], allowed)
    # the memories that contain the words come first
    assert {h["id"] for h in hits[: len(expected)]} == {memories[i]["id"] for i in expected}
    unfiltered = {h["id"] for h in cli.json("recall", "storage release sqlite")}
    assert {memories[i]["id"] for i in expected} <= unfiltered


def test_stats_counts(cli: Cli) -> None:
    for content, options in SEED:
        cli.remember(content, *options)
    stats = cli.json("stats")
    assert stats == {
        "memories": 4,
        "archived": 0,
        "superseded": 0,
        "by_type": {"person": 1, "tool": 1, "unknown": 2},
        "by_store": {"procedural": 1, "semantic": 3},
        "by_category": {"decision": 1, "lesson": 1, "person": 1, "rule": 1},
        "by_agent": {"default": 4},
        "schema_version": latest_version(),
        "path": str(cli.db),
        "retention": [],  # the retention rules reaching these memories (tests/test_retention.py)
    }

    lesson = cli.json("list", "--category", "lesson")[0]
    cli.json("forget", lesson["id"])
    after = cli.json("stats")
    assert after["archived"] == 1
    assert after["by_category"] == {"decision": 1, "person": 1, "rule": 1}
    assert after["by_type"] == {"person": 1, "tool": 1, "unknown": 1}


def test_stats_see_only_this_agent_and_shared(cli: Cli) -> None:
    cli.remember("mine")
    cli.json("--agent", "other", "remember", "theirs")
    cli.json("--agent", "other", "remember", "for everyone", "--visibility", "shared")
    assert cli.json("stats")["by_agent"] == {"default": 1, "other": 1}
    assert cli.json("--agent", "other", "stats")["memories"] == 2
    assert cli.json("stats", "--agent", "third")["memories"] == 1


# -- where the palace lives -----------------------------------------------------------


@pytest.mark.parametrize("position", ["before", "after"])
def test_db_option_before_or_after_the_command(
    tmp_path: Path, default_db: Path, position: str
) -> None:
    db = tmp_path / "chosen.db"
    ignored = tmp_path / "from-env.db"
    env = clean_env(tmp_path / "home", MINDPALACE_DB=str(ignored))
    args = ["remember", "placement test"]
    args = ["--db", str(db), *args] if position == "before" else [*args, "--db", str(db)]

    memory = ok_json(run_cli(env, *args))

    assert row_count(db, "id = ?", (memory["id"],)) == 1
    assert not ignored.exists()  # --db wins over MINDPALACE_DB
    assert not default_db.exists()
    stats = ok_json(run_cli(env, "stats", "--db", str(db)))
    assert stats["path"] == str(db)
    assert stats["memories"] == 1


def test_db_after_the_command_overrides_db_before_it(tmp_path: Path) -> None:
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    env = clean_env(tmp_path / "home")
    ok_json(run_cli(env, "--db", str(first), "remember", "which file?", "--db", str(second)))
    assert row_count(second) == 1
    assert not first.exists() or row_count(first) == 0


def test_sqlite_url_is_accepted(tmp_path: Path) -> None:
    db = tmp_path / "url.db"
    env = clean_env(tmp_path / "home")
    ok_json(run_cli(env, "--db", f"sqlite:///{db}", "remember", "via url"))
    assert row_count(db) == 1


def test_unknown_url_scheme_exits_2(tmp_path: Path) -> None:
    """A setting the caller can fix exits 2, naming the valid choices."""
    env = clean_env(tmp_path / "home")
    result = run_cli(env, "--db", "mysql://host/db", "stats")
    assert result.returncode == 2
    assert "mysql" in result.stderr and "valid options" in result.stderr


def test_mindpalace_db_env_is_used_without_db_option(tmp_path: Path, default_db: Path) -> None:
    db = tmp_path / "nested" / "env.db"
    env = clean_env(tmp_path / "home", MINDPALACE_DB=str(db))
    memory = ok_json(run_cli(env, "remember", "env var palace"))
    assert row_count(db, "id = ?", (memory["id"],)) == 1
    assert ok_json(run_cli(env, "stats"))["path"] == str(db)
    assert not default_db.exists()


def test_default_path_under_home_is_created_on_first_use(tmp_path: Path, default_db: Path) -> None:
    env = clean_env(tmp_path / "home")
    assert not default_db.parent.exists()
    memory = ok_json(run_cli(env, "remember", "default palace"))
    assert default_db.is_file()
    assert row_count(default_db, "id = ?", (memory["id"],)) == 1
    assert ok_json(run_cli(env, "stats"))["path"] == str(default_db)


def test_xdg_data_home_moves_the_default_path(tmp_path: Path, default_db: Path) -> None:
    xdg = tmp_path / "xdg"
    env = clean_env(tmp_path / "home", XDG_DATA_HOME=str(xdg))
    ok_json(run_cli(env, "remember", "xdg palace"))
    assert row_count(xdg / "mindpalace" / "memories.db") == 1
    assert not default_db.exists()


@pytest.mark.parametrize("position", ["before", "after"])
def test_agent_option_before_or_after_the_command(cli: Cli, position: str) -> None:
    args = ["remember", "agent placement"]
    args = ["--agent", "bot-7", *args] if position == "before" else [*args, "--agent", "bot-7"]
    assert cli.json(*args)["agent_id"] == "bot-7"


# -- plain output ---------------------------------------------------------------------


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (
            ["--plain", "recall", "sqlite"],
            [
                r"^1\. relevance [01]\.\d\d · confidence 1\.00 \(high\)  mem_\w{26}"
                r"  \d{4}-\d\d-\d\d  decision/"
            ],
        ),
        (["recall", "sqlite", "--plain"], [r"#storage #architecture", r"^     We chose SQLite"]),
        (
            ["--plain", "list"],
            [r"^id +created +category/type", r"^mem_\w{26}  \d{4}-\d\d-\d\d  lesson/"],
        ),
        (
            ["--plain", "stats"],
            [r"^memories: 4$", r"^archived: 0$", r"^by agent:$", r"^    default +4$"],
        ),
        (["--plain", "list", "--tags", "nosuchtag"], [r"^\(nothing\)$"]),
    ],
)
def test_plain_output_is_human_text(
    seeded: tuple[Cli, list[dict[str, Any]]], args: list[str], expect: list[str]
) -> None:
    cli, _ = seeded
    result = cli.run(*args)
    assert result.returncode == 0, result.stderr
    assert not _is_json(result.stdout)
    for pattern in expect:
        assert re.search(pattern, result.stdout, re.MULTILINE), (pattern, result.stdout)


def test_plain_remember_and_get(cli: Cli) -> None:
    result = cli.run("--plain", "remember", "Plain text please", "--title", "Format")
    assert result.returncode == 0
    assert not _is_json(result.stdout)
    memory_id = result.stdout.split()[0]
    assert ID_RE.match(memory_id)
    assert "    Format: Plain text please" in result.stdout
    got = cli.run("get", memory_id, "--plain")
    assert got.stdout.startswith(result.stdout)  # and then the entities it mentions
    assert got.stdout.endswith("    mentions: Format (unknown), Plain (unknown)\n")


# -- export / import ------------------------------------------------------------------


def _memory_lines(text: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["format"] == "mindpalace-export"
    return [r for r in records[1:] if "record" not in r]  # memories, not other records


def test_export_to_file_then_import_into_fresh_palace(tmp_path: Path) -> None:
    source = Cli(tmp_path / "home", tmp_path / "source.db")
    memories = [source.remember(content, *options) for content, options in SEED]
    source.json("forget", memories[1]["id"])  # archived memories travel too
    dump = tmp_path / "dump.jsonl"

    assert source.json("export", "-o", str(dump)) == {"exported": 4, "path": str(dump)}

    records = _memory_lines(dump.read_text(encoding="utf-8"))
    assert [r["id"] for r in records] == [m["id"] for m in memories]
    assert all(r["kind"] == "memory" for r in records)

    target = Cli(tmp_path / "home", tmp_path / "target.db")
    assert target.json("import", str(dump)) == _restored(4, 0)
    assert target.json("import", str(dump)) == _restored(0, 4)
    assert db_snapshot(target.db)[0] == 4

    # every field survives the round trip
    for memory in memories:
        restored = target.json("get", memory["id"])
        original = source.json("get", memory["id"])
        # Entities are re-linked on import (new ids, same names).
        names = [[e["norm"] for e in m.pop("entities")] for m in (restored, original)]
        assert restored == original
        assert names[0] == names[1]
    assert target.json("get", memories[1]["id"])["archived"] is True
    assert target.json("stats")["by_category"] == source.json("stats")["by_category"]
    with_storage = {m["id"] for m in memories if "storage" in m["tags"]}
    assert {h["id"] for h in target.json("recall", "storage")[: len(with_storage)]} == with_storage
    reexport = target.run("export")
    assert _memory_lines(reexport.stdout) == records


def test_export_to_stdout_is_json_lines_with_header(
    seeded: tuple[Cli, list[dict[str, Any]]],
) -> None:
    cli, memories = seeded
    result = cli.run("export")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "mindpalace-export"
    assert header["version"] == 3  # memory lines carry their kind; other records follow
    assert header["schema_version"] == latest_version()
    datetime.fromisoformat(header["exported_at"])
    records = _memory_lines(result.stdout)
    assert len(records) == len(memories)
    assert [r["id"] for r in records] == [m["id"] for m in memories]
    assert [r["content"] for r in records] == [content for content, _ in SEED]


def test_import_from_standard_input(
    seeded: tuple[Cli, list[dict[str, Any]]], tmp_path: Path
) -> None:
    cli, memories = seeded
    dump = cli.run("export").stdout
    target = Cli(tmp_path / "home", tmp_path / "piped.db")
    assert target.json("import", "-", stdin=dump) == _restored(len(memories), 0)
    assert {m["id"] for m in target.json("list")} == {m["id"] for m in memories}


def test_import_skips_same_text_under_another_id(
    seeded: tuple[Cli, list[dict[str, Any]]], tmp_path: Path
) -> None:
    cli, _ = seeded
    dump = cli.run("export").stdout
    target = Cli(tmp_path / "home", tmp_path / "target.db")
    target.remember(SQLITE_DECISION)  # same text, different id
    assert target.json("import", "-", stdin=dump) == _restored(3, 1)


@pytest.mark.parametrize(
    ("bad_line", "named"),
    [
        ("this is not json", "line 3"),
        ('{"kind": "memory", "id": "mem_x", "agent_id": "default"}', "created_at"),
        ('{"format": "someone-else"}', "mindpalace-export"),
        ('{"kind": "edge"}', "memory"),
    ],
    ids=["not-json", "missing-field", "format", "kind"],
)
def test_bad_import_exits_2_and_writes_nothing(
    seeded: tuple[Cli, list[dict[str, Any]]], tmp_path: Path, bad_line: str, named: str
) -> None:
    cli, _ = seeded
    lines = cli.run("export").stdout.splitlines()
    lines.insert(2, bad_line)  # after one good record: the whole import must be refused
    dump = tmp_path / "bad.jsonl"
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = Cli(tmp_path / "home", tmp_path / "target.db")
    target.remember("already here")
    before = db_snapshot(target.db)

    result = target.run("import", str(dump))

    assert result.returncode == 2
    assert result.stderr.startswith("mindpalace import: error: ")
    assert named in result.stderr
    assert db_snapshot(target.db) == before


def _restored(inserted: int, skipped: int) -> dict[str, Any]:
    """What ``import`` prints for a palace export."""
    return {
        "format": "export",
        "inserted": inserted,
        "skipped": skipped,
        "split": 0,
        "ignored": 0,
        "sessions": 0,
    }


# -- demo -----------------------------------------------------------------------------


def test_demo_runs_in_a_scratch_palace(tmp_path: Path, default_db: Path) -> None:
    env = clean_env(tmp_path / "home")
    result = run_cli(env, "demo", "--json")
    out = ok_json(result)
    assert out["remembered"] == 4
    assert Path(out["palace"]).is_relative_to(Path(env["TMPDIR"]))
    assert out["kept"] is False and not Path(out["palace"]).exists()  # removed when done
    assert not default_db.exists()  # the demo never touches the user's palace
    assert [r["query"] for r in out["recalls"]] == [
        "why did we choose sqlite",
        "how do I deploy",
        "release checklist storage",
    ]
    for recall in out["recalls"]:
        assert recall["hits"], recall["query"]
        assert set(recall["hits"][0]) >= HIT_FIELDS
    assert "SQLite" in out["recalls"][0]["hits"][0]["content"]
    assert "make release" in out["recalls"][1]["hits"][0]["content"]


def test_demo_with_db_uses_that_file(cli: Cli) -> None:
    out = cli.json("demo", "--json")
    assert out["palace"] == str(cli.db) and out["kept"] is True
    assert row_count(cli.db) == 4
    assert cli.json("demo", "--json")["remembered"] == 4
    assert row_count(cli.db) == 4  # remembered again: strengthened, not duplicated


def test_update_prints_the_new_version(cli: Cli) -> None:
    old = cli.remember("The deploy window is Tuesday", "--tags", "ops")
    new = cli.json("update", old["id"], "--content", "The deploy window is Friday", "--title", "w")
    assert new["updated"] is True and new["previous_id"] == old["id"] and new["id"] != old["id"]
    assert new["content"] == "The deploy window is Friday" and new["tags"] == ["ops"]
    history = cli.json("history", new["id"])
    assert [m["id"] for m in history] == [old["id"], new["id"]]
    same = cli.json("update", new["id"], "--tags", "ops")
    assert same["updated"] is False and same["id"] == new["id"]
    bad = cli.run("update", new["id"], "--store", "longterm")
    assert bad.returncode == 2 and "semantic" in bad.stderr
    missing = cli.run("update", "mem_nope", "--content", "x")
    assert missing.returncode != 0
