"""Many processes, one SQLite file: nothing lost, nothing doubled, nothing corrupted.

Writers are real OS processes (``python -c``), each opening its own ``Palace``
on a shared file in ``tmp_path``. They start writing together: each opens its
palace, says ``ready``, and waits for ``go`` on standard input.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from tests.keyword_rows import KEYWORD_ROWS

from mindpalace import BusyError, Palace
from mindpalace.config import Settings
from mindpalace.store import words
from mindpalace.store.sqlite import SQLiteStore

WRITER = """
import sys
from mindpalace import Palace

path, worker, count, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with Palace(path) as palace:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        if mode == "distinct":
            text = f"zebrafish report from worker{worker} item{i}"
        else:
            text = f"shared pelican fact number {i}"
        print(palace.remember(text, tags=["load", f"w{worker}"]).id)
print("done", flush=True)
"""

# Remembers until killed; prints each id only after remember() returned (committed).
ENDLESS = """
import sys
from mindpalace import Palace

with Palace(sys.argv[1]) as palace:
    i = 0
    while True:
        memory = palace.remember(
            f"killtest albatross entry{i} " + "padding words for a longer row " * 20,
            tags=["kill", f"bucket{i % 7}"],
            metadata={"i": i},
        )
        print(memory.id, i, flush=True)
        i += 1
"""


def child_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env["HOME"] = str(tmp_path)
    env["MINDPALACE_BUSY_TIMEOUT"] = "60"
    return env


@contextmanager
def watchdog(procs: list[subprocess.Popen[str]], seconds: float = 120) -> Iterator[None]:
    """Kill ``procs`` if the block runs longer than ``seconds`` (a hang fails, never blocks)."""

    def kill_all() -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()

    timer = threading.Timer(seconds, kill_all)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def run_writers(tmp_path: Path, db: Path, processes: int, count: int, mode: str) -> list[str]:
    """Start ``processes`` writers together; return each one's stdout (ids, then done)."""
    env = child_env(tmp_path)
    errors = [tmp_path / f"writer{n}.err" for n in range(processes)]
    with ExitStack() as stack:
        procs = []
        for n in range(processes):
            err = stack.enter_context(errors[n].open("w"))
            proc = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(db), str(n), str(count), mode],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
            stack.enter_context(proc)  # on exit: close its pipes, wait for it
            stack.callback(lambda p=proc: p.poll() is None and p.kill())
            procs.append(proc)
        stack.enter_context(watchdog(procs))
        for proc in procs:  # every palace is open before anyone writes
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        outputs = []
        for proc in procs:
            assert proc.stdout is not None
            outputs.append(proc.stdout.read())
            proc.wait(timeout=120)
    for proc, error in zip(procs, errors, strict=True):
        assert error.read_text() == ""
        assert proc.returncode == 0
    return outputs


def ids_of(output: str) -> list[str]:
    lines = output.splitlines()
    assert lines[-1] == "done"
    return lines[:-1]


def count(db: Path, sql: str, params: tuple[object, ...] = ()) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute(sql, params).fetchone()[0])
    finally:
        con.close()


def integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


def fts_matches(db: Path, query: str) -> int:
    """Rows of the keyword index holding ``query`` (one word), every partition's."""
    return count(db, KEYWORD_ROWS, (words.terms(query)[0],))


# -- many writers ---------------------------------------------------------------------


