"""Recall modes: priors over categories, stores and types,
applied after the pipeline has ranked by relevance.

A mode *reweights*, it never filters: each hit's score is multiplied by

    factor = floor + (1 - floor) * affinity

where ``affinity`` in [0, 1] is the best of the mode's weight for the hit's
category, store and type (and, for ``people``, for a memory that mentions a
person entity), times a recency term for ``conversation``. A hit the mode
prefers keeps its score; one it does not loses at most ``1 - floor`` of it
(40 %), so a strongly relevant memory of another kind can still outrank a
weak one of the preferred kind. Explicit filters (stores, categories, tags)
still filter, inside the pipeline, before any mode applies.

======================  =====================================  ===========================
mode                    prioritises (weight)                   best for
======================  =====================================  ===========================
general                 everything equally (no prior)          open-ended queries
decision                category decision 1.0, lesson 0.9;     past reasoning and choices
                        store semantic 0.25
project                 category goal 1.0, workflow 0.9,       project status, procedures
                        fact 0.8; type project 1.0, task 0.8;
                        store prospective 0.6
people                  category person 1.0; type person 1.0;  user / teammate context
                        mentions a person entity 0.8
workflow                category workflow 1.0, rule 1.0;       how-to and best practice
                        store procedural 1.0; type skill 0.9
conversation            category conversation 1.0; store       session continuity
                        episodic 0.6, sensory 0.6; times
                        recency (half-life 7 days)
======================  =====================================  ===========================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from mindpalace.errors import ValidationError
from mindpalace.models import Category, Hit, HitList, Memory, MemoryType, Scope, StoreKind
from mindpalace.store.roles import GraphRows

__all__ = ["DEFAULT_MODE", "MODES", "ModePrior", "apply_mode", "check_mode"]

DEFAULT_MODE = "general"


@dataclass(frozen=True, slots=True)
class ModePrior:
    """What a recall mode prefers (see the module docstring's table).

    Attributes:
        name: the mode.
        description: what it is for, in words.
        categories / stores / types: affinity weights (0-1) of memories of
            these values; unnamed values have affinity 0.
        person_mentions: affinity of a memory that mentions a person entity.
        recency_half_life_days: when set, affinity is scaled by
            ``0.5 + 0.5 * 0.5 ** (age / half-life)``.
        floor: the factor of a memory with affinity 0.
    """

    name: str
    description: str
    categories: Mapping[Category, float] = field(default_factory=dict)
    stores: Mapping[StoreKind, float] = field(default_factory=dict)
    types: Mapping[MemoryType, float] = field(default_factory=dict)
    person_mentions: float = 0.0
    recency_half_life_days: float | None = None
    floor: float = 0.6

    @property
    def neutral(self) -> bool:
        """Whether the mode changes nothing (``general``)."""
        return not (self.categories or self.stores or self.types or self.person_mentions)

    def affinity(self, memory: Memory, now: datetime, *, mentions_person: bool = False) -> float:
        """How much the mode prefers ``memory``, 0-1."""
        value = max(
            self.categories.get(memory.category, 0.0),
            self.stores.get(memory.store, 0.0),
            self.types.get(memory.type, 0.0),
            self.person_mentions if mentions_person else 0.0,
        )
        if self.recency_half_life_days:
            age = max(0.0, (now - memory.created_at).total_seconds() / 86_400.0)
            value *= 0.5 + 0.5 * math.pow(0.5, age / self.recency_half_life_days)
        return value

    def factor(self, memory: Memory, now: datetime, *, mentions_person: bool = False) -> float:
        """The multiplier of the memory's score, in [floor, 1]."""
        if self.neutral:
            return 1.0
        affinity = self.affinity(memory, now, mentions_person=mentions_person)
        return self.floor + (1.0 - self.floor) * affinity


MODES: Mapping[str, ModePrior] = {
    mode.name: mode
    for mode in (
        ModePrior("general", "all memory types equally: open-ended queries"),
        ModePrior(
            "decision",
            "decisions and lessons from the semantic store: past reasoning and choices",
            categories={Category.DECISION: 1.0, Category.LESSON: 0.9},
            stores={StoreKind.SEMANTIC: 0.25},
        ),
        ModePrior(
            "project",
            "goals, workflows and facts: project status and procedures",
            categories={Category.GOAL: 1.0, Category.WORKFLOW: 0.9, Category.FACT: 0.8},
            types={MemoryType.PROJECT: 1.0, MemoryType.TASK: 0.8},
            stores={StoreKind.PROSPECTIVE: 0.6},
        ),
        ModePrior(
            "people",
            "person memories and relationships: user and teammate context",
            categories={Category.PERSON: 1.0},
            types={MemoryType.PERSON: 1.0},
            person_mentions=0.8,
        ),
        ModePrior(
            "workflow",
            "procedural rules and patterns: how-to and best practices",
            categories={Category.WORKFLOW: 1.0, Category.RULE: 1.0},
            stores={StoreKind.PROCEDURAL: 1.0},
            types={MemoryType.SKILL: 0.9},
        ),
        ModePrior(
            "conversation",
            "recent conversational context: session continuity",
            categories={Category.CONVERSATION: 1.0},
            stores={StoreKind.EPISODIC: 0.6, StoreKind.SENSORY: 0.6},
            recency_half_life_days=7.0,
        ),
    )
}


def check_mode(mode: object) -> ModePrior:
    """The prior of ``mode`` (a name, case-insensitive; None is general).

    Raises:
        ValidationError: naming the six modes, when ``mode`` is not one.
    """
    if mode is None:
        return MODES[DEFAULT_MODE]
    if isinstance(mode, str) and mode.strip().lower() in MODES:
        return MODES[mode.strip().lower()]
    raise ValidationError("mode", mode, valid=list(MODES))


def apply_mode(
    hits: HitList,
    prior: ModePrior,
    *,
    store: GraphRows,
    scope: Scope,
    now: datetime,
    limit: int,
) -> HitList:
    """``hits`` re-ranked by ``prior`` and cut to ``limit``.

    Each hit's score is multiplied by the mode's factor (``explain`` shows
    it as the ``mode`` stage score and a ``mode:`` gate). Constraint hits
    the pipeline added are kept, as the pipeline keeps them.
    """
    if prior.neutral:
        out = HitList(hits[:limit], mode=hits.mode, notice=hits.notice)
        out.timings = hits.timings
        return out
    people: set[str] = set()
    if prior.person_mentions:
        found = store.entities_of([h.memory.id for h in hits], scope)
        people = {
            key
            for key, entities in found.items()
            if any(e.type is MemoryType.PERSON for e in entities)
        }
    weighted: list[Hit] = []
    constraints: list[Hit] = []
    for hit in hits:
        if "constraint" in hit.ranks:
            constraints.append(hit)
            continue
        factor = prior.factor(hit.memory, now, mentions_person=hit.memory.id in people)
        scores = {**hit.stage_scores, "mode": factor}
        kind = f"{hit.memory.category.value}/{hit.memory.store.value}"
        gate = f"mode {prior.name}: x{factor:.2f} ({kind})"
        weighted.append(
            replace(hit, score=hit.score * factor, stage_scores=scores, gates=(*hit.gates, gate))
        )
    weighted.sort(key=lambda h: (-h.score, h.memory.id))
    room = max(1, limit - len(constraints))
    chosen = [*weighted[:room], *constraints][:limit]
    ranked = [
        replace(hit, ranks={**hit.ranks, "final": i, "mode": i})
        for i, hit in enumerate(chosen, start=1)
    ]
    out = HitList(ranked, mode=hits.mode, notice=hits.notice)
    out.timings = hits.timings
    return out
