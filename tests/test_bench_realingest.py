"""The comparison of stored contents that ``bench.realingest --same`` runs:
two palaces written alike have one digest, and a changed row shows."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from bench.realingest import digest
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message

TURNS = [
    "Alice Chen owns Project Falcon; Bob Stone maintains Falcon and Redis.",
    "Yesterday Bob met Alice in Berlin about Falcon and Redis.",
    "Falcon depends on Redis. Alice Chen said so last week.",
    "Thanks! #falcon @bob see https://example.com/falcon and `make deploy`.",
]


def _palace(path: Path) -> Path:
    when = datetime(2023, 5, 8, tzinfo=timezone.utc)
    messages = [
        Message(content=t, role="user" if i % 2 else "assistant", session="s1", created_at=when)
        for i, t in enumerate(TURNS * 3)
    ]
    with Palace(path, settings=Settings(embedder="hashing")) as palace:
        palace.add_messages(messages, batch=5)
    return path


def test_same_writes_same_digest_and_a_changed_row_shows(tmp_path: Path) -> None:
    first, second = _palace(tmp_path / "a.db"), _palace(tmp_path / "b.db")
    same = digest(first)
    assert same == digest(second)
    assert int(same["mentions"].split(":")[0]) > 0
    with sqlite3.connect(second) as con:
        con.execute(
            "UPDATE entity_edges SET weight = weight + 1e-12"
            " WHERE (src_seq, dst_seq) = (SELECT src_seq, dst_seq FROM entity_edges LIMIT 1)"
        )
    changed = digest(second)
    assert changed != same
    assert [k for k in same if same[k] != changed[k]] == ["entity_edges"]
