"""Examples shown by ``mindpalace COMMAND --help``, one list per command.

Every command has some (a test holds every command to it). They are shown
after the command's own options; the global options (``--db``,
``--agent``...) are listed once, in ``mindpalace --help``.
"""

from __future__ import annotations

__all__ = ["EXAMPLES", "GLOBAL_NOTE", "epilog"]

GLOBAL_NOTE = (
    "Global options (--db, --agent, --groups, --channel, --plain, --all-agents,\n"
    "--peer) may come before or after the command: see mindpalace --help."
)

M = "mindpalace"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "remember": (
        f'{M} remember "We chose SQLite because many processes share one file"'
        " --category decision --tags storage,architecture",
        f'{M} remember "Never deploy on Fridays" --category rule --constraint',
        f'{M} remember "Hiked the ridge with Bob" --kind journal --date 2026-01-15',
        f"echo 'a long note' | {M} remember -",
    ),
    "recall": (
        f'{M} recall "why sqlite" --limit 5',
        f'{M} recall "deploy" --category rule,workflow --tags ops --after 2026-01-01 --explain',
        f'{M} recall "deployment process" --mode decision --plain',
    ),
    "personal-search": (
        f'{M} personal-search "my journal entries about hiking"',
        f'{M} personal-search "open issues in project garden" --plain',
        f'{M} personal-search "timer" --kind issue,spec --project Garden',
    ),
    "complete": (f"{M} complete mem_01M80ZW991W4M5495K3P5QZ9C5", f"{M} complete mem_… --reopen"),
    "get": (f"{M} get mem_01M80ZW991W4M5495K3P5QZ9C5 --plain",),
    "entities": (
        f"{M} entities",
        f"{M} entities falcon --type project --limit 10",
        f'{M} entities separate Maria   # "Maria" is not "Maria Lopez"',
        f'{M} entities join Maria "Maria Lopez"',
    ),
    "history": (f"{M} history mem_01M80ZW991W4M5495K3P5QZ9C5 --plain",),
    "consolidate": (f"{M} consolidate --dry-run", f"{M} consolidate"),
    "forget": (f"{M} forget mem_01M80ZW991W4M5495K3P5QZ9C5", f"{M} forget mem_… --hard"),
    "erase": (
        f"{M} erase agent --plain   # what would go (nothing is erased)",
        f"{M} erase agent --yes",
        f"{M} erase channel peer-coach:511 --yes",
        f"{M} erase session standup-42 --yes",
        f'{M} erase entity "Alice Chen" --yes',
        f"{M} erase filter --category conversation --before 2025-01-01 --yes",
        f"{M} erase memory mem_01M80ZW991W4M5495K3P5QZ9C5 --yes",
    ),
    "erasures": (f"{M} erasures --plain", f"{M} --all-agents erasures --limit 20"),
    "retention": (
        f"{M} retention set 90 --store episodic --category conversation",
        f"{M} --all-agents retention set 7 --store sensory --every-agent",
        f"{M} retention list --plain",
        f"{M} retention apply --plain   # what would go (nothing is erased)",
    ),
    "retention set": (
        f"{M} retention set 90 --store episodic --category conversation",
        f"{M} --all-agents retention set 30 --for-agent scratchpad",
    ),
    "retention list": (f"{M} retention list --plain", f"{M} --all-agents retention list"),
    "retention remove": (f"{M} retention remove ret_01M80ZW991W4M5495K3P5QZ9C5",),
    "retention apply": (
        f"{M} retention apply --plain",
        f"{M} --all-agents retention apply --yes",
    ),
    "update": (
        f'{M} update mem_01M80ZW991W4M5495K3P5QZ9C5 --content "We moved to Postgres"',
        f"{M} update mem_… --tags storage,db --category decision",
        f"{M} update mem_… --title ''   # removes the title",
    ),
    "list": (
        f"{M} list --category decision --limit 20 --plain",
        f"{M} list --kind issue --project Garden --include-archived",
    ),
    "stats": (f"{M} stats --plain",),
    "export": (f"{M} export -o backup.jsonl", f"{M} --all-agents export > everything.jsonl"),
    "import": (
        f"{M} import chatgpt-export.zip   # a ChatGPT or Claude export, as downloaded",
        f"{M} --all-agents import mem0.json --agent-from user_id",
        f"{M} --db copy.db import backup.jsonl",
        f"cat backup.jsonl | {M} import -",
    ),
    "ingest": (
        f"{M} ingest chat.jsonl --session standup-42",
        f"{M} ingest locomo.json --format locomo --atomic",
    ),
    "search-messages": (
        f'{M} search-messages "rollback plan" --around 2 --plain',
        f'{M} search-messages "deadline" --session standup-42',
    ),
    "recent": (f"{M} recent --limit 20 --session standup-42 --plain",),
    "reindex": (f"MINDPALACE_EMBEDDER=local {M} reindex",),
    "feedback": (f"{M} feedback mem_… --useful", f"{M} feedback mem_… --not-useful"),
    "signals": (f"{M} signals export -o pairs.jsonl", f"{M} signals train"),
    "context": (f'{M} context "draft fan replies" --max-tokens 1024',),
    "skills": (
        f"{M} skills import examples/skills/",
        f'{M} skills activate "schedule a post with a watermarked video" --plain',
        f"{M} skills get watermark-media --plain",
        f'{M} skills find "media,watermark"',
    ),
    "skills import": (f"{M} skills import examples/skills/", f"{M} skills import one/SKILL.md"),
    "skills activate": (f'{M} skills activate "integrate a REST API" --limit 3 --plain',),
    "skills get": (f"{M} skills get watermark-media --plain",),
    "skills find": (f'{M} skills find "media,watermark" --limit 5',),
    "skills consolidate": (f"{M} skills consolidate",),
    "migrate": (f"{M} migrate --from memories.db --to postgresql://localhost/mindpalace",),
    "demo": (f"{M} demo --plain",),
    "doctor": (f"{M} doctor --plain", f"{M} --db team.db doctor || echo 'see the fixes above'"),
    "what-do-i-know": (f'{M} what-do-i-know "database architecture" --plain',),
    "why-did-we": (f'{M} why-did-we "choose Convex" --plain',),
    "who-owns": (f'{M} who-owns "the Billing service"',),
    "depends-on": (f"{M} depends-on Redis", f"{M} depends-on Checkout --direction dependencies"),
    "preflight": (f'{M} preflight "deploy the Billing service" --plain',),
    "mcp": (
        f"{M} mcp --agent me",
        f"{M} mcp --tools core,manage",
        f"{M} mcp --tools all",
    ),
    "serve": (
        f'MINDPALACE_TOKENS="alice=$(openssl rand -hex 24)" {M} serve --port 8765',
        f"{M} serve --auth none --tools all   # loopback only",
    ),
    "ui": (
        f"{M} ui                      # this palace, a one-time link on a free port",
        f"{M} ui --port 8766 --no-browser",
        f"{M} --all-agents ui         # every agent's memories",
    ),
    "daemon": (f"{M} daemon start", f"{M} daemon status", f"{M} daemon stop"),
}


def epilog(command: str) -> str:
    """The text after a command's options: its examples, then where the
    global options are."""
    lines = ["examples:", *(f"  {line}" for line in EXAMPLES.get(command, ()))]
    return "\n".join([*lines, "", GLOBAL_NOTE])
