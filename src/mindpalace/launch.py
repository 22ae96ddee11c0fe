"""The ``mindpalace`` executable: hands the call to a warm daemon serving
this palace, starting one on first use, else runs the command line in this
process.

A cold process must import numpy and onnxruntime, open the store and load
the model (and, to recall, read every vector) before it answers: 0.7 s on
a fresh palace, about 2 s at 100k memories. A daemon keeps all that warm,
and this module reaches it with nothing but the standard library (``wire``
holds what it shares with the daemon: where it listens, how messages are
framed), so a call through it costs a Python start and one round trip on a
Unix socket. Only when no daemon answers does it import the command line
(``cli``) and run the call cold.

``MINDPALACE_DAEMON`` says what to do (``daemon_mode``): ``auto`` (the
default) uses a running daemon and, when none listens, starts one for a
command a daemon serves and waits for it (up to ``START_WAIT`` seconds,
else the call runs here); it exits after ``MINDPALACE_DAEMON_IDLE`` seconds
without a call (``AUTO_IDLE``). ``on`` uses a running daemon but starts
none (the default under pytest, so no test suite leaves daemons behind
unless it asks), ``off`` never asks one.

The daemon answers only what it would answer exactly as this process would:
the same palace (``--db`` or ``MINDPALACE_DB`` or the per-user default), the
same ``MINDPALACE_*`` settings and the same package version; it declines
everything else (commands that read files or stdin, servers, ``migrate``),
and the call then runs here. The agent (``--agent``, else this process's
``MINDPALACE_AGENT_ID``) goes with every call.

Like ``config``, this module reads environment variables: only to find the
palace and the agent, to fingerprint the settings and for its own two.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mindpalace import __version__  # the package's __init__ imports nothing heavy
from mindpalace.paths import ENV_AGENT
from mindpalace.wire import (
    ANSWER_WAIT,
    ENV_DAEMON,
    ENV_DAEMON_IDLE,
    HANDSHAKE_WAIT,
    PROTOCOL,
    SERVED,
    SERVED_SKILLS,
    fingerprint,
    lock_path,
    palace_target,
    private_dir,
    recv,
    send,
    socket_path,
    spawn_daemon,
    transient,
)

__all__ = [
    "ANSWER_WAIT",
    "AUTO_IDLE",
    "DAEMON_MODES",
    "FAILED_PAUSE",
    "HANDSHAKE_WAIT",
    "PROTOCOL",
    "SERVED",
    "START_WAIT",
    "ask_daemon",
    "auto_idle",
    "daemon_mode",
    "fingerprint",
    "main",
    "palace_target",
    "recv",
    "send",
    "served_here",
    "socket_path",
    "spawn_daemon",
    "start_daemon",
]

DAEMON_MODES = ("auto", "on", "off")
#: Seconds an automatically started daemon waits for a call before it exits.
AUTO_IDLE = 600.0
#: Seconds a call waits for the daemon it started to warm up; past them it
#: runs here (and the daemon serves the calls after it). A warm-up reads
#: what a cold call reads (at 1M memories, 15 s), so waiting costs the
#: first call little; the bound is for a daemon that never comes up.
START_WAIT = 30.0
_POLL = 0.02
#: Seconds after a daemon failed to start in which no call starts another
#: (each would pay for the failed start before running cold).
FAILED_PAUSE = 60.0
# Global options that take a value (``arguments._common``).
_VALUED = frozenset({"--db", "--agent", "--groups", "--channel"})
_HELP = frozenset({"-h", "--help", "--version"})


def _db_option(argv: Sequence[str]) -> str | None:
    """The last ``--db`` value in ``argv`` (argparse's rule), if any. A
    wrong guess costs nothing: the daemon parses for itself and declines."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--db" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--db="):
            found = arg[len("--db=") :]
    return found


def daemon_mode(env: Mapping[str, str]) -> str:
    """``MINDPALACE_DAEMON``: auto (the default: use a running daemon, start
    one when none listens), on (use a running one, start none: the default
    when ``PYTEST_CURRENT_TEST`` says pytest runs this call), or off (never).

    Raises:
        ValueError: another value, with a message naming the valid ones.
    """
    mode = (env.get(ENV_DAEMON) or "").strip().lower()
    if not mode:
        return "on" if env.get("PYTEST_CURRENT_TEST") else "auto"
    if mode not in DAEMON_MODES:
        raise ValueError(f"invalid {ENV_DAEMON} {mode!r}; valid options: {', '.join(DAEMON_MODES)}")
    return mode


def auto_idle(env: Mapping[str, str]) -> float:
    """``MINDPALACE_DAEMON_IDLE``: seconds without a call before a daemon
    started on first use exits (``AUTO_IDLE``; 0: never).

    Raises:
        ValueError: not a number of seconds, 0 or more.
    """
    raw = (env.get(ENV_DAEMON_IDLE) or "").strip()
    if not raw:
        return AUTO_IDLE
    try:
        idle = float(raw)
    except ValueError:
        idle = -1.0
    if not idle >= 0 or idle == float("inf"):  # also NaN
        raise ValueError(
            f"invalid {ENV_DAEMON_IDLE} {raw!r}; valid options: seconds, 0 (never) or more"
        )
    return idle


def _words(argv: Sequence[str]) -> list[str]:
    """The words of ``argv`` that are not options or global options' values:
    the command and, for ``skills``, its subcommand come first."""
    words: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            words.append(arg)
    return words


def served_here(argv: Sequence[str]) -> bool:
    """Whether a daemon would serve ``argv`` (``daemon.served`` decides;
    this is its guess from the words alone, to start no daemon for a
    command it would decline)."""
    if _HELP.intersection(argv):
        return False
    words = _words(argv)
    if not words or words[0] not in SERVED:
        return False
    if words[0] == "skills":
        return len(words) > 1 and words[1] in SERVED_SKILLS
    return not (words[0] == "remember" and "-" in words[1:])


def ask_daemon(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> dict[str, Any] | None:
    """The daemon's answer (exit code, stdout, stderr), or None when no
    daemon serves this palace, it declined, or it did not accept the call
    within ``HANDSHAKE_WAIT`` seconds.

    The call is a handshake: request, "accepted", "go", answer. Until this
    side says go the daemon runs nothing, so falling back to running the
    command here is safe; after it, the command may have run there, and a
    daemon that then goes away or falls silent is reported, not retried
    (a write must not happen twice).
    """
    if daemon_mode(env) == "off" or not hasattr(socket, "AF_UNIX"):
        return None
    target = palace_target(_db_option(argv), env, cwd)
    path = socket_path(target, env)
    if transient(target) or not private_dir(os.path.dirname(path)):
        return None
    request = {
        "protocol": PROTOCOL,
        "version": __version__,
        "argv": list(argv),
        "cwd": cwd,
        "target": target,
        "settings": fingerprint(env),
        "agent": env.get(ENV_AGENT) or None,
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(HANDSHAKE_WAIT)
        try:
            conn.connect(path)
            send(conn, request)
            if recv(conn).get("accepted") is not True:  # declined
                return None
            send(conn, {"go": True})
        except (OSError, ValueError, RecursionError):  # no daemon, a stale socket, a stopped one
            return None
        conn.settimeout(ANSWER_WAIT)
        try:
            answer = recv(conn)
        except TimeoutError:
            problem = f"did not answer within {ANSWER_WAIT:.0f} s"
        except (OSError, ValueError, RecursionError) as exc:
            problem = f"went away during the call ({exc})"
        else:
            if answer.get("declined") is not None:  # "go" came too late: nothing ran
                return None
            if isinstance(answer.get("code"), int):
                return answer
            problem = "sent an answer without an exit status"
    return {
        "code": 1,
        "stdout": "",
        "stderr": (
            f"mindpalace: error: the daemon serving {target} {problem}; the command may"
            " have run there. `mindpalace daemon status` shows it, `mindpalace daemon stop`"
            " stops it, and MINDPALACE_DAEMON=off runs commands without it.\n"
        ),
    }


def _reachable(path: str) -> bool:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        return False
    finally:
        conn.close()
    return True


def _try_lock(path: str) -> int | None:
    """A descriptor of the lock file at ``path``, exclusively locked, or
    None when a daemon holds it (one is warming up or serving)."""
    import fcntl  # noqa: PLC0415 - POSIX only, like the daemon

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _failed_lately(marker: str) -> bool:
    try:
        return time.time() - os.stat(marker).st_mtime < FAILED_PAUSE
    except OSError:
        return False


def start_daemon(target: str, env: Mapping[str, str], *, wait: float = START_WAIT) -> bool:
    """Start a daemon for ``target`` unless one is starting already, and
    wait until one listens, at most ``wait`` seconds; whether one does.

    The lock is taken here and handed to the daemon, so two calls at once
    start one daemon; the other waits for it. A daemon that fails to start
    (its log is beside its socket; no call starts another for
    ``FAILED_PAUSE`` seconds) or outlasts the wait leaves the call to this
    process: nothing was sent, so nothing runs twice.
    """
    if transient(target):
        return False
    path = socket_path(target, env)
    base = os.path.splitext(path)[0]
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.dirname(path), 0o700)
        if not private_dir(os.path.dirname(path)) or _failed_lately(base + ".failed"):
            return False
        if "://" not in target and not os.path.isdir(os.path.dirname(target)):
            return False  # the call itself makes the folder, or says what is wrong
        child = None
        fd = _try_lock(lock_path(path))
        if fd is not None:
            try:
                log_fd = os.open(base + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with open(log_fd, "w", encoding="utf-8") as log:
                    child = spawn_daemon(target, auto_idle(env), log, lock_fd=fd, env=env)
            finally:
                os.close(fd)  # the daemon holds the lock now
    except OSError:  # no socket directory, no process to spare: run here
        return False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if _reachable(path):
            return True
        if child is not None and child.poll() is not None:  # it could not start
            with contextlib.suppress(OSError):
                os.close(os.open(base + ".failed", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            return False
        if child is None:
            free = _try_lock(lock_path(path))
            if free is not None:  # the daemon that was starting is gone
                os.close(free)
                return False
        time.sleep(_POLL)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """The ``mindpalace`` command; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    env, cwd = os.environ, os.getcwd()
    try:
        mode = daemon_mode(env)
        if mode == "auto":
            auto_idle(env)  # a bad value is an error before anything runs
        answer = ask_daemon(args, env, cwd)
        if answer is None and mode == "auto" and hasattr(socket, "AF_UNIX") and served_here(args):
            target = palace_target(_db_option(args), env, cwd)
            if not _reachable(socket_path(target, env)) and start_daemon(target, env):
                answer = ask_daemon(args, env, cwd)
    except ValueError as exc:
        print(f"mindpalace: error: {exc}", file=sys.stderr)
        return 2
    if answer is None:
        from mindpalace.cli import main as run_here  # noqa: PLC0415 - only when no daemon answers

        return run_here(args)
    sys.stdout.write(str(answer.get("stdout", "")))
    sys.stderr.write(str(answer.get("stderr", "")))
    sys.stdout.flush()
    return int(answer.get("code", 1))


if __name__ == "__main__":
    sys.exit(main())
