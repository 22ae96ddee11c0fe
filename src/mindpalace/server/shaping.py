"""One JSON shape for what every tool returns, on every transport, and its schema.

Field names are snake_case, as the arguments are (``memory_id`` is the id
that ``memory_get``, ``memory_update`` and ``memory_forget`` take back), so
an agent sees the same result over MCP stdio, MCP HTTP and REST. A field
with no value is left out rather than sent as ``null``.

Search results carry the memories and nothing else: the prompt-ready,
injection-safe block comes from the tool that builds prompts
(``memory_recall``), not repeated after every search.

Each function returns one of the typed shapes of ``shapes``; ``SHAPES``
names the shape of each tool's result, from which the OpenAPI schemas and
the MCP ``outputSchema`` are generated (``OUTPUT``, ``SCHEMAS``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mindpalace import family, models
from mindpalace.models import MemoryKind, issue_number
from mindpalace.personal import SearchResults
from mindpalace.server import shapes
from mindpalace.skills.model import ContextBlock, SkillDetail, SkillHit, TagMatch

__all__ = [
    "OUTPUT",
    "RESULTS",
    "SCHEMAS",
    "SHAPES",
    "answer_json",
    "context_json",
    "hits_json",
    "memory_json",
    "message_json",
    "search_json",
    "skill_hit_json",
    "skill_json",
    "stats_json",
    "tag_match_json",
]


def _time(value: datetime) -> str:
    return value.isoformat()


def _maybe_time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def memory_json(memory: models.Memory) -> shapes.Memory:
    """A memory as the tools show it: the recall fields first, then the rest
    an agent may act on (its type, scope and times)."""
    return {
        "memory_id": memory.id,
        "content": memory.content,
        "title": memory.title,
        "store": memory.store.value,
        "category": memory.category.value,
        "type": memory.type.value,
        "tags": list(memory.tags),
        "strength": round(memory.strength, 6),
        "confidence": round(memory.confidence, 6),
        "source": memory.source.value,
        "visibility": memory.visibility.value,
        "group": memory.group,
        "channel": memory.channel,
        "agent_id": memory.agent_id,
        "session": memory.session,
        "constraint": memory.constraint,
        "archived": memory.archived,
        "created_at": _time(memory.created_at),
        "updated_at": _time(memory.updated_at),
        "valid_from": _maybe_time(memory.valid_from),
        "valid_to": _maybe_time(memory.valid_to),
        "superseded_by": memory.superseded_by,
        "kind": memory.kind.value,
        "project": memory.project,
        "completed": memory.completed,
        "metadata": dict(memory.metadata) or None,
    }


def _hit_json(hit: models.Hit) -> shapes.Hit:
    return {
        **memory_json(hit.memory),
        "score": round(hit.score, 6),
        "high_confidence": hit.high_confidence,
        "associative_context": [
            {"memory_id": a.memory_id, "weight": round(a.weight, 6), "path": list(a.path)}
            for a in hit.associative_context
        ],
        "reached_via": [
            {
                "memory_id": link.memory_id,
                "weight": round(link.weight, 6),
                "path": list(link.path),
                "entities": list(link.entities),
                "snippet": link.snippet,
            }
            for link in hit.reached_via
        ],
    }


def hits_json(hits: models.HitList) -> shapes.HitList:
    """A recall result, plus how the search ran (``mode``, ``notice``) and,
    when empty, a ``hint``."""
    return {
        "memories": [_hit_json(hit) for hit in hits],
        "mode": hits.mode,
        "notice": hits.notice,
        "hint": None if hits else family.EMPTY_HINT,
    }


def _item_json(item: family.Item) -> shapes.AnswerMemory:
    return {
        **_hit_json(item.hit),
        "relation": item.relation,
        "entity": item.entity,
        "via": item.via,
        "duplicates": list(item.duplicates) or None,
    }


def answer_json(answer: family.Answer) -> shapes.Answer:
    """A recall-family answer: its groups, each a list of memories with
    their relation to the question (a memory in two groups is shown in the
    first), and a ``hint`` when empty."""
    seen: set[str] = set()
    groups: list[shapes.AnswerGroup] = []
    for group in answer.groups:
        items = [i for i in group.items if i.memory.id not in seen]
        seen.update(i.memory.id for i in items)
        if items:
            groups.append({"name": group.name, "memories": [_item_json(i) for i in items]})
    return {
        "query": answer.query,
        "entities": list(answer.entities) or None,
        "groups": groups,
        "count": len(seen),
        "hint": answer.hint,
        "notice": answer.notice,
    }


def message_json(match: models.MessageMatch) -> shapes.MessageMatch:
    """A conversation turn that matched a phrase, with the turns around it."""
    return {
        **memory_json(match.memory),
        "before": [memory_json(m) for m in match.before],
        "after": [memory_json(m) for m in match.after],
    }


def search_json(results: SearchResults) -> shapes.PersonalResults:
    """A personal-data search: each result a hit plus its ``date``,
    ``attribution`` and ``line``; how the search ran; a hint when empty."""
    out: list[shapes.PersonalResult] = []
    for result in results:
        issue = result.kind is MemoryKind.ISSUE
        out.append(
            {
                **_hit_json(result.hit),
                "date": result.date.date().isoformat(),
                "attribution": result.attribution,
                "summary": result.summary,
                "line": result.line,
                "issue_number": issue_number(result.memory.metadata) if issue else None,
            }
        )
    return {
        "results": out,
        "query": results.query,
        "kinds": [k.value for k in results.kinds],
        "project": results.project,
        "completed": results.completed,
        "narrowed_by": list(results.narrowed_by) or None,
        "mode": results.mode,
        "notice": results.notice,
        "hint": results.hint,
        "suggestions": list(results.suggestions) or None,
    }


def stats_json(stats: models.Stats) -> shapes.Stats:
    """Counts of what a caller sees (not where the server keeps its data)."""
    return {
        "memories": stats.memories,
        "archived": stats.archived,
        "superseded": stats.superseded,
        "by_type": dict(stats.by_type),
        "by_store": dict(stats.by_store),
        "by_category": dict(stats.by_category),
        "by_agent": dict(stats.by_agent),
        "schema_version": stats.schema_version,
    }


def skill_hit_json(hit: SkillHit) -> shapes.SkillHit:
    """An activated skill and the skills it brought along."""
    return {
        "name": hit.name,
        "score": round(hit.score, 4),
        "tags": list(hit.tags),
        "associative_context": [
            {"name": c.name, "weight": round(c.weight, 4)} for c in hit.associative_context
        ],
        "memory_id": hit.memory_id,
        "stages": {k: round(v, 4) for k, v in hit.stages.items()},
    }


def skill_json(skill: SkillDetail) -> shapes.Skill:
    """A skill in full."""
    return {
        "name": skill.name,
        "description": skill.description,
        "sections": [{"title": s.title, "content": s.content} for s in skill.sections],
        "tools": list(skill.tools),
        "tags": list(skill.tags),
        "correlations": [
            {
                "name": c.name,
                "weight": round(c.weight, 4),
                "declared": round(c.declared, 4),
                "learned": round(c.learned, 4),
            }
            for c in skill.correlations
        ],
        "memory_id": skill.memory_id,
        "origin": skill.origin,
        "updated_at": _time(skill.updated_at),
        "usage": {
            "activations": skill.activations,
            "gets": skill.gets,
            "last_used": _maybe_time(skill.last_used),
        },
    }


def tag_match_json(match: TagMatch) -> shapes.TagMatch:
    """A skill found by tags."""
    return {
        "name": match.name,
        "score": round(match.score, 4),
        "tags": list(match.tags),
        "matched": list(match.matched),
    }


def context_json(block: ContextBlock) -> shapes.Context:
    """A context block, flat: the block under ``context`` beside how it was
    made, as ``mindpalace context`` prints it."""
    sources: list[shapes.ContextSource] = [
        {
            "kind": source.kind,
            "memory_id": source.id,
            "score": round(source.score, 4),
            "name": source.name,
            "sections": list(source.sections) if source.kind == "skill" else None,
            "truncated": source.truncated,
        }
        for source in block.sources
    ]
    return {
        "context": block.text,
        "tokens": block.tokens,
        "max_tokens": block.max_tokens,
        "tokenizer": block.tokenizer,
        "sources": sources,
    }


# -- result schemas ---------------------------------------------------------------------

#: The shape of each tool's result, by tool name.
SHAPES: dict[str, type] = {
    "memory_store": shapes.MemoryResult,
    "memory_search": shapes.HitList,
    "memory_get": shapes.MemoryResult,
    "memory_update": shapes.Updated,
    "memory_forget": shapes.Forgotten,
    "memory_list": shapes.MemoryPage,
    "memory_stats": shapes.StatsResult,
    "memory_feedback": shapes.Feedback,
    "memory_erase": shapes.Erased,
    "what_do_i_know": shapes.Answer,
    "why_did_we": shapes.Answer,
    "who_owns": shapes.Answer,
    "depends_on": shapes.Answer,
    "preflight": shapes.Answer,
    "personal_search": shapes.PersonalResults,
    "recent": shapes.Messages,
    "search_messages": shapes.MessageMatches,
    "activate_skills": shapes.ActivatedSkills,
    "get_skill": shapes.SkillResult,
    "find_skills": shapes.FoundSkills,
    "memory_recall": shapes.Context,
}

#: Each tool's result schema (a ``$ref`` into ``SCHEMAS``), and the named
#: schemas: the OpenAPI document's ``components/schemas``.
RESULTS, SCHEMAS = shapes.response_schemas(SHAPES)

#: The MCP ``outputSchema`` of each tool: its result's top-level fields.
OUTPUT: dict[str, dict[str, Any]] = {
    name: shapes.output_schema(shape, SCHEMAS) for name, shape in SHAPES.items()
}
