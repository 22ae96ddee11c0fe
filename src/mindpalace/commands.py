"""The ``mindpalace`` commands: each runs one parsed command line
(``arguments``) against a palace and gives what it prints.

JSON on stdout by default (the subprocess contract: command name first, JSON
out), ``--plain`` for people. Errors go to stderr: exit 2 for invalid input
(naming the valid options), 1 for every other failure. ``run`` is the one
way in, for the command line in the calling process (``cli``) and for the
daemon with its warm palaces (``daemon``) alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mindpalace import plain, reading, retention, writing
from mindpalace.arguments import ENTITY_ACTIONS, option_for
from mindpalace.config import Settings, default_db_path
from mindpalace.daemonctl import daemon_command
from mindpalace.doctor import before_opening
from mindpalace.draft import DRAFT_FIELDS, UPDATE_FIELDS, Changes, Draft
from mindpalace.embed.texts import embed_text
from mindpalace.errors import ConfigError, MindPalaceError, ValidationError
from mindpalace.family import DIRECTIONS
from mindpalace.formats import CONVERSATION_FORMATS, FORMATS, read_conversation
from mindpalace.formats.mem0 import AGENT_FROM
from mindpalace.importing import import_lines
from mindpalace.models import (
    Category,
    MemoryKind,
    MemoryType,
    Source,
    StoreKind,
    Visibility,
    parse_enum,
)
from mindpalace.palace import Palace
from mindpalace.progress import ProgressLine
from mindpalace.recall_request import FILTER_FIELDS, RECALL_FIELDS, RecallRequest
from mindpalace.retention_rules import parse_days, rule_key
from mindpalace.retrieval.modes import check_mode
from mindpalace.safety import one_line
from mindpalace.selection import Selection, parse_selection
from mindpalace.server import require_extra
from mindpalace.store import migrate
from mindpalace.validation import check_limit, parse_json, utf8_lines
from mindpalace.web.limits import ConnectionLimits
from mindpalace.wire import palace_target

__all__ = ["Opener", "retention_job", "run"]

Handler = Callable[[Palace, argparse.Namespace], Any]


class Text(str):
    """A command's result written for people: printed as it is, not as JSON."""


class Failed(dict[str, Any]):
    """A command's result, printed as any other, that still exits 1: the
    problems ``doctor`` found."""


# -- handlers ------------------------------------------------------------------------


def _update(palace: Palace, args: argparse.Namespace) -> Any:
    sent = {name: getattr(args, name) for name in UPDATE_FIELDS}
    if sent["content"] == "-":
        sent["content"] = sys.stdin.read()
    if sent["metadata"] is not None:
        try:
            sent["metadata"] = json.loads(sent["metadata"])
        except json.JSONDecodeError as exc:
            raise ValidationError("metadata", args.metadata, reason=f"--metadata: {exc}") from None
    memory = writing.change(palace.seat, args.id, Changes.given(**sent))
    return {**memory.to_dict(), "previous_id": args.id, "updated": memory.id != args.id}


def _selection(args: argparse.Namespace) -> Selection:
    return parse_selection(
        args.kind,
        args.value,
        types=args.types,
        categories=args.categories,
        stores=args.stores,
        created_before=args.before,
    )


def _remember(palace: Palace, args: argparse.Namespace) -> Any:
    # The command's options are named after the draft's fields (the shared
    # --channel is the palace's, not an option of the memory).
    sent = {name: value for name, value in vars(args).items() if name in DRAFT_FIELDS}
    sent.pop("channel", None)
    if sent["content"] == "-":  # bytes, so text that is not UTF-8 is named, not a traceback
        content = "".join(utf8_lines(sys.stdin.buffer, "standard input"))
        sent["content"] = content.replace("\r\n", "\n").replace("\r", "\n")
    if sent["metadata"]:
        sent["metadata"] = parse_json(sent["metadata"], "--metadata", "metadata")
    return writing.remember(palace.seat, Draft.of(**sent)).to_dict()


