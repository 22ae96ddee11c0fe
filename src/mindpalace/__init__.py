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

__all__ = [
    "BusyError",
    "Category",
    "ConfigError",
    "Hit",
    "Memory",
    "MemoryType",
    "MessageMatch",
    "MindPalaceError",
    "NotFoundError",
    "Palace",
    "PermissionDenied",
    "RecallFilters",
    "Scope",
    "Source",
    "Stats",
    "StorageError",
    "StoreKind",
    "ValidationError",
    "Visibility",
]

__version__ = "0.1.0"
