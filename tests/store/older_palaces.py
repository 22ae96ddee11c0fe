"""What the migration tests of stored keys share: four notes, a fixed
clock, and a palace of agent "ann" with a small hashing embedder over a
path or an open store."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.store import Store, core

NOTES = [
    "Kenji Sato owns the billing service with Maria Lopez.",
    "Maria Lopez moved the Friday standup to Room Alder.",
    "Aisha Khan reviews every release of the billing service.",
    "The invoice export runs nightly at 02:00.",
]
NOW = datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc)


def open_palace(target: Path | Store, embedder: HashingEmbedder | None = None) -> Palace:
    """``target``'s palace as agent "ann", signals off, at ``NOW``."""
    where: dict[str, Any] = {"store": target} if isinstance(target, core.SqlCore) else {}
    return Palace(
        None if where else target,
        **where,
        agent_id="ann",
        settings=Settings(agent_id="ann", signals=False),
        embedder=embedder or HashingEmbedder(dimensions=32),
        clock=lambda: NOW,
    )
