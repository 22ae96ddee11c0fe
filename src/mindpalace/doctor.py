"""``mindpalace doctor``: is this palace healthy, and if not, what fixes it.

Each check is a ``Check``: its name, whether it passed, what was found and,
for a problem, the command that fixes it. The checks:

=================== ==========================================================
``palace``          the SQLite file exists (looked at before opening: opening
                    would create it)
``model``           the configured embedding model: its files are there (the
                    bundled models) and it loads and embeds a text
``palace_model``    the model the palace's vectors come from is the configured
                    one (else ``mindpalace reindex``)
``schema``          the palace's schema version is the one this code writes
``integrity``       SQLite: ``PRAGMA integrity_check`` (``quick_check`` past
                    ``QUICK_BYTES``) and the full-text index's own check
``connection``      PostgreSQL: the server answers
``pending_vectors`` no memory waits for its vector (a bulk write's, or one
                    stored while the model failed)
``warm_cache``      the warm-index files beside a SQLite palace are readable
                    and this user's (a stale one is noted, not a problem:
                    it is never loaded, and replaced on the next save)
``telemetry``       whether recall and writes make OpenTelemetry spans (the
                    ``telemetry`` extra installed; informational)
``metrics``         that ``mindpalace serve`` answers ``GET /metrics`` (with
                    the ``server`` extra; informational)
``retention``       the retention rules, when retention last ran, and how many
                    memories have outlived a rule (a problem when some have
                    and no run happened in twice the background period)
``erasure_cleanup`` whether the disk cleanup after each erasure finished (a
                    problem when one is still pending after an hour)
``extra:NAME``      each optional extra, installed or not (informational:
                    always ``ok``; ``fix`` installs a missing one)
=================== ==========================================================

``examine`` checks an open engine (``Palace.doctor``). ``before_opening``
looks at a palace without opening it, since opening migrates an older
schema and fails on a newer or damaged one: the command line asks it first
and opens the palace only when it finds nothing wrong.
"""

from __future__ import annotations

import shlex
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from mindpalace import embed, extras
from mindpalace.config import Settings
from mindpalace.embed import Embedder, LocalEmbedder, StaticEmbedder
from mindpalace.embed.texts import vector_key
from mindpalace.engine import Engine
from mindpalace.errors import ConfigError, EmbeddingError
from mindpalace.models import Scope
from mindpalace.retrieval import warm_cache
from mindpalace.retrieval.time import stored as stored_times
from mindpalace.store.base import SERVER_SCHEMES, redact_url
from mindpalace.store.migrations import latest_version
from mindpalace.store.roles import Handle, VectorRows
from mindpalace.store.sqlite import SQLiteStore

__all__ = ["QUICK_BYTES", "Check", "DoctorReport", "before_opening", "examine"]

#: from this file size on, SQLite's integrity is checked with ``quick_check``
QUICK_BYTES = 1 << 30
#: seconds to wait for a PostgreSQL server to answer
CONNECT_TIMEOUT = 5
#: the bundled models ship in the package: reinstalling it restores them
_REINSTALL = "pip install --force-reinstall mindpalace"
_MEANWHILE = " (meanwhile MINDPALACE_EMBEDDER=static or none works without it)"
_HTTP_FIX = (
    "check MINDPALACE_EMBED_URL, MINDPALACE_EMBED_MODEL and MINDPALACE_EMBED_DIMS,"
    " and that the service answers"
)


