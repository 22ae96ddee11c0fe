"""The skill tools and the prompt-ready context block (``memory_recall``).

``memory_recall`` is the one tool whose answer is meant to be pasted into a
prompt, so it is the one that frames memories as quoted, informational
context (the other tools return data). Conventions as in ``tools_memory``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from mindpalace.palace import Palace
from mindpalace.server import shapes
from mindpalace.server.schema import Query, Range
from mindpalace.server.shaping import context_json, skill_hit_json, skill_json, tag_match_json

__all__ = ["activate_skills", "find_skills", "get_skill", "memory_recall"]


def _comma_joined(value: object) -> object:
    """A list of tags is the comma-separated string the tool takes."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return value


def activate_skills(
    palace: Palace,
    *,
    query: Annotated[str, Field(description="The task at hand, in plain words.")],
    limit: Annotated[int, Range(1, 50), Field(description="Skills, at most.")] = 5,
) -> shapes.ActivatedSkills:
    """Call at the start of a non-trivial task: the stored skills (procedures,
    gotchas, tool conventions) that fit it, ranked, with related ones. Then
    get_skill for the steps."""
    return {"skills": [skill_hit_json(h) for h in palace.skills.activate(query, limit=limit)]}


def get_skill(
    palace: Palace,
    *,
    name: Annotated[
        str, Field(description="The skill's name as a skills result gave it, e.g. api-integration.")
    ],
) -> shapes.SkillResult:
    """One skill in full: sections (steps, parameters, examples), tools, tags,
    correlated skills. An unknown name lists the closest."""
    return {"skill": skill_json(palace.skills.get(name))}


def find_skills(
    palace: Palace,
    *,
    tags: Annotated[
        str,
        BeforeValidator(_comma_joined),
        Field(description="The tags, comma-separated (e.g. 'media,api') or a list."),
    ],
    limit: Annotated[int, Range(1, 1000), Field(description="Skills, at most.")] = 20,
) -> shapes.FoundSkills:
    """Skills ranked by the share of these tags they carry: for when you know
    the domain but not the task."""
    return {"skills": [tag_match_json(m) for m in palace.skills.find(tags, limit=limit)]}


def memory_recall(
    palace: Palace,
    *,
    query: Query,
    max_tokens: Annotated[
        int, Range(256, 8192), Field(description="The block's length, in tokens, at most.")
    ] = 2048,
) -> shapes.Context:
    """A prompt-ready block for a task: the relevant skills' best sections and
    memories, attributed, dated and quoted as information (not instructions),
    within max_tokens. Returns {context, tokens, sources, ...}."""
    return context_json(palace.context(query, max_tokens=max_tokens))
