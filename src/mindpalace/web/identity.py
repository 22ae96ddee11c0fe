"""Who is calling: bearer tokens to agent ids, and one palace per agent.

Two ways to name the agent over HTTP, configurable per token:

* one token per agent (``agent-a=TOKEN``): the token is the identity;
* a shared token (``*=TOKEN``) plus an ``x-mindpalace-agent-id`` header: for
  a trusted gateway that serves many agents.

And one way to get the unscoped management view (every agent's memories):
an admin token, ``admin:AGENT=TOKEN``, which acts as ``AGENT`` with
management access. Nothing else gives it: the server is never opened with
``--all-agents``, and the pool builds every view from the engine, so the
scope the server was started with reaches no caller.

A request that names no agent where one is required is refused (401): there
is no fallback to a default agent over HTTP unless the operator started the
server with ``--auth none``, which only a loopback address accepts.

Tokens are kept as SHA-256 digests and looked up by digest, so the table
never holds them in clear and a lookup does not compare secrets byte by byte.
"""

from __future__ import annotations

import hashlib
import ipaddress
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mindpalace.errors import ConfigError, ValidationError
from mindpalace.palace import Palace
from mindpalace.validation import check_agent_id, check_identifier

__all__ = [
    "AGENT_HEADER",
    "AuthError",
    "Caller",
    "PalacePool",
    "TokenTable",
    "is_loopback",
    "load_tokens",
]

AGENT_HEADER = "x-mindpalace-agent-id"
SHARED = "*"
ADMIN = "admin:"


class AuthError(Exception):
    """The request carries no valid identity (HTTP 401)."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request acts as.

    Attributes:
        agent: the agent id.
        admin: management access (every agent's memories): an admin token.
    """

    agent: str
    admin: bool = False


@dataclass(frozen=True, slots=True)
class TokenTable:
    """Bearer tokens and the agents they stand for.

    Attributes:
        agents: token digest -> agent id.
        shared: digests of shared tokens (the agent comes from a header).
        admins: digests of admin tokens (their agent is in ``agents``).
        anonymous: the agent every request acts as, when auth is off.
    """

    agents: Mapping[str, str] = field(default_factory=dict)
    shared: frozenset[str] = frozenset()
    admins: frozenset[str] = frozenset()
    anonymous: str | None = None

    @classmethod
    def parse(cls, entries: Iterable[str], *, origin: str) -> TokenTable:
        """A table from ``AGENT=TOKEN`` entries (``*=TOKEN`` for a shared
        token, ``admin:AGENT=TOKEN`` for an admin token).

        Blank entries and ``#`` comments are skipped.

        Raises:
            ConfigError: an entry is malformed, a token is repeated, or there
                is no token at all; the message names ``origin``.
        """
        agents: dict[str, str] = {}
        shared: set[str] = set()
        admins: set[str] = set()
        for number, raw in enumerate(entries, start=1):
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            agent, sep, token = (part.strip() for part in entry.partition("="))
            if not sep or not agent or not token:
                raise ConfigError(
                    f"{origin}, entry {number}: expected AGENT=TOKEN, *=TOKEN or admin:AGENT=TOKEN"
                )
            digest = _digest(token)
            if digest in agents or digest in shared:
                raise ConfigError(f"{origin}, entry {number}: this token is already listed")
            if agent == SHARED:
                shared.add(digest)
                continue
            if agent.startswith(ADMIN):
                agent = agent.removeprefix(ADMIN).strip()
                if not agent or agent == SHARED:
                    raise ConfigError(
                        f"{origin}, entry {number}: an admin token acts as one agent:"
                        " admin:AGENT=TOKEN"
                    )
                admins.add(digest)
            try:
                agents[digest] = check_agent_id(agent, "agent")
            except ValidationError as exc:
                raise ConfigError(f"{origin}, entry {number}: {exc}") from None
        if not agents and not shared:
            raise ConfigError(f"{origin} lists no token (expected AGENT=TOKEN entries)")
        return cls(agents=agents, shared=frozenset(shared), admins=frozenset(admins))

    def identify(self, authorization: str | None, agent_header: str | None) -> Caller:
        """Who a request acts as.

        Args:
            authorization: the ``Authorization`` header.
            agent_header: the ``x-mindpalace-agent-id`` header.

        Raises:
            AuthError: no token, an unknown token, or a shared token without
                a valid agent header.
        """
        if self.anonymous is not None:
            return Caller(self.anonymous)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing bearer token: send 'Authorization: Bearer <token>'")
        digest = _digest(token.strip())
        agent = self.agents.get(digest)
        if agent is not None:
            return Caller(agent, admin=digest in self.admins)
        if digest not in self.shared:
            raise AuthError("unknown bearer token")
        try:
            named = check_agent_id(agent_header, AGENT_HEADER)
        except ValidationError as exc:
            raise AuthError(f"a shared token needs the {AGENT_HEADER} header: {exc}") from None
        return Caller(named)


