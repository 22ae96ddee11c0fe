"""The ``mindpalace`` command line's arguments: one parser for every command.

The command line (``cli``) parses with it in the calling process, and the
daemon (``daemon``) parses the argument lists the launcher hands it with
it, so the two read a call alike. The commands themselves are in
``commands``.
"""

from __future__ import annotations

import argparse
from typing import Any

from mindpalace import __version__
from mindpalace.daemonctl import DEFAULT_IDLE
from mindpalace.formats import CONVERSATION_FORMATS, FORMATS
from mindpalace.formats.mem0 import AGENT_FROM
from mindpalace.helptext import epilog
from mindpalace.models import Category, MemoryKind, MemoryType, Source, StoreKind, Visibility
from mindpalace.retrieval.modes import MODES
from mindpalace.server import DEFAULT_THREADS
from mindpalace.web.limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_PIPELINED,
    DEFAULT_SEND_TIMEOUT,
)

__all__ = ["ENTITY_ACTIONS", "build_parser"]

#: what ``entities`` does besides listing (its first word names it)
ENTITY_ACTIONS = ("separate", "join")

# The tool sets (``server.tools.TOOL_SETS``), named here so that parsing a
# command line needs no server package.
DEFAULT_TOOLS = "core"
TOOLS_HELP = (
    "MCP tools served: comma-separated tool sets and tool names; core (default: store,"
    " search, prompt context, skills, messages), family (topic overviews, decisions,"
    " owners, dependencies, preflight, personal data), manage (get, update, forget,"
    " list, stats, feedback), all"
)


