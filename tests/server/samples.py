"""One sample call per tool, and what its result must show.

Both transports' round-trip tests run every entry; ``test_every_tool_has_a
sample`` fails when a tool is added to ``OPERATIONS`` without one here.
``args`` gets the seeded ids; ``check`` gets the structured result and ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sample:
    args: Callable[[dict[str, str]], dict[str, Any]]
    check: Callable[[dict[str, Any], dict[str, str]], None]


def _check_store(result: dict[str, Any], ids: dict[str, str]) -> None:
    memory = result["memory"]
    assert memory["memory_id"].startswith("mem_")
    assert memory["category"] == "lesson"
    assert memory["tags"] == ["release"]
    assert memory["agent_id"] == "alice"


def _check_search(result: dict[str, Any], ids: dict[str, str]) -> None:
    found = [m["memory_id"] for m in result["memories"]]
    assert ids["fact"] in found
    assert ids["bob"] not in found  # bob's isolated memory never reaches alice
    first = result["memories"][0]
    assert set(first) >= {
        "memory_id",
        "store",
        "category",
        "content",
        "strength",
        "confidence",
        "tags",
        "score",
    }
    assert "title" not in first  # no title: left out, never null
    assert 0 <= first["score"] <= 1
    assert "injection_block" not in result  # the prompt block is memory_recall's


def _check_recall(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_search(result, ids)
    assert all(m["store"] == "semantic" for m in result["memories"])
    assert all(m["category"] == "decision" for m in result["memories"])


def _check_answer(result: dict[str, Any], ids: dict[str, str]) -> None:
    """The shape every recall-family tool shares; bob's memories never appear."""
    assert set(result) >= {"query", "groups", "count"}
    found = every_memory(result)
    assert len(found) == result["count"] == len(set(found))  # each memory once
    assert ids["bob"] not in found and ids["bob_owns"] not in found
    assert "privately" not in str(result)
    for group in result["groups"]:
        for memory in group["memories"]:
            assert 0 <= memory["score"] <= 1 and 0 <= memory["confidence"] <= 1
            assert memory["high_confidence"] == (memory["confidence"] >= 0.8)
            assert memory["relation"]


def every_memory(answer: dict[str, Any]) -> list[str]:
    """The ids of an answer's memories, group by group."""
    return [m["memory_id"] for g in answer["groups"] for m in g["memories"]]


