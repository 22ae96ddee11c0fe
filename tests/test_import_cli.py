"""The command line around data in and out, as a real subprocess on real
files: ``import`` and ``ingest`` of every format, the long-turn bar,
progress on standard error, a ``--db`` in a missing folder, ``demo``, and
nothing written under the home directory (onnxruntime's telemetry off)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_cli import Cli, clean_env, ok_json, row_count, run_cli
from tests.test_import_exports import vendor_folder, vendor_zip

DATA = Path(__file__).parent / "data" / "imports"
SKILLS = Path(__file__).parent.parent / "examples" / "skills"
COMMAND = [sys.executable, "-m", "mindpalace.cli"]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home", tmp_path / "palace.db")


def _hashing(cli: Cli) -> Cli:
    """The deterministic embedder: these tests are about files, not the model."""
    cli.env["MINDPALACE_EMBEDDER"] = "hashing"
    return cli


def test_import_detects_each_format(cli: Cli) -> None:
    _hashing(cli)
    chatgpt = cli.json("import", str(DATA / "chatgpt_conversations.json"))
    assert chatgpt == {
        "format": "chatgpt",
        "inserted": 8,
        "skipped": 0,
        "split": 0,
        "ignored": 7,
        "sessions": 2,
    }
    assert cli.json("import", str(DATA / "claude_conversations.json"))["format"] == "claude"
    assert cli.json("import", str(DATA / "mem0_get_all.json"))["inserted"] == 3
    notes = cli.json("import", str(DATA / "notes"), "--sections")
    assert (notes["format"], notes["inserted"], notes["ignored"]) == ("markdown", 6, 1)
    again = cli.json("import", str(DATA / "chatgpt_conversations.json"))
    assert (again["inserted"], again["skipped"]) == (0, 8)
    recent = cli.json("recent", "--n", "2", "--session", "Bike commute route (6f3c0c1e)")
    assert [m["content"] for m in recent] == [
        "user: Is the river path lit at night in winter?",
        "assistant: Only the stretch between the two bridges has lamps; bring a strong front"
        " light.",
    ]


def test_import_of_exports_as_people_have_them(cli: Cli, tmp_path: Path) -> None:
    """The issue's session: the zip ChatGPT's "Export data" mails, then the
    folder it unzips to; each once, then nothing more."""
    _hashing(cli)
    archive = vendor_zip(tmp_path / "chatgpt-export.zip", "chatgpt")
    report = cli.json("import", str(archive))
    assert (report["format"], report["inserted"], report["sessions"]) == ("chatgpt", 8, 2)
    folder = vendor_folder(tmp_path / "chatgpt-export", "chatgpt")
    assert cli.json("import", str(folder))["skipped"] == 8
    claude = cli.json("import", str(vendor_zip(tmp_path / "claude.zip", "claude")))
    assert (claude["format"], claude["inserted"]) == ("claude", 8)
    named = cli.run("import", str(archive), "--format", "mem0")
    assert named.returncode == 2 and "is a zip archive: one is read as a ChatGPT" in named.stderr


def test_import_mem0_for_its_users(cli: Cli) -> None:
    _hashing(cli)
    refused = cli.run("import", str(DATA / "mem0_get_all.json"), "--agent-from", "user_id")
    assert refused.returncode == 1 and "--all-agents" in refused.stderr
    bad = cli.run("import", str(DATA / "mem0_get_all.json"), "--agent-from", "users")
    assert bad.returncode == 2 and "valid options: user_id, agent_id" in bad.stderr
    report = cli.json(
        "--all-agents", "import", str(DATA / "mem0_get_all.json"), "--agent-from", "user_id"
    )
    assert report["inserted"] == 3
    mira = cli.json("--agent", "mira", "list")
    assert len(mira) == 3 and {m["metadata"]["mem0"]["user_id"] for m in mira} == {"mira"}


def test_import_from_standard_input(cli: Cli) -> None:
    _hashing(cli)
    text = (DATA / "claude_conversations.json").read_text(encoding="utf-8")
    assert cli.json("import", "-", stdin=text)["inserted"] == 8
    result = cli.run("import", "-", "--format", "markdown", stdin="# hi\n")
    assert result.returncode == 2 and "read from a folder or a file" in result.stderr


def test_import_of_a_file_in_no_format(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text("name,email\nAna,ana@example.org\n", encoding="utf-8")
    result = cli.run("import", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(
        "mindpalace import: error: --format: people.csv is in none of the formats we read"
    )
    for name in ("export", "jsonl", "openai", "locomo", "chatgpt", "claude", "mem0", "markdown"):
        assert name in result.stderr
    assert not cli.db.exists() or row_count(cli.db) == 0
    other = Cli(cli.home, cli.db.with_name("other.db"))
    bad = other.run("import", str(path), "--format", "csv")
    assert bad.returncode == 2 and "valid options: auto, jsonl, openai" in bad.stderr
    assert not other.db.exists()  # refused before the palace is opened


def test_ingest_reads_chat_exports_and_refuses_memories(cli: Cli) -> None:
    _hashing(cli)
    report = cli.json("ingest", str(DATA / "chatgpt_conversations.json"))
    assert (report["format"], report["ingested"], report["ignored"], report["split"]) == (
        "chatgpt",
        8,
        7,
        0,
    )
    refused = cli.run("ingest", str(DATA / "mem0_get_all.json"))
    assert refused.returncode == 2
    assert "mem0 memories, not a conversation: import it instead" in refused.stderr
    assert "no turn was stored" in refused.stderr


def test_a_transcript_with_a_200000_character_turn_ingests(cli: Cli, tmp_path: Path) -> None:
    _hashing(cli)
    sentence = "The appendix lists every table of the billing schema with its owner. "
    long = "\n\n".join(sentence * 30 for _ in range(200_000 // (len(sentence) * 30) + 1))
    long = long[:200_000].strip()
    rows = [
        {"timestamp": "2026-04-01T10:00:00Z", "speaker": "Ana", "content": "Pasting the doc."},
        {"timestamp": "2026-04-01T10:00:30Z", "speaker": "Ana", "content": long},
        {"timestamp": "2026-04-01T10:02:00Z", "speaker": "Ben", "content": "Thanks!"},
    ]
    path = tmp_path / "billing.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    report = cli.json("ingest", str(path))
    assert report["split"] == 1 and report["ingested"] >= 6
    parts = [m for m in cli.json("recent", "--n", "100") if "part" in m["metadata"]]
    assert len(parts) == report["ingested"] - 2 == parts[0]["metadata"]["parts"]
    assert all(len(m["content"]) <= 50_000 for m in parts)
    assert {m["created_at"] for m in parts} == {"2026-04-01T10:00:30+00:00"}
    ordered = sorted(parts, key=lambda m: m["metadata"]["part"])
    whole = "".join(m["content"].removeprefix("Ana: ") + m["metadata"]["gap"] for m in ordered)
    assert whole == long


# -- progress ------------------------------------------------------------------------


def test_progress_lines_when_asked(cli: Cli, tmp_path: Path) -> None:
    _hashing(cli)
    quiet = cli.run("import", str(DATA / "chatgpt_conversations.json"))
    assert quiet.returncode == 0 and quiet.stderr == ""  # a short job off a terminal: silent
    shown = cli.run("import", str(DATA / "claude_conversations.json"), "--progress")
    assert shown.returncode == 0
    assert shown.stderr.startswith("import: 8 done in ") and shown.stderr.count("\n") == 1
    out = tmp_path / "export.jsonl"
    exported = cli.run("export", "-o", str(out), "--progress")
    assert exported.stderr.startswith("export: 16 done in ")
    skills = cli.run("skills", "import", str(SKILLS), "--progress")
    assert skills.returncode == 0 and skills.stderr.startswith("skills import: ")
    reindexed = cli.run("reindex", "--progress")
    assert reindexed.returncode == 0 and reindexed.stderr.startswith("reindex: ")


def test_a_progress_bar_on_a_terminal(cli: Cli) -> None:
    _hashing(cli)
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [*COMMAND, "--db", str(cli.db), "import", str(DATA / "chatgpt_conversations.json")],
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert result.returncode == 0
    assert json.loads(result.stdout)["inserted"] == 8
    assert b"\rimport [" + b"#" * 30 + b"] 8/8" in shown


# -- where the palace lives ------------------------------------------------------------


@pytest.mark.parametrize("command", [["stats"], ["remember", "a typo'd palace"], ["demo"]])
def test_a_db_in_a_missing_folder_is_an_error(tmp_path: Path, command: list[str]) -> None:
    env = clean_env(tmp_path / "home")
    missing = tmp_path / "typo" / "deeper"
    result = run_cli(env, "--db", str(missing / "x.db"), *command)
    assert result.returncode == 2, result.stderr
    assert f"the folder {missing} does not exist" in result.stderr
    assert not (tmp_path / "typo").exists()


# -- demo -------------------------------------------------------------------------------


def _scratch(env: dict[str, str]) -> list[str]:
    return sorted(os.listdir(env["TMPDIR"]))


def test_demo_prints_a_short_summary_and_cleans_up(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    result = run_cli(env, "demo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert 5 <= len(lines) <= 20
    assert lines[0] == "Remembered 4 memories in a scratch palace, then recalled:"
    assert '  "why did we choose sqlite"' in lines
    assert any("SQLite" in line for line in lines)
    assert "--json" in result.stdout and not result.stdout.lstrip().startswith("{")
    assert _scratch(env) == []  # no temporary folder left behind
    full = ok_json(run_cli(env, "demo", "--json"))
    assert full["kept"] is False and not Path(full["palace"]).exists()
    assert len(full["recalls"]) == 3 and full["recalls"][0]["hits"]
    assert _scratch(env) == []
    # A demo that fails after making its scratch palace removes it too.
    failed = run_cli(env, "demo", "--peer")
    assert failed.returncode == 2 and "channel" in failed.stderr
    assert _scratch(env) == []


# -- nothing under the home directory ------------------------------------------------


def test_commands_leave_the_home_directory_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = clean_env(home)  # the bundled model: onnxruntime loads
    db = tmp_path / "palace.db"
    before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    ok_json(run_cli(env, "--db", str(db), "remember", "The kiln fires on Thursdays."))
    hits = ok_json(run_cli(env, "--db", str(db), "recall", "when does the kiln fire"))
    assert hits and "kiln" in hits[0]["content"]
    after = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    assert after == before  # no ~/.cache/Microsoft/DeveloperTools (device id, event queue)
