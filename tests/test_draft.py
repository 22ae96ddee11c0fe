"""``Draft``, ``Changes`` and ``Seat``: each write's values, written once,
and the surfaces that must agree with them (the facade, its ``View``
protocol, the CLI and the MCP / REST tools), on every backend."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace import Palace, writing
from mindpalace.arguments import build_parser
from mindpalace.config import Settings
from mindpalace.draft import DRAFT_FIELDS, KEEP, UPDATE_FIELDS, Changes, Draft
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError
from mindpalace.models import Category, MemoryKind, MemoryType, StoreKind, Visibility
from mindpalace.seat import Seat
from mindpalace.server.tools_memory import memory_store, memory_update
from mindpalace.view import View

# -- one signature per operation -------------------------------------------------------


def _members(protocol: type) -> list[str]:
    return sorted(
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    )


def test_a_palace_is_a_view(palace: Palace) -> None:
    members = ["engine", "get", "memories", "now", "recall", "remember", "scope", "seat"]
    assert _members(View) == members
    assert all(hasattr(palace, name) for name in members)
    assert palace.seat == Seat(palace.engine, palace.scope)


@pytest.mark.parametrize("name", [n for n in _members(View) if callable(getattr(View, n))])
def test_view_and_palace_take_the_same_parameters(name: str) -> None:
    """What a feature may call on a view is what the facade takes: same
    names, kinds, defaults and annotations."""
    view, palace = inspect.signature(getattr(View, name)), inspect.signature(getattr(Palace, name))
    # Past self (annotated ``View`` where a write is written against the protocol).
    assert list(view.parameters.values())[1:] == list(palace.parameters.values())[1:]
    assert view.return_annotation == palace.return_annotation


def _parameters(function: Callable[..., object], *skip: str) -> dict[str, object]:
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if name not in ("self", "palace", *skip)
    }


def test_remember_takes_the_fields_of_a_draft_with_its_defaults() -> None:
    arguments = _parameters(Palace.remember)
    assert tuple(arguments) == tuple(n for n in DRAFT_FIELDS if n != "identity")
    content = arguments.pop("content")
    assert content is inspect.Parameter.empty
    assert Draft.of("a note", **arguments) == Draft("a note")


def test_update_takes_the_fields_of_changes_each_kept_by_default() -> None:
    arguments = _parameters(Palace.update, "memory_id")
    assert tuple(arguments) == UPDATE_FIELDS
    assert set(arguments.values()) == {KEEP}
    assert Changes.of(**arguments) == Changes()


def test_the_memory_tools_take_draft_and_changes_fields() -> None:
    """The MCP / REST schema of memory_store offers a subset of a draft's
    fields, with a draft's defaults; memory_update every field of an update."""
    arguments = _parameters(memory_store)
    assert set(arguments) <= set(DRAFT_FIELDS)
    del arguments["content"]
    assert Draft.of("a note", **arguments) == Draft("a note")
    assert tuple(_parameters(memory_update, "memory_id")) == UPDATE_FIELDS


def test_the_cli_options_are_named_after_the_fields() -> None:
    parser = build_parser()
    remember = vars(parser.parse_args(["remember", "a note"]))
    options = {name: value for name, value in remember.items() if name in DRAFT_FIELDS}
    options.pop("channel", None)  # the palace's channel, common to every command
    assert {"title", "tags", "created_at", "metadata", "completed"} <= set(options)
    del options["content"]
    assert Draft.of("a note", **options) == Draft("a note")
    update = vars(parser.parse_args(["update", "mem_1"]))
    assert set(UPDATE_FIELDS) <= set(update)
    assert Changes.given(**{name: update[name] for name in UPDATE_FIELDS}) == Changes()


# -- Draft ------------------------------------------------------------------------------


def test_a_draft_holds_the_stored_form_of_what_it_was_given() -> None:
    draft = Draft.of(
        "  We chose SQLite  ",
        type="tool",
        store="procedural",
        category="decision",
        tags="Storage, db, storage",
        visibility="group",
        group="ops",
        valid_from="2026-01-01",
        metadata={"k": 1},
    )
    assert draft.content == "We chose SQLite"
    assert (draft.type, draft.store, draft.category) == (
        MemoryType.TOOL,
        StoreKind.PROCEDURAL,
        Category.DECISION,
    )
    assert draft.tags == ("storage", "db")
    assert draft.visibility is Visibility.GROUP and draft.group == "ops"
    assert draft.valid_from == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert draft.kind is MemoryKind.MEMORY
    assert Draft("hi", category=Category.CONVERSATION).kind is MemoryKind.MESSAGE
    assert Draft("a bug", kind=MemoryKind.ISSUE).completed is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        draft.content = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "field", "valid"),
    [
        ({"store": "longterm"}, "store", "semantic"),
        ({"category": "gossip"}, "category", "fact"),
        ({"colour": "red"}, "field", "title"),
        ({"visibility": "group"}, "group", None),
        ({"group": "ops"}, "group", None),
        ({"valid_from": "2026-02-01", "valid_to": "2026-01-01"}, "valid_to", None),
        ({"completed": True}, "completed", None),
        ({"confidence": 2}, "confidence", None),
        ({"created_at": "yesterday-ish"}, "created_at", None),
    ],
)
def test_an_invalid_draft_names_its_field(
    fields: dict[str, object], field: str, valid: str | None
) -> None:
    with pytest.raises(ValidationError) as bad:
        Draft.of("a note", **fields)
    assert bad.value.field == field
    if valid is not None:
        assert valid in bad.value.valid


