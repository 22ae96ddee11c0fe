"""The ``mindpalace`` executable: hands the call to a warm daemon when one
serves this palace, else runs the command line in this process.

A cold process must import numpy, open the store and read every vector
before it can recall (about 2 s at 100k memories); a daemon started with
``mindpalace daemon start`` keeps all that warm, and this module reaches it
with nothing but the standard library, so a call through it costs a Python
start and one round trip on a Unix socket.

The daemon answers only what it would answer exactly as this process would:
the same palace (``--db`` or ``MINDPALACE_DB`` or the per-user default), the
same ``MINDPALACE_*`` settings and the same package version; it declines
everything else (commands that read files or stdin, servers, ``migrate``),
and the call then runs here. ``MINDPALACE_DAEMON=off`` never asks.

Like ``config``, this module reads environment variables: only to find the
palace and to fingerprint the settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from mindpalace import __version__  # the package's __init__ imports nothing heavy
from mindpalace.paths import ENV_DB, default_palace

if TYPE_CHECKING:
    import subprocess

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

PROTOCOL = 2
#: Seconds for each step before "go" (connect, send the request, hear
#: "accepted"; the daemon waits as long for "go"); past them the command
#: runs here (the daemon never runs a call it was not told to go on).
HANDSHAKE_WAIT = 5.0
#: Seconds to wait for the answer once the daemon was told to go on.
ANSWER_WAIT = 300.0
ENV_DAEMON = "MINDPALACE_DAEMON"
DAEMON_MODES = ("on", "off", "auto")
AUTO_IDLE = 3600.0
#: Commands a daemon answers: they read only their arguments and the palace
#: (``daemon.served`` has the rest of the rule).
SERVED = frozenset(
    {
        "complete",
        "context",
        "depends-on",
        "entities",
        "feedback",
        "forget",
        "get",
        "history",
        "list",
        "preflight",
        "recall",
        "recent",
        "remember",
        "search",
        "search-messages",
        "skills",
        "stats",
        "what-do-i-know",
        "who-owns",
        "why-did-we",
    }
)
# Variables that change nothing a command computes: where the palace is is
# compared resolved; the daemon switch is this module's own.
_NOT_SETTINGS = {ENV_DB, ENV_DAEMON}
# Variables that name other variables holding secrets: their values count.
_KEY_NAMES = ("MINDPALACE_EMBED_KEY_ENV", "MINDPALACE_EXTRACT_KEY_ENV")
_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 64 * 1024 * 1024
# A Unix socket path has at most 107 bytes; ours add "/mindpalace-UID/" and
# a 29-byte name to the base directory.
_LONGEST_BASE = 60


def palace_target(db: str | None, env: Mapping[str, str], cwd: str) -> str:
    """The palace a command acts on, as one comparable string: a URL as
    given, a path made absolute against ``cwd`` (``config.default_db_path``'s
    rule when ``db`` is None)."""
    if db is None:
        db = default_palace(env)
    if "://" in db:
        return db
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(db)))


def fingerprint(env: Mapping[str, str]) -> str:
    """A digest of every setting a command's result can depend on."""
    items = sorted(
        (k, v) for k, v in env.items() if k.startswith("MINDPALACE_") and k not in _NOT_SETTINGS
    )
    for name in _KEY_NAMES:
        if env.get(name):
            items.append((f"${env[name]}", env.get(env[name], "")))
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()


def runtime_dir(env: Mapping[str, str]) -> str:
    """Where the daemons' sockets live: a directory only this user can enter
    (under /tmp when the usual place would make a socket path too long)."""
    # /tmp is shared, but the directory made in it is checked private_dir.
    base = env.get("XDG_RUNTIME_DIR") or env.get("TMPDIR") or "/tmp"  # noqa: S108
    if len(base) > _LONGEST_BASE:
        base = "/tmp"  # noqa: S108
    return os.path.join(base, f"mindpalace-{os.getuid()}")


def socket_path(target: str, env: Mapping[str, str]) -> str:
    """The socket of the daemon serving ``target`` (a palace_target)."""
    name = hashlib.sha256(target.encode()).hexdigest()[:24]
    return os.path.join(runtime_dir(env), f"{name}.sock")


def private_dir(path: str) -> bool:
    """True when ``path`` is a directory owned by this user that nobody else
    can enter (a socket elsewhere could be another user's)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


def send(conn: socket.socket, message: Mapping[str, Any]) -> None:
    """One length-prefixed JSON message."""
    body = json.dumps(message, ensure_ascii=False).encode()
    conn.sendall(_HEADER.pack(len(body)) + body)


def _exactly(conn: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def recv(conn: socket.socket) -> dict[str, Any]:
    """One length-prefixed JSON message (an object)."""
    (size,) = _HEADER.unpack(_exactly(conn, _HEADER.size))
    if size > _MAX_MESSAGE:
        raise ConnectionError(f"message of {size} bytes is over the limit")
    message = json.loads(_exactly(conn, size))
    if not isinstance(message, dict):
        raise ConnectionError("a message must be a JSON object")
    return message


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


def spawn_daemon(target: str, idle: float, log: IO[str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``python -m mindpalace.daemon`` for ``target`` in a session of
    its own, its errors into ``log`` (else discarded)."""
    import subprocess  # noqa: PLC0415 - 50 ms of imports a call through a daemon skips

    return subprocess.Popen(  # noqa: S603 - this interpreter, our module
        [sys.executable, "-m", "mindpalace.daemon", target, "--idle", str(idle)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if log is None else log,
        start_new_session=True,
        close_fds=True,
    )


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
