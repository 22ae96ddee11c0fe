"""Values of the skills package: a parsed skill definition and what the
skill operations return (import reports, activation hits, full skills, tag
matches, context blocks).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "ContextBlock",
    "ContextSource",
    "Correlation",
    "ImportResult",
    "Section",
    "SkillDefinition",
    "SkillDetail",
    "SkillHit",
    "TagMatch",
]


@dataclass(frozen=True, slots=True)
class Section:
    """A level-2 section of a skill (``## title`` and the text under it)."""

    title: str
    content: str


@dataclass(frozen=True, slots=True)
class SkillDefinition:
    """A skill as a file defines it.

    Attributes:
        name: the skill's identifier (lower-case letters, digits, ``-``, ``_``, ``.``).
        description: a one-line summary.
        sections: its level-2 sections, in file order.
        tags: classification tags (normalised).
        tools: names of the tools it uses.
        links: explicit correlations, (skill name, weight or None for the default).
        origin: the file it came from, relative to the imported folder.
    """

    name: str
    description: str
    sections: tuple[Section, ...] = ()
    tags: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    links: tuple[tuple[str, float | None], ...] = ()
    origin: str | None = None

    def to_metadata(self) -> dict[str, Any]:
        """The definition as stored in the skill memory's ``metadata["skill"]``."""
        return {
            "name": self.name,
            "description": self.description,
            "sections": [{"title": s.title, "content": s.content} for s in self.sections],
            "tags": list(self.tags),
            "tools": list(self.tools),
            "links": [{"name": n, "weight": w} for n, w in self.links],
        }

    @classmethod
    def from_metadata(
        cls, data: Mapping[str, Any], *, origin: str | None = None
    ) -> SkillDefinition:
        """The inverse of ``to_metadata``."""
        return cls(
            name=str(data["name"]),
            description=str(data["description"]),
            sections=tuple(Section(s["title"], s["content"]) for s in data.get("sections", [])),
            tags=tuple(data.get("tags", [])),
            tools=tuple(data.get("tools", [])),
            links=tuple((str(x["name"]), x.get("weight")) for x in data.get("links", [])),
            origin=origin,
        )

    def digest(self) -> str:
        """SHA-256 of everything the definition says (origin included), so an
        unchanged file is recognised without comparing fields."""
        payload = {**self.to_metadata(), "origin": self.origin}
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def text(self) -> str:
        """The memory content: the description, then each section as Markdown."""
        parts = [self.description]
        parts += [f"## {s.title}\n{s.content}" for s in self.sections]
        return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did, by skill name.

    A skill is ``added`` when its name was new in the import's scope,
    ``updated`` when its definition changed, ``unchanged`` otherwise. Skills
    missing from the folder are left as they are (an import only adds and
    updates). ``correlations`` counts the file-derived links now stored.
    """

    added: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    correlations: int
    changed_correlations: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "added": list(self.added),
            "updated": list(self.updated),
            "unchanged": list(self.unchanged),
            "correlations": self.correlations,
            "changed_correlations": self.changed_correlations,
        }


@dataclass(frozen=True, slots=True)
class Correlation:
    """A link from one skill to another.

    ``weight`` combines the file-derived weight (explicit links, shared tags
    and tools) and the learned one (co-activation) as ``1 - (1-a)(1-b)``.
    """

    name: str
    weight: float
    declared: float = 0.0
    learned: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "weight": round(self.weight, 4),
            "declared": round(self.declared, 4),
            "learned": round(self.learned, 4),
        }


@dataclass(frozen=True, slots=True)
class SkillHit:
    """One activated skill.

    Attributes:
        name: the skill.
        score: relevance in 0-1: the RRF-fused keyword and embedding score
            plus what propagation over correlations added.
        tags: its tags.
        associative_context: the skills propagation connected it to in this
            activation (for a seed: the neighbours it activated; for a skill
            reached through the graph: the seeds that brought it), with the
            edge weight.
        memory_id: the skill's memory.
        stages: the score of each stage (``fused``, ``propagated``) and the
            keyword / embedding ranks, for explanation.
    """

    name: str
    score: float
    tags: tuple[str, ...]
    associative_context: tuple[Correlation, ...] = ()
    memory_id: str = ""
    stages: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{name, score, tags, associative_context, ...}``."""
        return {
            "name": self.name,
            "score": round(self.score, 4),
            "tags": list(self.tags),
            "associative_context": [
                {"name": c.name, "weight": round(c.weight, 4)} for c in self.associative_context
            ],
            "memory_id": self.memory_id,
            "stages": {k: round(v, 4) for k, v in self.stages.items()},
        }


@dataclass(frozen=True, slots=True)
class SkillDetail:
    """A whole skill, as ``get`` returns it."""

    name: str
    description: str
    sections: tuple[Section, ...]
    tools: tuple[str, ...]
    tags: tuple[str, ...]
    correlations: tuple[Correlation, ...]
    memory_id: str
    origin: str | None
    updated_at: datetime
    activations: int = 0
    gets: int = 0
    last_used: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "description": self.description,
            "sections": [{"title": s.title, "content": s.content} for s in self.sections],
            "tools": list(self.tools),
            "tags": list(self.tags),
            "correlations": [c.to_dict() for c in self.correlations],
            "memory_id": self.memory_id,
            "origin": self.origin,
            "updated_at": self.updated_at.isoformat(),
            "usage": {
                "activations": self.activations,
                "gets": self.gets,
                "last_used": self.last_used.isoformat() if self.last_used else None,
            },
        }


@dataclass(frozen=True, slots=True)
class TagMatch:
    """A skill found by tags: ``score`` is the share of the asked tags it
    has; ``matched`` lists them."""

    name: str
    score: float
    tags: tuple[str, ...]
    matched: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "score": round(self.score, 4),
            "tags": list(self.tags),
            "matched": list(self.matched),
        }


@dataclass(frozen=True, slots=True)
class ContextSource:
    """One source quoted in a context block: a skill (with the sections
    included) or a memory."""

    kind: str  # "skill" or "memory"
    id: str
    name: str | None
    score: float
    sections: tuple[str, ...] = ()
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        # The id is a memory's (a skill's own memory, for a skill): named
        # as every reference to a memory is, over every surface.
        out: dict[str, Any] = {
            "kind": self.kind,
            "memory_id": self.id,
            "score": round(self.score, 4),
        }
        if self.name is not None:
            out["name"] = self.name
        if self.kind == "skill":
            out["sections"] = list(self.sections)
        out["truncated"] = self.truncated
        return out


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A prompt-ready context string and how it was made.

    Attributes:
        text: the block itself.
        tokens: its length in ``tokenizer``'s tokens (never above ``max_tokens``).
        max_tokens: the budget.
        tokenizer: the tokenizer that counted.
        sources: what it quotes, in order.
    """

    text: str
    tokens: int
    max_tokens: int
    tokenizer: str
    sources: tuple[ContextSource, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "context": self.text,
            "tokens": self.tokens,
            "max_tokens": self.max_tokens,
            "tokenizer": self.tokenizer,
            "sources": [s.to_dict() for s in self.sources],
        }
