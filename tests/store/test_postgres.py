"""What only the PostgreSQL backend has: its URL handling, its writer
serialisation across processes, and BM25 equal to SQLite's FTS5 bm25()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from mindpalace import Palace
from mindpalace.cli import main
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.errors import BusyError, ConfigError, StorageError
from mindpalace.models import NewMemory, RecallFilters, Scope
from mindpalace.store import open_store
from mindpalace.store.dialect import array_literal
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.validation import content_hash

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
OWNER = Scope(agent_id="owner")

WRITER = """
import sys
from mindpalace import Palace
from mindpalace.embed.hashing import HashingEmbedder

url, count = sys.argv[1], int(sys.argv[2])
with Palace(url, embedder=HashingEmbedder()) as palace:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        print(palace.remember(f"shared pelican fact number {i}", tags=["load"]).id, flush=True)
print("done", flush=True)
"""


def test_postgres_scheme_alias_opens_the_same_backend(postgres_url: str) -> None:
    alias = "postgres://" + postgres_url.removeprefix("postgresql://")
    store = open_store(alias)
    try:
        assert isinstance(store, PostgresStore)
        assert store.schema_version() >= 2
    finally:
        store.close()


def test_unknown_scheme_names_the_valid_options() -> None:
    with pytest.raises(ConfigError, match=r"postgresql://USER@HOST/DB"):
        open_store("mysql://u@h/db")


def test_unreachable_server_is_a_storage_error_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://someone:hunter2@/nodb?host={tmp_path}&connect_timeout=1"
    with pytest.raises(StorageError, match="cannot connect") as exc:
        PostgresStore(url, busy_timeout=0.5)
    assert "hunter2" not in str(exc.value)
    assert "someone:***@" in str(exc.value)


def test_a_held_write_lock_times_out_as_busy(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, busy_timeout=0.3)
    try:
        with psycopg.connect(postgres_url) as other:
            other.execute("SELECT pg_advisory_xact_lock(%s)", (PostgresStore._WRITE_LOCK,))
            with pytest.raises(BusyError, match="stayed locked"):
                store.add(
                    NewMemory(content="x", content_hash=content_hash("x", 32), agent_id="owner"),
                    memory_id="mem_busy",
                    now=NOW,
                    scope=OWNER,
                )
        assert store.get("mem_busy", OWNER) is None
    finally:
        store.close()


def test_four_processes_remembering_the_same_texts_store_each_once(
    postgres_url: str, tmp_path: Path
) -> None:
    processes, texts = 4, 40
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env["HOME"] = str(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, str(texts)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.splitlines()[-1] == "done"
    ids = [out.splitlines()[:-1] for out, _ in outputs]
    assert all(i == ids[0] for i in ids) and len(set(ids[0])) == texts
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT strength FROM memories").fetchall()
        tags = conn.execute("SELECT COUNT(*) FROM memory_tags").fetchone()
        docs = conn.execute("SELECT docs FROM text_stats").fetchone()
    # Every one of the 4 x 40 remembers landed: strength bumped 3 times, none lost.
    expected = 1 - 0.5 * 0.8 ** (processes - 1)
    assert [r[0] for r in rows] == pytest.approx([expected] * texts)
    assert tags == (texts,)
    assert docs == (texts,)


CORPUS = [
    ("Alice prefers green tea in the morning.", "Tea", ["team", "drinks"], None),
    ("Bob drinks black coffee; Alice drinks tea too.", None, ["drinks"], "earlier: green"),
    ("The deploy runs every morning with make release.", "Deploy", ["ops"], None),
    ("Green energy and green tea are different things entirely.", None, [], "tea talk"),
    ("Coffee, tea, coffee again: the morning ritual of the team.", "Ritual", ["team"], None),
]


@pytest.mark.parametrize(
    "terms", [["tea"], ["green", "tea"], ["morning", "coffee"], ["team"], ["earlier"]]
)
def test_bm25_equals_fts5_bm25(tmp_path: Path, postgres_url: str, terms: list[str]) -> None:
    """Same formula, constants, column weights and row lengths: same scores."""
    sqlite = SQLiteStore(tmp_path / "bm25.db")
    postgres = PostgresStore(postgres_url)
    try:
        for store in (sqlite, postgres):
            for n, (content, title, tags, context) in enumerate(CORPUS):
                store.add(
                    NewMemory(
                        content=content,
                        content_hash=content_hash(content, 32),
                        agent_id="owner",
                        title=title,
                        tags=tuple(tags),
                        context=context,
                    ),
                    memory_id=f"mem_{n}",
                    now=NOW,
                    scope=OWNER,
                )
        a = sqlite.search_text(terms, OWNER, RecallFilters(), limit=10)
        b = postgres.search_text(terms, OWNER, RecallFilters(), limit=10)
        assert [m.memory.id for m in a] == [m.memory.id for m in b]
        assert [m.bm25 for m in a] == pytest.approx([m.bm25 for m in b], rel=1e-9)
        assert a  # every query matches something
    finally:
        sqlite.close()
        postgres.close()


def test_palace_opens_by_url(postgres_url: str) -> None:
    with Palace.open(postgres_url, embedder=HashingEmbedder()) as palace:
        memory = palace.remember("Opened by URL", tags=["url"])
        assert palace.recall("opened")[0].memory.id == memory.id
        assert palace.stats().path == postgres_url


def _cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> object:
    assert main(["--db", db, *args]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    return json.loads(out) if out.strip().startswith(("{", "[")) else out


def _shape(value: object) -> object:
    """``value`` without what differs between two palaces: ids, clocks, paths."""
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {
            k: _shape(v)
            for k, v in value.items()
            if k not in {"id", "created_at", "updated_at", "path", "score", "forgotten"}
        }
    return value


def test_cli_behaves_the_same_on_both_backends(
    tmp_path: Path,
    postgres_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    results = []
    for db in (str(tmp_path / "cli.db"), postgres_url):
        seen: list[object] = []
        first = _cli(capsys, db, "remember", "Alice prefers green tea.", "--tags", "team")
        _cli(capsys, db, "remember", "Deploy with make release.", "--category", "rule")
        _cli(capsys, db, "remember", "Green energy is not tea.", "--visibility", "shared")
        assert isinstance(first, dict)
        for args in (
            ["recall", "green tea"],
            ["recall", "deploy", "--category", "rule"],
            ["get", str(first["id"])],
            ["list", "--tags", "team"],
            ["stats"],
            ["forget", str(first["id"])],
            ["list"],
            ["list", "--include-archived"],
        ):
            seen.append(_shape(_cli(capsys, db, *args)))
        export = tmp_path / f"export-{len(results)}.jsonl"
        _cli(capsys, db, "export", "-o", str(export))
        seen.append(len(export.read_text().splitlines()))
        results.append(seen)
    assert results[0] == results[1]
    recall = results[0][0]
    assert isinstance(recall, list) and recall[0]["content"] == "Alice prefers green tea."


def test_mindpalace_db_may_name_a_postgres_url(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINDPALACE_DB", postgres_url)
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    assert main(["remember", "Stored through the environment"]) == 0
    capsys.readouterr()
    with Palace(embedder=HashingEmbedder()) as palace:
        assert palace.store.location == postgres_url
        assert [m.content for m in palace.memories()] == ["Stored through the environment"]


def test_a_chunk_of_keys_reaches_the_server_as_given(postgres_url: str) -> None:
    """A chunk of keys goes as the text of one array: quotes, backslashes,
    braces, commas, spaces, empty strings and the word NULL come back as
    written, integers as numbers."""
    texts = ['plain', 'say "hi"', "back\\slash\\", "{brace},comma", " spaced ", "", "NULL",
             "it's", "ünïcode ✓", "\\\"", "a\nb"]  # fmt: skip
    numbers = [0, -1, 2**62, 7]
    store = open_store(postgres_url)
    try:
        assert isinstance(store, PostgresStore)
        with store._read() as cur:
            for values in (texts, numbers):
                sql, params = store.dialect.marks(values)
                assert len(params) == 1
                got = [row[0] for row in store._exec(cur, sql, params).fetchall()]
                assert got == values
    finally:
        store.close()
    with pytest.raises(TypeError, match="all integers or all strings"):
        array_literal([1, "2"])
