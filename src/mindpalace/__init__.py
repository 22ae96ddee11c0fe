"""mindpalace: local-first memory for AI agents."""

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
