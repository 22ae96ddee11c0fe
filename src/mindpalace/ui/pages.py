"""Which page function answers which path (``app`` routes them)."""

from __future__ import annotations

from collections.abc import Callable

from mindpalace.ui.erase import confirm_erase, erase_page, preview_erase
from mindpalace.ui.layout import Ctx, Page, Redirect
from mindpalace.ui.memories import (
    feedback_memory,
    forget_memory,
    memories_page,
    memory_page,
    restore_memory,
    update_memory,
)
from mindpalace.ui.views import (
    conversations_page,
    entities_page,
    graph_page,
    login_page,
    recall_page,
    skill_page,
    skills_page,
    stats_page,
    turns_page,
)

__all__ = ["READS", "WRITES", "PageFunction", "login_page"]

PageFunction = Callable[[Ctx], "Page | Redirect"]

# Pages (GET). Names in paths are single percent-encoded segments.
READS: tuple[tuple[str, PageFunction], ...] = (
    ("/memories", memories_page),
    ("/memories/{memory_id}", memory_page),
    ("/recall", recall_page),
    ("/entities", entities_page),
    ("/entities/graph", graph_page),
    ("/skills", skills_page),
    ("/skills/{name}", skill_page),
    ("/conversations", conversations_page),
    ("/conversations/turns", turns_page),
    ("/stats", stats_page),
    ("/erase", erase_page),
)

# Writes (POST, with the session's CSRF token); each redirects to a page or
# shows one (an erasure's preview and receipt).
WRITES: tuple[tuple[str, PageFunction], ...] = (
    ("/memories/{memory_id}/update", update_memory),
    ("/memories/{memory_id}/forget", forget_memory),
    ("/memories/{memory_id}/restore", restore_memory),
    ("/memories/{memory_id}/feedback", feedback_memory),
    ("/erase/preview", preview_erase),
    ("/erase", confirm_erase),
)
