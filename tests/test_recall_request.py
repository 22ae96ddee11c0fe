"""``RecallRequest`` and ``reading.recall``: recall's value, written once,
and every surface that spells its fields (the facade and its ``View``, the
async palace, the listing, the CLI, the MCP / REST tools), held to it; and
the read path over a seat on every backend."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from mindpalace import AsyncPalace, Palace, reading
from mindpalace.arguments import build_parser
from mindpalace.errors import ValidationError
from mindpalace.models import Category, MemoryType, RecallFilters, Visibility
from mindpalace.recall_request import FILTER_FIELDS, RECALL_FIELDS, RecallRequest
from mindpalace.server.schema import input_schema
from mindpalace.server.tools_memory import memory_erase, memory_list, memory_search
from mindpalace.view import View

# -- one spelling per field --------------------------------------------------------------


def _parameters(function: Callable[..., object]) -> dict[str, inspect.Parameter]:
    return {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if name not in ("self", "palace")
    }


def test_recall_takes_the_fields_of_a_request_with_its_defaults() -> None:
    parameters = _parameters(Palace.recall)
    assert tuple(parameters) == RECALL_FIELDS
    defaults = {name: p.default for name, p in parameters.items() if name != "query"}
    assert RecallRequest.of("why sqlite", **defaults) == RecallRequest("why sqlite")


@pytest.mark.parametrize("other", [View.recall, AsyncPalace.recall], ids=["view", "async"])
def test_every_recall_method_takes_the_facades_parameters(other: Callable[..., object]) -> None:
    assert list(_parameters(other).values()) == list(_parameters(Palace.recall).values())


@pytest.mark.parametrize("listing", [Palace.memories, View.memories], ids=["palace", "view"])
def test_a_listing_takes_recalls_filters_spelled_alike(listing: Callable[..., object]) -> None:
    """Same names, defaults and annotations as recall's filters (the listing
    adds sources, sessions, superseded versions and paging of its own)."""
    listed, recalled = _parameters(listing), _parameters(Palace.recall)
    assert set(FILTER_FIELDS) <= set(listed)
    assert all(listed[name] == recalled[name] for name in FILTER_FIELDS)


def _cli(*argv: str) -> dict[str, object]:
    return vars(build_parser().parse_args(list(argv)))


_COMMON = set(_cli("stats"))  # --db, --agent, ... shared by every command


def test_the_cli_recall_options_are_named_after_the_fields() -> None:
    options = {k: v for k, v in _cli("recall", "why sqlite").items() if k not in _COMMON}
    assert set(options) - {"explain"} <= set(RECALL_FIELDS)
    assert {"created_after", "created_before", "projects", "expand", "kinds"} <= set(options)
    sent = {k: v for k, v in options.items() if k in RECALL_FIELDS}
    assert RecallRequest.of(**sent) == RecallRequest("why sqlite")
    spelled = _cli(
        "recall",
        "q",
        "--after",
        "2026-01-01",
        "--project",
        "atlas",
        "--no-expand",
        "--kind",
        "issue",
    )
    request = RecallRequest.of(**{k: v for k, v in spelled.items() if k in RECALL_FIELDS})
    assert request.created_after == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert (request.projects, request.expand, [k.value for k in request.kinds]) == (
        ("atlas",),
        False,
        ["issue"],
    )


def test_the_cli_list_filters_are_named_after_the_filters() -> None:
    options = set(_cli("list")) - _COMMON
    extra = {"limit", "offset", "sources", "include_superseded"}
    assert options - extra <= set(FILTER_FIELDS)
    assert set(_cli("recall", "q")) - _COMMON - {"limit", "explain", "expand", "mode", "query"} == (
        options - extra
    )


def test_the_search_tool_takes_fields_of_a_request_with_its_defaults() -> None:
    """memory_search (MCP and POST /v1/recall, one schema) offers a subset
    of a request's fields and the channel, with a request's defaults."""
    parameters = _parameters(memory_search)
    channel = parameters.pop("channel")
    assert channel.default is None
    assert set(parameters) <= set(RECALL_FIELDS)
    assert set(input_schema(memory_search)["properties"]) == {*parameters, "channel"}
    defaults = {name: p.default for name, p in parameters.items() if name != "query"}
    assert RecallRequest.of("why sqlite", **defaults) == RecallRequest("why sqlite")


@pytest.mark.parametrize(
    ("tool", "own"),
    [
        (memory_list, {"session", "include_superseded", "limit", "cursor"}),
        (memory_erase, {"kind", "value", "confirm"}),
    ],
)
def test_the_other_tools_spell_filters_as_recall_does(
    tool: Callable[..., object], own: set[str]
) -> None:
    assert set(_parameters(tool)) - own <= set(FILTER_FIELDS)


# -- the value --------------------------------------------------------------------------


def test_a_request_holds_the_stored_form_of_what_it_was_given() -> None:
    request = RecallRequest.of(
        "why\x00sqlite",
        limit=5,
        types="tool, project",
        categories=["decision", Category.LESSON],
        tags="Storage, db",
        visibility="shared",
        created_after="2026-01-01",
        mode=" Decision ",
        projects="atlas",
        agents="ann,bob,",
        include_archived=1,
        expand=0,
    )
    assert request.query == "why sqlite"  # a NUL only splits words
    assert request.types == (MemoryType.TOOL, MemoryType.PROJECT)
    assert request.categories == (Category.DECISION, Category.LESSON)
    assert request.tags == ("storage", "db")
    assert request.visibility == (Visibility.SHARED,)
    assert request.mode == "decision" and not request.prior.neutral
    assert (request.projects, request.agents) == (("atlas",), ("ann", "bob"))
    assert request.include_archived is True and request.expand is False
    assert request.filters == RecallFilters(
        types=request.types,
        categories=request.categories,
        tags=request.tags,
        visibilities=request.visibility,
        include_archived=True,
        created_after=datetime(2026, 1, 1, tzinfo=timezone.utc),
        projects=("atlas",),
        agents=("ann", "bob"),
    )
    assert RecallRequest("q", mode=None) == RecallRequest("q")  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.limit = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "field", "valid"),
    [
        ({"limit": 0}, "limit", None),
        ({"limit": True}, "limit", None),
        ({"mode": "fast"}, "mode", "general"),
        ({"types": "gadget"}, "type", "skill"),
        ({"visibility": ["public"]}, "visibility", "shared"),
        ({"created_before": "yesterday-ish"}, "created_before", None),
        ({"completed": "yes"}, "completed", "true"),
        ({"agents": ["bad agent"]}, "agents", None),
        ({"top_k": 3}, "field", "limit"),
    ],
)
def test_an_invalid_request_names_what_is_valid(
    given: dict[str, object], field: str, valid: str | None
) -> None:
    with pytest.raises(ValidationError) as bad:
        RecallRequest.of("q", **given)
    assert bad.value.field == field
    if valid is not None:
        assert valid in bad.value.valid


def test_a_query_must_be_text() -> None:
    with pytest.raises(ValidationError, match="query must be a string"):
        RecallRequest.of(None)
    with pytest.raises(ValidationError, match="10000"):
        RecallRequest("x" * 10_001)


# -- the read path, on every backend ----------------------------------------------------


def test_recall_over_a_seat_is_the_facades_recall(palace: Palace) -> None:
    palace.remember("We chose SQLite because many processes share one file", category="decision")
    palace.remember("Lunch is at noon on Fridays", category="event")
    palace.remember("The staging database moved to PostgreSQL", category="fact")
    request = RecallRequest.of("database", categories="decision,fact", limit=5)
    direct = reading.recall(palace.seat, request)
    facade = palace.recall("database", categories="decision,fact", limit=5)
    assert [h.memory.id for h in direct] == [h.memory.id for h in facade]
    assert direct and {h.memory.category for h in direct} <= {Category.DECISION, Category.FACT}
    assert reading.recall(palace.seat, RecallRequest("  ")) == []


def test_a_views_recall_options_still_apply(palace: Palace) -> None:
    palace.remember("The staging database moved to PostgreSQL")
    assert palace.recall("staging database")
    palace.recall_options = replace(palace.recall_options, floor=2.0)  # above every score
    assert palace.recall("staging database") == []
    # An edge's request runs with the engine's constants.
    assert reading.recall(palace.seat, RecallRequest("staging database"))


def test_feedback_names_the_recall_whichever_view_served_it(palace: Palace) -> None:
    """A server makes views per call: the recall one view served is the one
    the agent's feedback through another view names."""
    memory = palace.remember("The staging database moved to PostgreSQL")
    one, other = palace.for_agent("default"), palace.for_agent("default")
    assert one is not other
    [hit] = reading.recall(one.seat, RecallRequest("staging database"))
    other.feedback(hit.memory.id, useful=True)
    store = palace.store
    [recalled] = store.iter_signals(kinds=("recall",), agent_id="default")
    [judged] = store.iter_signals(kinds=("feedback",), agent_id="default")
    assert recalled.query == "staging database"
    assert judged.memory_id == memory.id
    assert judged.data["recall"] == recalled.data["recall"]
    # Another agent's feedback names none of this agent's recalls.
    shared = palace.remember("Deploys happen on Tuesdays", visibility="shared")
    reading.recall(palace.seat, RecallRequest("deploys tuesdays"))
    palace.for_agent("bob").feedback(shared.id, useful=False)
    [bobs] = store.iter_signals(kinds=("feedback",), agent_id="bob")
    assert bobs.data["recall"] is None
