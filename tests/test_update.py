"""``Palace.update`` and keyset listing, on every backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mindpalace import Palace, listing
from mindpalace.draft import Changes
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError


def test_update_is_a_new_version_kept_in_history(palace: Palace) -> None:
    old = palace.remember("Alice leads the Billing team", tags=["team"], title="lead")
    new = palace.update(old.id, content="Alice leads the Payments team", category="decision")
    assert new.id != old.id
    assert new.content == "Alice leads the Payments team"
    assert new.category.value == "decision"
    assert new.tags == ("team",) and new.title == "lead"  # fields not given are kept
    assert new.created_at == old.created_at
    closed = palace.get(old.id)
    assert closed.superseded_by == new.id and closed.valid_to is not None
    assert [m.id for m in palace.graph.history(old.id)] == [old.id, new.id]
    assert [m.id for m in palace.graph.history(new.id)] == [old.id, new.id]
    assert [m.id for m in palace.memories()] == [new.id]
    names = {e.name for e in palace.graph.mentions(new.id)}
    assert "Payments" in " ".join(names)  # entities re-linked
    hits = palace.recall("Payments team", limit=3)
    assert hits and hits[0].memory.id == new.id


def test_update_of_fields_only_keeps_the_text_deduplicated(palace: Palace) -> None:
    old = palace.remember("The deploy window is Tuesday", tags=["ops"])
    new = palace.update(old.id, tags=["ops", "release"], store="episodic", metadata={"k": 1})
    assert new.id != old.id and new.content == old.content
    assert set(new.tags) == {"ops", "release"} and new.metadata == {"k": 1}
    again = palace.remember("The deploy window is Tuesday")
    assert again.id == new.id  # the current version holds the text


def test_update_that_changes_nothing_writes_nothing(palace: Palace) -> None:
    old = palace.remember("Bob uses vim", tags=["a", "b"])
    same = palace.update(old.id, content="Bob uses vim", tags=["b", "a"])
    assert same == old
    assert palace.graph.history(old.id) == [old]


def test_update_clears_and_moves_visibility(palace: Palace) -> None:
    old = palace.remember(
        "Team notes live in the wiki",
        title="t",
        visibility="group",
        group="core",
        valid_from="2026-01-01T00:00:00+00:00",
    )
    new = palace.update(old.id, title=None, visibility="shared", valid_from=None)
    assert new.title is None and new.group is None and new.valid_from is None
    assert new.visibility.value == "shared"


def test_update_scope_and_bad_input(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    mine = alice.remember("Alice's private plan")
    shared = bob.remember("Bob's shared note", visibility="shared")
    with pytest.raises(NotFoundError):
        bob.update(mine.id, content="taken over")
    with pytest.raises(PermissionDenied):
        alice.update(shared.id, content="taken over")
    with pytest.raises(NotFoundError):
        alice.update("mem_nope", content="x")
    with pytest.raises(ValidationError) as bad:
        alice.update(mine.id, store="longterm")
    assert "semantic" in bad.value.valid
    with pytest.raises(ValidationError) as unknown:
        Changes.of(colour="red")
    assert "content" in unknown.value.valid
    with pytest.raises(ValidationError):
        alice.update(mine.id, content="   ")
    with pytest.raises(ValidationError):
        alice.update(mine.id, visibility="group")  # needs a group
    newer = alice.update(mine.id, content="Alice's revised plan")
    with pytest.raises(ValidationError, match=newer.id):
        alice.update(mine.id, content="a fork")
    other = alice.remember("Another plan")
    with pytest.raises(ValidationError, match=other.id):
        alice.update(newer.id, content="Another plan")  # that text has its own memory
    assert [m.id for m in alice.graph.history(mine.id)] == [mine.id, newer.id]
    assert alice.get(shared.id).content == "Bob's shared note"


def test_listing_pages_walk_the_whole_list(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    for i in range(7):
        alice.remember(f"alice note {i}")
        bob.remember(f"bob note {i}")
    bob.remember("bob's shared note", visibility="shared")
    everything = alice.memories(limit=100)
    assert len(everything) == 8
    walked, cursor = [], None
    while True:
        page = alice.memories(limit=3, cursor=cursor)
        walked += page
        if len(page) < 3:
            break
        cursor = listing.encode_cursor(page[-1])
    assert [m.id for m in walked] == [m.id for m in everything]
    assert len({m.id for m in walked}) == len(walked)


@pytest.mark.parametrize("cursor", ["", "abc", "x" * 600, "AAAAAAAAAAAAAAAAAAAA"])
def test_bad_cursor_is_refused(palace: Palace, cursor: str) -> None:
    with pytest.raises(ValidationError) as bad:
        palace.memories(cursor=cursor)
    assert bad.value.field == "cursor"


def test_tampered_cursor_is_refused(palace: Palace) -> None:
    good = listing.encode_cursor(palace.remember("a note"))
    tampered = good[:-2] + ("A" if good[-2] != "A" else "B") + good[-1]
    with pytest.raises(ValidationError):
        palace.memories(cursor=tampered)
    with pytest.raises(ValidationError):
        palace.memories(cursor=good, offset=1)