@dataclass(frozen=True, slots=True)
class Check:
    """One finding of ``mindpalace doctor``.

    Attributes:
        name: what was checked (``model``, ``schema``, ``extra:server``...).
        ok: whether it passed.
        detail: what was found, in a sentence.
        fix: the command that fixes a problem (for an extra that is not
            installed, the one that installs it); None when there is nothing
            to do.
    """

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """What ``mindpalace doctor`` found in one palace.

    Attributes:
        palace: where the palace is (a URL without its password).
        checks: every check, in the order they ran.
    """

    palace: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Whether no check found a problem."""
        return all(check.ok for check in self.checks)

    @property
    def problems(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(check for check in self.checks if not check.ok)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "palace": self.palace,
            "ok": self.ok,
            "problems": len(self.problems),
            "checks": [check.to_dict() for check in self.checks],
        }


# -- the checks ----------------------------------------------------------------------


def _command(location: str, command: str) -> str:
    """``mindpalace --db LOCATION COMMAND``, ready to paste (a URL whose
    password was redacted says where it goes)."""
    if "***" in location:
        return f"mindpalace --db '<{location} with its password>' {command}"
    return f"mindpalace --db {shlex.quote(location)} {command}"


def check_model(
    embedder: Embedder | None, *, broken: str | None = None, fix: str = _REINSTALL
) -> Check:
    """The embedding model: its files present (a bundled model) and loadable;
    ``broken`` says why the configured one could not be built (``fix`` then)."""
    if embedder is None:
        if broken is not None:
            detail = f"the embedding model cannot be built: {broken}"
            return Check("model", False, detail + (_MEANWHILE if fix == _REINSTALL else ""), fix)
        return Check("model", True, "none configured (MINDPALACE_EMBEDDER=none): keyword search")
    config = embedder.config
    name = f"{config.provider}/{config.model} ({config.dimensions}-d)"
    where = ""
    if isinstance(embedder, (LocalEmbedder, StaticEmbedder)):
        folder = embedder.model_dir
        where = f" from {folder}"
        absent = [f for f in embedder.files if not (folder / f).is_file()]
        if absent:
            detail = f"{name}: {', '.join(absent)} missing from {folder}{_MEANWHILE}"
            return Check("model", False, detail, _REINSTALL)
    try:
        embedder.embed_one("mindpalace doctor")
    except EmbeddingError as exc:
        detail = f"{name} does not load{where}: {exc}"
        if where:
            return Check("model", False, detail + _MEANWHILE, _REINSTALL)
        return Check("model", False, detail, _HTTP_FIX)
    return Check("model", True, f"{name} loads{where}")


class _ModelRecord(VectorRows, Handle, Protocol):
    """What ``check_palace_model`` reads: the model recorded for the
    palace's vectors, and where the palace is (for the command to run)."""


def check_palace_model(store: _ModelRecord, embedder: Embedder | None) -> Check:
    """The model the palace's vectors come from against the configured one."""
    recorded = store.embedding_config()
    if recorded is None:
        return Check("palace_model", True, "no model recorded yet (the first write records it)")
    stored = f"{recorded.provider}/{recorded.model} ({recorded.dimensions}-d)"
    if embedder is None:
        return Check("palace_model", True, f"vectors from {stored}, unused: keyword search only")
    if recorded != embedder.config:
        wanted = embedder.config
        return Check(
            "palace_model",
            False,
            f"the palace's vectors come from {stored}, the configured model is"
            f" {wanted.provider}/{wanted.model} ({wanted.dimensions}-d): semantic search is"
            " off until reindex re-embeds every memory",
            _command(store.location, "reindex"),
        )
    return Check("palace_model", True, f"vectors from {stored}, the configured model")


def check_schema(version: int | None, location: str) -> Check:
    """The palace's schema version against the one this code writes."""
    latest = latest_version()
    if version is None:
        return Check(
            "schema",
            False,
            f"{location} holds no palace (no schema_migrations table); opening it makes one",
            _command(location, "stats"),
        )
    if version > latest:
        return Check(
            "schema",
            False,
            f"schema version {version} is newer than this mindpalace writes ({latest})",
            "pip install --upgrade mindpalace",
        )
    if version < latest:
        return Check(
            "schema",
            False,
            f"schema version {version}, this mindpalace writes {latest}: opening the palace"
            " applies the missing migrations (back it up first)",
            f"cp {shlex.quote(location)} {shlex.quote(location + '.bak')}"
            f" && {_command(location, 'stats')}",
        )
    return Check("schema", True, f"version {version}, the latest")


def _integrity(result: str, location: str) -> Check:
    if result == "ok":
        return Check("integrity", True, "ok")
    return Check(
        "integrity",
        False,
        f"SQLite reports: {result}; restore the file from a backup, or recover what is"
        " readable into a new file",
        f"sqlite3 {shlex.quote(location)} .recover | sqlite3 recovered.db",
    )


