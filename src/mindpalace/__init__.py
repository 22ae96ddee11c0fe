"""mindpalace: local-first memory for AI agents.

The public names load on first use, so a command that needs none of them
(the ``mindpalace`` launcher handing a call to a running daemon) starts
without importing numpy or the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindpalace.async_palace import AsyncPalace
    from mindpalace.config import Settings
    from mindpalace.doctor import Check, DoctorReport
    from mindpalace.draft import Changes, Draft
    from mindpalace.engine import Engine
    from mindpalace.errors import (
        BusyError,
        ConfigError,
        EmbeddingError,
        EmbeddingMismatch,
        MindPalaceError,
        NotFoundError,
        PermissionDenied,
        StorageError,
        UnknownSkill,
        ValidationError,
    )
    from mindpalace.family import (
        Answer,
        Family,
    )
    from mindpalace.graph.consolidate import ConsolidationReport
    from mindpalace.graph.extract import Extractor
    from mindpalace.graphview import Edge, GraphView, Neighbourhood
    from mindpalace.importing import ImportSummary
    from mindpalace.models import (
        Category,
        Entity,
        EntityLink,
        Hit,
        HitList,
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
    from mindpalace.personal import (
        Personal,
        PersonalHit,
        SearchResults,
    )
    from mindpalace.recall_request import RecallRequest
    from mindpalace.receipts import ErasureTally, Receipt
    from mindpalace.retention import Retention
    from mindpalace.retention_rules import RetentionRule
    from mindpalace.retrieval.indexing import SemanticIndex
    from mindpalace.retrieval.pipeline import RecallOptions
    from mindpalace.retrieval.scorer import ScorerWeights
    from mindpalace.seat import Seat
    from mindpalace.selection import Selection, parse_selection
    from mindpalace.signals import (
        Signals,
        TrainingPair,
        TrainingReport,
    )
    from mindpalace.skills import (
        ContextBlock,
        ImportResult,
        SkillDetail,
        SkillHit,
        Skills,
        TagMatch,
    )
    from mindpalace.skills.tokens import TokenCounter
    from mindpalace.store import (
        ImportReport,
        Signal,
        Store,
    )
    from mindpalace.timeline import DayCount, SessionSummary, Timeline

__all__ = [
    "Answer",
    "AsyncPalace",
    "BusyError",
    "Category",
    "Changes",
    "Check",
    "ConfigError",
    "ConsolidationReport",
    "ContextBlock",
    "DayCount",
    "DoctorReport",
    "Draft",
    "Edge",
    "EmbeddingError",
    "EmbeddingMismatch",
    "Engine",
    "Entity",
    "EntityLink",
    "ErasureTally",
    "Extractor",
    "Family",
    "GraphView",
    "Hit",
    "HitList",
    "ImportReport",
    "ImportResult",
    "ImportSummary",
    "Memory",
    "MemoryKind",
    "MemoryType",
    "MessageMatch",
    "MindPalaceError",
    "Neighbourhood",
    "NotFoundError",
    "Palace",
    "PermissionDenied",
    "Personal",
    "PersonalHit",
    "RecallFilters",
    "RecallOptions",
    "RecallRequest",
    "Receipt",
    "Retention",
    "RetentionRule",
    "Scope",
    "ScorerWeights",
    "SearchResults",
    "Seat",
    "Selection",
    "SemanticIndex",
    "SessionSummary",
    "Settings",
    "Signal",
    "Signals",
    "SkillDetail",
    "SkillHit",
    "Skills",
    "Source",
    "Stats",
    "StorageError",
    "Store",
    "StoreKind",
    "TagMatch",
    "Timeline",
    "TokenCounter",
    "TrainingPair",
    "TrainingReport",
    "UnknownSkill",
    "ValidationError",
    "Visibility",
    "parse_selection",
]

__version__ = "0.1.0"

_HOMES = {
    "AsyncPalace": "mindpalace.async_palace",
    "Settings": "mindpalace.config",
    "Check": "mindpalace.doctor",
    "DoctorReport": "mindpalace.doctor",
    "Changes": "mindpalace.draft",
    "Draft": "mindpalace.draft",
    "Engine": "mindpalace.engine",
    "BusyError": "mindpalace.errors",
    "ConfigError": "mindpalace.errors",
    "EmbeddingError": "mindpalace.errors",
    "EmbeddingMismatch": "mindpalace.errors",
    "MindPalaceError": "mindpalace.errors",
    "NotFoundError": "mindpalace.errors",
    "PermissionDenied": "mindpalace.errors",
    "StorageError": "mindpalace.errors",
    "UnknownSkill": "mindpalace.errors",
    "ValidationError": "mindpalace.errors",
    "Answer": "mindpalace.family",
    "Family": "mindpalace.family",
    "ConsolidationReport": "mindpalace.graph.consolidate",
    "Extractor": "mindpalace.graph.extract",
    "Edge": "mindpalace.graphview",
    "GraphView": "mindpalace.graphview",
    "ImportSummary": "mindpalace.importing",
    "Neighbourhood": "mindpalace.graphview",
    "Category": "mindpalace.models",
    "Entity": "mindpalace.models",
    "EntityLink": "mindpalace.models",
    "Hit": "mindpalace.models",
    "HitList": "mindpalace.models",
    "Memory": "mindpalace.models",
    "MemoryKind": "mindpalace.models",
    "MemoryType": "mindpalace.models",
    "MessageMatch": "mindpalace.models",
    "RecallFilters": "mindpalace.models",
    "RecallRequest": "mindpalace.recall_request",
    "Scope": "mindpalace.models",
    "Source": "mindpalace.models",
    "Stats": "mindpalace.models",
    "StoreKind": "mindpalace.models",
    "Visibility": "mindpalace.models",
    "Palace": "mindpalace.palace",
    "Personal": "mindpalace.personal",
    "PersonalHit": "mindpalace.personal",
    "SearchResults": "mindpalace.personal",
    "ErasureTally": "mindpalace.receipts",
    "Receipt": "mindpalace.receipts",
    "Retention": "mindpalace.retention",
    "RetentionRule": "mindpalace.retention_rules",
    "SemanticIndex": "mindpalace.retrieval.indexing",
    "RecallOptions": "mindpalace.retrieval.pipeline",
    "ScorerWeights": "mindpalace.retrieval.scorer",
    "Seat": "mindpalace.seat",
    "Selection": "mindpalace.selection",
    "parse_selection": "mindpalace.selection",
    "Signals": "mindpalace.signals",
    "TrainingPair": "mindpalace.signals",
    "TrainingReport": "mindpalace.signals",
    "ContextBlock": "mindpalace.skills",
    "ImportResult": "mindpalace.skills",
    "SkillDetail": "mindpalace.skills",
    "SkillHit": "mindpalace.skills",
    "Skills": "mindpalace.skills",
    "TagMatch": "mindpalace.skills",
    "TokenCounter": "mindpalace.skills.tokens",
    "ImportReport": "mindpalace.store",
    "Signal": "mindpalace.store",
    "Store": "mindpalace.store",
    "DayCount": "mindpalace.timeline",
    "SessionSummary": "mindpalace.timeline",
    "Timeline": "mindpalace.timeline",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mindpalace' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
