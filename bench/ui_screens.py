"""Screenshots of the inspector's main pages for the README (docs/ui/*.png).

Builds a small demo palace (two agents, a few months of memories, three
conversations, the example skills), serves it with the same app as
``mindpalace serve``, and photographs each page with the headless Chromium
the browser tests use (``bench/browser.py``).

    python -m bench.ui_screens [--out docs/ui]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn

from bench.browser import chromium, missing
from mindpalace import Palace
from mindpalace.conversations import Message
from mindpalace.server.http import build_app
from mindpalace.web.identity import PalacePool, TokenTable

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 7, 1, 9, tzinfo=timezone.utc)

MEMORIES = [
    (
        "We chose SQLite for the embedded store because many processes share one file",
        "decision",
        ["storage", "architecture"],
    ),
    (
        "Alice Chen owns the Billing service; Bob Stone is the backup on call",
        "person",
        ["billing", "on-call"],
    ),
    (
        "The Billing service depends on the Payments gateway and on PostgreSQL",
        "fact",
        ["billing", "dependencies"],
    ),
    ("Never run schema migrations on Friday afternoons", "rule", ["deploy", "migrations"]),
    ("Lesson: the Search index must be rebuilt after changing the tokenizer", "lesson", ["search"]),
    ("Deploys go through the release train every Tuesday at 10:00", "workflow", ["deploy"]),
    ("Carol Diaz leads the Search project; weekly sync on Thursdays", "person", ["search"]),
    ("The Payments gateway times out above 2 s; retries are idempotent", "fact", ["payments"]),
    ("Goal: cut p95 recall latency below 50 ms for 100k memories", "goal", ["performance"]),
    (
        "Incident 2026-08-14: Billing double-charged 31 customers after a retry storm",
        "event",
        ["billing", "incident"],
    ),
    (
        "Decision: move session storage from Redis to PostgreSQL to drop a dependency",
        "decision",
        ["storage"],
    ),
    (
        "The Grafana dashboard for Billing lives under Ops / Billing / Overview",
        "fact",
        ["billing", "observability"],
    ),
    ("Bob Stone prefers code reviews in the morning, before stand-up", "person", ["team"]),
    (
        "Lesson: pin the embedding model version, or vectors drift between releases",
        "lesson",
        ["embeddings"],
    ),
    (
        "The Search project depends on the Embeddings service and on the Billing API",
        "fact",
        ["search", "dependencies"],
    ),
]

TALKS = [
    (
        "standup-aug-03",
        [
            ("Ann", "Is the Billing migration still planned for Tuesday?"),
            ("Bo", "Yes, on the release train; Alice Chen reviews it."),
            ("Ann", "And the rollback plan?"),
            ("Bo", "Redeploy the previous tag; the migration is reversible."),
        ],
    ),
    (
        "incident-aug-14",
        [
            ("Alice", "Billing is double-charging after retries."),
            ("Bob", "Pausing the retry worker now."),
            ("Alice", "Refunds issued to the 31 customers."),
        ],
    ),
    (
        "planning-sep-02",
        [
            ("Carol", "Search needs the new embeddings by October."),
            ("Ann", "Pin the model version this time."),
            ("Carol", "Agreed: we pin it and rebuild the index once."),
        ],
    ),
]


def build(path: Path) -> dict[str, str]:
    """The demo palace; returns a few ids to photograph."""
    ids: dict[str, str] = {}
    with Palace(path, agent_id="alice") as palace:
        for n, (content, category, tags) in enumerate(MEMORIES * 4):
            when = START + timedelta(days=n * 2, hours=n % 7)
            text = content if n < len(MEMORIES) else f"{content} (follow-up {n // len(MEMORIES)})"
            memory = palace.remember(text, category=category, tags=tags, created_at=when)
            ids.setdefault(category, memory.id)
        edited = palace.update(
            ids["workflow"],
            content="Deploys go through the release train every Tuesday and Thursday at 10:00",
        )
        ids["edited"] = edited.id
        for n, (session, turns) in enumerate(TALKS):
            day = START + timedelta(days=33 + 30 * n)
            palace.add_messages(
                [
                    Message(text, speaker=who, created_at=day + timedelta(minutes=3 * i))
                    for i, (who, text) in enumerate(turns)
                ],
                session=session,
            )
        palace.skills.import_path(ROOT / "examples" / "skills")
        people = [e.norm for e in palace.graph.entities("alice", limit=5)]
        ids["entity"] = "alice chen" if "alice chen" in people else people[0]
    with Palace(path, agent_id="bob") as palace:
        palace.remember(
            "Bob's runbook for the Payments gateway is in the wiki",
            visibility="shared",
            tags=["payments"],
            created_at=START,
        )
    return ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def shoot(driver: Any, url: str, out: Path, *, open_details: bool = False) -> None:
    driver.get(url)
    if open_details:
        driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height), 700), 1800))
    time.sleep(0.2)
    driver.save_screenshot(str(out))
    driver.set_window_size(1280, 900)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    args = parser.parse_args()
    why = missing()
    if why:
        raise SystemExit(why)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "demo.db"
        ids = build(db)
        with Palace(db) as palace:
            tokens = TokenTable.parse(["alice=screens-token"], origin="screens")
            port = free_port()
            server = uvicorn.Server(
                uvicorn.Config(
                    build_app(PalacePool(palace), tokens), port=port, log_level="warning"
                )
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            while not server.started:
                time.sleep(0.05)
            base = f"http://127.0.0.1:{port}"
            driver = chromium()
            try:
                driver.get(f"{base}/login")
                driver.find_element("id", "token").send_keys("screens-token")
                driver.find_element("id", "login").click()
                time.sleep(0.5)
                pages = [
                    ("memories", "/memories", False),
                    ("search", "/memories?q=who+owns+billing", True),
                    ("memory", f"/memories/{ids['edited']}", False),
                    ("recall", "/recall?q=plan+the+billing+migration&max_tokens=512", False),
                    ("entities", f"/entities/graph?name={quote(ids['entity'])}", False),
                    ("skill", "/skills/code-review", False),
                    ("conversations", "/conversations", False),
                    ("stats", "/stats", False),
                ]
                for name, path, details in pages:
                    shoot(driver, base + path, args.out / f"{name}.png", open_details=details)
            finally:
                driver.quit()
                server.should_exit = True
                thread.join(timeout=10)


if __name__ == "__main__":
    main()
