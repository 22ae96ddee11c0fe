"""The limits ``mindpalace serve`` puts on clients, and their defaults (no
server extra needed: the command line reads the defaults). ``guard``
enforces them."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from mindpalace.errors import ConfigError, ValidationError
from mindpalace.validation import check_limit

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_PIPELINED",
    "DEFAULT_SEND_TIMEOUT",
    "RESERVED_FILES",
    "ConnectionLimits",
    "ensure_files",
]

DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0  # 1 MiB (the largest body) at 35 KB/s
DEFAULT_KEEP_ALIVE = 5
DEFAULT_SEND_TIMEOUT = 30.0  # a client that reads nothing for this long is dropped
DEFAULT_MAX_PIPELINED = 16  # browsers and HTTP libraries send none ahead
# Descriptors the server needs besides its connections: the palace file and
# its WAL, the model, the listening socket, the event loop, standard streams.
RESERVED_FILES = 64
MAX_BACKLOG = 2048  # uvicorn's default
MAX_TIMEOUT = 3600.0


def _seconds(value: object, field: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise ValidationError(
            field,
            value,
            reason=f"{field} must be a number of seconds above 0 and at most {MAX_TIMEOUT:.0f}",
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How long a client may take to send a request and to read its
    answer, how many requests it may send ahead, and how many connections
    are served at once.

    Attributes:
        max_connections: open connections at most (each holds a descriptor).
        header_timeout: seconds for a request's headers to arrive.
        body_timeout: seconds for its body to arrive, after the headers.
        keep_alive: seconds an idle connection is kept between requests.
        send_timeout: seconds a response may wait on a client that reads
            none of it (the server's send buffer full), before the
            connection is dropped.
        max_pipelined: requests a connection may send ahead of their
            answers (pipelined) that are answered in a row; then it is
            closed, its other requests unanswered.

    Raises:
        ValidationError: a value out of range.
    """

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    keep_alive: int = DEFAULT_KEEP_ALIVE
    send_timeout: float = DEFAULT_SEND_TIMEOUT
    max_pipelined: int = DEFAULT_MAX_PIPELINED

    @property
    def backlog(self) -> int:
        """The listen backlog. asyncio accepts up to this many connections
        in one go, each with a descriptor, before the cap can close any; so
        it is no larger than the cap, and the descriptor budget counts it."""
        return min(self.max_connections, MAX_BACKLOG)

    @property
    def files(self) -> int:
        """File descriptors the server may need at once."""
        return self.max_connections + self.backlog + RESERVED_FILES

    def __post_init__(self) -> None:
        check_limit(self.max_connections, low=1, high=1_000_000, field="max_connections")
        _seconds(self.header_timeout, "header_timeout")
        _seconds(self.body_timeout, "body_timeout")
        check_limit(self.keep_alive, low=1, high=int(MAX_TIMEOUT), field="keep_alive")
        _seconds(self.send_timeout, "send_timeout")
        check_limit(self.max_pipelined, low=1, high=10_000, field="max_pipelined")


def ensure_files(limits: ConnectionLimits) -> None:
    """Make sure the process may open a descriptor for every connection:
    raise its soft ``ulimit -n`` when it is too low and the hard limit allows.

    Raises:
        ConfigError: the hard limit is too low for ``max_connections``.
    """
    if sys.platform == "win32":  # no descriptor limit to raise
        return
    import resource  # noqa: PLC0415 - Unix only

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = limits.files
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ConfigError(
            f"--max-connections {limits.max_connections} needs {needed} file descriptors"
            f" (twice as many, for connections being accepted, and {RESERVED_FILES} for the"
            f" server itself) but this process may open {hard} (ulimit -n): lower"
            " --max-connections or raise the limit"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
