"""``palace.family``: the recall family beyond plain recall.

Each flow answers one kind of question from what the caller's scope may see,
built from recall (``Palace.recall``, modes included), the entity graph and
supersession history; none writes a memory.

* ``what_do_i_know(topic)``: a broad scan grouped by category (facts,
  decisions, lessons, workflows, goals, then the rest), de-duplicated.
* ``why_did_we(query)``: the decision, what it superseded, and the lessons,
  events and messages linked to it, in time order.
* ``who_owns(name)`` / ``depends_on(name, direction=...)``: answers from the
  typed relations written with memories (``graph.relations``), each citing
  the memories that state it.
* ``preflight(action)``: constraints, decisions, lessons, workflows, skills
  and recent events to know before doing something.

Every answer is an ``Answer``: groups of ``Item`` (a ``Hit`` with ``score``,
``confidence`` and ``high_confidence``, and how it relates to the question),
an ``injection_block`` for a prompt (``safety.injection_block``), and, when
nothing was found, a ``hint`` rather than an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mindpalace.errors import ValidationError
from mindpalace.graph.extract import extract_mentions, normalise_name
from mindpalace.graph.relations import DEPENDS_ON, OWNERSHIP_KINDS
from mindpalace.models import Category, Hit, Memory, MemoryType, RecallFilters
from mindpalace.retrieval import stages
from mindpalace.retrieval.graphstage import query_entities
from mindpalace.safety import injection_block
from mindpalace.store.relations_sql import RelationRow
from mindpalace.validation import check_limit, check_query

if TYPE_CHECKING:
    from mindpalace.graphview import GraphView
    from mindpalace.skills import Skills
    from mindpalace.view import View

__all__ = [
    "DIRECTIONS",
    "EMPTY_HINT",
    "GROUP_ORDER",
    "Answer",
    "Family",
    "Group",
    "Item",
]

EMPTY_HINT = "Try a broader query or remove filters."
# what_do_i_know's groups, in this order (facts, decisions,
# lessons, workflows and goals; then the other categories where present).
GROUP_ORDER = (
    Category.FACT,
    Category.DECISION,
    Category.LESSON,
    Category.WORKFLOW,
    Category.GOAL,
    Category.RULE,
    Category.PERSON,
    Category.EVENT,
    Category.CONVERSATION,
)
DIRECTIONS = ("dependents", "dependencies")
# Two memories whose word sets overlap this much say the same thing.
NEAR_DUPLICATE = 0.8
# How strongly a relation kind answers "who owns X".
_OWNERSHIP_WEIGHT = {"owns": 1.0, "maintains": 0.9, "leads": 0.85, "manages": 0.85}
# A name resolved through an alias or a word of it is less certain.
_INEXACT = 0.8
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Item:
    """One memory in an answer, and how it relates to the question.

    Attributes:
        hit: the memory with its ``score`` (0-1), ``confidence`` (0-1) and
            ``high_confidence`` (confidence >= 0.8).
        relation: its role: a category group's match, ``decision``,
            ``superseded``, ``lesson``, ``event``, ``message``, a relation
            kind (``owns``, ``depends_on``...), ``constraint``, ``skill``...
        entity: for relation answers, the entity that answers.
        via: what linked it (``supersession``, ``entity: Billing``,
            ``session``, ``topic``, ``relation``).
        duplicates: ids of near-duplicates folded into this item.
    """

    hit: Hit
    relation: str = "match"
    entity: str | None = None
    via: str = ""
    duplicates: tuple[str, ...] = ()

    @property
    def memory(self) -> Memory:
        """The memory."""
        return self.hit.memory

    def to_dict(self) -> dict[str, Any]:
        """The hit's JSON form plus ``relation``, ``entity``, ``via``, ``duplicates``."""
        out = self.hit.to_dict()
        out.update(
            relation=self.relation,
            entity=self.entity,
            via=self.via,
            duplicates=list(self.duplicates),
        )
        return out


