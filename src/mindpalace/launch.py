"""The ``mindpalace`` executable: hands the call to a warm daemon when one
serves this palace, else runs the command line in this process.

A cold process must import numpy, open the store and read every vector
before it can recall (about 2 s at 100k memories); a daemon started with
``mindpalace daemon start`` keeps all that warm, and this module reaches it
with nothing but the standard library (``wire`` holds what it shares with
the daemon: where it listens, how messages are framed), so a call through
it costs a Python start and one round trip on a Unix socket. Only when no
daemon answers does it import the command line (``cli``) and run the call
cold.

The daemon answers only what it would answer exactly as this process would:
the same palace (``--db`` or ``MINDPALACE_DB`` or the per-user default), the
same ``MINDPALACE_*`` settings and the same package version; it declines
everything else (commands that read files or stdin, servers, ``migrate``),
and the call then runs here. ``MINDPALACE_DAEMON=off`` never asks.

Like ``config``, this module reads environment variables: only to find the
palace, to fingerprint the settings and for ``MINDPALACE_DAEMON``.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mindpalace import __version__  # the package's __init__ imports nothing heavy
from mindpalace.wire import (
    ANSWER_WAIT,
    ENV_DAEMON,
    HANDSHAKE_WAIT,
    PROTOCOL,
    SERVED,
    fingerprint,
    palace_target,
    private_dir,
    recv,
    send,
    socket_path,
    spawn_daemon,
)

__all__ = [
    "ANSWER_WAIT",
    "HANDSHAKE_WAIT",
    "PROTOCOL",
    "SERVED",
    "fingerprint",
    "main",
    "palace_target",
    "recv",
    "send",
    "socket_path",
    "spawn_daemon",
]

DAEMON_MODES = ("on", "off", "auto")
AUTO_IDLE = 3600.0


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
    """``MINDPALACE_DAEMON``: on (the default: use a running daemon), off
    (never), or auto (also start one, in the background, after a call that
    found none).

    Raises:
        ValueError: another value, with a message naming the valid ones.
    """
    mode = (env.get(ENV_DAEMON) or "on").strip().lower()
    if mode not in DAEMON_MODES:
        raise ValueError(f"invalid {ENV_DAEMON} {mode!r}; valid options: {', '.join(DAEMON_MODES)}")
    return mode


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
    if not private_dir(os.path.dirname(path)):
        return None
    request = {
        "protocol": PROTOCOL,
        "version": __version__,
        "argv": list(argv),
        "cwd": cwd,
        "target": target,
        "settings": fingerprint(env),
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


def start_in_background(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> bool:
    """``MINDPALACE_DAEMON=auto``: start a daemon for the palace of
    ``argv`` when the command is one a daemon serves and none is reachable;
    whether one was started. It warms up while this call returns; a second
    one started meanwhile sees the first's lock and exits."""
    if not SERVED.intersection(argv) or not hasattr(socket, "AF_UNIX"):
        return False
    target = palace_target(_db_option(argv), env, cwd)
    if _reachable(socket_path(target, env)):
        return False
    spawn_daemon(target, AUTO_IDLE)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """The ``mindpalace`` command; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        mode = daemon_mode(os.environ)
        answer = ask_daemon(args, os.environ, os.getcwd())
    except ValueError as exc:
        print(f"mindpalace: error: {exc}", file=sys.stderr)
        return 2
    if answer is None:
        from mindpalace.cli import main as run_here  # noqa: PLC0415 - only when no daemon answers

        code = run_here(args)
        if mode == "auto" and code == 0:
            start_in_background(args, os.environ, os.getcwd())
        return code
    sys.stdout.write(str(answer.get("stdout", "")))
    sys.stderr.write(str(answer.get("stderr", "")))
    sys.stdout.flush()
    return int(answer.get("code", 1))


if __name__ == "__main__":
    sys.exit(main())
