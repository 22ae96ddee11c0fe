"""``mindpalace ui``: the inspector of a local palace, on this machine only.

It listens on a loopback address, prints a link with a one-time token (as
Jupyter does) and opens it in a browser when there is one. The link opens a
session for the palace's agent (with ``--all-agents``, the management view
of every agent's memories) and then redirects, so the token leaves the
address bar; it works once. Nothing else gets in: no bearer token is
accepted, and only loopback host names are answered.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable

import uvicorn

from mindpalace.errors import ValidationError
from mindpalace.palace import Palace
from mindpalace.ui.app import build_ui
from mindpalace.ui.sessions import OneTimeTokens
from mindpalace.web.body import BodyLimit
from mindpalace.web.guard import GuardedH11Protocol
from mindpalace.web.identity import Caller, PalacePool, TokenTable, is_loopback

__all__ = ["run_local"]

MAX_FORM = 1 << 20


def run_local(
    palace: Palace,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    admin: bool = False,
    open_browser: bool = True,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the inspector of ``palace`` until SIGINT or SIGTERM.

    Args:
        palace: the palace opened by the caller (who closes it afterwards).
        host: a loopback address.
        port: the TCP port; 0 picks a free one.
        admin: act with management access (every agent's memories).
        open_browser: open the link in the default browser, if there is one.
        ready: called with the link once the server listens (tests).

    Raises:
        ValidationError: ``host`` is not a loopback address.
    """
    if not is_loopback(host):
        raise ValidationError(
            "host", host, reason="the local inspector listens on a loopback address only"
        )
    one_time = OneTimeTokens()
    token = one_time.issue(Caller(palace.scope.agent_id, admin=admin))
    app = build_ui(PalacePool(palace), TokenTable(), host=host, one_time=one_time, login_form=False)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    link = f"http://{shown}:{bound}/login?token={token}"
    config = uvicorn.Config(
        BodyLimit(app, limit=MAX_FORM),
        http=GuardedH11Protocol,
        ws="none",
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=10,
    )
    server = uvicorn.Server(config)
    caught: list[int] = []
    watched = (signal.SIGINT, signal.SIGTERM)
    previous = (
        {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in watched}
        if threading.current_thread() is threading.main_thread()
        else {}
    )
    print(
        f"mindpalace: the inspector of {palace.store.location} is at\n    {link}\n"
        "(the link works once; stop with Ctrl-C)",
        file=sys.stderr,
        flush=True,
    )
    if ready is not None:
        ready(link)
    if open_browser:
        # No browser here: the printed link is the way in.
        with contextlib.suppress(webbrowser.Error):
            webbrowser.open(link)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