@dataclass(frozen=True, slots=True)
class Group:
    """A named part of an answer (a category, an owner, a kind of context)."""

    name: str
    items: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """What a recall-family flow found.

    Attributes:
        kind: the flow (``what_do_i_know``, ``why_did_we``, ``who_owns``,
            ``depends_on``, ``preflight``).
        query: what was asked.
        groups: the answer's parts, in order; empty groups are left out.
        entities: the entity names the question resolved to (relation flows).
        notice: how the search ran, when worth saying (e.g. text search only).
    """

    kind: str
    query: str
    groups: tuple[Group, ...]
    entities: tuple[str, ...] = ()
    notice: str | None = None

    @property
    def items(self) -> list[Item]:
        """Every item once (a memory in two groups counts in the first)."""
        seen: set[str] = set()
        out = []
        for group in self.groups:
            for item in group.items:
                if item.memory.id not in seen:
                    seen.add(item.memory.id)
                    out.append(item)
        return out

    @property
    def empty(self) -> bool:
        """Nothing was found."""
        return not any(group.items for group in self.groups)

    @property
    def hint(self) -> str | None:
        """What to try when nothing was found ."""
        return EMPTY_HINT if self.empty else None

    @property
    def injection_block(self) -> str:
        """Every item as a prompt-ready, informational-only block."""
        return injection_block(item.hit for item in self.items)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: groups of memories and the hint (the prompt block
        is ``injection_block``; ``Palace.context`` builds prompts)."""
        return {
            "kind": self.kind,
            "query": self.query,
            "entities": list(self.entities),
            "groups": [
                {"name": g.name, "memories": [i.to_dict() for i in g.items]} for g in self.groups
            ],
            "count": len(self.items),
            "hint": self.hint,
            "notice": self.notice,
        }


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORDS.findall(text.casefold()))


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE


def _label(category: Category) -> str:
    """The relation name of a memory linked to a decision, by its category."""
    return {
        Category.LESSON: "lesson",
        Category.EVENT: "event",
        Category.CONVERSATION: "message",
        Category.DECISION: "related decision",
    }.get(category, "related")


class Family:
    """The recall family of one palace, through its scope (``palace.family``)."""

    def __init__(self, palace: View, *, graph: GraphView, skills: Skills) -> None:
        self._palace = palace
        self._graph = graph
        self._skills = skills

    # -- helpers ------------------------------------------------------------------

    def _hit(self, memory: Memory, score: float, **stage: float) -> Hit:
        """A hit for a memory reached by a link rather than ranked by recall."""
        return Hit(
            memory=memory,
            score=max(0.0, min(1.0, score)),
            confidence=stages.confidence(memory, self._palace.now()),
            stage_scores={"final": score, **stage},
        )

    def _resolve(self, name: str) -> tuple[list[str], bool]:
        """The visible entity keys ``name`` names, and whether it named them
        exactly (its full name or one of its mentions) rather than by a word."""
        palace = self._palace
        mentions = extract_mentions([name])
        names = {normalise_name(name)} | {m.norm for m in mentions}
        names |= {a for m in mentions for a in m.aliases}
        found = palace.engine.store.resolve_names(sorted(n for n in names if n), palace.scope)
        keys = sorted({k for ks in found.values() for k in ks})
        if keys:
            return keys, True
        loose = query_entities(palace.engine.store, name, palace.scope)
        return sorted({k for ks in loose.values() for k in ks}), False

    @staticmethod
    def _name(text: object, field: str) -> str:
        check_query(text, field)
        assert isinstance(text, str)
        if not text.strip():
            raise ValidationError(field, text, reason=f"{field} must not be empty")
        return text

    # -- what do I know -------------------------------------------------------------

    def what_do_i_know(self, topic: str, *, limit: int = 25, per_group: int = 5) -> Answer:
        """Everything stored about ``topic``, grouped by category.

        One broad recall (graph propagation on) is grouped by category in
        ``GROUP_ORDER``; each group is ordered by relevance and holds at most
        ``per_group`` items; the whole answer at most ``limit``, the least
        relevant dropped first. The same memory appears once, a near-duplicate
        (word overlap >= 0.8) folds into the more relevant copy (listed in its
        ``duplicates``), and superseded facts appear only as their current
        version.

        Args:
            topic: what to scan for, in plain words.
            limit: items in all, 1-100.
            per_group: items per category, 1-20.

        Raises:
            ValidationError: an empty topic, or a limit out of range.
        """
        topic = self._name(topic, "topic")
        check_limit(limit, low=1, high=100)
        check_limit(per_group, low=1, high=20, field="per_group")
        hits = self._palace.recall(topic, limit=100)
        kept: list[tuple[Hit, frozenset[str], list[str]]] = []
        for hit in hits:
            words = _words(hit.memory.content)
            twin = next((k for k in kept if _similar(k[1], words)), None)
            if twin is not None:
                twin[2].append(hit.memory.id)
                continue
            kept.append((hit, words, []))
        by_category: dict[Category, list[Item]] = {}
        for hit, _, twins in kept:
            group = by_category.setdefault(hit.memory.category, [])
            if len(group) < per_group:
                group.append(
                    Item(
                        hit,
                        relation=hit.memory.category.value,
                        via="topic",
                        duplicates=tuple(twins),
                    )
                )
        chosen = sorted(
            (item for items in by_category.values() for item in items),
            key=lambda i: (-i.hit.score, i.memory.id),
        )[:limit]
        keep = {item.memory.id for item in chosen}
        groups = tuple(
            Group(
                f"{category.value}s" if category is not Category.PERSON else "people",
                tuple(i for i in by_category[category] if i.memory.id in keep),
            )
            for category in GROUP_ORDER
            if any(i.memory.id in keep for i in by_category.get(category, []))
        )
        return Answer("what_do_i_know", topic, groups, notice=hits.notice)

    # -- why did we -------------------------------------------------------------------

    def why_did_we(self, query: str, *, limit: int = 10) -> Answer:
        """The decision ``query`` asks about, with its history and context.

        The decision is the best ``decision``-mode recall hit of category
        decision (else the best hit at all). Around it: the facts it
        superseded (its supersession history), memories mentioning its
        entities (lessons, events, messages, related decisions), the other
        memories of its session, and lessons, events and messages about the
        same topic. The ``limit`` most strongly linked are returned with the
        decision, all in time order, each with its ``relation`` to the
        decision and ``via`` (how it is linked).

        Args:
            query: what was decided, in plain words ("choose Convex").
            limit: linked memories at most, 1-50.

        Raises:
            ValidationError: an empty query, or a limit out of range.
        """
        query = self._name(query, "query")
        check_limit(limit, low=1, high=50)
        palace = self._palace
        found = palace.recall(query, limit=10, mode="decision")
        if not found:
            return Answer("why_did_we", query, (), notice=found.notice)
        decision = next((h for h in found if h.memory.category is Category.DECISION), found[0])
        base = decision.score
        linked: dict[str, Item] = {}

        def link(item: Item) -> None:
            known = linked.get(item.memory.id)
            if known is None or item.hit.score > known.hit.score:
                linked[item.memory.id] = item

        for memory in self._graph.history(decision.memory.id):
            if memory.id == decision.memory.id:
                continue
            role = (
                "superseded" if memory.created_at <= decision.memory.created_at else "replaced by"
            )
            link(Item(self._hit(memory, base, link=1.0), role, via="supersession"))
        self._entity_links(decision, link)
        if decision.memory.session:
            for memory in palace.memories(sessions=[decision.memory.session], limit=50):
                if memory.id != decision.memory.id:
                    hit = self._hit(memory, base * 0.5, link=0.5)
                    link(Item(hit, _label(memory.category), via="session"))
        topical = palace.recall(
            query, limit=limit, categories=[Category.LESSON, Category.EVENT, Category.CONVERSATION]
        )
        for hit in topical:
            link(Item(hit, _label(hit.memory.category), via="topic"))
        linked.pop(decision.memory.id, None)
        strongest = sorted(linked.values(), key=lambda i: (-i.hit.score, i.memory.id))[:limit]
        timeline = [Item(decision, "decision", via="query"), *strongest]
        timeline.sort(key=lambda i: (i.memory.created_at, i.memory.id))
        return Answer(
            "why_did_we", query, (Group("timeline", tuple(timeline)),), notice=found.notice
        )

    def _entity_links(self, decision: Hit, link: Any) -> None:
        """Memories sharing entities with the decision, scored by how many."""
        palace = self._palace
        mentioned = palace.engine.store.entities_of([decision.memory.id], palace.scope)
        names = {e.norm: e.name for e in mentioned.get(decision.memory.id, [])}
        if not names:
            return
        members = palace.engine.store.entity_members(
            sorted(names), palace.scope, RecallFilters(), max_degree=50
        )
        shared: dict[str, list[str]] = {}
        for norm, (_, ids) in members.items():
            for memory_id in ids:
                shared.setdefault(memory_id, []).append(names[norm])
        shared.pop(decision.memory.id, None)
        memories = palace.engine.store.get_many(sorted(shared), palace.scope)
        for memory_id, via in shared.items():
            memory = memories.get(memory_id)
            if memory is None:
                continue
            strength = min(1.0, 0.4 + 0.2 * len(via))
            hit = self._hit(memory, decision.score * strength, link=strength)
            link(Item(hit, _label(memory.category), via="entity: " + ", ".join(sorted(via))))

    # -- ownership and dependencies --------------------------------------------------------

    def who_owns(self, name: str, *, limit: int = 10) -> Answer:
        """Who owns, maintains, leads or manages ``name``, from the relations
        stated by current memories (superseded and archived ones state
        nothing). One group per answering entity, best first, each item a
        memory that states the relation (``relation`` is its kind).

        Args:
            name: the thing asked about ("Billing", "the Billing service").
            limit: answering entities at most, 1-50.

        Raises:
            ValidationError: an empty name, or a limit out of range.
        """
        name = self._name(name, "name")
        check_limit(limit, low=1, high=50)
        return self._relations("who_owns", name, OWNERSHIP_KINDS, side="object", limit=limit)

    def depends_on(self, name: str, *, direction: str = "dependents", limit: int = 10) -> Answer:
        """What depends on ``name`` (``direction="dependents"``, default) or
        what ``name`` depends on (``"dependencies"``), from the relations
        stated by current memories, each citing the memories that state it.

        Raises:
            ValidationError: an empty name, an unknown direction (the valid
                ones are named), or a limit out of range.
        """
        name = self._name(name, "name")
        if direction not in DIRECTIONS:
            raise ValidationError("direction", direction, valid=DIRECTIONS)
        check_limit(limit, low=1, high=50)
        side = "object" if direction == "dependents" else "subject"
        return self._relations("depends_on", name, (DEPENDS_ON,), side=side, limit=limit)

    def _relations(
        self, kind: str, name: str, kinds: Sequence[str], *, side: str, limit: int
    ) -> Answer:
        palace = self._palace
        keys, exact = self._resolve(name)
        rows = palace.engine.store.relations(keys, palace.scope, kinds=kinds, side=side)
        answers: dict[str, list[RelationRow]] = {}
        for row in rows:  # newest first
            other = row.subject if side == "object" else row.object
            answers.setdefault(other, []).append(row)
        groups = []
        for other, stated in answers.items():
            items = []
            for row in stated:
                score = _OWNERSHIP_WEIGHT.get(row.kind, 1.0) * (1.0 if exact else _INEXACT)
                display = row.subject_name if side == "object" else row.object_name
                hit = self._hit(row.memory, score, relation=score)
                items.append(Item(hit, row.kind, entity=display, via=f"relation: {row.sentence}"))
            items.sort(key=lambda i: (-i.hit.score, -i.memory.created_at.timestamp()))
            groups.append(Group(items[0].entity or other, tuple(items)))
        # Best evidence first; between equals, the most recently stated.
        groups.sort(
            key=lambda g: (
                -g.items[0].hit.score,
                -max(i.memory.created_at.timestamp() for i in g.items),
            )
        )
        named = sorted({r.object_name if side == "object" else r.subject_name for r in rows})
        notice = None if keys else f"No stored entity is named {name!r}."
        return Answer(kind, name, tuple(groups[:limit]), entities=tuple(named), notice=notice)

    # -- preflight ----------------------------------------------------------------------

    def preflight(self, action: str, *, limit: int = 5) -> Answer:
        """What to know before doing ``action``, in groups: ``constraints``
        (constraint memories naming its entities, then rules), ``decisions``,
        ``lessons``, ``workflows``, ``skills`` (``palace.skills.activate``)
        and ``events`` (related events and messages, newest first).

        Args:
            action: what is about to be done, in plain words.
            limit: items per group, 1-20.

        Raises:
            ValidationError: an empty action, or a limit out of range.
        """
        action = self._name(action, "action")
        check_limit(limit, low=1, high=20)
        palace = self._palace
        store, scope = palace.engine.store, palace.scope
        keys = sorted({k for ks in query_entities(store, action, scope).values() for k in ks})
        constraints: list[Item] = []
        for key, memories in store.constraints_mentioning(keys, scope, RecallFilters()).items():
            for memory in memories:
                hit = self._hit(memory, 1.0, constraint=1.0)
                constraints.append(Item(hit, "constraint", via=f"entity: {key}"))
        rules = palace.recall(action, limit=limit, categories=[Category.RULE])
        constraints += [Item(h, "rule", via="topic") for h in rules]

        def recalled(categories: Iterable[Category], relation: str) -> list[Item]:
            hits = palace.recall(action, limit=limit, categories=list(categories))
            return [Item(h, relation, via="topic") for h in hits]

        decisions = recalled([Category.DECISION], "decision")
        lessons = recalled([Category.LESSON], "lesson")
        workflows = [
            i
            for i in recalled([Category.WORKFLOW], "workflow")
            if i.memory.type is not MemoryType.SKILL
        ]
        skill_hits = self._skills.activate(action, limit=min(limit, 5))
        skill_memories = store.get_many([s.memory_id for s in skill_hits], scope)
        skills = [
            Item(
                self._hit(skill_memories[s.memory_id], s.score),
                "skill",
                entity=s.name,
                via="activation",
            )
            for s in skill_hits
            if s.memory_id in skill_memories
        ]
        events = recalled([Category.EVENT, Category.CONVERSATION], "event")
        events.sort(key=lambda i: (i.memory.created_at, i.memory.id), reverse=True)
        groups = (
            Group("constraints", _unique(constraints)[: limit * 2]),
            Group("decisions", tuple(decisions)),
            Group("lessons", tuple(lessons)),
            Group("workflows", tuple(workflows)),
            Group("skills", tuple(skills)),
            Group("events", tuple(events)),
        )
        return Answer(
            "preflight",
            action,
            tuple(g for g in groups if g.items),
            entities=tuple(keys),
            notice=rules.notice,
        )


def _unique(items: Iterable[Item]) -> tuple[Item, ...]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item.memory.id not in seen:
            seen.add(item.memory.id)
            out.append(item)
    return tuple(out)
