"""A warm palace behind a Unix socket, for the command line.

``mindpalace daemon start``, or the launcher on a palace's first call, runs
``python -m mindpalace.daemon`` in the background: it opens the palace
once, builds its warm indexes, and answers the ``mindpalace`` launcher
(``launch.py``) with exactly what the command line would have printed,
running the same ``commands.run`` with a palace from its cache (one per
agent, groups and channel; all share the store and the warm dense index,
which follows other processes' writes through the store's change
counters).

Walls: the socket (mode 600) lives in a directory only its user can enter
(mode 700), and a connecting process of another user is refused
(``SO_PEERCRED`` where the platform has it). The agent a call acts for
comes with each call (``--agent``, else the caller's
``MINDPALACE_AGENT_ID``). Only commands that read nothing but their
arguments are served, and only for the palace, settings and package
version the daemon was started with; it declines everything else, and the
launcher runs the command itself. It exits after ``idle`` seconds without
a call, when its palace file is removed or replaced, on ``daemon stop``
and on SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from mindpalace import __version__, commands
from mindpalace.arguments import build_parser
from mindpalace.daemonctl import DEFAULT_IDLE, ensure_private_dir
from mindpalace.models import DEFAULT_AGENT
from mindpalace.palace import Palace
from mindpalace.paths import ENV_DB
from mindpalace.wire import (
    ANSWER_WAIT,
    HANDSHAKE_WAIT,
    PROTOCOL,
    SERVED,
    SERVED_SKILLS,
    fingerprint,
    lock_path,
    palace_target,
    recv,
    send,
    socket_path,
)

__all__ = ["Daemon", "served"]

_PALACES = 256  # scopes kept open; each is a cheap view over the shared store
_SETTLE_WAIT = 20.0  # seconds a stopping daemon gives the calls in flight


def served(args: argparse.Namespace) -> str | None:
    """Why the daemon declines ``args``, or None when it serves them."""
    if args.command == "skills":
        if args.skills_command not in SERVED_SKILLS:
            return f"skills {args.skills_command} reads files"
        return None
    if args.command not in SERVED:
        return f"{args.command} is run by the calling process"
    if args.command == "remember" and args.content == "-":
        return "remember - reads standard input"
    return None


class Daemon:
    """Answers launcher requests for one palace (see the module docstring).

    Args:
        target: the palace, as ``launch.palace_target`` writes it.
        idle: seconds without a request before ``serve`` returns (0: never).
    """

    def __init__(self, target: str, *, idle: float = DEFAULT_IDLE) -> None:
        self._cli = commands  # what runs a command (a test puts a broken one here)
        self.target = target
        self.idle = idle
        self.settings = fingerprint(os.environ)
        self.base = Palace(target)
        self._palaces: OrderedDict[tuple[Any, ...], Palace] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0
        self.started = time.time()
        self.last_call = time.monotonic()
        self._identity = _file_identity(target)
        self._server: socketserver.UnixStreamServer | None = None
        self._inflight = 0
        self._closing = False
        self._settled = threading.Condition(self._lock)
        # Built once (30 ms a call otherwise); parsing redirects the process's
        # stdout and stderr, so one call parses at a time.
        self._parser = build_parser()
        self._parsing = threading.Lock()

    def warm(self) -> None:
        """Load the model and the vectors before the first call, and start
        building the warm keyword and mention indexes (in the background:
        calls are served meanwhile)."""
        semantic = self.base.semantic
        # In database mode there is nothing to load: recall reads the store.
        if semantic.query_vector("warm up") is not None and semantic.in_database() is None:
            semantic.dense()
            semantic.dense()  # the second use starts the keyword and mention indexes

    def palace_for(self, args: argparse.Namespace) -> Palace:
        """The palace for ``args``' scope options: a view of the daemon's one
        engine, kept for later calls of the same scope."""
        groups = tuple(g for g in (args.groups or "").split(",") if g.strip())
        key = (args.agent, groups, args.channel, args.all_agents, args.peer)
        with self._lock:
            palace = self._palaces.get(key)
            if palace is not None:
                self._palaces.move_to_end(key)
                return palace
        palace = Palace(
            engine=self.base.engine,
            agent_id=args.agent,
            groups=groups,
            channel=args.channel,
            management=args.all_agents,
            peer=args.peer or None,
        )
        with self._lock:
            self._palaces[key] = palace
            while len(self._palaces) > _PALACES:
                self._palaces.popitem(last=False)
        return palace

    def admit(self, request: dict[str, Any]) -> dict[str, Any] | argparse.Namespace:
        """The reply to a launcher request that runs nothing (a control
        command's answer, or why the daemon declines), or the parsed
        arguments of a command it will run when the caller says go."""
        self.last_call = time.monotonic()
        control = request.get("control")
        if control == "status":
            return self.status()
        if control == "stop":
            threading.Thread(target=self.shutdown, daemon=True).start()
            return {"stopping": True, **self.status()}
        if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
            return {"declined": "another version of mindpalace"}
        if request.get("settings") != self.settings:
            return {"declined": "other MINDPALACE_* settings"}
        argv, cwd, agent = request.get("argv"), request.get("cwd"), request.get("agent")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return {"declined": "argv must be a list of strings"}
        if not isinstance(cwd, str):
            return {"declined": "cwd must be a string"}
        if agent is not None and not isinstance(agent, str):
            return {"declined": "agent must be a string"}
        args = self._parse(argv)
        if args is None:
            return {"declined": "arguments the parser rejects (its message comes from the caller)"}
        # The cold command line's rule: --agent, else MINDPALACE_AGENT_ID, else
        # the default agent; here the variable is the caller's, not the daemon's.
        args.agent = args.agent or agent or DEFAULT_AGENT
        reason = served(args)
        if reason is not None:
            return {"declined": reason}
        target = request.get("target") if args.db is None else palace_target(args.db, {}, cwd)
        if target != self.target:
            return {"declined": "another palace"}
        return args

    def execute(self, args: argparse.Namespace) -> dict[str, Any]:
        """Run admitted ``args``: what the command line prints, and its exit
        status (or a decline, once the daemon is stopping). A fault the
        command line would not survive either (a bug, a damaged file) is an
        error answer here, and the daemon serves on."""
        self.last_call = time.monotonic()
        with self._lock:
            if self._closing:  # the caller runs it itself: nothing ran here
                return {"declined": "the daemon is stopping"}
            self._inflight += 1
        try:
            code, out, err = self._cli.run(
                args, lambda a: contextlib.nullcontext(self.palace_for(a))
            )
        except Exception as exc:  # answered, logged, and the daemon lives on
            traceback.print_exc()
            code, out, err = 1, "", f"mindpalace {args.command}: error in the daemon: {exc!r}\n"
        finally:
            with self._lock:
                self._inflight -= 1
                self.requests += 1
                self._settled.notify_all()
        return {"code": code, "stdout": out, "stderr": err}

    def settle(self, timeout: float) -> bool:
        """Start no more commands, and wait up to ``timeout`` seconds for
        those running now to finish; whether they all did."""
        with self._lock:
            self._closing = True
            return self._settled.wait_for(lambda: self._inflight == 0, timeout)

    def _parse(self, argv: list[str]) -> argparse.Namespace | None:
        quiet = io.StringIO()
        try:
            with (
                self._parsing,
                contextlib.redirect_stderr(quiet),
                contextlib.redirect_stdout(quiet),
            ):
                return self._parser.parse_args(argv)
        except SystemExit:  # --help, --version, a usage error: the caller prints them
            return None

    def status(self) -> dict[str, Any]:
        return {
            "running": True,
            "pid": os.getpid(),
            "palace": self.target,
            "version": __version__,
            "requests": self.requests,
            "scopes": len(self._palaces),
            "uptime_s": round(time.time() - self.started, 1),
            "idle_s": self.idle,
        }

    def serve(self, path: str) -> None:
        """Answer on the socket at ``path`` until stopped; then remove it."""
        daemon = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                if not _same_user(conn):
                    return
                conn.settimeout(HANDSHAKE_WAIT)
                try:  # request; accepted; go: a caller that gave up never says go
                    verdict = daemon.admit(recv(conn))
                    if isinstance(verdict, dict):
                        send(conn, verdict)
                        return
                    send(conn, {"accepted": True})
                    if recv(conn).get("go") is not True:
                        return
                except (OSError, ValueError, RecursionError) as exc:
                    with contextlib.suppress(OSError):
                        send(conn, {"declined": f"bad request: {exc}"})
                    return
                reply = daemon.execute(verdict)
                conn.settimeout(ANSWER_WAIT)  # a long answer to a slow reader
                with contextlib.suppress(OSError):
                    send(conn, reply)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True  # ``settle`` waits for the calls in flight, boundedly
            block_on_close = False

        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        old = os.umask(0o077)
        try:
            server = Server(path, Handler)
            os.chmod(path, 0o600)  # the directory is the wall; the socket is the owner's too
        finally:
            os.umask(old)
        self._server = server
        watch = threading.Thread(target=self._watch, daemon=True)
        watch.start()
        try:
            with commands.retention_job(self.base):
                server.serve_forever(poll_interval=0.5)
        finally:
            server.server_close()  # no new calls; those running may finish
            if not self.settle(_SETTLE_WAIT):
                print(
                    f"stopping with calls still running after {_SETTLE_WAIT:.0f} s",
                    file=sys.stderr,
                )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self.base.close()

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            if self.idle and time.monotonic() - self.last_call > self.idle:
                break
            if _file_identity(self.target) != self._identity:  # removed or replaced
                break
        self.shutdown()


def _file_identity(target: str) -> tuple[int, int] | None:
    if "://" in target:
        return None
    try:
        info = os.stat(target)
    except OSError:
        return (-1, -1)
    return (info.st_dev, info.st_ino)


def _same_user(conn: socket.socket) -> bool:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:  # the private directory is the wall here
        return True
    raw = conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())


# -- the daemon process (``python -m mindpalace.daemon``) ----------------------------


@contextlib.contextmanager
def _exclusive(lock: str, taken: int | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on the file ``lock``; yields False when another
    daemon holds it. ``taken``: a descriptor of it the starting launcher
    locked and handed down (``wire.spawn_daemon``), held until the end."""
    import fcntl  # noqa: PLC0415 - POSIX only, like the daemon

    if taken is not None:
        try:
            yield True
        finally:
            os.close(taken)
        return
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def run(target: str, idle: float, lock_fd: int | None = None) -> int:
    """The daemon process: warm up, then serve until stopped."""
    path = socket_path(target, os.environ)
    ensure_private_dir(os.path.dirname(path))
    with _exclusive(lock_path(path), lock_fd) as mine:
        if not mine:
            print(f"a daemon already serves {target}", file=sys.stderr)
            return 3
        daemon = Daemon(target, idle=idle)
        daemon.warm()
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=daemon.shutdown).start())
        daemon.serve(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mindpalace.daemon")
    parser.add_argument(
        "target", nargs="?", help=f"the palace (absolute path or URL; default: ${ENV_DB})"
    )
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE)
    parser.add_argument("--lock-fd", type=int, help="the lock, taken by the starting process")
    args = parser.parse_args(argv)
    target = args.target or os.environ.get(ENV_DB)
    if not target:
        parser.error(f"name the palace, or set {ENV_DB}")
    return run(target, args.idle, args.lock_fd)


if __name__ == "__main__":
    sys.exit(main())
