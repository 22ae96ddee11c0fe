"""The warm daemon behind the ``mindpalace`` launcher, as real processes.

Every call goes through ``python -m mindpalace.launch`` (what the installed
``mindpalace`` executable runs), once with the daemon answering and once
with ``MINDPALACE_DAEMON=off`` (the cold command line): the two must print
the same bytes and exit with the same status. ``daemon status`` counts the
calls the daemon answered, so each test also knows who answered.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import clean_env

from mindpalace import __version__, cli, launch
from mindpalace.daemon import Daemon
from mindpalace.launch import (
    HANDSHAKE_WAIT,
    PROTOCOL,
    fingerprint,
    palace_target,
    recv,
    send,
    socket_path,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the daemon needs Unix sockets")

# What depends on the backend (the answers, writes seen across processes)
# runs on both; the daemon's own machinery once, on SQLite.


class Launcher:
    """Runs the launcher against one palace with one environment."""

    def __init__(self, db: str, runtime: Path, home: Path) -> None:
        self.db = db
        self.env = clean_env(home, MINDPALACE_EMBEDDER="static", MINDPALACE_SIGNALS="off")
        self.env.pop("XDG_RUNTIME_DIR", None)
        self.env["TMPDIR"] = str(runtime)  # a short path: sockets have 107 bytes at most
        self.started: list[str] = []

    def run(
        self,
        *args: str,
        db: str | None = None,
        cold: bool = False,
        input_text: str | None = None,
        **extra: str,
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, **extra)
        if cold:
            env["MINDPALACE_DAEMON"] = "off"
        return subprocess.run(
            [sys.executable, "-m", "mindpalace.launch", "--db", db or self.db, *args],
            env=env,
            input=input_text,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def json(self, *args: str, **options: Any) -> Any:
        result = self.run(*args, **options)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def start(self, *options: str) -> dict[str, Any]:
        status: dict[str, Any] = self.json("daemon", "start", *options)
        self.started.append(self.db)
        return status

    def served(self) -> int:
        status = self.json("daemon", "status")
        assert status["running"], status
        return int(status["requests"])

    def socket(self) -> str:
        return socket_path(palace_target(self.db, self.env, os.getcwd()), self.env)

    def both(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``args`` warm and cold; assert the daemon answered and that
        both printed the same; return the warm run."""
        before = self.served()
        warm = self._same(args)
        assert self.served() == before + 1, f"the daemon did not answer {args}"
        return warm

    def each_both(
        self, commands: Sequence[Sequence[str]]
    ) -> list[subprocess.CompletedProcess[str]]:
        """``both`` for each of ``commands``, the daemon's count read once
        before and once after (a call makes one request at most, so the
        count says each was answered; two status calls a command cost more
        than the commands); the warm runs."""
        before = self.served()
        warm = [self._same(args) for args in commands]
        assert self.served() == before + len(commands), "the daemon did not answer every call"
        return warm

    def _same(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        warm = self.run(*args)
        cold = self.run(*args, cold=True)
        assert (warm.returncode, warm.stdout, warm.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        ), args
        return warm


@pytest.fixture
def launcher(store_target: str, tmp_path: Path) -> Iterator[Launcher]:
    runtime = Path(tempfile.mkdtemp(prefix="mpd", dir="/tmp"))
    tool = Launcher(store_target, runtime, tmp_path / "home")
    yield tool
    for db in tool.started:
        tool.run("daemon", "stop", db=db)
    shutil.rmtree(runtime, ignore_errors=True)


def _wait_gone(path: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not os.path.exists(path)


def _seed(tool: Launcher) -> None:
    for content, options in [
        ("We deploy the billing service with blue-green releases on Fridays", ()),
        ("Decision: Postgres stays the primary database for billing", ("--category", "decision")),
        ("Maria owns the billing service and its on-call rota", ()),
        ("The release checklist lives in the ops wiki", ("--tags", "ops,release")),
        ("Private note: the staging password rotates monthly", ("--visibility", "isolated")),
    ]:
        tool.json("remember", content, *options, "--agent", "alice", cold=True)


def test_the_daemon_prints_what_the_cold_command_prints(launcher: Launcher) -> None:
    _seed(launcher)
    status = launcher.start()
    assert status["started"] and status["requests"] == 0
    launcher.each_both(
        [
            ("--agent", "alice", "recall", "how do we deploy billing"),
            ("--agent", "alice", "recall", "database decision", "--mode=decision", "--limit=3"),
            ("--agent", "alice", "--plain", "recall", "who owns billing"),
            ("--agent", "alice", "context", "billing release", "--max-tokens", "512"),
            ("--agent", "alice", "list", "--limit", "10"),
            ("--agent", "alice", "stats"),
            ("--agent", "alice", "entities"),
            ("--agent", "alice", "what-do-i-know", "billing"),
            ("--agent", "bob", "recall", "staging password"),
            ("--agent", "alice", "recall", "staging password"),
        ]
    )


@pytest.mark.parametrize("backend", ["sqlite"])
def test_bad_input_through_the_daemon_is_the_same_error(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    mode, store, missing = launcher.each_both(
        [
            ("--agent", "alice", "recall", "billing", "--mode", "gossip"),
            ("--agent", "alice", "remember", "x", "--store", "attic"),
            ("--agent", "alice", "get", "mem_nonexistent"),
        ]
    )
    assert mode.returncode == 2 and "decision" in mode.stderr  # names the valid modes
    assert store.returncode == 2 and "semantic" in store.stderr
    assert missing.returncode == 1
    # What the parser rejects is printed by the calling process, not the daemon.
    before = launcher.served()
    warm = launcher.run("recall", "billing", "--no-such-option")
    assert warm.returncode == 2 and "--no-such-option" in warm.stderr
    assert launcher.served() == before


def test_scope_holds_through_the_shared_warm_index(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    private = "staging password rotates monthly"
    bob = launcher.json("--agent", "bob", "recall", "staging password")
    assert all(private not in m["content"] for m in bob)
    alice = launcher.json("--agent", "alice", "recall", "staging password")
    assert any(private in m["content"] for m in alice)
    bob_again = launcher.json("--agent", "bob", "list", "--limit", "100")
    assert all(private not in m["content"] for m in bob_again)


def test_writes_through_and_around_the_daemon_are_seen(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    before = launcher.served()
    written = launcher.json("--agent", "carol", "remember", "The ferry to Hydra leaves at 7:40")
    assert launcher.served() == before + 1
    cold = launcher.json("--agent", "carol", "get", written["id"], cold=True)
    assert cold["content"] == "The ferry to Hydra leaves at 7:40"
    # A write by another process appears in the daemon's next answer.
    other = launcher.json(
        "--agent", "carol", "remember", "The Hydra ferry moved to 8:15 in winter", cold=True
    )
    found = launcher.json("--agent", "carol", "recall", "Hydra ferry winter")
    assert other["id"] in [m["id"] for m in found]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_what_the_daemon_does_not_serve_runs_here(launcher: Launcher, tmp_path: Path) -> None:
    _seed(launcher)
    launcher.start()
    before = launcher.served()
    out = tmp_path / "export.jsonl"
    exported = launcher.run("--agent", "alice", "export", "--output", str(out))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    memories = [line for line in lines[1:] if "record" not in line]
    assert len(memories) == 5  # after a header; then the records about them
    piped = launcher.run("--agent", "alice", "remember", "-", input_text="from stdin")
    assert piped.returncode == 0, piped.stderr
    # Other settings, another palace: the daemon declines and the call runs here.
    other = launcher.run("--agent", "alice", "stats", MINDPALACE_SCORER="on")
    assert other.returncode == 0, other.stderr
    elsewhere = launcher.run("--agent", "alice", "stats", db=str(tmp_path / "other.db"))
    assert json.loads(elsewhere.stdout)["memories"] == 0
    assert launcher.served() == before


@pytest.mark.parametrize("backend", ["sqlite"])
def test_lifecycle_start_twice_stop_status(launcher: Launcher) -> None:
    first = launcher.start()
    again = launcher.start()
    assert again["already_running"] and again["pid"] == first["pid"]
    stopped = launcher.json("daemon", "stop")
    assert stopped["stopped"] and stopped["pid"] == first["pid"]
    assert _wait_gone(launcher.socket())
    assert launcher.json("daemon", "status")["running"] is False
    assert launcher.json("daemon", "stop")["running"] is False
    switch = launcher.run("stats", MINDPALACE_DAEMON="sometimes")
    assert switch.returncode == 2 and "valid options: auto, on, off" in switch.stderr
    bad = launcher.run("daemon", "restart")
    assert bad.returncode == 2 and "start, stop, status" in bad.stderr
    negative = launcher.run("daemon", "start", "--idle", "-5")
    assert negative.returncode == 2 and "idle" in negative.stderr


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_relative_db_is_the_same_palace(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    here = Path(launcher.db).parent
    before = launcher.served()
    for option in (["--db", "palace.db"], ["--db=palace.db"]):
        result = subprocess.run(
            [sys.executable, "-m", "mindpalace.launch", *option, "--agent", "alice", "stats"],
            env=launcher.env,
            cwd=here,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["memories"] == 5  # all that _seed wrote is hers
    assert launcher.served() == before + 2


@pytest.mark.parametrize("backend", ["sqlite"])
def test_idle_daemon_exits(launcher: Launcher) -> None:
    launcher.start("--idle", "1")
    assert _wait_gone(launcher.socket(), 20)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_removed_palace_stops_its_daemon(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    for suffix in ("", "-wal", "-shm"):
        Path(launcher.db + suffix).unlink(missing_ok=True)
    assert _wait_gone(launcher.socket(), 20)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_socket_directory_others_can_enter_is_not_used(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    directory = os.path.dirname(launcher.socket())
    os.chmod(directory, 0o755)  # noqa: S103 - the unsafe case under test
    try:
        before = int(launcher.json("daemon", "status")["requests"])  # status is not a call
        launcher.json("--agent", "alice", "stats")
        assert launcher.json("daemon", "status")["requests"] == before
    finally:
        os.chmod(directory, 0o700)
    launcher.run("daemon", "stop")
    assert _wait_gone(launcher.socket())
    os.chmod(directory, 0o755)  # noqa: S103 - the unsafe case under test
    refused = launcher.run("daemon", "start")
    assert refused.returncode == 2 and "mode 700" in refused.stderr


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_daemon_call_changes_the_file_as_a_cold_call_does(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    launcher.json("--agent", "alice", "forget", _first_id(launcher.db))
    con = sqlite3.connect(launcher.db)
    try:
        archived = con.execute("SELECT COUNT(*) FROM memories WHERE archived = 1").fetchone()[0]
    finally:
        con.close()
    assert archived == 1


def _first_id(db: str) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT id FROM memories ORDER BY seq LIMIT 1").fetchone()[0])
    finally:
        con.close()


# -- the handshake: the daemon runs only what the caller told it to go on with ------------


def _request(tool: Launcher, *args: str) -> dict[str, Any]:
    argv = ["--db", tool.db, *args]
    return {
        "protocol": PROTOCOL,
        "version": __version__,
        "argv": argv,
        "cwd": os.getcwd(),
        "target": palace_target(tool.db, tool.env, os.getcwd()),
        "settings": fingerprint(tool.env),
    }


def _stored(db: str, content: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(
            con.execute("SELECT COUNT(*) FROM memories WHERE content = ?", (content,)).fetchone()[0]
        )
    finally:
        con.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_caller_that_never_says_go_runs_nothing(launcher: Launcher) -> None:
    _seed(launcher)
    launcher.start()
    before = launcher.served()
    content = "The quarterly audit starts on the third Monday"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(launcher.socket())
        send(conn, _request(launcher, "--agent", "alice", "remember", content))
        assert recv(conn) == {"accepted": True}
    time.sleep(0.5)  # the daemon waits for "go" and reads the end of the connection
    assert launcher.served() == before
    launcher.json("daemon", "stop")  # waits for any call in flight
    assert _stored(launcher.db, content) == 0


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_stopped_daemon_costs_a_wait_not_a_second_write(launcher: Launcher) -> None:
    _seed(launcher)
    pid = int(launcher.start()["pid"])
    before = launcher.served()
    content = "The pager rota changes hands on Mondays"
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        written = launcher.run("--agent", "alice", "remember", content)
        waited = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert written.returncode == 0, written.stderr  # run here after the handshake wait
    assert waited >= HANDSHAKE_WAIT
    time.sleep(1.0)  # the resumed daemon reaches the abandoned call, and must not run it
    assert launcher.served() == before
    assert _stored(launcher.db, content) == 1
    launcher.both("--agent", "alice", "stats")  # and it serves on


class _ScriptedDaemon:
    """A peer on the daemon's socket that plays one part of the handshake."""

    def __init__(self, path: str, script: str) -> None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        self.script = script
        self.heard: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._play, daemon=True)
        self.thread.start()

    def _play(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            self.heard.append(recv(conn))
            if self.script == "declines":
                send(conn, {"declined": "another palace"})
                return
            if self.script == "silent":
                time.sleep(3)
                return
            send(conn, {"accepted": True})
            self.heard.append(recv(conn))
            if self.script == "declines after go":  # "go" came after its wait
                send(conn, {"declined": "bad request: timed out"})
            elif self.script == "silent after go":
                time.sleep(3)
            # "vanishes": the command may have run, and no answer comes

    def close(self) -> list[dict[str, Any]]:
        self.thread.join(10)
        self.server.close()
        return self.heard


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize(
    "script", ["declines", "silent", "declines after go", "vanishes", "silent after go"]
)
def test_the_launcher_falls_back_only_when_nothing_ran(
    launcher: Launcher, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launch, "HANDSHAKE_WAIT", 0.5)
    monkeypatch.setattr(launch, "ANSWER_WAIT", 0.5)
    argv = ["--db", launcher.db, "--agent", "alice", "remember", "a note"]
    peer = _ScriptedDaemon(launcher.socket(), script)
    try:
        answer = launch.ask_daemon(argv, launcher.env, os.getcwd())
    finally:
        heard = peer.close()
    assert heard[0]["argv"] == argv
    told_to_go = heard[1:] == [{"go": True}]
    assert told_to_go == (script not in {"declines", "silent"})
    if script in {"vanishes", "silent after go"}:  # may have run: reported, never repeated
        assert answer is not None and answer["code"] == 1
        reason = "went away during the call" if script == "vanishes" else "did not answer within"
        assert reason in answer["stderr"]
        assert "MINDPALACE_DAEMON=off" in answer["stderr"]
    else:  # nothing ran there: the command runs here
        assert answer is None


def test_a_fault_in_a_command_is_an_error_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "static")
    daemon = Daemon(str(tmp_path / "palace.db"), idle=0)
    try:
        args = cli.build_parser().parse_args(["--agent", "alice", "stats"])

        class Broken:  # a bug in a command, which the cold command line would not survive
            @staticmethod
            def run(*_: Any) -> tuple[int, str, str]:
                raise RuntimeError("index out of step")

        monkeypatch.setattr(daemon, "_cli", Broken)
        reply = daemon.execute(args)
        assert reply["code"] == 1 and "index out of step" in reply["stderr"]
        assert "RuntimeError" in capsys.readouterr().err  # the daemon's log has the trace
        monkeypatch.undo()
        monkeypatch.setenv("MINDPALACE_EMBEDDER", "static")
        assert daemon.execute(args)["code"] == 0  # and it serves on
        # Once stopping, it starts nothing more: the caller runs the command.
        assert daemon.settle(5.0)
        assert daemon.execute(args) == {"declined": "the daemon is stopping"}
    finally:
        daemon.base.close()