def check_integrity(store: Handle) -> Check:
    """SQLite's integrity check of the file; for PostgreSQL, that it answers."""
    if not isinstance(store, SQLiteStore):
        try:
            store.schema_version()
        except Exception as exc:  # whatever the driver raises, the server did not answer
            return Check("connection", False, f"{store.location}: {exc}", _CONNECT_FIX)
        return Check("connection", True, f"{store.location} answers")
    location = store.location
    quick = location != ":memory:" and _size(Path(location)) >= QUICK_BYTES
    try:
        result = store.integrity_check(quick=quick)
    except sqlite3.DatabaseError as exc:
        result = str(exc)
    return _integrity(result, location)


def check_pending(engine: Engine) -> Check:
    """Memories that wait for their vector: a deferred bulk write's texts,
    and memories written while the model failed (none without a usable
    model: nothing would embed them)."""
    semantic = engine.semantic
    if semantic.embedder is None or not semantic.available:
        return Check("pending_vectors", True, "none (no usable model to embed with)")
    waiting = semantic.pending_vectors()
    unembedded = engine.store.count_unembedded()
    found = []
    if waiting:
        found.append(f"{waiting} texts wait for their vectors (a bulk write's)")
    if unembedded:
        found.append(f"{unembedded} memories have none (written while the model failed)")
    if found:
        return Check(
            "pending_vectors",
            False,
            f"{'; '.join(found)}: recall finds them by their words only until reindex embeds them",
            _command(engine.store.location, "reindex"),
        )
    return Check("pending_vectors", True, "none")


#: at most this many memories without kept stated times are counted (each
#: is read whole: a count past this says no more)
_TIMES_COUNTED = 1_000


def check_stated_times(engine: Engine) -> Check:
    """Memories whose stated times are not kept with them (written by an
    earlier version): recall reads their texts instead, slower, with the
    same result, until reindex keeps them. Never a problem."""
    form = stored_times.VERSION + ":"
    missing = len(engine.store.times_to_keep(form, after_seq=0, limit=_TIMES_COUNTED + 1))
    if not missing:
        return Check("stated_times", True, "kept with every memory")
    count = f"{_TIMES_COUNTED:,}+" if missing > _TIMES_COUNTED else f"{missing:,}"
    return Check(
        "stated_times",
        True,
        f"{count} memories written by an earlier version: recall reads the times they state"
        f" from their text (slower, the same hits) until"
        f" `{_command(engine.store.location, 'reindex')}` keeps them",
    )


#: the oldest vectors the doctor reads for their form (float32 ones are the
#: oldest; reading every vector took 31 s at a million)
_VECTORS_READ = 10_000


def check_vector_form(engine: Engine) -> Check:
    """Vectors of the palace's model kept in float32 (written by an
    earlier version): read as they are, in twice the space of the half
    precision written now, until reindex rewrites them. Never a problem."""
    config = engine.store.embedding_config()
    if config is None:
        return Check("vector_form", True, "no vectors yet")
    wide = engine.store.wide_vectors(vector_key(config), limit=_VECTORS_READ)
    if not wide:
        return Check("vector_form", True, "every vector in half precision")
    return Check(
        "vector_form",
        True,
        f"{wide:,} vectors written by an earlier version in float32 (of the oldest"
        f" {_VECTORS_READ:,} read): twice the space until"
        f" `{_command(engine.store.location, 'reindex')}` rewrites them in half precision",
    )


def check_warm_cache(engine: Engine) -> Check:
    """The warm-index files beside a SQLite palace."""
    folder = warm_cache.folder_of(engine.store)
    if folder is None:
        return Check("warm_cache", True, "none kept (an in-memory or PostgreSQL palace)")
    if not folder.exists():
        return Check("warm_cache", True, f"none saved yet ({folder})")
    remove = f"rm -r {shlex.quote(str(folder))}"
    embedder = engine.semantic.embedder
    model = vector_key(embedder.config) if embedder is not None else None
    epoch = engine.store.change_counters()[1]
    found: list[str] = []
    bad = False
    for name in warm_cache.FILES:
        state, meta = warm_cache.file_state(folder, name)
        if state == "absent":
            continue
        if state != "ok":
            bad = True
            found.append(f"{name} is {state}")
        elif meta.get("model") != model or meta.get("epoch") != epoch:
            found.append(f"{name} is stale (never loaded; replaced on the next save)")
        else:
            found.append(f"{name} matches ({meta.get('rows')} rows)")
    detail = f"{folder}: {'; '.join(found) or 'empty'}"
    if bad:
        detail += " (never loaded; removing the folder is safe: a process that warms the"
        detail += " palace builds and saves it again)"
    return Check("warm_cache", not bad, detail, remove if bad else None)


