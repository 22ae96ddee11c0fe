"""Settings. The only module that reads environment variables (with
``launch``, which finds the palace and the daemon before anything loads).

=========================== =====================================================
variable                    meaning
=========================== =====================================================
``MINDPALACE_DB``           default palace path or URL (else a per-user data directory)
``MINDPALACE_AGENT_ID``     default agent id (else ``default``)
``MINDPALACE_MAX_CONTENT``  longest content accepted, in characters (50,000)
``MINDPALACE_BUSY_TIMEOUT`` seconds a writer waits for a locked database (30)
``MINDPALACE_EMBEDDER``     local (default: bundled MiniLM), bge (bundled
                            bge-small-en-v1.5, retrieval-tuned), static (bundled,
                            fast), http, hashing, none
``MINDPALACE_EMBED_URL``    base URL of an OpenAI-compatible service (http)
``MINDPALACE_EMBED_MODEL``  the service's model name (http)
``MINDPALACE_EMBED_DIMS``   the service's vector size (http)
``MINDPALACE_EMBED_KEY_ENV`` name of the variable holding the API key (http)
``MINDPALACE_PEER``         on: palaces are peer-facing (each needs a channel); off (default)
``MINDPALACE_SIGNALS``      on (default): record write sources, recall outcomes
                            and feedback in the signals table; off: record nothing
``MINDPALACE_SCORER``       off (default): rank by the pipeline's formula; on: re-rank
                            with the agent's learned scorer once trained
                            (``mindpalace signals train``)
``MINDPALACE_EXTRACT_URL``  base URL of an OpenAI-compatible chat service: entity
                            extraction by an LLM, added to the rules (optional)
``MINDPALACE_EXTRACT_MODEL`` its model name
``MINDPALACE_EXTRACT_KEY_ENV`` name of the variable holding its API key
``MINDPALACE_ANN_ROWS``     embedded memories from which recall keeps an HNSW graph
                            for dense candidates (50,000; 0: always score every row)
``MINDPALACE_INDEX``        where recall finds its dense candidates: auto (default:
                            the database on PostgreSQL from 1,000,000 memories, else
                            this process), process (warm indexes in this process),
                            database (pgvector and SQL in PostgreSQL; no copy here)
``MINDPALACE_REPLICAS``     read replicas of a PostgreSQL palace: comma-separated
                            ``postgresql://`` URLs of its streaming replicas
``MINDPALACE_DAEMON``       auto (default): hand commands to the palace's daemon
                            (``launch``), starting one on the first call; on: use a
                            running one, start none (the default under pytest);
                            off: always run them in-process
``MINDPALACE_DAEMON_IDLE``  seconds before an idle daemon started on first use
                            exits (600; 0: never)
``MINDPALACE_RETENTION_EVERY`` seconds between the retention runs of a long-running
                            process (serve, mcp, daemon: 3600; 0: none)
``MINDPALACE_TOKENS``       server bearer tokens: ``AGENT=TOKEN`` pairs, comma-separated
                            (``*=TOKEN``: a shared token; the agent comes from a header)
=========================== =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mindpalace.errors import ConfigError
from mindpalace.models import DEFAULT_AGENT
from mindpalace.paths import ENV_AGENT, default_palace

__all__ = ["EMBEDDERS", "INDEXES", "Settings", "default_db_path", "quiet_onnxruntime"]

ENV_MAX_CONTENT = "MINDPALACE_MAX_CONTENT"
ENV_BUSY_TIMEOUT = "MINDPALACE_BUSY_TIMEOUT"
ENV_EMBEDDER = "MINDPALACE_EMBEDDER"
ENV_EMBED_URL = "MINDPALACE_EMBED_URL"
ENV_EMBED_MODEL = "MINDPALACE_EMBED_MODEL"
ENV_EMBED_DIMS = "MINDPALACE_EMBED_DIMS"
ENV_EMBED_KEY_ENV = "MINDPALACE_EMBED_KEY_ENV"
ENV_PEER = "MINDPALACE_PEER"
ENV_SIGNALS = "MINDPALACE_SIGNALS"
ENV_SCORER = "MINDPALACE_SCORER"
ENV_TOKENS = "MINDPALACE_TOKENS"
ENV_ANN_ROWS = "MINDPALACE_ANN_ROWS"
ENV_INDEX = "MINDPALACE_INDEX"
ENV_BULK_EMBED = "MINDPALACE_BULK_EMBED"
ENV_PARTS = "MINDPALACE_PARTS"
ENV_RETENTION_EVERY = "MINDPALACE_RETENTION_EVERY"
ENV_REPLICAS = "MINDPALACE_REPLICAS"
ENV_EXTRACT_URL = "MINDPALACE_EXTRACT_URL"
ENV_EXTRACT_MODEL = "MINDPALACE_EXTRACT_MODEL"
ENV_EXTRACT_KEY_ENV = "MINDPALACE_EXTRACT_KEY_ENV"

# onnxruntime's own switch, read once when it loads (it is not our setting).
ENV_ORT_TELEMETRY = "ORT_DISABLE_TELEMETRY"

EMBEDDERS = ("local", "bge", "static", "http", "hashing", "none")
SWITCH = ("on", "off")
INDEXES = ("auto", "process", "database")
BULK_EMBEDS = ("background", "inline")

DEFAULT_MAX_CONTENT = 50_000
DEFAULT_BUSY_TIMEOUT = 30.0
# A graph pays from here: below it, one matrix product over every row costs
# about as much as the graph's search (BENCHMARKS.md, "HNSW candidates").
DEFAULT_ANN_ROWS = 50_000
# From this many memories a PostgreSQL palace recalls in the database by
# default (``index`` auto). Below it a process's warm copy is faster per
# recall (several times, measured at 20k and 100k) and small enough to keep
# in every process; at a million memories it is about 8 GB and minutes of
# warm-up per process (BENCHMARKS.md, "Recall in the database").
DEFAULT_DATABASE_ROWS = 1_000_000
# Retention rules count in days: an hourly run keeps a rule within an hour
# of its word, and a run that finds nothing to erase costs one read per rule.
DEFAULT_RETENTION_EVERY = 3600


def default_db_path(env: Mapping[str, str] | None = None) -> str | Path:
    """The palace used when none is named: ``$MINDPALACE_DB`` (a path or a
    URL such as ``postgresql://...``) or a per-user file."""
    db = default_palace(os.environ if env is None else env)
    if "://" in db:  # a URL, not a path: Path() would fold its "//"
        return db
    return Path(db).expanduser()


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive number, got {raw!r}", setting=name) from None
    if value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {raw!r}", setting=name)
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigError(f"{name} must be a whole number >= 0, got {raw!r}", setting=name)
    return int(raw)


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in SWITCH:
        raise ConfigError(f"invalid {name} {raw!r}", setting=name, valid=SWITCH)
    return raw == "on"


@dataclass(frozen=True, slots=True)
class Settings:
    """Tunable limits of a palace.

    Attributes:
        agent_id: the agent a palace acts as when a call names none.
        max_content_chars: longest content ``remember`` accepts.
        busy_timeout: seconds a write waits for other writers before failing.
        embedder: which embedding model: local (the bundled MiniLM), static
            (the bundled static table: 20x faster, a little less accurate), http (an
            OpenAI-compatible service named by the ``embed_*`` fields),
            hashing (deterministic, for tests), none (keyword search only).
        peer: palaces are peer-facing unless told otherwise: every call
            needs a channel, and sees only that channel's memories plus what
            was explicitly shared (``Scope.peer``).
        signals: record write sources, recall outcomes and feedback in the
            signals table (never in the memories themselves).
        scorer: re-rank recall with the agent's learned scorer, once
            ``palace.signals.train()`` has trained one (off by default:
            BENCHMARKS.md, "Learned scorer").
        ann_rows: from this many embedded memories on, recall keeps an HNSW
            graph that proposes dense candidates (scored exactly); 0 turns it
            off (every row scored, at any size).
        index: where recall finds dense candidates and scores keywords:
            ``process`` (warm indexes in this process: every vector and
            text loaded once, then searched in memory), ``database``
            (PostgreSQL: pgvector's HNSW index, BM25 and the entity graph
            in SQL; the process holds no copy and is warm at once), or
            ``auto`` (the database on PostgreSQL from
            ``DEFAULT_DATABASE_ROWS`` memories, else the process).
        bulk_embed: how a bulk write (many new texts at once) gets its
            vectors from a slow model (the bundled MiniLM, an http
            service): ``background`` (stored at once, embedded after by a
            background upgrade; found by their words until then) or
            ``inline`` (embedded before the write returns). Fast models
            (static, hashing) always embed inline.
        parts: embed the parts of long texts too, for the re-ranker
            (``retrieval/parts.py``); off saves their embedding time and
            space, and recall then reads each text as a whole.
        replicas: URLs of a PostgreSQL palace's streaming replicas, which
            serve its reads once they replayed the process's writes.
        tokens: the HTTP server's bearer tokens (``AGENT=TOKEN`` pairs), if set.
        retention_every: seconds between the retention runs of a long-running
            process (``retention.background``); 0: it runs none.
        extract_url / extract_model / extract_key_env: an optional LLM entity
            extractor (OpenAI-compatible chat completions).
    """

    agent_id: str = DEFAULT_AGENT
    max_content_chars: int = DEFAULT_MAX_CONTENT
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    embedder: str = "local"
    embed_url: str | None = None
    embed_model: str | None = None
    embed_dimensions: int | None = None
    embed_key_env: str | None = None
    peer: bool = False
    signals: bool = True
    scorer: bool = False
    ann_rows: int = DEFAULT_ANN_ROWS
    index: str = "auto"
    bulk_embed: str = "background"
    parts: bool = True
    replicas: tuple[str, ...] = field(default=(), repr=False)  # URLs may hold passwords
    tokens: str | None = field(default=None, repr=False)
    retention_every: int = DEFAULT_RETENTION_EVERY
    extract_url: str | None = None
    extract_model: str | None = None
    extract_key_env: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``MINDPALACE_*`` variables, defaults elsewhere."""
        env = os.environ if env is None else env
        embedder = (env.get(ENV_EMBEDDER) or "local").strip().lower()
        if embedder not in EMBEDDERS:
            raise ConfigError(
                f"invalid {ENV_EMBEDDER} {embedder!r}", setting=ENV_EMBEDDER, valid=EMBEDDERS
            )
        index = (env.get(ENV_INDEX) or "auto").strip().lower()
        if index not in INDEXES:
            raise ConfigError(f"invalid {ENV_INDEX} {index!r}", setting=ENV_INDEX, valid=INDEXES)
        bulk = (env.get(ENV_BULK_EMBED) or "background").strip().lower()
        if bulk not in BULK_EMBEDS:
            raise ConfigError(
                f"invalid {ENV_BULK_EMBED} {bulk!r}", setting=ENV_BULK_EMBED, valid=BULK_EMBEDS
            )
        dims = env.get(ENV_EMBED_DIMS)
        return cls(
            agent_id=env.get(ENV_AGENT) or DEFAULT_AGENT,
            max_content_chars=int(_positive(env, ENV_MAX_CONTENT, DEFAULT_MAX_CONTENT)),
            busy_timeout=_positive(env, ENV_BUSY_TIMEOUT, DEFAULT_BUSY_TIMEOUT),
            embedder=embedder,
            embed_url=env.get(ENV_EMBED_URL) or None,
            embed_model=env.get(ENV_EMBED_MODEL) or None,
            embed_dimensions=int(_positive(env, ENV_EMBED_DIMS, 0)) if dims else None,
            embed_key_env=env.get(ENV_EMBED_KEY_ENV) or None,
            peer=_switch(env, ENV_PEER, False),
            signals=_switch(env, ENV_SIGNALS, True),
            scorer=_switch(env, ENV_SCORER, False),
            ann_rows=_count(env, ENV_ANN_ROWS, DEFAULT_ANN_ROWS),
            index=index,
            bulk_embed=bulk,
            parts=_switch(env, ENV_PARTS, True),
            replicas=tuple(u.strip() for u in env.get(ENV_REPLICAS, "").split(",") if u.strip()),
            tokens=env.get(ENV_TOKENS) or None,
            retention_every=_count(env, ENV_RETENTION_EVERY, DEFAULT_RETENTION_EVERY),
            extract_url=env.get(ENV_EXTRACT_URL) or None,
            extract_model=env.get(ENV_EXTRACT_MODEL) or None,
            extract_key_env=env.get(ENV_EXTRACT_KEY_ENV) or None,
        )


def quiet_onnxruntime() -> None:
    """Turn onnxruntime's telemetry off in this process before it loads.

    Its Linux and macOS builds otherwise create a device id and an event
    queue under ``~/.cache/Microsoft/DeveloperTools`` on every run and send
    them to Microsoft; its variable must be set before it loads. A value the
    user set is left as it is.
    """
    os.environ.setdefault(ENV_ORT_TELEMETRY, "1")