def test_an_empty_draft_is_refused() -> None:
    with pytest.raises(ValidationError, match="content"):
        Draft("   ")


names = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    content=st.text(min_size=1, max_size=80).filter(str.strip),
    given_fields=st.fixed_dictionaries(
        {
            "title": st.none() | names,
            "tags": st.lists(names, max_size=5),
            "category": st.sampled_from(list(Category)),
            "kind": st.none() | st.sampled_from([MemoryKind.MEMORY, MemoryKind.ISSUE]),
            "group": st.none() | names,
        }
    ),
)
def test_a_draft_rebuilt_from_its_fields_is_itself(
    content: str, given_fields: dict[str, object]
) -> None:
    """Validation is idempotent: the stored form passes as it is, so an
    update (which rebuilds a draft from the stored memory) changes nothing
    it was not asked to."""
    try:
        visibility = "isolated" if given_fields["group"] is None else "group"
        draft = Draft.of(content, visibility=visibility, **given_fields)
    except ValidationError:
        return  # text the rules refuse (control characters, ...)
    fields = {f.name: getattr(draft, f.name) for f in dataclasses.fields(Draft)}
    assert Draft.of(**fields) == draft


# -- Changes ---------------------------------------------------------------------------


def test_changes_keep_what_is_not_given_and_clear_what_is_emptied() -> None:
    changes = Changes.given(title="", tags=[], group=None, valid_to="", store="episodic")
    assert changes.changed() == {
        "title": None,
        "tags": (),
        "store": StoreKind.EPISODIC,
        "valid_to": None,
    }
    assert changes.group is KEEP and changes.content is KEEP
    assert Changes.of(title=None, metadata=None).changed() == {"title": None, "metadata": {}}
    with pytest.raises(ValidationError) as bad:
        Changes.of(colour="red")
    assert bad.value.valid == tuple(sorted(UPDATE_FIELDS))
    with pytest.raises(ValidationError) as bad:
        Changes.of(type="gadget")
    assert "person" in bad.value.valid


# -- the write operations over a seat ---------------------------------------------------


def test_operations_run_in_a_seat(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    seat = Seat(alice.engine, alice.scope)
    assert seat == alice.seat
    note = writing.remember(seat, Draft("Alice owns the billing service", tags=["billing"]))
    assert alice.get(note.id) == note
    assert writing.remember(seat, Draft("Alice owns the billing service")).id == note.id
    newer = writing.change(seat, note.id, Changes.of(category="decision"))
    assert newer.id != note.id and newer.category is Category.DECISION
    assert newer.tags == ("billing",)  # kept
    assert writing.change(seat, newer.id, Changes.of(category="decision")) == newer
    with pytest.raises(NotFoundError):
        writing.change(bob.seat, newer.id, Changes.of(title="mine now"))
    shared = writing.remember(bob.seat, Draft("Standup is at nine", visibility="shared"))
    with pytest.raises(PermissionDenied):
        writing.change(seat, shared.id, Changes.of(title="moved"))
    with pytest.raises(PermissionDenied):
        writing.forget(seat, shared.id)
    assert writing.forget(seat, newer.id).archived is False
    assert alice.get(newer.id).archived
    assert not writing.restore(seat, newer.id).archived


def test_the_content_limit_is_the_palaces(make_palace: Callable[..., Palace]) -> None:
    """A draft has no palace: the settings' limit applies when it is written,
    and the write leaves nothing behind."""
    palace = make_palace("alice", settings=Settings(agent_id="alice", max_content_chars=20))
    draft = Draft("a note longer than twenty characters")
    with pytest.raises(ValidationError, match="limit is 20"):
        writing.remember(palace.seat, draft)
    with pytest.raises(ValidationError, match="record 1"):
        palace.remember_many([Draft("short"), draft])
    assert palace.memories() == []
    assert palace.remember_many([Draft("short"), {"content": "short too"}])[0].content == "short"