def load_tokens(spec: str, *, env_tokens: str | None, default_agent: str) -> TokenTable:
    """The token table ``--auth`` names.

    Args:
        spec: ``env`` (the ``MINDPALACE_TOKENS`` setting), ``none`` (no auth:
            every request acts as ``default_agent``), or the path of a file
            with one ``AGENT=TOKEN`` line each.
        env_tokens: the ``MINDPALACE_TOKENS`` setting.
        default_agent: the agent of every request under ``none``.

    Raises:
        ConfigError: the source is missing, unreadable or lists no token.
    """
    if spec == "none":
        return TokenTable(anonymous=default_agent)
    if spec == "env":
        if not env_tokens:
            raise ConfigError(
                "--auth env: MINDPALACE_TOKENS is not set (AGENT=TOKEN pairs, comma-separated);"
                " or pass --auth FILE, or --auth none on a loopback address"
            )
        return TokenTable.parse(env_tokens.split(","), origin="MINDPALACE_TOKENS")
    path = Path(spec).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--auth {spec}: cannot read the tokens file: {exc}") from None
    return TokenTable.parse(text.splitlines(), origin=str(path))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class PalacePool:
    """One palace per agent over one shared store and semantic index.

    Palaces are cheap views (scope, clock, ids); the store, the embedder and
    the warm dense index are shared, so a new agent costs no model load and
    no index rebuild. The most recently used ``size`` palaces are kept.
    Every view is built from the engine, never the base palace itself, so
    the base's scope (its groups, channel or management access) reaches no
    caller.

    Args:
        base: the palace the server was opened with; its store, settings and
            semantic index are shared. It is the pool's caller to close it.
        size: how many agents' palaces to keep.
    """

    def __init__(self, base: Palace, *, size: int = 1024) -> None:
        self.base = base
        self._size = size
        self._palaces: OrderedDict[tuple[str, str | None, bool], Palace] = OrderedDict()
        self._lock = threading.Lock()

    def for_agent(
        self, agent_id: str, *, channel: str | None = None, admin: bool = False
    ) -> Palace:
        """The palace acting as ``agent_id``; with ``channel``, the
        peer-facing palace of that agent and channel (``channel``:
        it sees the channel plus what is explicitly shared, as a peer may);
        with ``admin`` and no channel, the management view (every agent's
        memories) acting as ``agent_id``.

        Raises:
            ValidationError: ``channel`` is not a valid name.
        """
        channel = check_identifier(channel, "channel", optional=True)
        key = (agent_id, channel, admin)
        with self._lock:
            palace = self._palaces.get(key)
            if palace is not None:
                self._palaces.move_to_end(key)
                return palace
            if admin and channel is None:
                palace = Palace(engine=self.base.engine, agent_id=agent_id, management=True)
            else:
                palace = self.base.for_agent(agent_id, channel=channel, peer=channel is not None)
            self._palaces[key] = palace
            while len(self._palaces) > self._size:
                self._palaces.popitem(last=False)
            return palace