def _named(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    """The options named after ``names`` (a request's fields or filters)."""
    sent = {name: value for name, value in vars(args).items() if name in names}
    if "projects" in sent:
        sent["projects"] = sent["projects"] or None  # --project '' names no project
    return sent


def _recall(palace: Palace, args: argparse.Namespace) -> Any:
    hits = reading.recall(palace.seat, RecallRequest.of(**_named(args, RECALL_FIELDS)))
    if hits.notice:
        print(f"mindpalace recall: {hits.notice}", file=sys.stderr)
    return [hit.to_dict(explain=args.explain) for hit in hits]


def _search(palace: Palace, args: argparse.Namespace) -> Any:
    results = palace.search(
        args.query,
        kinds=args.kinds,
        project=args.project,
        limit=args.limit,
        include_archived=args.include_archived,
    )
    return results.to_dict()


def _list(palace: Palace, args: argparse.Namespace) -> Any:
    memories = palace.memories(
        limit=args.limit,
        offset=args.offset,
        sources=args.sources,
        include_superseded=args.include_superseded,
        **_named(args, FILTER_FIELDS),
    )
    return [m.to_dict() for m in memories]


def _progress(label: str, args: argparse.Namespace) -> ProgressLine:
    """Progress on standard error: a bar on a terminal or with --progress,
    else one summary line when a long job ends."""
    return ProgressLine(label, force=args.progress)


def _export(palace: Palace, args: argparse.Namespace) -> Any:
    progress = _progress("export", args)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            count = palace.export_jsonl(out, progress=progress)
        return {"exported": count, "path": args.output}
    palace.export_jsonl(sys.stdout, progress=progress)
    return None


def _import(palace: Palace, args: argparse.Namespace) -> Any:
    options = {"format": args.format, "session": args.session, "agent_from": args.agent_from}
    progress = _progress("import", args)
    if args.file == "-":
        lines = utf8_lines(sys.stdin.buffer, "standard input")
        summary = import_lines(palace, lines, where="standard input", progress=progress, **options)
    else:
        summary = palace.import_file(
            args.file, sections=args.sections, progress=progress, **options
        )
    return summary.to_dict()


def _ingest(palace: Palace, args: argparse.Namespace) -> Any:
    try:
        loaded = read_conversation(args.file, format=args.format, session=args.session)
    except ValidationError as exc:
        raise ValidationError(exc.field, exc.value, reason=f"{exc}; no turn was stored") from None
    started = time.perf_counter()
    stored = palace.add_messages(
        loaded.messages,
        session=args.session,
        progress=_progress("ingest", args),
        atomic=args.atomic,
    )
    seconds = time.perf_counter() - started
    texts = [embed_text(m.title, m.content) for m in stored]
    return {
        "format": loaded.format,
        "ingested": len(stored),
        "sessions": len({m.session for m in stored}),
        "split": sum(1 for m in stored if m.metadata.get("part") == 1),
        "ignored": loaded.ignored,
        "seconds": round(seconds, 3),
        "turns_per_second": round(len(stored) / seconds, 1) if seconds else None,
        # this call's turns embedded in the background after the write (a bulk
        # write with a slow model)
        "vectors_pending": palace.semantic.waiting(texts),
    }


def _feedback(palace: Palace, args: argparse.Namespace) -> Any:
    signal = palace.feedback(args.id, useful=args.useful)
    return {"memory_id": args.id, "useful": args.useful, "recorded": signal is not None}


def _signals(palace: Palace, args: argparse.Namespace) -> Any:
    if args.action == "train":
        return palace.signals.train().to_dict()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            count = palace.signals.export_pairs(out)
        return {"pairs": count, "path": args.output}
    palace.signals.export_pairs(sys.stdout)
    return None


def _reindex(palace: Palace, args: argparse.Namespace) -> Any:
    embedded = palace.reindex(progress=_progress("reindex", args))
    config = palace.semantic.embedder.config if palace.semantic.embedder else None
    return {
        "embedded": embedded,
        "model": None if config is None else config.model,
        "dimensions": None if config is None else config.dimensions,
    }


_DEMO_MEMORIES = [
    (
        "We chose SQLite for the embedded store because many processes share one file.",
        "decision",
        ["storage", "architecture"],
    ),
    ("Alice prefers green tea and reviews pull requests in the morning.", "person", ["team"]),
    ("Deploy with `make release`; never push tags by hand.", "rule", ["deploy"]),
    (
        "Lesson: run the migration test from an empty file before every release.",
        "lesson",
        ["storage", "release"],
    ),
]


_DEMO_QUERIES = ("why did we choose sqlite", "how do I deploy", "release checklist storage")


def _demo(palace: Palace, args: argparse.Namespace) -> Any:
    for content, category, tags in _DEMO_MEMORIES:
        palace.remember(content, category=category, tags=tags)
    recalls = [(q, palace.recall(q, limit=3)) for q in _DEMO_QUERIES]
    kept = args.db is not None  # else a scratch palace, removed when the command ends
    if args.json:
        return {
            "palace": palace.store.location,
            "kept": kept,
            "remembered": len(_DEMO_MEMORIES),
            "recalls": [{"query": q, "hits": [h.to_dict() for h in hits]} for q, hits in recalls],
        }
    where = f"in {one_line(palace.store.location)}" if kept else "in a scratch palace"
    lines = [f"Remembered {len(_DEMO_MEMORIES)} memories {where}, then recalled:"]
    for query, hits in recalls:
        lines.append(f'\n  "{query}"')
        for hit in hits[:2]:
            lines.append(f"    {hit.score:.2f}  {one_line(hit.memory.content, max_chars=72)}")
        if not hits:
            lines.append("    (nothing)")
    lines.append("\nYour own palace: mindpalace remember TEXT, then mindpalace recall QUERY.")
    lines.append(
        ("The scratch palace is removed; " if not kept else "") + "--json shows every field."
    )
    return Text("\n".join(lines))


def _skills(palace: Palace, args: argparse.Namespace) -> Any:
    lib, which = palace.skills, args.skills_command
    if which == "import":
        return lib.import_path(
            args.path,
            visibility=args.visibility,
            group=args.group,
            progress=_progress("skills import", args),
        ).to_dict()
    if which == "activate":
        return [hit.to_dict() for hit in lib.activate(args.query, limit=args.limit)]
    if which == "get":
        return lib.get(args.name).to_dict()
    if which == "find":
        return [match.to_dict() for match in lib.find(args.tags, limit=args.limit)]
    return lib.consolidate()


def _retention(palace: Palace, args: argparse.Namespace) -> Any:
    rules, which = palace.retention, args.retention_command
    if which == "set":
        return rules.set(
            parse_days(args.days),
            store=args.store,
            category=args.category,
            type=args.type,
            agent_id=args.for_agent,
            every_agent=args.every_agent,
        ).to_dict()
    if which == "list":
        return [rule.to_dict() for rule in rules.list()]
    if which == "remove":
        return rules.remove(args.id).to_dict()
    return rules.apply(confirm=args.yes).to_dict()


def _entities(palace: Palace, args: argparse.Namespace) -> Any:
    """``entities [QUERY]``, ``entities separate NAME``, ``entities join SHORT FULL``."""
    words = list(args.query or [])
    action = words[0] if words and words[0] in ENTITY_ACTIONS else None
    given = words[1:] if action else words
    wanted = {"separate": 1, "join": 2}.get(action or "", 1)
    if len(given) > wanted or (action and len(given) < wanted):
        usage = {
            "separate": "entities separate NAME",
            "join": "entities join SHORT FULL",
        }.get(action or "", "entities [QUERY] (quote a query of several words)")
        raise ValidationError(
            "query",
            " ".join(words),
            reason=f"expected: {usage}; or entities separate NAME, entities join SHORT FULL",
        )
    if action == "separate":
        return {"separated": [link.to_dict() for link in palace.graph.separate_entity(given[0])]}
    if action == "join":
        joined = palace.graph.join_entities(given[0], given[1])
        return {"joined": [link.to_dict() for link in joined]}
    query = given[0] if given else None
    found = palace.graph.entities(query, types=args.types, limit=args.limit, offset=args.offset)
    return [e.to_dict() for e in found]


def _stats(palace: Palace, args: argparse.Namespace) -> Any:
    """The counts, and the retention rules that reach what they count."""
    return {
        **palace.stats().to_dict(),
        "retention": [rule.to_dict() for rule in palace.retention.list()],
    }


@contextmanager
def retention_job(palace: Palace) -> Iterator[threading.Event]:
    """Apply the retention rules in the background while the block runs
    (``retention.background``), through the management view of ``palace``'s
    engine as agent ``retention``; yields the event set after each run."""
    job = Palace(engine=palace.engine, agent_id=retention.JOB_AGENT, management=True, peer=False)
    with retention.background(job) as ran:
        yield ran


def _mcp(palace: Palace, args: argparse.Namespace) -> Any:
    require_extra()
    from mindpalace.server.mcp import run_stdio  # noqa: PLC0415 - optional extra

    with retention_job(palace):
        run_stdio(palace, args.tools)


def _serve(palace: Palace, args: argparse.Namespace) -> Any:
    require_extra()
    from mindpalace.server.http import serve  # noqa: PLC0415 - optional extra
    from mindpalace.web.identity import is_loopback, load_tokens  # noqa: PLC0415

    check_limit(args.threads, low=1, high=256, field="threads")
    check_limit(args.workers, low=1, high=64, field="workers")
    check_limit(args.max_body, low=1024, high=1 << 31, field="max_body")
    limits = _limits(args)
    if args.auth == "none" and not is_loopback(args.host):
        raise ValidationError(
            "auth", "none", reason=f"--auth none is refused on non-loopback host {args.host}"
        )
    tokens = load_tokens(
        args.auth, env_tokens=palace.settings.tokens, default_agent=palace.scope.agent_id
    )
    if args.workers > 1:
        from mindpalace.server.metering import MetricsFolder  # noqa: PLC0415 - optional extra
        from mindpalace.server.workers import serve_workers  # noqa: PLC0415 - optional extra

        folder = MetricsFolder.create()  # the workers sum their /metrics through it
        args.metrics_folder = str(folder.path)
        try:
            serve_workers(args, _serve_worker, host=args.host, port=args.port)
        finally:
            folder.remove()
        return None
    with retention_job(palace):
        serve(
            palace,
            tokens=tokens,
            host=args.host,
            port=args.port,
            max_body=args.max_body,
            threads=args.threads,
            limits=limits,
            tools=args.tools,
        )


def _limits(args: argparse.Namespace) -> ConnectionLimits:
    return ConnectionLimits(
        max_connections=args.max_connections,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        keep_alive=args.keep_alive,
        send_timeout=args.send_timeout,
        max_pipelined=args.max_pipelined,
    )


def _ui(palace: Palace, args: argparse.Namespace) -> Any:
    require_extra()
    from mindpalace.ui.local import run_local  # noqa: PLC0415 - optional extra

    check_limit(args.port, low=0, high=65535, field="port")
    run_local(
        palace,
        host=args.host,
        port=args.port,
        admin=args.all_agents,
        open_browser=not args.no_browser,
    )
    return None


def _serve_worker(args: argparse.Namespace, listener: socket.socket) -> None:
    """One process of ``serve --workers N``: its own palace, the shared socket."""
    from mindpalace.server.http import serve  # noqa: PLC0415 - optional extra
    from mindpalace.server.metering import MetricsFolder  # noqa: PLC0415
    from mindpalace.web.identity import load_tokens  # noqa: PLC0415

    with _open(args) as palace, retention_job(palace):
        tokens = load_tokens(
            args.auth, env_tokens=palace.settings.tokens, default_agent=palace.scope.agent_id
        )
        serve(
            palace,
            tokens=tokens,
            host=args.host,
            port=args.port,
            max_body=args.max_body,
            threads=args.threads,
            limits=_limits(args),
            tools=args.tools,
            listener=listener,
            metrics_folder=MetricsFolder(args.metrics_folder),
        )


_HANDLERS: dict[str, Handler] = {
    "remember": _remember,
    "recall": _recall,
    "personal-search": _search,
    "complete": lambda p, a: p.personal.complete_issue(a.id, completed=not a.reopen).to_dict(),
    "get": lambda p, a: {
        **p.get(a.id).to_dict(),
        "entities": [e.to_dict() for e in p.graph.mentions(a.id)],
    },
    "entities": _entities,
    "history": lambda p, a: [m.to_dict() for m in p.graph.history(a.id)],
    "what-do-i-know": lambda p, a: p.family.what_do_i_know(
        a.topic, limit=a.limit, per_group=a.per_group
    ).to_dict(),
    "why-did-we": lambda p, a: p.family.why_did_we(a.query, limit=a.limit).to_dict(),
    "who-owns": lambda p, a: p.family.who_owns(a.name, limit=a.limit).to_dict(),
    "depends-on": lambda p, a: p.family.depends_on(
        a.name, direction=a.direction, limit=a.limit
    ).to_dict(),
    "preflight": lambda p, a: p.family.preflight(a.action, limit=a.limit).to_dict(),
    "consolidate": lambda p, a: p.graph.consolidate(dry_run=a.dry_run).to_dict(),
    "forget": lambda p, a: {"forgotten": p.forget(a.id, hard=a.hard).id, "hard": a.hard},
    "erase": lambda p, a: p.erase(_selection(a), confirm=a.yes).to_dict(),
    "erasures": lambda p, a: [r.to_dict() for r in p.erasures(limit=a.limit)],
    "list": _list,
    "update": _update,
    "stats": _stats,
    "retention": _retention,
    "export": _export,
    "import": _import,
    "ingest": _ingest,
    "recent": lambda p, a: [m.to_dict() for m in p.recent(a.limit, session=a.session)],
    "search-messages": lambda p, a: [
        m.to_dict()
        for m in p.search_messages(a.phrase, limit=a.limit, around=a.around, session=a.session)
    ],
    "reindex": _reindex,
    "feedback": _feedback,
    "signals": _signals,
    "context": lambda p, a: p.context(a.query, max_tokens=a.max_tokens).to_dict(),
    "skills": _skills,
    "demo": _demo,
    "mcp": _mcp,
    "serve": _serve,
    "ui": _ui,
}


# -- output ---------------------------------------------------------------------------


@contextmanager
def _open(args: argparse.Namespace) -> Iterator[Palace]:
    groups = [g for g in (args.groups or "").split(",") if g.strip()]
    target: str | Path | None = args.db
    with ExitStack() as stack:
        if args.command == "demo" and target is None:  # removed when done, even on error
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="mindpalace-demo-"))
            target = Path(scratch) / "demo.db"
        palace = Palace(
            target,
            agent_id=args.agent,
            groups=groups,
            channel=args.channel,
            management=args.all_agents,
            peer=args.peer or None,
        )
        # A bulk write's vectors come after it; this process ends with the
        # command, so a job of its own embeds them (``vectorjob``), started
        # once, when the command's writes are done.
        deferred: list[bool] = []
        palace.engine.semantic.on_pending = lambda: deferred.append(True)
        try:
            with palace:
                yield palace
                _await_cleanup(palace, args)
        finally:
            where = None if target is None else str(target)
            if deferred and args.command != "demo" and where != ":memory:":
                from mindpalace import vectorjob  # noqa: PLC0415

                vectorjob.spawn(palace_target(where, os.environ, os.getcwd()))