def _check_what_do_i_know(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_answer(result, ids)
    groups = {g["name"]: [m["memory_id"] for m in g["memories"]] for g in result["groups"]}
    assert ids["fact"] in groups["decisions"]
    assert ids["lesson"] in groups["lessons"]


def _check_why(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_answer(result, ids)
    timeline = result["groups"][0]["memories"]
    decision = next(m for m in timeline if m["relation"] == "decision")
    assert decision["memory_id"] == ids["fact"]
    assert ids["lesson"] in [m["memory_id"] for m in timeline]
    times = [m["created_at"] for m in timeline]
    assert times == sorted(times)


def _check_who_owns(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_answer(result, ids)
    assert [g["name"] for g in result["groups"]] == ["Ann"]
    first = result["groups"][0]["memories"][0]
    assert first["memory_id"] == ids["owner"] and first["relation"] == "owns"


def _check_depends_on(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_answer(result, ids)
    assert [g["name"] for g in result["groups"]] == ["Storage"]
    assert result["groups"][0]["memories"][0]["memory_id"] == ids["dependency"]


def _check_preflight(result: dict[str, Any], ids: dict[str, str]) -> None:
    _check_answer(result, ids)
    groups = {g["name"]: [m["memory_id"] for m in g["memories"]] for g in result["groups"]}
    assert ids["rule"] in groups["constraints"]


def _check_recent(result: dict[str, Any], ids: dict[str, str]) -> None:
    contents = [m["content"] for m in result["messages"]]
    assert contents[-1] == "Ann: Thanks, noted."
    assert len(contents) == 2


def _check_messages(result: dict[str, Any], ids: dict[str, str]) -> None:
    matches = result["messages"]
    assert len(matches) == 2
    assert all("rollback plan" in m["content"].lower() for m in matches)
    first_turn = next(m for m in matches if m["content"].startswith("Ann:"))
    assert first_turn["after"][0]["content"].startswith("Bo: The rollback plan")


def _check_get(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result["memory"]["memory_id"] == ids["fact"]
    assert result["memory"]["tags"] == ["storage", "architecture"]


def _check_forget(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result == {"forgotten": ids["scratch"], "hard": False}


def _check_update(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result["updated"] is True and result["previous_id"] == ids["lesson"]
    memory = result["memory"]
    assert memory["memory_id"] != ids["lesson"]  # a new version, a new id
    assert memory["tags"] == ["sqlite", "wal"] and memory["category"] == "lesson"


def _check_list(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert len(result["memories"]) == 2 and isinstance(result["next_cursor"], str)
    assert all(None not in m.values() for m in result["memories"])
    assert all(m["agent_id"] == "alice" for m in result["memories"])


def _check_stats(result: dict[str, Any], ids: dict[str, str]) -> None:
    stats = result["stats"]
    assert "path" not in stats  # where the server keeps its data is not shown
    assert stats["by_agent"].get("bob") is None  # alice sees only what she may
    assert stats["memories"] >= 4


def _check_activate(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result["skills"][0]["name"] == "api-integration"
    assert set(result["skills"][0]) >= {"name", "score", "tags", "associative_context"}


def _check_get_skill(result: dict[str, Any], ids: dict[str, str]) -> None:
    skill = result["skill"]
    assert skill["name"] == "api-integration"
    assert skill["sections"] and "httpx" in skill["tools"]


def _check_find(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result["skills"][0]["name"] == "api-integration"


def _check_context(result: dict[str, Any], ids: dict[str, str]) -> None:
    # Flat, as ``mindpalace context`` prints it: the block is a string.
    assert set(result) == {"context", "tokens", "max_tokens", "tokenizer", "sources"}
    assert result["tokens"] <= result["max_tokens"] == 512
    assert "many processes share one file" in result["context"]
    assert "private note" not in result["context"]  # bob's memory never reaches alice
    assert result["sources"] and all(s["memory_id"].startswith("mem_") for s in result["sources"])


def _check_feedback(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result == {"recorded": True, "memory_id": ids["fact"], "useful": True}


def _check_erase(result: dict[str, Any], ids: dict[str, str]) -> None:
    receipt = result["receipt"]
    assert receipt["erased"] is False and "id" not in receipt  # a dry run: no receipt id
    assert receipt["selection"] == {"kind": "session", "value": "standup-1"}
    assert receipt["counts"]["memories"] == 3  # the session's three turns
    assert receipt["agent_id"] == "alice" and len(receipt["digest"]) == 64
    assert "rollback" not in str(result)  # counts, never content


def _check_personal(result: dict[str, Any], ids: dict[str, str]) -> None:
    assert result["kinds"] == ["journal"]  # "my journal entries" narrowed the search
    assert result["narrowed_by"] == ["my journal entries"]
    (first,) = result["results"]
    assert first["kind"] == "journal" and first["date"] == "2026-01-15"
    assert first["line"] == (
        "From your journal on 15 Jan 2026: Walked by the river and planned the garden"
    )
    assert 0 <= first["score"] <= 1 and 0 <= first["confidence"] <= 1


SAMPLES: dict[str, Sample] = {
    "memory_store": Sample(
        lambda ids: {
            "content": "Lesson: tag releases from the CI job only",
            "category": "lesson",
            "tags": ["release"],
            "type": "task",
        },
        _check_store,
    ),
    "memory_search": Sample(
        lambda ids: {
            "query": "sqlite storage decision",
            "types": "unknown",  # one value where a list is expected
            "stores": ["semantic"],
            "categories": ["decision"],
            "tags": ["storage"],
            "limit": 5,
            "include_archived": False,
            "mode": "decision",
            "expand": True,
        },
        _check_recall,
    ),
    "what_do_i_know": Sample(lambda ids: {"topic": "SQLite", "limit": 20}, _check_what_do_i_know),
    "why_did_we": Sample(lambda ids: {"query": "choose SQLite", "limit": 5}, _check_why),
    "who_owns": Sample(lambda ids: {"entity": "the Storage service"}, _check_who_owns),
    "depends_on": Sample(
        lambda ids: {"entity": "SQLite", "direction": "dependents"}, _check_depends_on
    ),
    "preflight": Sample(
        lambda ids: {"action": "edit the SQLite file of the Storage service"}, _check_preflight
    ),
    "personal_search": Sample(
        lambda ids: {"query": "my journal entries about the garden", "limit": 5},
        _check_personal,
    ),
    "recent": Sample(lambda ids: {"limit": 2, "session": "standup-1"}, _check_recent),
    "search_messages": Sample(
        lambda ids: {"phrase": "rollback plan", "around": 1}, _check_messages
    ),
    "memory_get": Sample(lambda ids: {"memory_id": ids["fact"]}, _check_get),
    "memory_forget": Sample(lambda ids: {"memory_id": ids["scratch"]}, _check_forget),
    "memory_stats": Sample(lambda ids: {}, _check_stats),
    "memory_update": Sample(
        lambda ids: {"memory_id": ids["lesson"], "tags": ["sqlite", "wal"]}, _check_update
    ),
    "memory_list": Sample(lambda ids: {"limit": 2}, _check_list),
    "activate_skills": Sample(
        lambda ids: {"query": "integrate a third-party REST API with retries", "limit": 3},
        _check_activate,
    ),
    "get_skill": Sample(lambda ids: {"name": "api-integration"}, _check_get_skill),
    "find_skills": Sample(lambda ids: {"tags": "api,http"}, _check_find),
    "memory_recall": Sample(
        lambda ids: {"query": "why sqlite for the embedded store", "max_tokens": 512},
        _check_context,
    ),
    "memory_feedback": Sample(
        lambda ids: {"memory_id": ids["fact"], "useful": True}, _check_feedback
    ),
    "memory_erase": Sample(lambda ids: {"kind": "session", "value": "standup-1"}, _check_erase),
}