def test_eight_processes_remember_4000_distinct_memories(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"  # created by the writers themselves, all at once
    processes, per_process = 8, 500

    outputs = run_writers(tmp_path, db, processes, per_process, "distinct")

    ids = [i for out in outputs for i in ids_of(out)]
    assert len(ids) == processes * per_process
    assert len(set(ids)) == len(ids)

    total = processes * per_process
    with Palace(db) as palace:
        stats = palace.stats()
        assert stats.memories == total
        assert stats.by_agent == {"default": total}
        assert len(palace.memories(limit=10_000)) == total
        assert len(palace.recall("zebrafish worker3", limit=100)) == 100
    assert count(db, "SELECT COUNT(*) FROM memories") == total
    assert count(db, "SELECT COUNT(DISTINCT content) FROM memories") == total
    assert count(db, "SELECT COUNT(*) FROM memory_tags WHERE tag = 'load'") == total
    con = sqlite3.connect(db)
    try:
        contents = {row[0] for row in con.execute("SELECT content FROM memories")}
    finally:
        con.close()
    assert contents == {
        f"zebrafish report from worker{w} item{i}"
        for w in range(processes)
        for i in range(per_process)
    }
    # the text index holds exactly the rows, per writer too
    assert fts_matches(db, "zebrafish") == total
    for worker in range(processes):
        assert fts_matches(db, f"worker{worker}") == per_process
    assert fts_matches(db, "item499") == processes
    assert integrity(db) == "ok"
    store = SQLiteStore(db)
    try:
        assert store.integrity_check() == "ok"
    finally:
        store.close()


def test_four_processes_remembering_the_same_texts_store_each_once(tmp_path: Path) -> None:
    db = tmp_path / "dupes.db"
    processes, texts = 4, 100
    Palace(db).close()  # this time the file exists before the race

    outputs = run_writers(tmp_path, db, processes, texts, "same")

    id_lists = [ids_of(out) for out in outputs]
    assert all(ids == id_lists[0] for ids in id_lists)  # everyone got the one memory
    assert len(set(id_lists[0])) == texts
    assert count(db, "SELECT COUNT(*) FROM memories") == texts
    assert count(db, "SELECT COUNT(DISTINCT content_hash) FROM memories") == texts
    assert fts_matches(db, "pelican") == texts
    # every one of the 4 x 100 remembers landed: strength bumped 3 times, none lost
    expected = 1 - 0.5 * 0.8 ** (processes - 1)
    con = sqlite3.connect(db)
    try:
        strengths = [row[0] for row in con.execute("SELECT strength FROM memories")]
        tags = con.execute("SELECT COUNT(*) FROM memory_tags WHERE tag = 'load'").fetchone()[0]
    finally:
        con.close()
    assert strengths == pytest.approx([expected] * texts)
    assert tags == texts  # tags of the first writer only; no orphan tag rows
    with Palace(db) as palace:
        assert palace.stats().memories == texts
    assert integrity(db) == "ok"


# -- a writer killed mid-batch --------------------------------------------------------


@pytest.mark.parametrize("kill_after", [1, 150, 600])
def test_sigkill_mid_batch_loses_nothing_committed(tmp_path: Path, kill_after: int) -> None:
    db = tmp_path / "killed.db"
    errors = tmp_path / "writer.err"
    with (
        errors.open("w") as err_file,
        subprocess.Popen(
            [sys.executable, "-c", ENDLESS, str(db)],
            env=child_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        ) as proc,
        # Guards against a hung writer, not timings: 600 remembers took
        # over 120 s at load average 8-12.
        watchdog([proc], seconds=300),
    ):
        assert proc.stdout is not None
        try:
            reported: list[tuple[str, int]] = []
            deadline = time.monotonic() + 280
            while len(reported) < kill_after:
                line = proc.stdout.readline()
                assert line, f"writer died early: {errors.read_text()}"
                memory_id, index = line.split()
                reported.append((memory_id, int(index)))
                assert time.monotonic() < deadline
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            # read through the same buffered pipe (communicate() would skip what
            # readline() has already buffered)
            rest = proc.stdout.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert errors.read_text() == ""
    # lines already in the pipe were committed too (a torn last line is not)
    for line in rest.splitlines():
        parts = line.split()
        if len(parts) == 2 and len(parts[0]) == 30 and parts[1].isdigit():
            reported.append((parts[0], int(parts[1])))
    assert [index for _, index in reported] == list(range(len(reported)))
    assert Path(f"{db}-wal").exists()  # the killed writer left its log for recovery

    assert integrity(db) == "ok"
    store = SQLiteStore(db)
    try:
        assert store.integrity_check() == "ok"
    finally:
        store.close()

    rows = count(db, "SELECT COUNT(*) FROM memories")
    # at most one commit can have landed without being reported
    assert len(reported) <= rows <= len(reported) + 1
    assert fts_matches(db, "albatross") == rows
    assert count(db, "SELECT COUNT(*) FROM memory_tags WHERE tag = 'kill'") == rows
    with Palace(db) as palace:
        for memory_id, index in reported:
            memory = palace.get(memory_id)
            assert memory.content.startswith(f"killtest albatross entry{index} ")
            assert memory.metadata == {"i": index}
            assert set(memory.tags) == {"kill", f"bucket{index % 7}"}
        # the lock died with the writer: the file takes writes at once
        after = palace.remember("written after the crash")
        assert palace.get(after.id).content == "written after the crash"
        again = palace.remember(
            f"killtest albatross entry0 {'padding words for a longer row ' * 20}"
        )
        assert again.id == reported[0][0]
        assert palace.stats().memories == rows + 1


# Imports through the public Store protocol from a generator that stops for good
# at record argv[3]: the parent kills it while the transaction is open and
# its first records are written (spilled past the page cache into the WAL).
IMPORTER = """
import json, sys, time
from mindpalace import Palace
from mindpalace.validation import memory_from_dict

def records():
    with open(sys.argv[2], encoding="utf-8") as inp:
        for n, line in enumerate(inp):
            data = json.loads(line)
            if "format" in data:
                continue
            data.pop("kind")
            if n == int(sys.argv[3]):
                print("mid-transaction", flush=True)
                time.sleep(120)
            yield memory_from_dict(data, max_chars=50_000)

with Palace(sys.argv[1]) as palace:
    palace.store.import_memories(records(), scope=palace.scope, new_id=lambda: 'mem_unused')
    print("committed", flush=True)
"""

FILLER = " ".join(f"filler{n}" for n in range(500))  # about 4 KB per record


def test_sigkill_inside_an_import_transaction_writes_nothing(tmp_path: Path) -> None:
    total, pause_at = 2500, 2000
    dump = tmp_path / "dump.jsonl"
    with dump.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"format": "mindpalace-export", "version": 1}) + "\n")
        for i in range(total):
            record = {
                "kind": "memory",
                "id": f"mem_import{i:08d}",
                "agent_id": "default",
                "created_at": "2026-01-01T00:00:00+00:00",
                "content": f"imported heron record{i} {FILLER}",
                "tags": ["imp"],
            }
            out.write(json.dumps(record) + "\n")
    db = tmp_path / "target.db"
    with Palace(db) as palace:
        kept = palace.remember("present before the import")

    errors = tmp_path / "importer.err"
    with (
        # opened before the import starts: opening takes the write lock briefly
        Palace(db, settings=Settings(busy_timeout=0.3)) as other,
        errors.open("w") as err_file,
        subprocess.Popen(
            [sys.executable, "-c", IMPORTER, str(db), str(dump), str(pause_at)],
            env=child_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        ) as proc,
        watchdog([proc]),
    ):
        assert proc.stdout is not None
        try:
            assert proc.stdout.readline() == "mid-transaction\n", errors.read_text()
            # the open transaction holds the write lock: nobody else can write,
            # and readers see none of it
            with pytest.raises(BusyError):
                other.remember("blocked by the import")
            assert other.stats().memories == 1
            assert all("heron" not in h.memory.content for h in other.recall("heron"))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == -signal.SIGKILL

    assert integrity(db) == "ok"
    store = SQLiteStore(db)
    try:
        assert store.integrity_check() == "ok"
    finally:
        store.close()
    assert count(db, "SELECT COUNT(*) FROM memories") == 1
    assert fts_matches(db, "heron") == 0
    assert count(db, "SELECT COUNT(*) FROM memory_tags") == 0
    with Palace(db) as palace:
        assert palace.get(kept.id).content == "present before the import"
        report = palace.import_jsonl(dump.read_text(encoding="utf-8").splitlines())
        assert (report.inserted, report.skipped) == (total, 0)
        assert palace.stats().memories == total + 1
    assert fts_matches(db, "heron") == total
    assert integrity(db) == "ok"
