"""Supersession's second rule: a replacement said in other words
(``store/supersede.py``, ``writing.restating``), and what recall does with
replaced memories (``currency.carried_forward``, ``TimeQuery.looks_back``).
Real palaces on every backend, with the bundled MiniLM model (the rule
needs a model whose same-subject cosine was measured)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from mindpalace import Palace, writing
from mindpalace.config import Settings
from mindpalace.models import Memory
from mindpalace.retrieval import warm_cache
from mindpalace.store import supersede
from mindpalace.store.supersede import says_change

OLD = "The weekly planning meeting is on Mondays at 10 am in the large meeting room."
NEW = "From 5 October the weekly planning meeting moves to Tuesdays at 2 pm, in the same room."


@pytest.fixture
def minilm(make_palace: Callable[..., Palace]) -> Callable[..., Palace]:
    def make(agent_id: str = "default") -> Palace:
        settings = Settings(agent_id=agent_id, embedder="local", signals=False)
        return make_palace(agent_id, settings=settings)

    return make


@pytest.mark.parametrize(
    ("text", "changed"),
    [
        (NEW, True),
        ("Marcus took over the on-call rotation from Ingrid.", True),
        ("The launch was pushed back to 9 November.", True),
        ("Since 1 May boats are booked in the app.", True),
        ("Rent went up to £900 a month.", True),
        ("We use Grafana instead of Datadog.", True),
        ("Since the break-in the shed has a heavier lock.", True),  # since an event
        ("Since the new year the catch-up is on Tuesdays.", True),
        ("Change of date: the show will be on 4 September.", True),
        ("No walk-in shower after all: we are fitting a bath.", True),
        ("The committee raised the cap to five vouchers.", True),
        ("Gareth has pushed handover back to 20 November.", True),
        ("Ian has brought our inspection forward to 24 June.", True),
        ("After the rot, we raised the ceiling on spending to £96,000.", True),
        ("Kwame put the kettle back on.", False),  # back, not later
        ("The shop cut prices in half last year.", False),  # no new value
        ("The committee voted to put seats up to £14 full price.", True),
        ("They put the rent down to £300 a month.", True),
        ("We can put up to 40 tents on the top field.", False),  # a capacity
        ("After all, we are a small team.", False),  # a discourse marker
        ("Bring a change of clothes for the regatta.", False),
        ("Since the hall is booked, we meet in the pub.", False),  # a cause
        ("The fun run raised £500 to buy a defibrillator.", False),
        ("Sam cut his hand going to the shed.", False),
        ("He pushed the door and came back.", False),
        ("The weekly planning meeting lasts one hour.", False),
        ("We also hold a design review on Tuesdays from 2 pm.", False),  # adds
        ("The office is open from 8 am to 6 pm.", False),  # a span, not an onset
        ("Carol moves fast and ships often; she also reviews.", False),  # adds
    ],
)
def test_says_change(text: str, changed: bool) -> None:
    assert says_change(text) is changed


def test_a_replacement_in_other_words_closes_the_old_memory(
    minilm: Callable[..., Palace], clock: Any
) -> None:
    palace = minilm()
    old = palace.remember(OLD, category="decision")
    clock.now += timedelta(days=30)
    new = palace.remember(NEW, category="decision")
    closed = palace.get(old.id)
    assert closed.superseded_by == new.id
    assert [m.id for m in palace.graph.history(old.id)] == [old.id, new.id]
    # what the old text matched, the current one answers, in its place
    hits = palace.recall("which day is the weekly planning meeting")
    ids = [h.memory.id for h in hits]
    assert ids[0] == new.id and old.id not in ids
    # a question about before the change is answered by what held then
    hits = palace.recall("which day was the planning meeting before October?")
    assert [h.memory.id for h in hits][:2] == [old.id, new.id]  # what held then, first
    assert f"replaced by {new.id}: the question asks about an earlier time" in hits[0].gates


def test_a_replacement_less_alike_is_linked_from_the_link_cosine(
    minilm: Callable[..., Palace], clock: Any
) -> None:
    """Said in new words (MiniLM cosine 0.56: under the same-subject 0.6, over
    the link cosine 0.5), a change of who keeps the van still closes the
    old statement; an unrelated fact beside it stays open."""
    palace = minilm()
    old = palace.remember("Mia Park looks after the company van and its bookings.")
    other = palace.remember("The company van is serviced every March at Dale Motors.")
    clock.now += timedelta(days=60)
    new = palace.remember("Since the spring Omar Haddad has taken over the van bookings from Mia.")
    assert palace.get(old.id).superseded_by == new.id
    assert palace.get(other.id).superseded_by is None


@pytest.mark.parametrize(
    "text",
    [
        "The weekly planning meeting lasts one hour.",  # close, but says no change
        "We also hold a weekly design review on Tuesdays at 2 pm.",  # adds
        "From 5 October the support rota moves to a two-week cycle.",  # another subject
    ],
)
def test_what_is_not_a_replacement_closes_nothing(
    minilm: Callable[..., Palace], clock: Any, text: str
) -> None:
    palace = minilm()
    old = palace.remember(OLD, category="decision")
    clock.now += timedelta(days=30)
    palace.remember(text, category="decision")
    assert palace.get(old.id).superseded_by is None


def test_the_rule_stays_within_its_scope_category_and_kind(
    minilm: Callable[..., Palace], clock: Any
) -> None:
    alice, bob = minilm("alice"), minilm("bob")
    shared = alice.remember(OLD, category="decision", visibility="shared")
    other_category = alice.remember(OLD + " ", category="rule")
    clock.now += timedelta(days=30)
    bob.remember(NEW, category="decision")  # another agent's memory
    assert alice.get(shared.id).superseded_by is None
    alice.remember(NEW, category="decision")  # isolated: not the shared memory's part
    assert alice.get(shared.id).superseded_by is None
    assert alice.get(other_category.id).superseded_by is None
    lesson = alice.remember(OLD, category="lesson")
    alice.remember(NEW + " Noted.", category="lesson")  # lessons add up, none replaces
    assert alice.get(lesson.id).superseded_by is None


@pytest.mark.parametrize("longest", [supersede.MAX_STATEMENT, 100])
def test_a_long_text_replaces_nothing_in_other_words(
    minilm: Callable[..., Palace], clock: Any, monkeypatch: pytest.MonkeyPatch, longest: int
) -> None:
    """A text of more words than a statement has (a chat turn written as a
    fact) closes nothing by this rule; the same text under a higher bound
    does, so the bound is what decides."""
    monkeypatch.setattr(supersede, "MAX_STATEMENT", longest)
    palace = minilm()
    old = palace.remember(OLD, category="decision")
    clock.now += timedelta(days=30)
    long = " ".join([NEW] * 4)  # 64 words
    new = palace.remember(long, category="decision")
    closed = palace.get(old.id).superseded_by
    assert closed == (None if longest < 64 else new.id)


@pytest.mark.parametrize("warm", [False, True])
def test_the_warm_keyword_index_finds_what_the_store_finds(
    minilm: Callable[..., Palace], clock: Any, warm: bool
) -> None:
    """A process that holds a warm keyword index looks for the memory a
    write restates there (milliseconds at any size), one that does not asks
    the store: the same memory either way, within the writer's scope part
    and category (another agent's closer match and a rule are not taken)."""
    alice, bob = minilm("alice"), minilm("bob")
    bob.remember(OLD + " Bob's copy.", category="decision", visibility="shared")
    old = alice.remember(OLD, category="decision")
    alice.remember(OLD + " As a rule.", category="rule")
    alice.remember("The quarterly planning offsite is in the large meeting room.")
    if warm:
        alice.recall("planning meeting")
        assert alice.semantic.wait_for_warm() is not None
    clock.now += timedelta(days=30)
    assert (alice.semantic.current_keywords() is not None) is warm
    new = alice.remember(NEW, category="decision")
    assert alice.get(old.id).superseded_by == new.id
    assert [m.id for m in alice.graph.history(new.id)] == [old.id, new.id]


def test_remember_many_links_to_what_was_written_before(
    minilm: Callable[..., Palace], clock: Any
) -> None:
    palace = minilm()
    old = palace.remember(OLD, category="decision")
    clock.now += timedelta(days=30)
    written = palace.remember_many(
        [{"content": NEW, "category": "decision"}, {"content": "Lunch is at noon."}]
    )
    assert palace.get(old.id).superseded_by == written[0].id


def test_the_test_model_links_nothing_by_this_rule(
    make_palace: Callable[..., Palace], clock: Any
) -> None:
    """A model whose same-subject cosine was not measured (the hashing test
    model) gets no second rule."""
    palace = make_palace(settings=Settings(embedder="hashing", signals=False))
    old = palace.remember(OLD, category="decision")
    clock.now += timedelta(days=30)
    palace.remember(NEW, category="decision")
    assert palace.get(old.id).superseded_by is None


def _large_palace(path: Path, settings: Settings, *, saved: bool) -> Memory:
    """The old decision and two other memories at ``path`` (a "large"
    palace once the tests lower the size), with the keyword index saved
    beside it when ``saved``; the old decision."""
    with Palace(path, settings=settings) as first:
        old = first.remember(OLD, category="decision")
        first.remember("The quarterly planning offsite is in the large meeting room.")
        first.remember("Lunch is served at noon in the canteen.")
        if saved:
            first.recall("planning meeting")
            index = first.semantic.wait_for_warm()
            assert index is not None and warm_cache.save_text(first.store, index)
    return old


@pytest.mark.parametrize("saved", [True, False])
def test_a_bulk_write_from_a_fresh_process_looks_in_the_saved_keyword_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: bool
) -> None:
    """A large batch into a large palace (the sizes lowered here), from a
    process that never recalled, loads the keyword index saved beside the
    palace before it looks for what its memories restate; with no file
    there and a batch too small to pay for building one, the store's
    search looks. The same memory is closed either way."""
    monkeypatch.setattr(writing, "RESTATE_WARM_ROWS", 3)
    monkeypatch.setattr(writing, "RESTATE_WARM", 2)
    settings = Settings(embedder="local", signals=False)
    path = tmp_path / "p.db"
    old = _large_palace(path, settings, saved=saved)
    with Palace(path, settings=settings) as again:
        assert again.semantic.current_keywords() is None  # a fresh process
        written = again.remember_many(
            [
                {"content": NEW, "category": "decision"},
                {"content": "The launch was pushed back to 9 November.", "category": "decision"},
            ]
        )
        assert (again.semantic.current_keywords() is not None) is saved
        assert again.get(old.id).superseded_by == written[0].id