# A command whose erasure's cleanup is still running this long after it
# says why it has not exited yet.
_CLEANUP_NOTICE_AFTER = 5.0


def _await_cleanup(palace: Palace, args: argparse.Namespace) -> None:
    """Before the palace closes (closing waits for the cleanup after an
    erasure, which at a million memories in PostgreSQL takes minutes): say
    on standard error what the command is waiting for, once it has waited
    ``_CLEANUP_NOTICE_AFTER`` seconds."""
    if palace.engine.cleanup.wait(_CLEANUP_NOTICE_AFTER):
        return
    sys.stderr.write(
        f"mindpalace {_name(args)}: the erasure is committed; waiting for the cleanup of what"
        " the erased rows left on disk before exiting (interrupted, the cleanup stays pending:"
        " doctor says so, and the next erasure's cleanup covers it)\n"
    )
    sys.stderr.flush()


_FIELD_WORD = re.compile(r"(?<![\w-])([a-z]+_[a-z_]+)(?![\w-])")


def _as_typed(exc: ValidationError, command: str, subcommand: str | None) -> ValidationError:
    """``exc`` naming its field, and any other argument its message names
    ("valid_to is before valid_from"), as the command line spells them."""
    spelled = {
        word: option
        for word in _FIELD_WORD.findall(str(exc))
        if (option := option_for(word, command, subcommand)) is not None
    }
    return exc.renamed(option_for(exc.field, command, subcommand) or exc.field, spelled)


