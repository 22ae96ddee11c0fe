"""The command line given bytes that are not UTF-8 (in an argument, on
standard input, in an import or ingest file) or JSON nested too deep to
read: exit 2 with a message naming what is wrong and where, no traceback,
nothing written. Real subprocesses on a real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import clean_env, row_count

DEEP = "[" * 50_000 + "]" * 50_000  # fits in one argument (128 KiB)


class Run:
    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "palace.db"
        self.dir = tmp_path
        self.env = clean_env(
            tmp_path / "home", MINDPALACE_EMBEDDER="hashing", MINDPALACE_DAEMON="off"
        )

    def __call__(self, *args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "mindpalace.cli", "--db", str(self.db), *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )
        return subprocess.CompletedProcess(
            done.args,
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
        )

    def file(self, name: str, data: bytes) -> str:
        path = self.dir / name
        path.write_bytes(data)
        return str(path)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    runner = Run(tmp_path)
    assert runner("remember", "a memory that is already there").returncode == 0
    return runner


def refused(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in result.stderr


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            [b"remember", b"caf\xff au lait"],
            ["remember: error: content is not valid Unicode text", "byte 0xFF that is not UTF-8"],
        ),
        ([b"remember", b"ok", b"--tags", b"a,\xfe"], ["tags is not valid Unicode text"]),
        ([b"remember", b"ok", b"--title", b"\xc3"], ["title is not valid Unicode text"]),
        ([b"recall", b"\xff"], ["recall: error: query is not valid Unicode text"]),
        ([b"personal-search", b"\xff"], ["query is not valid Unicode text"]),
        ([b"entities", b"\xff"], ["query is not valid Unicode text"]),
        ([b"search-messages", b"\xff"], ["phrase is not valid Unicode text"]),
        ([b"what-do-i-know", b"\xff"], ["topic is not valid Unicode text"]),
        ([b"get", b"mem_\xff"], ["id is not valid Unicode text"]),
        ([b"--agent", b"\xff", b"stats"], ["agent_id is not valid Unicode text"]),
    ],
    ids=[
        "remember",
        "tags",
        "title",
        "recall",
        "personal-search",
        "entities",
        "search-messages",
        "what-do-i-know",
        "get",
        "agent",
    ],
)
def test_an_argument_that_is_not_utf8(run: Run, args: list[bytes], fragments: list[str]) -> None:
    refused(run(*args), *fragments)
    assert row_count(run.db) == 1


def test_standard_input_that_is_not_utf8(run: Run) -> None:
    result = run("remember", "-", stdin=b"first line\nsecond \xff line\n")
    refused(result, "standard input line 2 is not UTF-8 text: byte 0xFF at column 8")
    assert row_count(run.db) == 1


def test_standard_input_is_read_as_text(run: Run) -> None:
    result = run("remember", "-", stdin="\ufeffcafé\r\nau lait\r\n".encode())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["content"] == "café\nau lait"


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_an_import_that_is_not_utf8(run: Run, via: str) -> None:
    header = json.dumps({"format": "mindpalace-export", "version": 2}).encode()
    data = header + b'\n{"content": "caf\xe9"}\n'
    if via == "file":
        path = run.file("backup.jsonl", data)
        result = run("--all-agents", "import", path)
        refused(result, f"{path} line 2 is not UTF-8 text: byte 0xE9 at column 17")
    else:
        result = run("--all-agents", "import", "-", stdin=data)
        refused(result, "standard input line 2 is not UTF-8 text")
    assert row_count(run.db) == 1


def test_an_ingest_file_that_is_not_utf8(run: Run) -> None:
    path = run.file("chat.jsonl", b'{"content": "hello"}\n{"content": "caf\xe9"}\n')
    refused(
        run("ingest", path),
        "chat.jsonl line 2 is not UTF-8 text: byte 0xE9 at column 17",
        "no turn was stored",
    )
    assert row_count(run.db) == 1


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        (DEEP, "--metadata is not JSON we read: it is nested too deeply"),
        ('{"a":' * 40 + "1" + "}" * 40, "metadata is nested more than 32 deep"),
        ('{"n": ' + "9" * 5000 + "}", "--metadata is not JSON we read: Exceeds the limit"),
        ('{"a": "\\ud800"}', "metadata is not valid Unicode text"),
    ],
    ids=["too deep to parse", "too deep to keep", "huge integer", "surrogate"],
)
def test_hostile_metadata(run: Run, metadata: str, fragment: str) -> None:
    refused(run("remember", "ok", "--metadata", metadata), fragment)
    assert row_count(run.db) == 1


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (DEEP, "line 2 is not JSON we read: it is nested too deeply"),
        ('{"content": ' + "7" * 5000 + "}", "line 2 is not JSON we read: Exceeds the limit"),
        ('{"content": "x", "extra": ' + '{"a":' * 40 + "1" + "}" * 40 + "}", "32 deep"),
    ],
    ids=["deep", "huge integer", "deep extra field"],
)
def test_hostile_jsonl_ingest(run: Run, line: str, fragment: str) -> None:
    path = run.file("chat.jsonl", b'{"content": "hello"}\n' + line.encode() + b"\n")
    refused(run("ingest", path), fragment)
    assert row_count(run.db) == 1


def test_hostile_json_import(run: Run) -> None:
    header = json.dumps({"format": "mindpalace-export", "version": 2})
    path = run.file("backup.jsonl", f"{header}\n{DEEP}\n".encode())
    refused(run("--all-agents", "import", path), "line 2 is not JSON we read: it is nested too")
    assert row_count(run.db) == 1


def test_an_openai_file_too_deep_to_read(run: Run) -> None:
    path = run.file("chat.json", ('{"messages": ' + DEEP + "}").encode())
    refused(run("ingest", path, "--format", "openai"), "chat.json is not JSON we read")
    assert row_count(run.db) == 1