def test_small_batches_of_one_process_add_up_to_building_the_keyword_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk import in small batches, from a process that never recalled,
    builds the warm keyword index once its writes have asked for enough
    of the store's searches, counted over its batches (the sizes lowered
    here); before that, the store's search looks. The replacement is
    closed the same either way."""
    monkeypatch.setattr(writing, "RESTATE_WARM_ROWS", 3)
    monkeypatch.setattr(writing, "RESTATE_WARM", 2)
    monkeypatch.setattr(writing, "RESTATE_BUILD", 3)
    settings = Settings(embedder="local", signals=False)
    path = tmp_path / "p.db"
    old = _large_palace(path, settings, saved=False)
    with Palace(path, settings=settings) as again:
        changes = [
            "The launch was pushed back to 9 November.",
            "The office moved to the second floor.",
        ]
        for text in changes:
            again.remember_many([{"content": text, "category": "decision"}])
            assert again.semantic.current_keywords() is None  # 1, then 2 looks: no file
        written = again.remember_many([{"content": NEW, "category": "decision"}])
        assert again.semantic.current_keywords() is not None  # the third: built
        assert again.get(old.id).superseded_by == written[0].id


def test_a_single_write_from_a_fresh_process_loads_the_saved_keyword_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``remember`` that may restate a memory, into a large palace (the
    size lowered here) from a process that never recalled, loads the
    keyword index saved beside the palace rather than searching the store
    (0.3 s at 100,000 memories, seconds at a million)."""
    monkeypatch.setattr(writing, "RESTATE_WARM_ROWS", 3)
    settings = Settings(embedder="local", signals=False)
    path = tmp_path / "p.db"
    old = _large_palace(path, settings, saved=True)
    with Palace(path, settings=settings) as again:
        assert again.semantic.current_keywords() is None  # a fresh process
        new = again.remember(NEW, category="decision")
        assert again.semantic.current_keywords() is not None
        assert again.get(old.id).superseded_by == new.id