def check_telemetry() -> list[Check]:
    """Whether spans are made, and where the server's metrics are
    (informational: both always ``ok``). Found, not imported."""
    if extras.missing("telemetry"):
        spans = Check(
            "telemetry",
            True,
            "off: opentelemetry-api is not installed, so recall and writes make no spans",
            extras.install_command("telemetry"),
        )
    else:
        spans = Check(
            "telemetry",
            True,
            "on: recall (a span per stage) and writes make OpenTelemetry spans, sent"
            " wherever the program's tracer provider sends them (none set: dropped)",
        )
    if extras.missing("server"):
        metrics = Check(
            "metrics",
            True,
            "mindpalace serve, which answers GET /metrics, needs the server extra",
            extras.install_command("server"),
        )
    else:
        metrics = Check(
            "metrics",
            True,
            "mindpalace serve answers GET /metrics (Prometheus text 0.0.4, the same tokens"
            " as /v1): request, recall-stage and write timings, pending vectors, palace size",
        )
    return [spans, metrics]


def check_retention(engine: Engine) -> Check:
    """The retention rules, their last run, and what has outlived them."""
    store = engine.store
    rules = store.retention_rules(None)
    if not rules:
        return Check("retention", True, "no rule (memories are kept until erased)")
    now = engine.clock()
    due = {m.id for rule in rules for m in store.erasable(Scope.management(), rule.filters(now))}
    ran = store.retention_ran_at()
    last = (
        "never ran"
        if ran is None
        else f"last ran {datetime.fromtimestamp(ran, timezone.utc):%Y-%m-%d %H:%M} UTC"
    )
    detail = f"{len(rules)} rules; {last}; {len(due)} memories have outlived their rule"
    every = engine.settings.retention_every
    late = ran is None or every == 0 or now.timestamp() - ran > 2 * every
    if due and late:
        detail += " (no long-running process applies the rules: run apply, or a server)"
        return Check(
            "retention",
            False,
            detail,
            _command(store.location, "--all-agents retention apply --yes"),
        )
    return Check("retention", True, detail)


# A cleanup after an erasure pending this long is not running any more
# (erasing an agent of a million memories on PostgreSQL: the index rebuild
# and the VACUUM after it took 11-13 minutes).
_CLEANUP_LATE = 3600.0


def check_erasure_cleanup(engine: Engine) -> Check:
    """Whether the disk cleanup after each erasure has finished."""
    receipts = engine.store.erasures(Scope.management())
    pending = [r for r in receipts if r.cleanup == "pending"]
    if not pending:
        return Check("erasure_cleanup", True, "done after every erasure" if receipts else "none")
    oldest = min(r.at for r in pending)
    detail = f"{len(pending)} erasures' cleanup pending since {oldest:%Y-%m-%d %H:%M} UTC"
    if engine.clock().timestamp() - oldest.timestamp() < _CLEANUP_LATE:
        return Check("erasure_cleanup", True, detail + " (running in the process that erased)")
    return Check(
        "erasure_cleanup",
        False,
        detail + " (the process that erased stopped first; any erasure cleans up after"
        " every earlier one)",
        _command(engine.store.location, "--all-agents retention apply --yes"),
    )


def check_extras() -> list[Check]:
    """Each optional extra, installed or not (informational)."""
    checks = []
    for extra in extras.EXTRAS:
        absent = extras.missing(extra)
        if absent:
            detail = f"not installed (missing: {', '.join(absent)})"
            checks.append(Check(f"extra:{extra}", True, detail, extras.install_command(extra)))
        else:
            checks.append(Check(f"extra:{extra}", True, "installed"))
    return checks


