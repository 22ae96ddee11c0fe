"""``mindpalace daemon start|stop|status``: the daemon seen from outside.

Starts the daemon process (``python -m mindpalace.daemon``, see ``daemon``)
and asks a running one for its status or to stop, over the socket ``wire``
names. The command line runs these in the calling process: the daemon
never serves them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

from mindpalace.errors import ConfigError, ValidationError
from mindpalace.wire import (
    palace_target,
    private_dir,
    recv,
    send,
    socket_path,
    spawn_daemon,
    transient,
)

__all__ = ["ACTIONS", "DEFAULT_IDLE", "daemon_command", "ensure_private_dir"]

ACTIONS = ("start", "stop", "status")
DEFAULT_IDLE = 3600.0
_START_WAIT = 300.0  # seconds `daemon start` waits for the warm-up
_STOP_WAIT = 30.0  # seconds `daemon stop` waits for the daemon to be gone


def _control(path: str, what: str, timeout: float = 10.0) -> dict[str, Any] | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        send(conn, {"control": what})
        return recv(conn)
    except (OSError, ValueError):
        return None
    finally:
        conn.close()


def ensure_private_dir(path: str) -> None:
    """Make the daemons' socket directory ``path`` if it is missing.

    Raises:
        ConfigError: it is not a directory of this user's that nobody else
            can enter.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not private_dir(path):
        raise ConfigError(
            f"the daemon's socket directory {path} must be a directory owned by you"
            " that nobody else can enter (mode 700)"
        )


def daemon_command(args: argparse.Namespace) -> dict[str, Any]:
    """``mindpalace daemon start|stop|status`` for the palace ``args`` name."""
    if args.action not in ACTIONS:
        raise ValidationError("action", args.action, valid=ACTIONS)
    if not hasattr(socket, "AF_UNIX"):
        raise ConfigError("the daemon needs Unix sockets, which this platform lacks")
    if args.idle < 0:
        raise ValidationError("idle", args.idle, reason="--idle must be 0 (never) or more seconds")
    target = palace_target(args.db, os.environ, os.getcwd())
    if transient(target):
        raise ValidationError(
            "db", target, reason="a palace in memory lasts one call: no daemon keeps it"
        )
    path = socket_path(target, os.environ)
    if args.action == "status":
        return _control(path, "status") or {"running": False, "palace": target}
    if args.action == "stop":
        reply = _control(path, "stop")
        if reply is None:
            return {"running": False, "palace": target}
        deadline = time.monotonic() + _STOP_WAIT
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        if os.path.exists(path):  # still finishing the calls in flight
            return {"stopping": True, "pid": reply.get("pid"), "palace": target}
        return {"stopped": True, "pid": reply.get("pid"), "palace": target}
    if args.db is None and "://" not in target:
        # The default palace's folder, made on first use as a cold call makes it.
        os.makedirs(os.path.dirname(target), exist_ok=True)
    return _start(target, path, args.idle)


def _start(target: str, path: str, idle: float) -> dict[str, Any]:
    running = _control(path, "status")
    if running is not None:
        return {**running, "already_running": True}
    ensure_private_dir(os.path.dirname(path))
    log = Path(path).with_suffix(".log")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as log_file:  # the child's warm-up errors
        child = spawn_daemon(target, idle, log_file)
    deadline = time.monotonic() + _START_WAIT
    while time.monotonic() < deadline:
        status = _control(path, "status")
        if status is not None:
            return {**status, "started": True}
        if child.poll() is not None:
            reason = log.read_text(encoding="utf-8").strip().splitlines()
            raise ConfigError(
                f"the daemon for {target} exited with status {child.returncode}: "
                + (reason[-1] if reason else "no message")
            )
        time.sleep(0.05)
    child.terminate()
    raise ConfigError(f"the daemon for {target} did not answer within {_START_WAIT:.0f} s")
