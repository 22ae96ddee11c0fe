"""``mindpalace serve --workers N``: N server processes behind one port.

The parent binds the listening socket once and starts N worker processes
(``spawn``: fresh interpreters, nothing inherited but the socket), each of
which opens its own palace (its own store connections, model and, in the
in-process mode, its own warm indexes) and accepts connections from the
shared socket; the kernel hands each new connection to one of them. Nothing
is shared in memory, so the workers scale as separate machines would: on
PostgreSQL in the database mode (``MINDPALACE_INDEX=database``) a worker
holds no copy of the palace and serves at once.

The parent only supervises: SIGINT or SIGTERM is passed on to every worker
(each finishes its in-flight requests), and when one worker exits the
others are stopped too, so a service manager sees the failure and restarts
the whole server.
"""

from __future__ import annotations

import argparse
import multiprocessing
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from types import FrameType

from mindpalace.errors import MindPalaceError

__all__ = ["listening_socket", "serve_workers"]

Worker = Callable[[argparse.Namespace, socket.socket], None]


def listening_socket(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A TCP socket listening on ``host:port`` (IPv6 when ``host`` is one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def serve_workers(args: argparse.Namespace, worker: Worker, *, host: str, port: int) -> None:
    """Start ``args.workers`` processes running ``worker(args, socket)`` on
    one socket listening on ``host:port``; return once they all stopped.

    Raises:
        MindPalaceError: a worker failed (its exit status named).
    """
    listener = listening_socket(host, port)
    context = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = [
        context.Process(target=worker, args=(args, listener), name=f"mindpalace-worker-{n}")
        for n in range(args.workers)
    ]
    stopping = threading.Event()
    caught: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        stopping.set()

    watched = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, stop) for sig in watched}
    try:
        for process in processes:
            process.start()
        print(
            f"mindpalace: {len(processes)} workers on http://{host}:{port}"
            f" (pids {', '.join(str(p.pid) for p in processes)})",
            file=sys.stderr,
            flush=True,
        )
        while not stopping.is_set() and all(p.is_alive() for p in processes):
            time.sleep(0.2)
    finally:
        # A terminal's Ctrl-C reached every worker already (one process
        # group); anything else is passed on: SIGTERM, uvicorn's graceful stop.
        if caught[:1] != [signal.SIGINT]:
            for process in processes:
                if process.is_alive():
                    process.terminate()
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
                process.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
    failed = [p for p in processes if p.exitcode not in (0, -signal.SIGTERM, -signal.SIGINT)]
    if failed:
        raise MindPalaceError(f"{failed[0].name} exited with status {failed[0].exitcode}")
