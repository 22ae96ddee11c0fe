"""A first name and a full name as one entity (store/same_as_sql.py): the
first-name rule in both orders, ambiguity, separate and join, the readers
that follow a link, erasure, export and import, bad input; on every backend."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.ui.conftest import BASE, TOKENS, login

from mindpalace import Palace, PermissionDenied, Selection, ValidationError
from mindpalace.cli import main
from mindpalace.config import Settings
from mindpalace.models import RecallFilters
from mindpalace.server.http import build_app
from mindpalace.web.identity import PalacePool, TokenTable


def _listed(palace: Palace) -> dict[str, tuple[int, list[tuple[str, str]]]]:
    """Entity listing: name -> (mentions, [(linked name, link)])."""
    return {
        e.name: (e.mentions, [(link.name, link.link) for link in e.linked])
        for e in palace.graph.entities()
        if e.type.value == "person"
    }


@pytest.mark.parametrize("full_first", [True, False], ids=["full first", "short first"])
def test_the_rule_links_a_first_name_whichever_comes_first(
    palace: Palace, full_first: bool
) -> None:
    texts = ["Maria Lopez owns the billing service", "Maria: I will take it"]
    written = [palace.remember(t) for t in (texts if full_first else texts[::-1])]
    assert _listed(palace) == {"Maria Lopez": (2, [("Maria", "first_name")])}
    for memory in written:  # each memory's entity, as readers see it
        assert "Maria Lopez" in [e.name for e in palace.graph.mentions(memory.id)]
    later = palace.remember("Maria: the invoices are late")  # resolves to the full entity
    assert "Maria Lopez" in [e.name for e in palace.graph.mentions(later.id)]
    assert _listed(palace)["Maria Lopez"][0] == 3


def test_a_longer_first_word_is_another_name(palace: Palace) -> None:
    """The first word is matched whole: "Mariah Stone" is no full name of
    "Maria" (the prefix is read as a range of the entities' key index)."""
    for text in (
        "Mariah Stone leads the design team",
        "Maria-Jose Ortega runs the front desk",
        "Maria Lopez owns the billing service",
        "Maria: I will take it",
    ):
        palace.remember(text)
    assert _listed(palace)["Maria Lopez"][1] == [("Maria", "first_name")]


@pytest.mark.parametrize("short_at", [0, 1, 2])
def test_two_full_names_of_one_first_name_link_nothing(palace: Palace, short_at: int) -> None:
    texts = ["Maria Lopez owns the billing service", "Maria Chen leads the search team"]
    texts.insert(short_at, "Maria: I will take it")
    for text in texts:
        palace.remember(text)
    listed = _listed(palace)
    if short_at == 2:  # written after both: unlinked
        assert listed["Maria"] == (1, [])
    else:  # linked while one full name existed; the link stays until separated
        assert sum(len(links) for _, links in listed.values()) == 1
    assert listed["Maria Chen"][1] == [] or listed["Maria Lopez"][1] == []


def test_separate_keeps_them_apart_and_join_links_them_again(palace: Palace) -> None:
    palace.remember("Maria Lopez owns the billing service")
    palace.remember("Maria: I will take it")
    undone = palace.graph.separate_entity("Maria")
    assert [(u.name, u.same_as_name, u.link) for u in undone] == [
        ("Maria", "Maria Lopez", "first_name")
    ]
    assert _listed(palace) == {"Maria Lopez": (1, []), "Maria": (1, [])}
    short = palace.remember("Maria: another message")
    palace.remember("Maria Lopez reviews the budget")  # the rule does not link them again
    assert _listed(palace) == {"Maria Lopez": (2, []), "Maria": (2, [])}
    assert [e.name for e in palace.graph.mentions(short.id)] == ["Maria"]
    assert palace.store.resolve_names(["maria"], palace.scope) == {"maria": {"maria"}}
    joined = palace.graph.join_entities("maria", "MARIA LOPEZ")
    assert [(j.name, j.same_as_name, j.link) for j in joined] == [
        ("Maria", "Maria Lopez", "joined")
    ]
    assert _listed(palace) == {"Maria Lopez": (4, [("Maria", "joined")])}
    palace.graph.separate_entity("Maria Lopez")  # a full name separates its short names
    assert _listed(palace) == {"Maria Lopez": (2, []), "Maria": (2, [])}


def test_readers_follow_the_link(palace: Palace) -> None:
    turn = palace.remember("Maria: I will take the invoices")
    owns = palace.remember("Maria Lopez owns the Billing Service")
    runs = palace.remember("The Billing Service runs on Postgres")
    hits = palace.recall("Maria invoices", limit=5)
    first = next(h for h in hits if h.memory.id == turn.id)
    paths = {a.memory_id: a.path for a in first.associative_context}
    # From the turn naming "Maria", through Maria Lopez's memory, to the next.
    assert paths[runs.id] == (turn.id, "Maria Lopez", "Billing Service", runs.id)
    assert owns.id in {h.memory.id for h in hits}
    assert palace.store.resolve_names(["maria"], palace.scope) == {"maria": {"maria lopez"}}
    answer = palace.family.who_owns("Billing Service")
    assert [g.name for g in answer.groups] == ["Maria Lopez"]
    known = palace.family.what_do_i_know("Maria Lopez")
    assert turn.id in {i.hit.memory.id for group in known.groups for i in group.items}


def test_erasing_the_full_name_erases_what_names_her_by_first_name(
    make_palace: Callable[..., Palace],
) -> None:
    palace = make_palace("alice")
    turn = palace.remember("Maria: the vault code is QxSecretWord")
    palace.remember("Maria Lopez owns the billing service")
    kept = palace.remember("Aisha Khan leads the search project")
    receipt = palace.erase(Selection.entity("Maria Lopez"), confirm=True)
    assert receipt.to_dict()["counts"]["memories"] == 2
    assert [m.id for m in palace.memories()] == [kept.id]
    assert all(m.id != turn.id for m in palace.memories())
    assert "Maria" not in _listed(palace) and "Maria Lopez" not in _listed(palace)


def test_export_and_import_keep_the_link_and_the_separation(
    make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    palace = make_palace()
    palace.remember("Maria Lopez owns the billing service")
    palace.remember("Maria: I will take it")
    palace.remember("Aisha Khan leads the search project")
    palace.remember("Aisha: I review it")
    palace.graph.separate_entity("Aisha")
    out = io.StringIO()
    palace.export_jsonl(out)
    links = [json.loads(line) for line in out.getvalue().splitlines() if '"entity_link"' in line]
    assert sorted(r["link"] for r in links) == ["apart", "first_name"]
    with Palace(tmp_path / "copy.db") as copy:
        copy.import_jsonl(io.StringIO(out.getvalue()))
        assert _listed(copy) == _listed(palace)
        copy.remember("Aisha Khan joins the review")  # still kept apart
        assert _listed(copy)["Aisha"][1] == []


def test_bad_input_names_how_to_list_entities(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    alice.remember("Maria Lopez owns the billing service", visibility="shared")
    alice.remember("Maria: I will take it", visibility="shared")
    alice.remember("Aisha Khan leads the search project")
    with pytest.raises(ValidationError, match="mindpalace entities"):
        alice.graph.separate_entity("Nobody")
    with pytest.raises(ValidationError, match="mindpalace entities"):
        alice.graph.join_entities("Maria", "Nobody Else")
    with pytest.raises(ValidationError, match="not linked"):
        alice.graph.separate_entity("Aisha Khan")
    with pytest.raises(ValidationError, match="itself"):
        alice.graph.join_entities("Maria", "maria")
    with pytest.raises(PermissionDenied, match="own scope"):
        bob.graph.separate_entity("Maria")  # bob sees alice's shared entities, changes none
    assert _listed(alice)["Maria Lopez"] == (2, [("Maria", "first_name")])


def test_the_cli_lists_separates_and_joins(
    store_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*args: str) -> str:
        assert main(["--db", store_target, *args]) == 0
        return capsys.readouterr().out

    cli("remember", "Maria: I will take it")
    cli("remember", "Maria Lopez owns the billing service")
    assert "Maria = same as Maria Lopez (first name)" in cli("--plain", "entities")
    listed = json.loads(cli("entities", "maria"))
    assert [(e["name"], [x["name"] for x in e["linked"]]) for e in listed] == [
        ("Maria Lopez", ["Maria"])
    ]
    assert json.loads(cli("entities", "separate", "Maria"))["separated"][0]["name"] == "Maria"
    assert "is now the same as Maria Lopez" in cli(
        "--plain", "entities", "join", "Maria", "Maria Lopez"
    )
    assert main(["--db", store_target, "entities", "separate", "Nobody"]) == 2
    assert "mindpalace entities" in capsys.readouterr().err


def test_the_inspector_shows_the_link(tmp_path: Path) -> None:
    settings = Settings(agent_id="alice", embedder="hashing")
    with Palace(tmp_path / "p.db", agent_id="alice", settings=settings) as palace:
        palace.remember("Maria Lopez owns the billing service")
        palace.remember("Maria: I will take it")
        app = build_app(PalacePool(palace), TokenTable.parse(TOKENS.split(","), origin="t"))
        with TestClient(app, base_url=BASE, follow_redirects=False) as client:
            login(client, "alice-token")
            page = client.get("/entities").text
    assert "Maria: same as Maria Lopez (first name)" in page


@pytest.mark.parametrize("both", [1, 3])
@pytest.mark.parametrize("short_first", [True, False], ids=["short first", "full first"])
def test_a_memory_naming_both_linked_entities_counts_once(
    palace: Palace, both: int, short_first: bool
) -> None:
    """Members of a name (the graph stage's hub test): a memory that names
    both the full name and a first name joined to it mentions two entities
    of one name, and counts once; the count is exact at the hub limit
    whichever entity's mentions the store reads first."""
    texts = ["Maria Lopez owns the billing service", "Maria: I will take it"]
    for text in texts[::-1] if short_first else texts:
        palace.remember(text)
    palace.graph.separate_entity("Maria")
    named = [palace.remember(f"Maria: ask Maria Lopez about topic {i}").id for i in range(both)]
    alone = palace.remember("Maria Lopez reviews the budget").id
    assert sorted(e.name for e in palace.graph.mentions(named[0])) == ["Maria", "Maria Lopez"]
    palace.graph.join_entities("maria", "maria lopez")
    scope, any_ = palace.scope, RecallFilters()
    members = {*named, alone} | {m.id for m in palace.memories(limit=10) if "owns" in m.content}
    members |= {m.id for m in palace.memories(limit=10) if m.content == "Maria: I will take it"}
    for max_degree in range(1, len(members) + 2):
        found = palace.store.entity_members(["maria lopez"], scope, any_, max_degree=max_degree)
        if len(members) > max_degree:
            assert found == {"maria lopez": (max_degree + 1, [])}
        else:
            assert found == {"maria lopez": (len(members), sorted(members))}
