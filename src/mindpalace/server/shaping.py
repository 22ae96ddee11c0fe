"""One JSON shape for what every tool returns, on every transport.

Field names are the tools' own (camelCase, ``memoryId``), so an agent sees the
same result over MCP stdio, MCP HTTP and REST. Recall results have one shape,
``{"memories": [...], "injectionBlock": "..."}``: the block quotes each
memory's text through ``safety.neutralise`` because it is meant to be pasted
into a prompt, where stored text must read as data, never as instructions.
"""

from __future__ import annotations

from typing import Any

from mindpalace.family import EMPTY_HINT, Answer, Item
from mindpalace.models import Hit, HitList, Memory, MessageMatch
from mindpalace.personal import SearchResults
from mindpalace.safety import injection_block

__all__ = [
    "answer_json",
    "hits_json",
    "injection_block",
    "memory_json",
    "message_json",
    "search_json",
]


def memory_json(memory: Memory) -> dict[str, Any]:
    """A memory as the tools show it: the recall fields first, then the rest
    an agent may act on (its type, scope and times)."""
    return {
        "memoryId": memory.id,
        "store": memory.store.value,
        "category": memory.category.value,
        "title": memory.title,
        "content": memory.content,
        "strength": round(memory.strength, 6),
        "confidence": round(memory.confidence, 6),
        "tags": list(memory.tags),
        "type": memory.type.value,
        "source": memory.source.value,
        "visibility": memory.visibility.value,
        "group": memory.group,
        "channel": memory.channel,
        "agentId": memory.agent_id,
        "session": memory.session,
        "constraint": memory.constraint,
        "archived": memory.archived,
        "createdAt": memory.created_at.isoformat(),
        "updatedAt": memory.updated_at.isoformat(),
        "validFrom": memory.valid_from.isoformat() if memory.valid_from else None,
        "validTo": memory.valid_to.isoformat() if memory.valid_to else None,
        "supersededBy": memory.superseded_by,
        "kind": memory.kind.value,
        "project": memory.project,
        "completed": memory.completed,
    }


def _hit_json(hit: Hit) -> dict[str, Any]:
    out = memory_json(hit.memory)
    out["score"] = round(hit.score, 6)
    # The hit's confidence folds in age and use, unlike the stored one.
    out["confidence"] = round(hit.confidence, 6)
    out["highConfidence"] = hit.high_confidence
    out["associativeContext"] = [
        {"memoryId": a.memory_id, "weight": round(a.weight, 6), "path": list(a.path)}
        for a in hit.associative_context
    ]
    return out


def hits_json(hits: HitList) -> dict[str, Any]:
    """A recall result, plus how the search ran (``mode``, ``notice``)."""
    return {
        "memories": [_hit_json(hit) for hit in hits],
        "injectionBlock": injection_block(hits),
        "mode": hits.mode,
        "notice": hits.notice,
        "hint": None if hits else EMPTY_HINT,
    }


def _item_json(item: Item) -> dict[str, Any]:
    out = _hit_json(item.hit)
    out.update(relation=item.relation, entity=item.entity, via=item.via)
    out["duplicates"] = list(item.duplicates)
    return out


def answer_json(answer: Answer) -> dict[str, Any]:
    """A recall-family answer: its groups (each a list of memories with
    their relation to the question), every memory once as the recall tools'
    ``memories``, the ``injectionBlock``, and a ``hint`` when empty."""
    return {
        "query": answer.query,
        "entities": list(answer.entities),
        "groups": [
            {"name": g.name, "memories": [_item_json(i) for i in g.items]} for g in answer.groups
        ],
        "memories": [_item_json(i) for i in answer.items],
        "injectionBlock": answer.injection_block,
        "hint": answer.hint,
        "notice": answer.notice,
    }


def message_json(match: MessageMatch) -> dict[str, Any]:
    """A conversation turn that matched a phrase, with the turns around it."""
    out = memory_json(match.memory)
    out["before"] = [memory_json(m) for m in match.before]
    out["after"] = [memory_json(m) for m in match.after]
    return out


def search_json(results: SearchResults) -> dict[str, Any]:
    """A personal-data search: each result a hit plus its ``kind``, ``date``,
    ``attribution`` and ``line``; how the search ran; a hint when empty."""
    out = []
    for result in results:
        item = _hit_json(result.hit)
        item["date"] = result.date.date().isoformat()
        item["attribution"] = result.attribution
        item["summary"] = result.summary
        item["line"] = result.line
        out.append(item)
    return {
        "results": out,
        "injectionBlock": injection_block(r.hit for r in results),
        "query": results.query,
        "kinds": [k.value for k in results.kinds],
        "project": results.project,
        "completed": results.completed,
        "narrowedBy": list(results.narrowed_by),
        "mode": results.mode,
        "notice": results.notice,
        "hint": results.hint,
        "suggestions": list(results.suggestions),
    }
