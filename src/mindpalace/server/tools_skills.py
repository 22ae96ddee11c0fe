"""The skill tools and the prompt-ready context block (``memory_recall``).

``memory_recall`` is the one tool whose answer is meant to be pasted into a
prompt, so it is the one that frames memories as quoted, informational
context (the other tools return data). Conventions as in ``tools_memory``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from mindpalace.palace import Palace
from mindpalace.server.schema import Query, Range

__all__ = ["activate_skills", "find_skills", "get_skill", "memory_recall"]


def _comma_joined(value: object) -> object:
    """A list of tags is the comma-separated string the tool takes."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return value


def activate_skills(
    palace: Palace,
    *,
    query: Annotated[str, Field(description="The task at hand.")],
    limit: Annotated[int, Range(1, 50), Field(description="Skills at most.")] = 5,
) -> dict[str, Any]:
    """Call at the start of a non-trivial task: the stored skills (procedures,
    gotchas, tool conventions) that fit it, ranked, with related ones. Then
    get_skill for the steps."""
    return {"skills": [hit.to_dict() for hit in palace.skills.activate(query, limit=limit)]}


def get_skill(
    palace: Palace,
    *,
    name: Annotated[str, Field(description="e.g. watermark-media.")],
) -> dict[str, Any]:
    """One skill in full: sections (steps, parameters, examples), tools, tags,
    correlated skills. An unknown name lists the closest."""
    return {"skill": palace.skills.get(name).to_dict()}


def find_skills(
    palace: Palace,
    *,
    tags: Annotated[
        str, BeforeValidator(_comma_joined), Field(description="Comma-separated, e.g. 'media,api'.")
    ],
    limit: Annotated[int, Range(1, 1000), Field(description="Skills at most.")] = 20,
) -> dict[str, Any]:
    """Skills ranked by the share of these tags they carry: for when you know
    the domain but not the task."""
    return {"skills": [m.to_dict() for m in palace.skills.find(tags, limit=limit)]}


def memory_recall(
    palace: Palace,
    *,
    query: Query,
    max_tokens: Annotated[int, Range(256, 8192), Field(description="Token budget.")] = 2048,
) -> dict[str, Any]:
    """A prompt-ready block for a task: the relevant skills' best sections and
    memories, attributed, dated and quoted as information (not instructions),
    within max_tokens."""
    return {"context": palace.context(query, max_tokens=max_tokens).to_dict()}
