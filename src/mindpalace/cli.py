"""The ``mindpalace`` command: a thin shell over ``Palace``.

JSON on stdout by default (the subprocess contract: command name first, JSON
out), ``--plain`` for people. Errors go to stderr: exit 2 for invalid input
(naming the valid options), 1 for every other failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from mindpalace import __version__
from mindpalace.conversations import FORMATS, read_messages
from mindpalace.daemonctl import DEFAULT_IDLE, daemon_command
from mindpalace.errors import MindPalaceError, ValidationError
from mindpalace.family import DIRECTIONS
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
from mindpalace.retrieval.modes import MODES, check_mode
from mindpalace.server import DEFAULT_THREADS, require_extra
from mindpalace.store import migrate
from mindpalace.validation import check_limit

__all__ = ["build_parser", "main", "run"]

Handler = Callable[[Palace, argparse.Namespace], Any]


def _values(enum_cls: type[Any]) -> str:
    return ", ".join(m.value for m in enum_cls)


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted before and after the command name."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--db",
        default=default,
        help="palace file or URL (default: $MINDPALACE_DB or a per-user data directory)",
    )
    parser.add_argument(
        "--agent", default=default, help="agent id (default: $MINDPALACE_AGENT_ID or 'default')"
    )
    parser.add_argument(
        "--groups", default=default, help="comma-separated groups the agent belongs to"
    )
    parser.add_argument("--channel", default=default, help="peer channel to act through")
    parser.add_argument(
        "--plain",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="human-readable output instead of JSON",
    )
    parser.add_argument(
        "--all-agents",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="management access: every agent's memories (whole-palace export/import)",
    )
    parser.add_argument(
        "--peer",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="peer-facing: needs --channel; sees it plus what is explicitly shared",
    )


def _filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--type", dest="types", help=f"comma-separated: {_values(MemoryType)}")
    parser.add_argument("--store", dest="stores", help=f"comma-separated: {_values(StoreKind)}")
    parser.add_argument(
        "--category", dest="categories", help=f"comma-separated: {_values(Category)}"
    )
    parser.add_argument("--tags", help="comma-separated; matches memories with any of them")
    parser.add_argument("--visibility", help=f"comma-separated: {_values(Visibility)}")
    parser.add_argument("--after", help="created at or after (ISO 8601)")
    parser.add_argument("--before", help="created before (ISO 8601)")
    parser.add_argument(
        "--include-archived", action="store_true", help="also show archived memories"
    )
    parser.add_argument("--kind", dest="kinds", help=f"comma-separated: {_values(MemoryKind)}")
    parser.add_argument("--project", help="only memories of this project (exact name)")


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 - one line per option
    """The argument parser (exposed so tests can check every command has help)."""
    parser = argparse.ArgumentParser(
        prog="mindpalace",
        description="Local-first memory for AI agents: remember, then recall what matters.",
    )
    parser.add_argument("--version", action="version", version=f"mindpalace {__version__}")
    _common(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, parents=[common])

    p = command("remember", "Store a memory; prints it as JSON.")
    p.add_argument("content", help="the memory text ('-' reads standard input)")
    p.add_argument("--title", help="one-line title")
    p.add_argument("--type", default="unknown", help=f"one of: {_values(MemoryType)}")
    p.add_argument("--store", default="semantic", help=f"one of: {_values(StoreKind)}")
    p.add_argument("--category", default="fact", help=f"one of: {_values(Category)}")
    p.add_argument("--tags", help="comma-separated tags")
    p.add_argument("--source", default="manual", help=f"one of: {_values(Source)}")
    p.add_argument("--visibility", default="isolated", help=f"one of: {_values(Visibility)}")
    p.add_argument("--group", help="group name (with --visibility group)")
    p.add_argument("--constraint", action="store_true", help="a rule recall always surfaces")
    p.add_argument("--confidence", type=float, default=1.0, help="writer's certainty, 0-1")
    p.add_argument("--valid-from", help="when it became true (ISO 8601)")
    p.add_argument("--valid-to", help="when it stopped being true (ISO 8601)")
    p.add_argument("--metadata", help="extra fields as a JSON object")
    p.add_argument("--kind", help=f"one of: {_values(MemoryKind)} (default memory)")
    p.add_argument("--project", help="the project it belongs to (issues and specs)")
    p.add_argument(
        "--completed", action="store_const", const=True, help="a completed issue (--kind issue)"
    )
    p.add_argument("--date", help="when it happened (ISO 8601), e.g. a journal entry's day")

    p = command(
        "search", "Search journal, nodes, issues, specs and messages, each result attributed."
    )
    p.add_argument("query", help="free text; 'my journal entries about X' searches the journal")
    p.add_argument(
        "--kind", dest="kinds", help=f"comma-separated: {_values(MemoryKind)} (overrides the query)"
    )
    p.add_argument("--project", help="only this project (case-insensitive)")
    p.add_argument("--limit", type=int, default=10, help="1-100 (default 10)")
    p.add_argument("--include-archived", action="store_true", help="also search archived ones")

    p = command("recall", "Recall the memories most relevant to a query.")
    p.add_argument("query", help="free text")
    p.add_argument("--limit", type=int, default=10, help="1-100 (default 10)")
    _filter_options(p)
    p.add_argument("--explain", action="store_true", help="show each hit's stage ranks")
    p.add_argument(
        "--no-expand", action="store_true", help="no graph propagation (no associative_context)"
    )
    p.add_argument(
        "--mode",
        help=f"recall mode, a preference over kinds of memory: {', '.join(MODES)}"
        " (default general)",
    )

    p = command("what-do-i-know", "Everything stored about a topic, grouped by category.")
    p.add_argument("topic", help="the topic, in plain words")
    p.add_argument("--limit", type=int, default=25, help="memories in all, 1-100 (default 25)")
    p.add_argument("--per-group", type=int, default=5, help="per category, 1-20 (default 5)")

    p = command("why-did-we", "A decision, what it superseded, and what led to it, in time order.")
    p.add_argument("query", help="the decision, e.g. 'choose Convex'")
    p.add_argument("--limit", type=int, default=10, help="linked memories, 1-50 (default 10)")

    p = command("who-owns", "Who owns, maintains, leads or manages something (stated relations).")
    p.add_argument("name", help="the thing, e.g. 'the Billing service'")
    p.add_argument("--limit", type=int, default=10, help="owners at most, 1-50 (default 10)")

    p = command("depends-on", "What depends on something, or (--direction) what it depends on.")
    p.add_argument("name", help="the thing, e.g. Redis")
    p.add_argument(
        "--direction",
        default="dependents",
        help="dependents: what depends on NAME (default); dependencies: what NAME depends on",
    )
    p.add_argument("--limit", type=int, default=10, help="answers at most, 1-50 (default 10)")

    p = command(
        "preflight", "Rules, decisions, lessons, workflows, skills and events for an action."
    )
    p.add_argument("action", help="what you are about to do")
    p.add_argument("--limit", type=int, default=5, help="per group, 1-20 (default 5)")

    p = command("complete", "Mark an issue completed (or open again with --reopen).")
    p.add_argument("id", help="the issue's memory id")
    p.add_argument("--reopen", action="store_true", help="mark it open again")

    p = command("get", "Show one memory by id, with the entities it mentions.")
    p.add_argument("id", help="memory id")

    p = command("entities", "List the entities memories mention, most mentioned first.")
    p.add_argument("query", nargs="?", help="keep names or aliases containing this")
    p.add_argument("--type", dest="types", help=f"comma-separated: {_values(MemoryType)}")
    p.add_argument("--limit", type=int, default=50, help="1-1000 (default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip this many")

    p = command("history", "A fact's supersession chain, oldest first.")
    p.add_argument("id", help="memory id")

    p = command("consolidate", "Strengthen, decay and merge (idempotent); prints every change.")
    p.add_argument("--dry-run", action="store_true", help="report, write nothing")

    p = command("forget", "Archive a memory (or delete it with --hard).")
    p.add_argument("id", help="memory id")
    p.add_argument("--hard", action="store_true", help="delete the row instead of archiving")

    p = command("list", "List memories, newest first.")
    p.add_argument("--limit", type=int, default=50, help="1-10000 (default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip this many")
    _filter_options(p)
    p.add_argument("--source", dest="sources", help=f"comma-separated: {_values(Source)}")
    p.add_argument("--include-superseded", action="store_true", help="also show superseded facts")

    command("stats", "Counts of what this agent can see.")

    p = command("export", "Write every visible memory as JSON lines.")
    p.add_argument("--output", "-o", help="file to write (default: standard output)")

    p = command("import", "Restore memories from an export file, in one transaction.")
    p.add_argument("file", help="JSON lines file ('-' reads standard input)")

    p = command("ingest", "Remember a conversation file's turns (JSONL, OpenAI chat, LoCoMo).")
    p.add_argument("file", help="the conversation file")
    p.add_argument("--format", default="auto", help=f"one of: {', '.join(FORMATS)} (default auto)")
    p.add_argument("--session", help="session of turns that name none")

    p = command("search-messages", "Conversation turns containing a phrase, with context.")
    p.add_argument("phrase", help="the exact phrase (case-insensitive)")
    p.add_argument("--limit", type=int, default=20, help="1-100 (default 20)")
    p.add_argument("--around", type=int, default=1, help="turns of context each side, 0-10")
    p.add_argument("--session", help="only this session")

    p = command("recent", "The last conversation turns, oldest first.")
    p.add_argument("--n", type=int, default=20, help="how many, 1-1000 (default 20)")
    p.add_argument("--session", help="only this session")

    command(
        "reindex",
        "Embed every memory with the configured model (after a change of model).",
    )

    p = command("feedback", "Record whether a recalled memory was useful (a training signal).")
    p.add_argument("id", help="memory id")
    judged = p.add_mutually_exclusive_group(required=True)
    judged.add_argument("--useful", dest="useful", action="store_true", help="it helped")
    judged.add_argument("--not-useful", dest="useful", action="store_false", help="it did not")

    p = command(
        "signals", "Export recorded signals as training pairs (JSON lines), or train the scorer."
    )
    p.add_argument(
        "action",
        choices=["export", "train"],
        help="export: the training pairs; train: fit this agent's scorer to them",
    )
    p.add_argument("--output", "-o", help="file to write (default: standard output)")

    p = command(
        "context", "Skills and memories for a task as one prompt-ready block (memory_recall)."
    )
    p.add_argument("query", help="the task, in free text")
    p.add_argument(
        "--max-tokens", type=int, default=2048, help="token budget, 256-8192 (default 2048)"
    )

    p = command("skills", "Procedural memory: import, activate, get and find skills.")
    skills = p.add_subparsers(
        dest="skills_command", required=True, metavar="SKILLS_COMMAND", help="what to do"
    )

    def skill_command(name: str, help_text: str) -> argparse.ArgumentParser:
        return skills.add_parser(name, help=help_text, description=help_text, parents=[common])

    q = skill_command("import", "Import a folder of SKILL.md / JSON node files (idempotent).")
    q.add_argument("path", help="a folder (searched recursively) or one skill file")
    q.add_argument("--visibility", default="isolated", help=f"one of: {_values(Visibility)}")
    q.add_argument("--group", help="group name (with --visibility group)")
    q = skill_command("activate", "The skills most relevant to a task, ranked.")
    q.add_argument("query", help="the task, in free text")
    q.add_argument("--limit", type=int, default=5, help="1-50 (default 5)")
    q = skill_command("get", "A whole skill: sections, tools, tags, correlations, usage.")
    q.add_argument("name", help="the skill's name")
    q = skill_command("find", "Skills ranked by how many of the given tags they have.")
    q.add_argument("tags", help="comma-separated tags, e.g. media,watermark")
    q.add_argument("--limit", type=int, default=20, help="1-1000 (default 20)")
    skill_command("consolidate", "Strengthen correlations between skills used together.")

    p = command("migrate", "Copy a whole palace into an empty one (any backends), verified.")
    p.add_argument("--from", dest="source", required=True, help="palace file or URL to copy")
    p.add_argument("--to", dest="destination", required=True, help="empty palace file or URL")

    p = command("demo", "Remember a few memories in a scratch palace and recall them.")

    command("mcp", "Serve the palace to an MCP client over stdio, as --agent.")

    p = command("serve", "Serve MCP (streamable HTTP, /mcp) and REST (/v1) over HTTP.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (8765)")
    p.add_argument(
        "--auth",
        default="env",
        help="bearer tokens: 'env' ($MINDPALACE_TOKENS), a file of AGENT=TOKEN lines,"
        " or 'none' (loopback only: every request acts as --agent)",
    )
    p.add_argument(
        "--max-body", type=int, default=1 << 20, help="largest request body in bytes (1 MiB)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_THREADS,
        help=f"worker threads for tool calls, 1-256 ({DEFAULT_THREADS})",
    )

    p = command(
        "daemon",
        "Keep this palace warm in a background process that later commands reach"
        " over a Unix socket (recall in milliseconds instead of a cold start).",
    )
    p.add_argument("action", help="start, stop or status")
    p.add_argument(
        "--idle",
        type=float,
        default=DEFAULT_IDLE,
        help=f"seconds without a call before the daemon exits (0: never; {DEFAULT_IDLE:.0f})",
    )
    return parser


# -- handlers ------------------------------------------------------------------------


def _remember(palace: Palace, args: argparse.Namespace) -> Any:
    content = sys.stdin.read() if args.content == "-" else args.content
    metadata = None
    if args.metadata:
        try:
            metadata = json.loads(args.metadata)
        except json.JSONDecodeError as exc:
            raise ValidationError("metadata", args.metadata, reason=f"--metadata: {exc}") from None
    return palace.remember(
        content,
        title=args.title,
        type=args.type,
        store=args.store,
        category=args.category,
        tags=args.tags,
        source=args.source,
        visibility=args.visibility,
        group=args.group,
        constraint=args.constraint,
        confidence=args.confidence,
        valid_from=args.valid_from,
        valid_to=args.valid_to,
        metadata=metadata,
        kind=args.kind,
        project=args.project,
        completed=args.completed,
        created_at=args.date,
    ).to_dict()


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "types": args.types,
        "stores": args.stores,
        "categories": args.categories,
        "tags": args.tags,
        "visibility": args.visibility,
        "include_archived": args.include_archived,
        "created_after": args.after,
        "created_before": args.before,
        "kinds": args.kinds,
        "projects": [args.project] if args.project else None,
    }


def _recall(palace: Palace, args: argparse.Namespace) -> Any:
    hits = palace.recall(
        args.query,
        limit=args.limit,
        expand=not args.no_expand,
        mode=args.mode,
        **_filters(args),
    )
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
    if not args.plain:
        return results.to_dict()
    lines = [results.notice] if results.notice else []
    if results.narrowed_by:
        scope = [k.value for k in results.kinds]
        scope += [f"project {results.project}"] if results.project else []
        if results.completed is not None:
            scope.append("completed" if results.completed else "open")
        lines.append(f"Searched only: {', '.join(scope)} (from the query).")
    lines += results.lines or [results.hint or "Nothing found."]
    return "\n".join(lines)


def _list(palace: Palace, args: argparse.Namespace) -> Any:
    memories = palace.memories(
        limit=args.limit,
        offset=args.offset,
        sources=args.sources,
        include_superseded=args.include_superseded,
        **_filters(args),
    )
    return [m.to_dict() for m in memories]


def _export(palace: Palace, args: argparse.Namespace) -> Any:
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            count = palace.export_jsonl(out)
        return {"exported": count, "path": args.output}
    palace.export_jsonl(sys.stdout)
    return None


def _import(palace: Palace, args: argparse.Namespace) -> Any:
    if args.file == "-":
        report = palace.import_jsonl(sys.stdin)
    else:
        with open(args.file, encoding="utf-8") as inp:
            report = palace.import_jsonl(inp)
    return {"inserted": report.inserted, "skipped": report.skipped}


def _progress(label: str) -> Callable[[int, int], None]:
    """A progress bar on stderr (for big jobs, or when stderr is a terminal)."""
    started = time.perf_counter()

    def show(done: int, total: int) -> None:
        if sys.stderr.isatty() or total >= 1000:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "-" * (width - filled)
            rate = done / max(time.perf_counter() - started, 1e-9)
            end = "\n" if done >= total else "\r"
            print(
                f"{label} [{bar}] {done}/{total} ({rate:.0f}/s)",
                end=end,
                file=sys.stderr,
                flush=True,
            )

    return show


def _ingest(palace: Palace, args: argparse.Namespace) -> Any:
    messages = read_messages(args.file, format=args.format, session=args.session)
    started = time.perf_counter()
    stored = palace.add_messages(messages, session=args.session, progress=_progress("ingest"))
    seconds = time.perf_counter() - started
    return {
        "ingested": len(stored),
        "sessions": len({m.session for m in stored}),
        "seconds": round(seconds, 3),
        "turns_per_second": round(len(stored) / seconds, 1) if seconds else None,
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
    embedded = palace.reindex(progress=_progress("reindex"))
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


def _demo(palace: Palace, args: argparse.Namespace) -> Any:
    for content, category, tags in _DEMO_MEMORIES:
        palace.remember(content, category=category, tags=tags)
    queries = ["why did we choose sqlite", "how do I deploy", "release checklist storage"]
    return {
        "palace": palace.store.location,
        "remembered": len(_DEMO_MEMORIES),
        "recalls": [
            {"query": q, "hits": [h.to_dict() for h in palace.recall(q, limit=3)]} for q in queries
        ],
    }


def _skills(palace: Palace, args: argparse.Namespace) -> Any:
    lib, which = palace.skills, args.skills_command
    if which == "import":
        return lib.import_path(args.path, visibility=args.visibility, group=args.group).to_dict()
    if which == "activate":
        return [hit.to_dict() for hit in lib.activate(args.query, limit=args.limit)]
    if which == "get":
        return lib.get(args.name).to_dict()
    if which == "find":
        return [match.to_dict() for match in lib.find(args.tags, limit=args.limit)]
    return lib.consolidate()


def _mcp(palace: Palace, args: argparse.Namespace) -> Any:
    require_extra()
    from mindpalace.server.mcp import run_stdio  # noqa: PLC0415 - optional extra

    run_stdio(palace)


def _serve(palace: Palace, args: argparse.Namespace) -> Any:
    require_extra()
    from mindpalace.server.http import serve  # noqa: PLC0415 - optional extra
    from mindpalace.server.identity import is_loopback, load_tokens  # noqa: PLC0415

    check_limit(args.threads, low=1, high=256, field="threads")
    check_limit(args.max_body, low=1024, high=1 << 31, field="max_body")
    if args.auth == "none" and not is_loopback(args.host):
        raise ValidationError(
            "auth", "none", reason=f"--auth none is refused on non-loopback host {args.host}"
        )
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
    )


_HANDLERS: dict[str, Handler] = {
    "remember": _remember,
    "recall": _recall,
    "search": _search,
    "complete": lambda p, a: p.personal.complete_issue(a.id, completed=not a.reopen).to_dict(),
    "get": lambda p, a: {
        **p.get(a.id).to_dict(),
        "entities": [e.to_dict() for e in p.graph.mentions(a.id)],
    },
    "entities": lambda p, a: [
        e.to_dict()
        for e in p.graph.entities(a.query, types=a.types, limit=a.limit, offset=a.offset)
    ],
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
    "list": _list,
    "stats": lambda p, a: p.stats().to_dict(),
    "export": _export,
    "import": _import,
    "ingest": _ingest,
    "recent": lambda p, a: [m.to_dict() for m in p.recent(a.n, session=a.session)],
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
}


# -- output ---------------------------------------------------------------------------


def _plain_memory(m: dict[str, Any]) -> str:
    head = f"{m['id']}  {m['created_at'][:10]}  {m['category']}/{m['type']}"
    if m.get("kind", "memory") != "memory":
        head += f"  {m['kind']}" + (f" ({m['project']})" if m.get("project") else "")
    if "score" in m:
        head = f"[{m['score']:.2f}] " + head
    tags = f"  #{' #'.join(m['tags'])}" if m.get("tags") else ""
    title = f"{m['title']}: " if m.get("title") else ""
    return f"{head}{tags}\n    {title}{m['content']}"


def _plain_answer(answer: dict[str, Any]) -> str:
    """A recall-family answer for people: groups, then each memory with its
    relation; the hint when empty."""
    lines = []
    for group in answer["groups"]:
        lines.append(f"{group['name']}:")
        for m in group["memories"]:
            mark = " [HIGH CONFIDENCE]" if m["high_confidence"] else ""
            lines.append(f"  [{m['score']:.2f}] {m['relation']}{mark}  {m['id']}")
            lines.append(f"      {m['content']}")
    return "\n".join(lines) or f"(nothing) {answer['hint']}"


def _plain(value: Any) -> str:
    if isinstance(value, dict) and "injectionBlock" in value and "groups" in value:
        return _plain_answer(value)
    if isinstance(value, list):
        return "\n".join(_plain(v) for v in value) or "(nothing)"
    if isinstance(value, dict) and "content" in value and "id" in value:
        return _plain_memory(value)
    if isinstance(value, dict):
        return "\n".join(
            f"{k}: {_plain(v) if isinstance(v, list | dict) else v}" for k, v in value.items()
        )
    return str(value)


def _open(args: argparse.Namespace) -> Palace:
    groups = [g for g in (args.groups or "").split(",") if g.strip()]
    target: str | Path | None = args.db
    if args.command == "demo" and target is None:
        target = Path(tempfile.mkdtemp(prefix="mindpalace-demo-")) / "demo.db"
    return Palace(
        target,
        agent_id=args.agent,
        groups=groups,
        channel=args.channel,
        management=args.all_agents,
        peer=args.peer or None,
    )


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
    if args.command == "context":
        check_limit(args.max_tokens, low=256, high=8192, field="max_tokens")
    if args.command == "recall" and args.mode is not None:
        check_mode(args.mode)
    if args.command == "depends-on" and args.direction not in DIRECTIONS:
        raise ValidationError("direction", args.direction, valid=DIRECTIONS)


Opener = Callable[[argparse.Namespace], AbstractContextManager[Palace]]


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
        else:
            with opener(args) as palace:
                result = _HANDLERS[args.command](palace, args)
    except ValidationError as exc:
        name = " ".join(filter(None, (args.command, getattr(args, "skills_command", None))))
        return 2, "", f"mindpalace {name}: error: {exc}\n"
    except (MindPalaceError, OSError) as exc:
        return 1, "", f"mindpalace {args.command}: error: {exc}\n"
    if result is None:
        return 0, "", ""
    if args.plain:
        return 0, _plain(result) + "\n", ""
    return 0, json.dumps(result, ensure_ascii=False, indent=2) + "\n", ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line in this process; returns the exit status."""
    code, out, err = run(build_parser().parse_args(argv))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