_CONNECT_FIX = "start the PostgreSQL server, or correct the URL (--db or MINDPALACE_DB)"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# -- a palace, open or not --------------------------------------------------------------


def examine(engine: Engine) -> DoctorReport:
    """Every check, on an open palace's engine (``Palace.doctor``)."""
    store = engine.store
    semantic = engine.semantic
    checks = [
        check_model(semantic.embedder, broken=semantic.broken),
        check_palace_model(store, semantic.embedder),
        check_schema(store.schema_version(), store.location),
        check_integrity(store),
        check_pending(engine),
        check_stated_times(engine),
        check_vector_form(engine),
        check_warm_cache(engine),
        *check_telemetry(),
        check_retention(engine),
        check_erasure_cleanup(engine),
        *check_extras(),
    ]
    return DoctorReport(store.location, tuple(checks))


def before_opening(target: str | Path, settings: Settings) -> DoctorReport | None:
    """What is wrong with the palace at ``target`` that opening it would
    change or fail on: a missing file, a server that does not answer, a
    schema of another version, a damaged file. None when it may be opened
    and ``examine``d; else a report of those problems with the model,
    telemetry and extras checks.

    Raises:
        ConfigError: an unknown URL scheme (naming the valid ones).
    """
    text = str(target)
    if text == ":memory:":
        return None
    if text.startswith(SERVER_SCHEMES):
        location = redact_url(text)
        version, found = _postgres(text, location)
    else:
        if "://" in text and not text.startswith("sqlite:///"):
            raise ConfigError(
                f"no backend for {text.split('://', 1)[0]!r} URLs; valid options: a file path,"
                " sqlite:///PATH, :memory:, postgresql://USER@HOST/DB"
            )
        path = Path(text.removeprefix("sqlite://")).expanduser()
        location = str(path)
        version, found = _sqlite(path)
    answered = all(check.ok for check in found)
    if answered and version == latest_version():
        return None
    if version is not None or answered:  # else what was found says why none was read
        found.append(check_schema(version, location))
    try:
        model = check_model(embed.from_settings(settings))
    except EmbeddingError as exc:
        model = check_model(None, broken=str(exc))
    except ConfigError as exc:  # the http embedder's settings
        model = check_model(None, broken=str(exc), fix=_HTTP_FIX)
    return DoctorReport(location, (model, *found, *check_telemetry(), *check_extras()))


def _sqlite(path: Path) -> tuple[int | None, list[Check]]:
    """The schema version of the SQLite palace at ``path``, read without
    writing, and the problems found on the way (the integrity check's
    result when the version is not the latest)."""
    location = str(path)
    if not path.is_file():
        return None, [
            Check(
                "palace",
                False,
                f"no palace at {location} (stats creates an empty one)",
                _command(location, "stats"),
            )
        ]
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return None, [_integrity(str(exc), location)]
    try:
        try:
            row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            version: int | None = int(row[0] or 0)
        except sqlite3.OperationalError:  # no such table: not a palace (yet)
            version = None
        if version == latest_version():
            return version, []
        pragma = "quick_check" if _size(path) >= QUICK_BYTES else "integrity_check"
        result = str(conn.execute(f"PRAGMA {pragma}").fetchone()[0])
    except sqlite3.DatabaseError as exc:  # not a database, or damaged past reading
        return None, [_integrity(str(exc), location)]
    finally:
        conn.close()
    return version, [] if result == "ok" else [_integrity(result, location)]


def _postgres(url: str, location: str) -> tuple[int | None, list[Check]]:
    """The schema version of the PostgreSQL palace at ``url``, and a failed
    ``connection`` check when the server does not answer."""
    try:
        import psycopg  # noqa: PLC0415 - the postgres extra is optional
    except ImportError:
        detail = "a PostgreSQL palace needs the postgres extra, which is not installed"
        return None, [Check("connection", False, detail, extras.install_command("postgres"))]
    try:
        with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
            try:
                row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            except psycopg.errors.UndefinedTable:
                return None, [Check("connection", True, f"{location} answers")]
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        return None, [Check("connection", False, f"{location}: {reason}", _CONNECT_FIX)]
    version = int(row[0] or 0) if row is not None else 0
    return version, [Check("connection", True, f"{location} answers")]
