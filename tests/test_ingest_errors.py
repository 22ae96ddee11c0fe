"""A bad turn in a conversation ingest: the error names the turn by its
place and its file line and says how many turns were stored (the batches
before it); ``atomic`` (``mindpalace ingest --atomic``) stores none."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import Palace, ValidationError
from mindpalace.conversations import Message
from mindpalace.formats import read_messages
from test_cli import clean_env, row_count

BATCH = 256


def _transcript(path: Path, good: int, bad_at: int | None) -> Path:
    """``good`` valid turns, one a line, with a turn holding NUL (refused on
    every backend) inserted before turn ``bad_at`` (0-based)."""
    lines = [json.dumps({"content": f"turn number {i}", "speaker": "Ann"}) for i in range(good)]
    if bad_at is not None:
        lines.insert(bad_at, json.dumps({"content": "a \x00 in the middle"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_error_names_the_file_line_and_what_was_stored(palace: Palace, tmp_path: Path) -> None:
    chat = _transcript(tmp_path / "chat.jsonl", good=300, bad_at=280)
    with pytest.raises(ValidationError) as caught:
        palace.add_messages(read_messages(chat), batch=BATCH)
    assert str(caught.value) == (
        "turn 281 of 301 (chat.jsonl line 281): content must not contain NUL (\\x00);"
        f" {BATCH} turns before it were stored (its batch and later ones were not)"
    )
    assert palace.stats().memories == BATCH


def test_a_bad_turn_in_the_first_batch_stores_nothing(palace: Palace, tmp_path: Path) -> None:
    chat = _transcript(tmp_path / "chat.jsonl", good=10, bad_at=3)
    with pytest.raises(ValidationError, match=r"turn 4 of 11 \(chat.jsonl line 4\).*; no turn"):
        palace.add_messages(read_messages(chat))
    assert palace.stats().memories == 0


def test_a_bad_session_is_named_by_its_turn(palace: Palace) -> None:
    turns = [Message("hello"), Message("again", session="s" * 500, origin="chat.jsonl line 9")]
    with pytest.raises(ValidationError, match=r"turn 2 of 2 \(chat.jsonl line 9\): session"):
        palace.add_messages(turns, atomic=True)
    assert palace.stats().memories == 0


def test_atomic_stores_nothing_when_any_turn_is_bad(palace: Palace, tmp_path: Path) -> None:
    chat = _transcript(tmp_path / "chat.jsonl", good=300, bad_at=280)
    with pytest.raises(ValidationError) as caught:
        palace.add_messages(read_messages(chat), batch=BATCH, atomic=True)
    assert str(caught.value).startswith("turn 281 of 301 (chat.jsonl line 281): content")
    assert str(caught.value).endswith("; no turn was stored")
    assert palace.stats().memories == 0


def test_atomic_stores_what_batches_store(
    make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    chat = read_messages(_transcript(tmp_path / "chat.jsonl", good=40, bad_at=None))
    progress: list[tuple[int, int]] = []
    whole = make_palace("whole")
    batched = make_palace("batched")
    atomic = whole.add_messages(chat, batch=16, atomic=True, progress=lambda *p: progress.append(p))
    plain = batched.add_messages(chat, batch=16)
    # (titles differ: they are the time of writing, and the test clock ticks)
    shape = [(m.content, m.context, m.session, m.metadata) for m in atomic]
    assert shape == [(m.content, m.context, m.session, m.metadata) for m in plain]
    assert progress == [(16, 40), (32, 40), (40, 40)]
    again = whole.add_messages(chat, atomic=True)  # nothing new
    assert [m.id for m in again] == [m.id for m in atomic]
    assert whole.stats().memories == 40
    hits = whole.recall("turn number 7", limit=1)
    assert hits.mode == batched.recall("turn number 7", limit=1).mode  # embedded alike


def _ingest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(tmp_path / "home", MINDPALACE_EMBEDDER="hashing", MINDPALACE_DAEMON="off")
    return subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", "--db", str(tmp_path / "p.db"), "ingest", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_ingest_names_the_line_and_the_count(tmp_path: Path) -> None:
    chat = _transcript(tmp_path / "chat.jsonl", good=300, bad_at=280)
    result = _ingest(tmp_path, str(chat))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "mindpalace ingest: error: turn 281 of 301 (chat.jsonl line 281): content must not"
        f" contain NUL (\\x00); {BATCH} turns before it were stored (its batch and later ones"
        " were not)"
    )
    assert row_count(tmp_path / "p.db") == BATCH


def test_cli_ingest_atomic(tmp_path: Path) -> None:
    chat = _transcript(tmp_path / "chat.jsonl", good=300, bad_at=280)
    result = _ingest(tmp_path, str(chat), "--atomic")
    assert result.returncode == 2
    assert "chat.jsonl line 281" in result.stderr and "no turn was stored" in result.stderr
    assert row_count(tmp_path / "p.db") == 0
    good = _transcript(tmp_path / "good.jsonl", good=300, bad_at=None)
    result = _ingest(tmp_path, str(good), "--atomic")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ingested"] == 300
    assert row_count(tmp_path / "p.db") == 300
