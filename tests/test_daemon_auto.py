"""The daemon started on first use (``MINDPALACE_DAEMON=auto``), as real
processes: the launcher starts it and hands it the call, it stops when idle,
a killed one costs no write, it answers as the cold command line does, and
no other user reaches its socket.

Every test asks for ``auto`` itself: under pytest the default starts none.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.test_daemon import Launcher, _stored, _wait_gone, launcher

from mindpalace import launch
from mindpalace.wire import recv, send

__all__ = ["launcher"]  # the fixture, shared with test_daemon

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the daemon needs Unix sockets")

AUTO = {"MINDPALACE_DAEMON": "auto"}


@pytest.fixture
def backend() -> str:
    """The daemon's own machinery, once, on SQLite (``test_daemon`` runs
    the answers on every backend)."""
    return "sqlite"


def _until(check: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _auto(tool: Launcher, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    tool.started.append(tool.db)  # the fixture stops what this starts
    return tool.run(*args, **AUTO, **extra)


def test_the_first_call_starts_the_daemon_and_is_answered_by_it(launcher: Launcher) -> None:
    first = _auto(launcher, "--agent", "alice", "remember", "The ferry leaves at 7:40")
    assert first.returncode == 0, first.stderr
    status = launcher.json("daemon", "status")
    assert status["running"] and status["requests"] == 1  # the first call went to it
    assert status["idle_s"] == launch.AUTO_IDLE
    second = _auto(launcher, "--agent", "alice", "remember", "The ferry moved to 8:15")
    assert second.returncode == 0, second.stderr
    assert launcher.served() == 2  # forwarded, and no second daemon
    assert launcher.json("daemon", "status")["pid"] == status["pid"]
    # Answers as the cold command line does, for reads and for errors.
    for args in [
        ("--agent", "alice", "recall", "when does the ferry leave"),
        ("--agent", "alice", "--plain", "list"),
        ("--agent", "bob", "recall", "ferry"),
        ("--agent", "alice", "remember", "x", "--category", "gossip"),
    ]:
        launcher.both(*args)


def test_the_idle_daemon_stops(launcher: Launcher) -> None:
    started = _auto(launcher, "stats", MINDPALACE_DAEMON_IDLE="1")
    assert started.returncode == 0, started.stderr
    assert os.path.exists(launcher.socket())
    assert _wait_gone(launcher.socket(), 15)
    bad = launcher.run("stats", **AUTO, MINDPALACE_DAEMON_IDLE="soon")
    assert bad.returncode == 2 and "0 (never) or more" in bad.stderr


def test_a_killed_daemon_loses_no_write(launcher: Launcher) -> None:
    _auto(launcher, "--agent", "alice", "remember", "The audit starts on Monday")
    pid = int(launcher.json("daemon", "status")["pid"])
    os.kill(pid, signal.SIGKILL)
    assert _until(lambda: not _alive(pid))
    assert os.path.exists(launcher.socket())  # stale: nobody listens
    # A running daemon only (``on``): the call runs here.
    here = launcher.run("--agent", "alice", "remember", "The auditors arrive by train")
    assert here.returncode == 0, here.stderr
    assert _stored(launcher.db, "The auditors arrive by train") == 1
    # ``auto``: a new daemon takes the stale socket's place and answers.
    again = _auto(launcher, "--agent", "alice", "remember", "The audit ends on Friday")
    assert again.returncode == 0, again.stderr
    status = launcher.json("daemon", "status")
    assert status["pid"] != pid and status["requests"] == 1
    assert _stored(launcher.db, "The audit ends on Friday") == 1
    listed = launcher.json("--agent", "alice", "list")
    assert len(listed) == 3


def test_a_call_that_waited_long_enough_runs_here(launcher: Launcher) -> None:
    launcher.started.append(launcher.db)
    target = launch.palace_target(launcher.db, launcher.env, os.getcwd())
    assert launch.start_daemon(target, launcher.env, wait=0.0) is False  # the call runs here
    # The daemon it started warms up all the same; the next call waits for it.
    assert launch.start_daemon(target, launcher.env) is True
    assert launcher.json("daemon", "status")["requests"] == 0
    assert _count_daemons(launcher.db) == 1


def test_a_daemon_that_cannot_start_is_not_started_again_at_once(launcher: Launcher) -> None:
    Path(launcher.db).write_bytes(b"not a palace, " * 100)
    log = Path(launcher.socket()).with_suffix(".log")
    first = _auto(launcher, "stats")
    assert first.returncode == 1 and first.stderr  # the cold call's own error
    assert log.read_text(encoding="utf-8")  # the daemon's, in its log
    logged = log.stat().st_mtime_ns
    second = _auto(launcher, "stats")
    assert (second.returncode, second.stderr) == (first.returncode, first.stderr)
    assert log.stat().st_mtime_ns == logged  # no daemon started this time
    assert not os.path.exists(launcher.socket())


def test_calls_at_once_start_one_daemon(launcher: Launcher) -> None:
    launcher.started.append(launcher.db)
    env = dict(launcher.env, **AUTO)
    texts = [f"Parallel note number {i}" for i in range(3)]
    calls = [
        subprocess.Popen(
            [sys.executable, "-m", "mindpalace.launch", "--db", launcher.db, "remember", text],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for text in texts
    ]
    for call in calls:
        _, err = call.communicate(timeout=120)
        assert call.returncode == 0, err
    assert all(_stored(launcher.db, text) == 1 for text in texts)
    status = launcher.json("daemon", "status")
    # One daemon; a call that found it still warming waited for it or ran here.
    assert 1 <= status["requests"] <= 3
    assert _count_daemons(launcher.db) == 1
    # The palace is not on its command line (a URL's password would show there).
    pid = status["pid"]
    assert launcher.db.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_the_agent_of_the_environment_goes_with_each_call(launcher: Launcher) -> None:
    _auto(launcher, "remember", "Alice's locker code is 4471", MINDPALACE_AGENT_ID="alice")
    before = launcher.served()
    bob = launcher.json("recall", "locker code", MINDPALACE_AGENT_ID="bob")
    alice = launcher.json("recall", "locker code", MINDPALACE_AGENT_ID="alice")
    assert launcher.served() == before + 2  # one daemon serves both agents
    assert bob == [] and [m["agent_id"] for m in alice] == ["alice"]
    assert alice == launcher.json("recall", "locker code", cold=True, MINDPALACE_AGENT_ID="alice")


def test_no_daemon_starts_under_pytest_unless_asked(launcher: Launcher) -> None:
    assert os.environ.get("PYTEST_CURRENT_TEST")  # what the launcher sees in tests
    quiet = launcher.run("remember", "Nothing is started for this")
    assert quiet.returncode == 0, quiet.stderr
    assert not os.path.exists(launcher.socket())
    # Outside tests the default is auto.
    launcher.started.append(launcher.db)
    env = {k: v for k, v in launcher.env.items() if k != "PYTEST_CURRENT_TEST"}
    done = subprocess.run(
        [sys.executable, "-m", "mindpalace.launch", "--db", launcher.db, "stats"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert launcher.served() == 1


def test_a_palace_in_memory_gets_no_daemon(launcher: Launcher, tmp_path: Path) -> None:
    env = dict(launcher.env, **AUTO)
    argv = [sys.executable, "-m", "mindpalace.launch", "--db", ":memory:"]
    done = subprocess.run(
        [*argv, "remember", "Gone when the call ends"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ":memory:").exists()  # no file, no daemon keeping it
    assert not os.path.exists(launch.socket_path(":memory:", env))
    refused = subprocess.run(
        [*argv, "daemon", "start"], env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2 and "lasts one call" in refused.stderr


def test_the_socket_is_its_owners_alone(launcher: Launcher) -> None:
    _auto(launcher, "stats")
    path = launcher.socket()
    directory = os.path.dirname(path)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for name in os.listdir(directory):  # the lock and the log too
        assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) & 0o077 == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_reaches_no_daemon(launcher: Launcher) -> None:
    _auto(launcher, "stats")
    path = launcher.socket()
    assert _probe(path) == "answered"  # its owner is answered
    assert _probe(path, as_nobody=True) == "PermissionError"  # the directory stops others
    # Past a directory opened up by mistake, the daemon itself refuses them.
    directory = os.path.dirname(path)
    opened = [os.path.dirname(directory), directory]  # this test's TMPDIR, then ours
    for folder in opened:
        os.chmod(folder, 0o711)  # noqa: S103 - the unsafe case under test
    os.chmod(path, 0o666)  # noqa: S103 - the unsafe case under test
    try:
        assert _probe(path, as_nobody=True) == "no answer"
    finally:
        os.chmod(path, 0o600)
        for folder in opened:
            os.chmod(folder, 0o700)
    assert launcher.served() == 1  # their request ran nothing


def test_what_a_daemon_serves_is_guessed_from_the_words() -> None:
    assert launch.served_here(["--db", "x.db", "--agent", "remember", "remember", "a note"])
    assert launch.served_here(["skills", "activate", "post a video"])
    assert not launch.served_here(["skills", "import", "skills/"])
    assert not launch.served_here(["remember", "-"])
    assert not launch.served_here(["recall", "--help"])
    assert not launch.served_here(["export", "--tags", "recall"])
    assert not launch.served_here([])


# -- helpers ---------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes: it serves nothing.
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def _count_daemons(db: str) -> int:
    """Daemon processes serving ``db`` (its palace is in their environment)."""
    wanted = b"MINDPALACE_DB=" + launch.palace_target(db, {}, os.getcwd()).encode()
    found = 0
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mindpalace.daemon" in argv and wanted in env:
            found += 1
    return found


def _status(path: str) -> str:
    """What a status request on the socket at ``path`` gets."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    try:
        conn.connect(path)
        send(conn, {"control": "status"})
        return "answered" if recv(conn).get("running") is True else "something else"
    except ConnectionError:
        return "no answer"
    except OSError as exc:
        return type(exc).__name__
    finally:
        conn.close()


def _probe(path: str, *, as_nobody: bool = False) -> str:
    """``_status`` from this user, or from a child process that became
    ``nobody`` (whose interpreter under /root it could not start anew)."""
    if not as_nobody:
        return _status(path)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, ask, report, exit at once
        code = 0
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(writer, _status(path).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, encoding="utf-8") as answer:
        said = answer.read()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    return said
