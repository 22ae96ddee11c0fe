"""Limits with clear errors: content size, tag count and length, query
length, limit ranges. Each error names the valid range; nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mindpalace import Palace, ValidationError
from mindpalace.config import Settings
from mindpalace.validation import MAX_QUERY_CHARS, MAX_TAG_CHARS, MAX_TAGS


@pytest.fixture
def small(make_palace: Callable[..., Palace]) -> Palace:
    return make_palace(
        "ann", settings=Settings(agent_id="ann", embedder="none", max_content_chars=100)
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "x" * 101}, "101 characters; the limit is 100"),
        ({"content": "ok", "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, "0-64 tags"),
        ({"content": "ok", "tags": ["x" * (MAX_TAG_CHARS + 1)]}, "1-64 printable characters"),
        ({"content": "ok", "tags": ["bad\ttag"]}, "1-64 printable characters"),
        ({"content": "ok", "title": "t" * 501}, "longer than 500"),
        ({"content": "ok", "context": "c" * 101}, "longer than 100"),
        ({"content": "ok", "channel": "c" * 129}, "1-128 printable characters"),
    ],
)
def test_write_limits(small: Palace, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        small.remember(**kwargs)
    assert small.stats().memories == 0


def test_limit_at_the_edge_is_accepted(small: Palace) -> None:
    small.remember("x" * 100, tags=[f"t{i}" for i in range(MAX_TAGS)])
    small.recall("q" * MAX_QUERY_CHARS)
    assert small.stats().memories == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: p.recall("q" * (MAX_QUERY_CHARS + 1)), "must have 0-10000"),
        (lambda p: p.recall(42), "query must be a string"),
        (lambda p: p.search_messages("q" * (MAX_QUERY_CHARS + 1)), "phrase has 10001"),
        (lambda p: p.recall("x", limit=0), "from 1 to 100, got 0"),
        (lambda p: p.recall("x", limit=101), "from 1 to 100, got 101"),
        (lambda p: p.recall("x", limit=True), "from 1 to 100"),
        (lambda p: p.memories(limit=10_001), "from 1 to 10000"),
        (lambda p: p.memories(offset=-1), "offset must be an integer from 0"),
        (lambda p: p.recent(0), "limit must be an integer from 1 to 1000"),
        (lambda p: p.search_messages("x", around=11), "around must be an integer from 0 to 10"),
        (lambda p: p.search_messages("x", limit=500), "from 1 to 100"),
    ],
)
def test_read_limits(small: Palace, call: Callable[[Palace], object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        call(small)


@pytest.mark.parametrize("field", ["content", "title", "context"])
def test_nul_is_refused_on_every_backend(palace: Palace, field: str) -> None:
    args = {"content": "plain text", field: "bad\x00text"}
    with pytest.raises(ValidationError, match="NUL"):
        palace.remember(**args)
    assert palace.memories() == []


def test_a_query_with_nul_is_still_a_query(palace: Palace) -> None:
    palace.remember("the harbour at dawn")
    assert [h.memory.content for h in palace.recall("harbour\x00 dawn")] == ["the harbour at dawn"]
