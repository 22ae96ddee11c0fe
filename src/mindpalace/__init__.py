"""mindpalace: local-first memory for AI agents.

The public names load on first use, so a command that needs none of them
(the ``mindpalace`` launcher handing a call to a running daemon) starts
without importing numpy or the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindpalace.errors import (
        BusyError,
        ConfigError,
        MindPalaceError,
        NotFoundError,
        PermissionDenied,
        StorageError,
        ValidationError,
    )
    from mindpalace.models import (
        Category,
        Hit,
        Memory,
        MemoryKind,
        MemoryType,
        MessageMatch,
        RecallFilters,
        Scope,
        Source,
        Stats,
        StoreKind,
        Visibility,
    )
    from mindpalace.palace import Palace
    from mindpalace.personal import PersonalHit, SearchResults

__all__ = [
    "BusyError",
    "Category",
    "ConfigError",
    "Hit",
    "Memory",
    "MemoryKind",
    "MemoryType",
    "MessageMatch",
    "MindPalaceError",
    "NotFoundError",
    "Palace",
    "PermissionDenied",
    "PersonalHit",
    "RecallFilters",
    "Scope",
    "SearchResults",
    "Source",
    "Stats",
    "StorageError",
    "StoreKind",
    "ValidationError",
    "Visibility",
]

__version__ = "0.1.0"

_HOMES = {
    **dict.fromkeys(
        (
            "BusyError",
            "ConfigError",
            "MindPalaceError",
            "NotFoundError",
            "PermissionDenied",
            "StorageError",
            "ValidationError",
        ),
        "mindpalace.errors",
    ),
    **dict.fromkeys(
        (
            "Category",
            "Hit",
            "Memory",
            "MemoryKind",
            "MemoryType",
            "MessageMatch",
            "RecallFilters",
            "Scope",
            "Source",
            "Stats",
            "StoreKind",
            "Visibility",
        ),
        "mindpalace.models",
    ),
    "Palace": "mindpalace.palace",
    "PersonalHit": "mindpalace.personal",
    "SearchResults": "mindpalace.personal",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mindpalace' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
