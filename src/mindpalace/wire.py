"""Where a palace's daemon listens and how the callers talk to it.

Shared by the launcher (``launch``), the daemon (``daemon``) and its
start/stop/status commands (``daemonctl``), so all three agree on the
palace a call is for, the socket that serves it and the messages on it.
Like ``launch``, this module needs nothing but the standard library (a call
handed to a daemon must not import numpy), and it reads environment
variables only to find the palace and to fingerprint the settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from mindpalace.paths import ENV_AGENT, ENV_DB, default_palace

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "ANSWER_WAIT",
    "ENV_DAEMON",
    "ENV_DAEMON_IDLE",
    "HANDSHAKE_WAIT",
    "IN_MEMORY",
    "PROTOCOL",
    "SERVED",
    "SERVED_SKILLS",
    "fingerprint",
    "lock_path",
    "palace_target",
    "private_dir",
    "recv",
    "runtime_dir",
    "send",
    "socket_path",
    "spawn_daemon",
    "transient",
]

# 3: the caller's MINDPALACE_AGENT_ID travels with each call ("agent"), so
# it is no longer one of the settings a daemon must share with its callers.
PROTOCOL = 3
IN_MEMORY = ":memory:"
#: Seconds for each step before "go" (connect, send the request, hear
#: "accepted"; the daemon waits as long for "go"); past them the command
#: runs here (the daemon never runs a call it was not told to go on).
HANDSHAKE_WAIT = 5.0
#: Seconds to wait for the answer once the daemon was told to go on.
ANSWER_WAIT = 300.0
ENV_DAEMON = "MINDPALACE_DAEMON"
ENV_DAEMON_IDLE = "MINDPALACE_DAEMON_IDLE"
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
        "personal-search",
        "search",  # the older name of personal-search
        "search-messages",
        "skills",
        "stats",
        "what-do-i-know",
        "who-owns",
        "why-did-we",
    }
)
#: The ``skills`` commands a daemon answers (the others read files).
SERVED_SKILLS = frozenset({"activate", "get", "find"})
# Variables that change nothing a command computes: where the palace is is
# compared resolved, the default agent travels with each call, and the
# daemon switch and its idle time are the launcher's own.
_NOT_SETTINGS = {ENV_DB, ENV_AGENT, ENV_DAEMON, ENV_DAEMON_IDLE}
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
    rule when ``db`` is None); ``IN_MEMORY`` as given (``transient``)."""
    if db is None:
        db = default_palace(env)
    if "://" in db or db == IN_MEMORY:
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


def transient(target: str) -> bool:
    """Whether ``target`` is a palace in memory, which lasts one call: no
    daemon serves it (one would keep it from call to call)."""
    return target == IN_MEMORY


def lock_path(socket: str) -> str:
    """The lock file the daemon behind ``socket`` holds for its whole life
    (its warm-up included): one daemon per palace and user."""
    return os.path.splitext(socket)[0] + ".lock"


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


def spawn_daemon(
    target: str,
    idle: float,
    log: IO[str] | None = None,
    *,
    lock_fd: int | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``python -m mindpalace.daemon`` for ``target`` in a session of
    its own, with ``env`` (else this process's environment), its errors
    into ``log`` (else discarded). The palace goes in ``MINDPALACE_DB``, so
    a URL's password never shows in a process list. ``lock_fd``: the
    daemon's lock (``lock_path``), already taken by the caller; the daemon
    inherits it and holds it from its first instant, so no second daemon
    starts while this one imports."""
    import subprocess  # noqa: PLC0415 - 50 ms of imports a call through a daemon skips

    command = [sys.executable, "-m", "mindpalace.daemon", "--idle", str(idle)]
    if lock_fd is not None:
        command += ["--lock-fd", str(lock_fd)]
    return subprocess.Popen(  # noqa: S603 - this interpreter, our module
        command,
        env={**(os.environ if env is None else env), ENV_DB: target},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if log is None else log,
        start_new_session=True,
        close_fds=True,
        pass_fds=() if lock_fd is None else (lock_fd,),
    )