def _values(enum_cls: type[Any]) -> str:
    return ", ".join(m.value for m in enum_cls)


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted before and after the command name; after it
    (``suppress``) they are accepted but listed only in ``mindpalace --help``."""
    default: Any = argparse.SUPPRESS if suppress else None

    def shown(text: str) -> str:
        return argparse.SUPPRESS if suppress else text

    parser.add_argument(
        "--db",
        default=default,
        help=shown("palace file or URL (default: $MINDPALACE_DB or a per-user data directory)"),
    )
    parser.add_argument(
        "--agent",
        default=default,
        help=shown("agent id (default: $MINDPALACE_AGENT_ID or 'default')"),
    )
    parser.add_argument(
        "--groups", default=default, help=shown("comma-separated groups the agent belongs to")
    )
    parser.add_argument("--channel", default=default, help=shown("peer channel to act through"))
    parser.add_argument(
        "--plain",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help=shown("output for people (tables, bullets, indented text) instead of JSON"),
    )
    parser.add_argument(
        "--all-agents",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help=shown(
            "management access: every agent's memories (whole-palace export/import);"
            " not for serve, where an admin:AGENT=TOKEN token gives it"
        ),
    )
    parser.add_argument(
        "--peer",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help=shown("peer-facing: needs --channel; sees it plus what is explicitly shared"),
    )


def _filter_options(parser: argparse.ArgumentParser) -> None:
    # Each option's dest is the name of its recall filter
    # (``recall_request.FILTER_FIELDS``; tests/test_recall_request.py holds them).
    parser.add_argument("--type", dest="types", help=f"comma-separated: {_values(MemoryType)}")
    parser.add_argument("--store", dest="stores", help=f"comma-separated: {_values(StoreKind)}")
    parser.add_argument(
        "--category", dest="categories", help=f"comma-separated: {_values(Category)}"
    )
    parser.add_argument("--tags", help="comma-separated; matches memories with any of them")
    parser.add_argument("--visibility", help=f"comma-separated: {_values(Visibility)}")
    parser.add_argument("--after", dest="created_after", help="created at or after (ISO 8601)")
    parser.add_argument("--before", dest="created_before", help="created before (ISO 8601)")
    parser.add_argument(
        "--include-archived", action="store_true", help="also show archived memories"
    )
    parser.add_argument("--kind", dest="kinds", help=f"comma-separated: {_values(MemoryKind)}")
    parser.add_argument(
        "--project", dest="projects", help="only memories of this project (exact name)"
    )


def _progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action="store_true",
        help="report progress on standard error even when it is not a terminal"
        " (on a terminal a bar is always shown)",
    )


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
        return sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            parents=[common],
            epilog=epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

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
    p.add_argument(
        "--date", dest="created_at", help="when it happened (ISO 8601), e.g. a journal entry's day"
    )

    def personal_search(p: argparse.ArgumentParser) -> None:
        p.add_argument("query", help="free text; 'my journal entries about X' searches the journal")
        p.add_argument(
            "--kind",
            dest="kinds",
            help=f"comma-separated: {_values(MemoryKind)} (overrides the query)",
        )
        p.add_argument("--project", help="only this project (case-insensitive)")
        p.add_argument("--limit", type=int, default=10, help="1-100 (default 10)")
        p.add_argument("--include-archived", action="store_true", help="also search archived ones")

    about = "Search journal, nodes, issues, specs and messages, each result attributed."
    personal_search(command("personal-search", about))
    # The older name, still read but not listed: "search" alone is too close
    # to memory search (MCP memory_search) to document.
    hidden = sub.add_parser("search", description=about, parents=[common])
    personal_search(hidden)
    hidden.set_defaults(command="personal-search")

    p = command("recall", "Recall the memories most relevant to a query.")
    p.add_argument("query", help="free text")
    p.add_argument("--limit", type=int, default=10, help="1-100 (default 10)")
    _filter_options(p)
    p.add_argument(
        "--explain",
        action="store_true",
        help="show how each hit's relevance was reached: stage ranks, scores, gates",
    )
    p.add_argument(
        "--no-expand",
        dest="expand",
        action="store_false",
        help="no graph propagation (no associative_context)",
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

    p = command(
        "entities",
        "List the entities memories mention, most mentioned first; or link a short name to"
        " a full one (join SHORT FULL) or undo a link for good (separate NAME).",
    )
    p.add_argument(
        "query",
        nargs="*",
        metavar="QUERY | separate NAME | join SHORT FULL",
        help="keep names or aliases containing QUERY; separate NAME: undo its link"
        ' ("Maria" from "Maria Lopez"), and the first-name rule never links them again;'
        " join SHORT FULL: make SHORT the same entity as FULL",
    )
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

    p = command(
        "erase",
        "Erase memories for good, with every older version and every record derived from"
        " them; a dry run (what would go) unless --yes. Prints the receipt.",
    )
    p.add_argument(
        "kind",
        help="memory ID, agent (all of this agent's), channel NAME, session ID,"
        " entity NAME (memories mentioning it), filter (with --type/--category/--store/--before)",
    )
    p.add_argument("value", nargs="?", help="the id, channel, session or name the kind needs")
    p.add_argument("--type", dest="types", help=f"filter: comma-separated {_values(MemoryType)}")
    p.add_argument("--store", dest="stores", help=f"filter: comma-separated {_values(StoreKind)}")
    p.add_argument(
        "--category", dest="categories", help=f"filter: comma-separated {_values(Category)}"
    )
    p.add_argument("--before", help="filter: created before (ISO 8601)")
    p.add_argument("--yes", action="store_true", help="erase (without it nothing is written)")

    p = command("erasures", "The erasure log: receipts of past erasures, newest first.")
    p.add_argument("--limit", type=int, default=100, help="1-10000 (default 100)")

    p = command(
        "retention",
        "Retention rules: how many days memories of a store, category, type or agent are"
        " kept before they are erased.",
    )
    retention = p.add_subparsers(
        dest="retention_command", required=True, metavar="RETENTION_COMMAND", help="what to do"
    )

    def retention_command(name: str, help_text: str) -> argparse.ArgumentParser:
        return retention.add_parser(
            name,
            help=help_text,
            description=help_text,
            parents=[common],
            epilog=epilog(f"retention {name}"),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    q = retention_command(
        "set", "Keep matching memories DAYS days, then erase them (the same match again: new days)."
    )
    q.add_argument("days", help="how many days after its creation a memory is kept (1-36500)")
    q.add_argument("--store", help=f"only this store: {_values(StoreKind)}")
    q.add_argument("--category", help=f"only this category: {_values(Category)}")
    q.add_argument("--type", help=f"only this type: {_values(MemoryType)}")
    q.add_argument(
        "--for-agent", help="another agent's memories (management view; default: your own)"
    )
    q.add_argument(
        "--every-agent", action="store_true", help="every agent's memories (management view)"
    )
    retention_command("list", "The rules that reach your memories (the management view: all).")
    q = retention_command("remove", "Remove a rule (what it would have erased stays).")
    q.add_argument("id", help="the rule's id (ret_...)")
    q = retention_command(
        "apply",
        "Erase what the rules reach now, as one erasure with a receipt; a dry run unless --yes.",
    )
    q.add_argument("--yes", action="store_true", help="erase (without it nothing is written)")

    p = command("update", "Change a memory you own: a new version with a new id (printed).")
    p.add_argument("id", help="memory id")
    p.add_argument("--content", help="the new text ('-' reads standard input)")
    p.add_argument("--title", help="the new title ('' removes it)")
    p.add_argument("--tags", help="the new tags, comma-separated ('' removes them)")
    p.add_argument("--type", help=_values(MemoryType))
    p.add_argument("--store", help=_values(StoreKind))
    p.add_argument("--category", help=_values(Category))
    p.add_argument("--visibility", help=_values(Visibility))
    p.add_argument("--group", help="the group, with --visibility group")
    p.add_argument("--valid-from", help="ISO 8601 ('' removes it)")
    p.add_argument("--valid-to", help="ISO 8601 ('' removes it)")
    p.add_argument("--metadata", help="the new metadata, a JSON object")

    p = command("list", "List memories, newest first.")
    p.add_argument("--limit", type=int, default=50, help="1-10000 (default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip this many")
    _filter_options(p)
    p.add_argument("--source", dest="sources", help=f"comma-separated: {_values(Source)}")
    p.add_argument("--include-superseded", action="store_true", help="also show superseded facts")

    command("stats", "Counts of what this agent can see.")

    p = command("export", "Write every visible memory as JSON lines.")
    p.add_argument("--output", "-o", help="file to write (default: standard output)")
    _progress_option(p)

    p = command(
        "import",
        "Import a palace export, a chat export (ChatGPT, Claude, OpenAI messages, JSON lines,"
        " LoCoMo), mem0 output or a folder of Markdown notes, in one transaction.",
    )
    p.add_argument(
        "file",
        help="the file; a ChatGPT or Claude export (.zip, or its unzipped folder); a folder of"
        " Markdown notes ('-' reads standard input)",
    )
    p.add_argument(
        "--format",
        default="auto",
        help=f"one of: {', '.join(FORMATS)} (default auto: told from the content)",
    )
    p.add_argument("--session", help="session of chat turns that name none")
    p.add_argument(
        "--sections",
        action="store_true",
        help="Markdown: a memory per section (under each heading) instead of per note",
    )
    p.add_argument(
        "--agent-from",
        metavar="FIELD",
        help=f"mem0: import each memory for the agent its {' or '.join(AGENT_FROM)} names"
        " (other agents than --agent need --all-agents)",
    )
    _progress_option(p)

    p = command(
        "ingest",
        "Remember a conversation file's turns (ChatGPT, Claude, OpenAI chat, JSON lines, LoCoMo).",
    )
    p.add_argument(
        "file", help="the conversation file, or a ChatGPT or Claude export (.zip, or its folder)"
    )
    p.add_argument(
        "--format",
        default="auto",
        help=f"one of: {', '.join(CONVERSATION_FORMATS)} (default auto)",
    )
    p.add_argument("--session", help="session of turns that name none")
    _progress_option(p)
    p.add_argument(
        "--atomic",
        action="store_true",
        help="all or nothing: write no turn unless every one is valid (default: batches"
        " before a bad turn are kept)",
    )

    p = command("search-messages", "Conversation turns containing a phrase, with context.")
    p.add_argument("phrase", help="the exact phrase (case-insensitive)")
    p.add_argument("--limit", type=int, default=20, help="1-100 (default 20)")
    p.add_argument("--around", type=int, default=1, help="turns of context each side, 0-10")
    p.add_argument("--session", help="only this session")

    p = command("recent", "The last conversation turns, oldest first.")
    p.add_argument("--limit", type=int, default=20, help="how many, 1-1000 (default 20)")
    p.add_argument("--n", dest="limit", type=int, help=argparse.SUPPRESS)  # the older spelling
    p.add_argument("--session", help="only this session")

    p = command(
        "reindex",
        "Embed every memory with the configured model (after a change of model).",
    )
    _progress_option(p)

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
        return skills.add_parser(
            name,
            help=help_text,
            description=help_text,
            parents=[common],
            epilog=epilog(f"skills {name}"),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    q = skill_command("import", "Import a folder of SKILL.md / JSON node files (idempotent).")
    q.add_argument("path", help="a folder (searched recursively) or one skill file")
    q.add_argument("--visibility", default="isolated", help=f"one of: {_values(Visibility)}")
    q.add_argument("--group", help="group name (with --visibility group)")
    _progress_option(q)
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

    command(
        "doctor",
        "Check the palace's health: model, schema, file integrity, waiting vectors, warm"
        " cache, extras; each problem with the command that fixes it (exit 1 if any).",
    )

    p = command(
        "demo",
        "Remember a few memories in a scratch palace (removed afterwards; --db keeps them"
        " in that palace) and recall them.",
    )
    p.add_argument("--json", action="store_true", help="every field of every hit, as JSON")

    p = command("mcp", "Serve the palace to an MCP client over stdio, as --agent.")
    p.add_argument("--tools", default=DEFAULT_TOOLS, help=TOOLS_HELP)

    p = command("serve", "Serve MCP (streamable HTTP, /mcp) and REST (/v1) over HTTP.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (8765)")
    p.add_argument(
        "--auth",
        default="env",
        help="bearer tokens: 'env' ($MINDPALACE_TOKENS), a file of AGENT=TOKEN lines"
        " (*=TOKEN: shared, agent from a header; admin:AGENT=TOKEN: every agent's memories),"
        " or 'none' (loopback only: every request acts as --agent)",
    )
    p.add_argument("--tools", default=DEFAULT_TOOLS, help=f"at /mcp: {TOOLS_HELP}")
    p.add_argument(
        "--max-body", type=int, default=1 << 20, help="largest request body in bytes (1 MiB)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_THREADS,
        help=f"worker threads for tool calls, 1-256 ({DEFAULT_THREADS})",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes sharing the port, 1-64, each with its own palace"
        " connection and indexes, nothing shared in memory (1)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="open connections at most; at the cap, the one waiting longest on its client"
        f" (for a request, or to read an answer) is closed ({DEFAULT_MAX_CONNECTIONS})",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        help="seconds for a request's headers to arrive, else 408 and closed"
        f" ({DEFAULT_HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        help=f"seconds for a request's body to arrive after its headers ({DEFAULT_BODY_TIMEOUT:g})",
    )
    p.add_argument(
        "--keep-alive",
        type=int,
        default=DEFAULT_KEEP_ALIVE,
        help=f"seconds an idle connection is kept open between requests ({DEFAULT_KEEP_ALIVE})",
    )
    p.add_argument(
        "--send-timeout",
        type=float,
        default=DEFAULT_SEND_TIMEOUT,
        help="seconds an answer may wait on a client that reads none of it, else the"
        f" connection is dropped ({DEFAULT_SEND_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-pipelined",
        type=int,
        default=DEFAULT_MAX_PIPELINED,
        help="requests sent ahead of their answers (pipelined) answered in a row, then the"
        f" connection is closed ({DEFAULT_MAX_PIPELINED})",
    )

    p = command(
        "ui",
        "Inspect the palace in a browser: prints a one-time link on 127.0.0.1 and opens it"
        " (--all-agents: every agent's memories).",
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the link only; open no browser")

    p = command(
        "daemon",
        "Keep this palace warm in a background process that later commands reach"
        " over a Unix socket (recall in milliseconds instead of a cold start). The first"
        " call for a palace starts one (MINDPALACE_DAEMON=auto, the default; off: never);"
        " start, stop and status manage it by hand.",
    )
    p.add_argument("action", help="start, stop or status")
    p.add_argument(
        "--idle",
        type=float,
        default=DEFAULT_IDLE,
        help=f"seconds without a call before the daemon exits (0: never; {DEFAULT_IDLE:.0f})",
    )
    return parser


# Library argument names that commands take under another name.
_OPTION_FOR = {
    "created_after": "after",
    "created_before": "before",
    "sessions": "session",
    "category": "categories",
}


def option_for(field: str, command: str, subcommand: str | None = None) -> str | None:
    """How ``command`` spells the library argument ``field`` on the command
    line (``--after`` for ``created_after``, ``--type`` for ``types``), for
    error messages; None when it takes no such option."""
    parser = build_parser()
    chosen: argparse.ArgumentParser | None = None
    for names in (command, subcommand):
        actions = (chosen or parser)._actions
        found = [a for a in actions if isinstance(a, argparse._SubParsersAction)]
        if names is None or not found or names not in found[0].choices:
            break
        chosen = found[0].choices[names]
    if chosen is None:
        return None
    wanted = (field, _OPTION_FOR.get(field), f"{field}s", field.removesuffix("s"))
    for dest in wanted:
        for action in chosen._actions:
            if action.dest == dest and action.option_strings:
                return max(action.option_strings, key=len)
    return None