def _name(args: argparse.Namespace) -> str:
    """The command as typed: ``skills get``, ``retention set``, ``recall``."""
    sub = getattr(args, "skills_command", None) or getattr(args, "retention_command", None)
    return " ".join(filter(None, (args.command, sub)))


def _precheck(args: argparse.Namespace) -> None:
    """Validate what needs no palace before opening one, so a rejected
    command does not even create the database file."""
    if args.command == "remember":
        for enum_cls, name in (
            (MemoryType, "type"),
            (StoreKind, "store"),
            (Category, "category"),
            (Source, "source"),
            (Visibility, "visibility"),
        ):
            parse_enum(enum_cls, getattr(args, name), name)
        if args.kind is not None:
            parse_enum(MemoryKind, args.kind, "kind")
    if args.command == "erase":
        _selection(args)
    if args.command == "retention" and args.retention_command == "set":
        parse_days(args.days)
        rule_key(agent_id=args.for_agent, store=args.store, category=args.category, type=args.type)
    if args.command == "context":
        check_limit(args.max_tokens, low=256, high=8192, field="max_tokens")
    if args.command in ("import", "ingest"):
        known = FORMATS if args.command == "import" else CONVERSATION_FORMATS
        if args.format not in known:
            raise ValidationError("format", args.format, valid=known)
    if args.command == "import" and args.agent_from not in (None, *AGENT_FROM):
        raise ValidationError("agent_from", args.agent_from, valid=AGENT_FROM)
    if args.command == "recall" and args.mode is not None:
        check_mode(args.mode)
    if args.command == "depends-on" and args.direction not in DIRECTIONS:
        raise ValidationError("direction", args.direction, valid=DIRECTIONS)
    if args.command == "serve" and args.all_agents:
        raise ValidationError(
            "all_agents",
            True,
            reason="--all-agents does not apply to serve: each request acts as its token's"
            " agent. Give the management view (every agent's memories) to an admin token:"
            " an admin:AGENT=TOKEN entry in the --auth tokens",
        )


