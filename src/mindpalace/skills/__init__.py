"""Procedural memory: skills imported from ``SKILL.md`` / JSON node files,
activated for a task, fetched whole, found by tags, and quoted in
token-budgeted context blocks."""

from mindpalace.skills.activate import ActivateOptions
from mindpalace.skills.facade import Skills
from mindpalace.skills.model import (
    ContextBlock,
    ContextSource,
    Correlation,
    ImportResult,
    Section,
    SkillDefinition,
    SkillDetail,
    SkillHit,
    TagMatch,
)

__all__ = [
    "ActivateOptions",
    "ContextBlock",
    "ContextSource",
    "Correlation",
    "ImportResult",
    "Section",
    "SkillDefinition",
    "SkillDetail",
    "SkillHit",
    "Skills",
    "TagMatch",
]
