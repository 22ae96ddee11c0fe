"""One JSON shape for what every tool returns, on every transport, and its schema.

Field names are snake_case, as the arguments are (``memory_id`` is the id
that ``memory_get``, ``memory_update`` and ``memory_forget`` take back), so
an agent sees the same result over MCP stdio, MCP HTTP and REST. A field
with no value is left out rather than sent as ``null``.

Search results carry the memories and nothing else: the prompt-ready,
injection-safe block comes from the tool that builds prompts
(``memory_recall``), not repeated after every search.

``OUTPUT`` holds each result shape's JSON schema (MCP ``outputSchema``):
its top-level fields and their types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindpalace.family import EMPTY_HINT, Answer, Item
from mindpalace.models import Hit, HitList, Memory, MemoryKind, MessageMatch, issue_number
from mindpalace.personal import SearchResults

__all__ = [
    "OUTPUT",
    "answer_json",
    "hits_json",
    "memory_json",
    "message_json",
    "search_json",
]


def _present(out: Mapping[str, Any]) -> dict[str, Any]:
    """``out`` without the fields that have no value."""
    return {k: v for k, v in out.items() if v is not None}


def _time(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def memory_json(memory: Memory) -> dict[str, Any]:
    """A memory as the tools show it: the recall fields first, then the rest
    an agent may act on (its type, scope and times)."""
    return _present(
        {
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
            "valid_from": _time(memory.valid_from),
            "valid_to": _time(memory.valid_to),
            "superseded_by": memory.superseded_by,
            "kind": memory.kind.value,
            "project": memory.project,
            "completed": memory.completed,
            "metadata": dict(memory.metadata) or None,
        }
    )


def _hit_json(hit: Hit) -> dict[str, Any]:
    out = memory_json(hit.memory)
    out["score"] = round(hit.score, 6)
    out["high_confidence"] = hit.high_confidence
    out["associative_context"] = [a.to_dict() for a in hit.associative_context]
    return out


def hits_json(hits: HitList) -> dict[str, Any]:
    """A recall result, plus how the search ran (``mode``, ``notice``) and,
    when empty, a ``hint``."""
    return _present(
        {
            "memories": [_hit_json(hit) for hit in hits],
            "mode": hits.mode,
            "notice": hits.notice,
            "hint": None if hits else EMPTY_HINT,
        }
    )


def _item_json(item: Item) -> dict[str, Any]:
    out = _hit_json(item.hit)
    out.update(_present({"relation": item.relation, "entity": item.entity, "via": item.via}))
    if item.duplicates:
        out["duplicates"] = list(item.duplicates)
    return out


def answer_json(answer: Answer) -> dict[str, Any]:
    """A recall-family answer: its groups, each a list of memories with
    their relation to the question (a memory in two groups is shown in the
    first), and a ``hint`` when empty."""
    seen: set[str] = set()
    groups = []
    for group in answer.groups:
        items = [i for i in group.items if i.memory.id not in seen]
        seen.update(i.memory.id for i in items)
        if items:
            groups.append({"name": group.name, "memories": [_item_json(i) for i in items]})
    return _present(
        {
            "query": answer.query,
            "entities": list(answer.entities) or None,
            "groups": groups,
            "count": len(seen),
            "hint": answer.hint,
            "notice": answer.notice,
        }
    )


def message_json(match: MessageMatch) -> dict[str, Any]:
    """A conversation turn that matched a phrase, with the turns around it."""
    out = memory_json(match.memory)
    out["before"] = [memory_json(m) for m in match.before]
    out["after"] = [memory_json(m) for m in match.after]
    return out


def search_json(results: SearchResults) -> dict[str, Any]:
    """A personal-data search: each result a hit plus its ``date``,
    ``attribution`` and ``line``; how the search ran; a hint when empty."""
    out = []
    for result in results:
        item = _hit_json(result.hit)
        item["date"] = result.date.date().isoformat()
        item["attribution"] = result.attribution
        item["summary"] = result.summary
        item["line"] = result.line
        if result.kind is MemoryKind.ISSUE:
            item.update(_present({"issue_number": issue_number(result.memory.metadata)}))
        out.append(item)
    return _present(
        {
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
    )


# -- output schemas --------------------------------------------------------------------
# Top-level fields and their JSON types: what a client validates and a
# model reads. The fields of the memories inside are those of
# ``memory_json`` (the tests hold every result to the casing rule).

_TEXT = {"type": "string"}
_FLAG = {"type": "boolean"}
_LIST = {"type": "array"}
_OBJECT = {"type": "object"}


def _result(**fields: Any) -> dict[str, Any]:
    return {"type": "object", "properties": fields}


_HITS = _result(memories=_LIST, notice=_TEXT, hint=_TEXT)
_ANSWER = _result(
    query=_TEXT,
    entities={"type": "array"},
    groups=_LIST,
    count={"type": "integer"},
    hint=_TEXT,
    notice=_TEXT,
)

#: The result schema of each tool, by tool name.
OUTPUT: dict[str, dict[str, Any]] = {
    "memory_store": _result(memory=_OBJECT),
    "memory_search": _HITS,
    "memory_get": _result(memory=_OBJECT),
    "memory_update": _result(memory=_OBJECT, previous_id=_TEXT, updated=_FLAG),
    "memory_forget": _result(forgotten=_TEXT, hard=_FLAG),
    "memory_list": _result(memories=_LIST, next_cursor=_TEXT),
    "memory_stats": _result(stats=_OBJECT),
    "memory_feedback": _result(recorded=_FLAG, memory_id=_TEXT, useful=_FLAG),
    "memory_erase": _result(receipt=_OBJECT),
    "what_do_i_know": _ANSWER,
    "why_did_we": _ANSWER,
    "who_owns": _ANSWER,
    "depends_on": _ANSWER,
    "preflight": _ANSWER,
    "personal_search": _result(
        results=_LIST,
        query=_TEXT,
        kinds={"type": "array"},
        project=_TEXT,
        completed=_FLAG,
        narrowed_by={"type": "array"},
        mode=_TEXT,
        notice=_TEXT,
        hint=_TEXT,
        suggestions={"type": "array"},
    ),
    "recent": _result(messages=_LIST),
    "search_messages": _result(messages=_LIST),
    "activate_skills": _result(skills=_LIST),
    "get_skill": _result(skill=_OBJECT),
    "find_skills": _result(skills=_LIST),
    "memory_recall": _result(context=_OBJECT),
}