Opener = Callable[[argparse.Namespace], AbstractContextManager[Palace]]


def _doctor(args: argparse.Namespace, opener: Opener) -> Any:
    """The palace's health; it is opened only when looking at it unopened
    found nothing that opening would change or fail on (``doctor``)."""
    target = args.db if args.db is not None else default_db_path()
    report = before_opening(target, Settings.from_env())
    if report is None:
        with opener(args) as palace:
            report = palace.doctor()
    return report.to_dict() if report.ok else Failed(report.to_dict())


def run(args: argparse.Namespace, opener: Opener = _open) -> tuple[int, str, str]:
    """Carry out parsed ``args`` with the palace ``opener`` gives: (exit
    status, standard output, standard error). The daemon runs commands
    through this with its warm palaces."""
    try:
        _precheck(args)
        if args.command == "migrate":  # two palaces, opened as stores: no agent, no model
            result = migrate(args.source, args.destination).to_dict()
        elif args.command == "daemon":  # the daemon opens the palace itself
            result = daemon_command(args)
        elif args.command == "doctor":  # looks before it opens
            result = _doctor(args, opener)
        else:
            with opener(args) as palace:
                result = _HANDLERS[args.command](palace, args)
    except (ValidationError, ConfigError) as exc:  # the caller's input or settings
        subcommand = getattr(args, "skills_command", None) or getattr(
            args, "retention_command", None
        )
        if isinstance(exc, ValidationError):  # named as the caller typed it: --after
            exc = _as_typed(exc, args.command, subcommand)
        return 2, "", f"mindpalace {_name(args)}: error: {exc}\n"
    except (MindPalaceError, OSError) as exc:
        return 1, "", f"mindpalace {_name(args)}: error: {exc}\n"
    if result is None:
        return 0, "", ""
    if isinstance(result, Text):  # written for people already
        return 0, result + "\n", ""
    code = 1 if isinstance(result, Failed) else 0
    if args.plain:
        return code, plain.render(_name(args), result) + "\n", ""
    return code, json.dumps(result, ensure_ascii=False, indent=2) + "\n", ""
