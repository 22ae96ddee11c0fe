"""Personal-data kinds and the search across them (seed 001), on every backend.

A small fixture of personal data written for the project
(``tests/data/personal.jsonl``: journal entries, knowledge nodes, issues of
two projects, specifications, conversation turns and one ordinary memory) is
ingested the way a program would: turns through ``add_messages``, the rest
through ``remember_many``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindpalace import MemoryKind, NotFoundError, Palace, PermissionDenied, ValidationError
from mindpalace.cli import main
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.models import Scope
from mindpalace.personal import attribution, read_target, summary
from mindpalace.retrieval.pipeline import TEXT_ONLY_NOTICE
from mindpalace.server import tools
from mindpalace.store import migrate, migrations, open_store
from mindpalace.store.sqlite import SQLiteDialect

FIXTURE = Path(__file__).parent / "data" / "personal.jsonl"
KINDS = ["memory", "journal", "node", "issue", "spec", "message"]


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def ingest(palace: Palace) -> dict[str, str]:
    """The fixture into ``palace``; returns each content's memory id."""
    rows = records()
    turns = [
        Message(
            r["content"],
            role=r["role"],
            speaker=r["speaker"],
            session=r["session"],
            created_at=datetime.fromisoformat(r["created_at"]),
        )
        for r in rows
        if r["kind"] == "message"
    ]
    stored = palace.add_messages(turns)
    rest = [r for r in rows if r["kind"] != "message"]
    stored += palace.remember_many(rest)
    ids = {}
    for memory in stored:
        text = memory.content.split(": ", 1)[1] if memory.kind is MemoryKind.MESSAGE else None
        ids[text or memory.content] = memory.id
    return ids


@pytest.fixture
def semantic(make_palace: Callable[..., Palace]) -> Palace:
    palace = make_palace(settings=Settings(embedder="hashing"))
    ingest(palace)
    return palace


@pytest.fixture
def textual(make_palace: Callable[..., Palace]) -> Palace:
    palace = make_palace(settings=Settings(embedder="none"))
    ingest(palace)
    return palace


@pytest.fixture(params=["hashing", "none"])
def either(make_palace: Callable[..., Palace], request: pytest.FixtureRequest) -> Palace:
    """The fixture palace with semantic search, then without."""
    palace = make_palace(settings=Settings(embedder=request.param))
    ingest(palace)
    return palace


# -- writing -----------------------------------------------------------------------------


def test_the_fixture_is_stored_with_kinds_projects_and_states(semantic: Palace) -> None:
    everything = semantic.memories(limit=100)
    by_kind = {k: sorted(m.content for m in everything if m.kind.value == k) for k in KINDS}
    assert {k: len(v) for k, v in by_kind.items()} == {
        "memory": 1,
        "journal": 4,
        "node": 2,
        "issue": 4,
        "spec": 3,
        "message": 3,
    }
    issues = {m.content: m for m in everything if m.kind is MemoryKind.ISSUE}
    numbered = {c: (m.project, m.metadata["issue_number"], m.completed) for c, m in issues.items()}
    assert numbered == {
        "Search is slow on palaces with a million memories": ("MindPalace", 1, False),
        "The migration to PostgreSQL drops tags": ("MindPalace", 2, True),
        "CLI --plain output misses dates": ("MindPalace", 3, False),
        "Irrigation timer resets after a power cut": ("Garden", 1, False),
    }
    assert all(m.completed is None for m in everything if m.kind is not MemoryKind.ISSUE)
    turns = [m for m in everything if m.kind is MemoryKind.MESSAGE]
    assert all(m.category.value == "conversation" for m in turns)
    assert semantic.personal.projects() == {"Garden": 2, "MindPalace": 5}


def test_get_shows_the_kind_and_the_writers_set_it(palace: Palace) -> None:
    entry = palace.personal.journal("Planted tulips", date="2026-03-01")
    node = palace.personal.add_node("Carol", "runs the allotment association")
    issue = palace.personal.add_issue("Fence is leaning", project="Allotment")
    spec = palace.personal.add_spec("Paths are 60 cm wide", project="Allotment")
    got = {m.id: palace.get(m.id) for m in (entry, node, issue, spec)}
    assert got[entry.id].kind is MemoryKind.JOURNAL
    assert got[entry.id].created_at.date().isoformat() == "2026-03-01"
    assert got[entry.id].store.value == "episodic"
    assert (got[node.id].kind, got[node.id].title) == (MemoryKind.NODE, "Carol")
    assert (got[issue.id].project, got[issue.id].completed) == ("Allotment", False)
    assert got[issue.id].metadata["issue_number"] == 1
    assert got[spec.id].to_dict()["kind"] == "spec"
    # the next issue of the project takes the next number, another project starts at 1
    assert palace.personal.add_issue("Gate sticks", project="Allotment").metadata == {
        "issue_number": 2
    }
    assert palace.personal.add_issue("Roof leaks", project="Shed").metadata["issue_number"] == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: p.remember("x", kind="diary"), "kind 'diary'; valid options: memory, journal"),
        (lambda p: p.remember("x", kind=3), "valid options: memory, journal, node, issue"),
        (lambda p: p.remember("x", completed=True), "completed belongs to kind 'issue'"),
        (lambda p: p.remember("x", kind="journal", completed=False), "not 'journal'"),
        (lambda p: p.remember("x", kind="issue", completed="yes"), "valid options: true"),
        (lambda p: p.remember("x", project="p" * 129), "project must be 1-128"),
        (lambda p: p.remember("x", project="a\nb"), "project must be 1-128 printable"),
        (lambda p: p.remember_many([{"content": "x", "kind": "todo"}]), "record 0: invalid kind"),
        (lambda p: p.personal.add_issue("x", project=""), "an issue needs a project"),
        (lambda p: p.personal.add_spec("x", project=" "), "a specification needs a project"),
        (lambda p: p.personal.add_node("", "x"), "name must not be empty"),
        (lambda p: p.search("x", kinds=["diary"]), "valid options: memory, journal"),
        (lambda p: p.search("x", kinds="journal,todo"), "invalid kind 'todo'"),
        (lambda p: p.search("x", limit=0), "limit"),
        (lambda p: p.search("x", limit=101), "limit"),
        (lambda p: p.search("x", project=""), "project must not be empty"),
        (lambda p: p.search(42), "query must be a string"),  # type: ignore[arg-type]
        (lambda p: p.recall("x", kinds="jounal"), "valid options: memory, journal"),
        (lambda p: p.memories(kinds=["nodes"]), "invalid kind 'nodes'"),
        (lambda p: p.memories(completed="no"), "valid options: true, false"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused_naming_the_options_and_writes_nothing(
    palace: Palace, call: Callable[[Palace], object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        call(palace)
    assert palace.store.stats(Scope.management()).memories == 0


def test_a_conversation_turn_is_a_message_unless_it_says_otherwise(palace: Palace) -> None:
    turn = palace.remember("Ann: hello", category="conversation")
    note = palace.remember("Ann said hello", category="conversation", kind="journal")
    assert (turn.kind, note.kind) == (MemoryKind.MESSAGE, MemoryKind.JOURNAL)


# -- attribution ---------------------------------------------------------------------------


def test_each_kind_is_attributed_to_its_source_with_its_date(semantic: Palace) -> None:
    lines = {m.content: attribution(m) for m in semantic.memories(limit=100) if m.kind is not None}
    assert lines[
        "Hiked up to the ridge with Bob; the view over the valley was worth the sore legs."
    ] == ("From your journal on 15 Jan 2026")
    assert lines["my hiking partner; a nurse at the city hospital"] == (
        "From your knowledge graph — Bob (6 Jan 2026)"
    )
    assert lines["The migration to PostgreSQL drops tags"] == (
        "From project MindPalace, issue #2 (completed, 12 Jan 2026)"
    )
    assert lines["Irrigation timer resets after a power cut"] == (
        "From project Garden, issue #1 (open, 1 Feb 2026)"
    )
    assert lines["Raised beds are 1.2 m wide so the middle is reachable from both sides."] == (
        "From a specification in project Garden (2 Feb 2026)"
    )
    assert lines["Ann: Should we move the database migration to next sprint?"] == (
        "From a conversation on 20 Jan 2026"
    )
    assert lines["We chose SQLite as the default store because one file is easy to back up."] == (
        "From your memories on 2 Jan 2026"
    )


def test_a_result_line_is_attribution_then_summary(semantic: Palace) -> None:
    (result,) = semantic.search("my journal entries about the cello")
    assert result.line == (
        "From your journal on 3 Feb 2026: Started learning the cello."
        " Ms. Park says to practise scales daily."
    )
    data = result.to_dict()
    assert (data["kind"], data["date"], data["line"]) == ("journal", "2026-02-03", result.line)
    assert 0 <= data["score"] <= 1 and 0 <= data["confidence"] <= 1
    assert isinstance(data["high_confidence"], bool)


@given(st.text(min_size=1, max_size=600))
def test_a_summary_is_short_and_comes_from_the_text(text: str) -> None:
    short = summary(text, limit=50)
    flat = " ".join(text.split())
    assert len(short) <= 52
    assert flat.startswith(short.removesuffix(" …").rstrip(" ,;:."))


# -- narrowing by what the query names ------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "kinds", "project", "completed", "text"),
    [
        (
            "my journal entries about the database migration",
            ["journal"],
            None,
            None,
            "database migration",
        ),
        ("find hiking in my diary", ["journal"], None, None, "hiking"),
        ("health issues in my journal", ["journal"], None, None, "health issues"),
        ("open issues in project Garden", ["issue"], "Garden", False, ""),
        ("closed issues about tags", ["issue"], None, True, "tags"),
        ("issues in project mindpalace about search", ["issue"], "mindpalace", None, "search"),
        ('specs for project "Mind Palace"', ["spec"], "Mind Palace", None, ""),
        ("what did I say about hiking boots", ["message"], None, None, "hiking boots"),
        ("my knowledge graph on Bob", ["node"], None, None, "Bob"),
        ("database migration", [], None, None, "database migration"),
        ("the journalist wrote about issues", [], None, None, "the journalist wrote about issues"),
    ],
)
def test_read_target(
    query: str, kinds: list[str], project: str | None, completed: bool | None, text: str
) -> None:
    target = read_target(query)
    assert [k.value for k in target.kinds] == kinds
    assert (target.project, target.completed, target.text) == (project, completed, text)
    assert bool(target.phrases) == bool(kinds or project)


@given(st.text(alphabet="abcdefghij klmnop", max_size=60))
def test_a_query_naming_no_kind_is_searched_as_it_is(query: str) -> None:
    target = read_target(query)
    if not target.phrases:
        assert target.text == query and not target.kinds


def test_a_query_naming_a_kind_searches_only_that_kind(either: Palace) -> None:
    palace = either
    results = palace.search("my journal entries about the database migration")
    assert [k.value for k in results.kinds] == ["journal"]
    assert results.narrowed_by == ("my journal entries",)
    assert results.query == "database migration"
    assert results and {r.kind for r in results} == {MemoryKind.JOURNAL}
    assert results[0].memory.content.startswith("Could not sleep")
    said = palace.search("what did I say about the database migration")
    assert said and {r.kind for r in said} == {MemoryKind.MESSAGE}
    issues = palace.search("issues in project mindpalace about the migration")
    assert issues.project == "MindPalace"  # matched whatever the case
    assert [r.memory.content for r in issues] == ["The migration to PostgreSQL drops tags"]


def test_explicit_kinds_override_the_query(semantic: Palace) -> None:
    query = "my journal entries about the database migration"
    specs = semantic.search(query, kinds=["spec"])
    assert specs.narrowed_by == () and [k.value for k in specs.kinds] == ["spec"]
    assert {r.kind for r in specs} == {MemoryKind.SPEC}
    everything = semantic.search("database migration", kinds=[])
    assert everything.kinds == ()
    assert {r.kind for r in everything} >= {
        MemoryKind.JOURNAL,
        MemoryKind.SPEC,
        MemoryKind.MESSAGE,
    }


def test_an_explicit_project_overrides_the_query(semantic: Palace) -> None:
    garden = semantic.search("issues in project mindpalace", project="garden")
    assert garden.project == "Garden"
    assert [r.memory.content for r in garden] == ["Irrigation timer resets after a power cut"]


def test_a_query_of_only_kind_words_lists_the_newest(semantic: Palace) -> None:
    results = semantic.search("my open issues")
    assert results.mode == "list"
    assert [r.memory.content for r in results] == [
        "Irrigation timer resets after a power cut",
        "CLI --plain output misses dates",
        "Search is slow on palaces with a million memories",
    ]
    assert all("(open, " in r.attribution for r in results)
    done = semantic.search("completed issues in project MindPalace")
    assert [r.memory.content for r in done] == ["The migration to PostgreSQL drops tags"]


# -- semantic and text search ---------------------------------------------------------------


def test_semantic_search_ranks_by_relevance(semantic: Palace) -> None:
    results = semantic.search("database migration", limit=20)
    assert results.mode == "hybrid" and results.notice is None
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    assert "migration" in results[0].memory.content.lower()
    # every kind that mentions it is found, each attributed
    assert {r.kind for r in results} >= {
        MemoryKind.JOURNAL,
        MemoryKind.SPEC,
        MemoryKind.ISSUE,
        MemoryKind.MESSAGE,
    }
    assert all(r.line.startswith("From ") for r in results)


def test_text_fallback_says_so_and_ranks_newest_first(textual: Palace) -> None:
    results = textual.search("MIGRATION")  # case-insensitive
    assert results.mode == "text"
    assert results.notice is not None and results.notice.startswith(
        "Using text search (semantic search is not available)."
    )
    assert results.notice.startswith(TEXT_ONLY_NOTICE)
    dates = [r.date for r in results]
    assert dates == sorted(dates, reverse=True)
    assert [r.memory.content for r in results] == [
        "Could not sleep; kept thinking about the database migration at work.",
        "Yes: the migration needs the tag fix first.".join(["Assistant: ", ""]),
        "Ann: Should we move the database migration to next sprint?",
        "The migration to PostgreSQL drops tags",
        "The database migration must be reversible by export and import.",
    ]


def test_text_fallback_matches_part_of_a_word(textual: Palace) -> None:
    results = textual.search("hik")  # hiked, hike, hiking
    assert {r.memory.created_at.date().isoformat() for r in results} >= {
        "2026-01-15",
        "2026-02-10",
        "2026-02-11",
    }


def test_limit_caps_the_results(semantic: Palace, textual: Palace) -> None:
    assert len(semantic.search("migration", limit=2)) == 2
    assert len(textual.search("migration", limit=2)) == 2
    newest = textual.search("migration", limit=2)
    assert newest[0].memory.content.startswith("Could not sleep")


# -- empty answers ---------------------------------------------------------------------------


def test_nothing_found_is_an_explicit_answer_with_a_hint(either: Palace) -> None:
    palace = either
    results = palace.search("Zanzibar quarterly tariffs")
    assert list(results) == []
    assert results.hint is not None and results.hint.startswith(
        "Nothing found for 'Zanzibar quarterly tariffs' in any of your data. Try "
    )
    assert "fewer words" in results.hint
    assert set(results.suggestions) >= {"zanzibar", "quarterly", "tariffs"}
    assert results.to_dict()["count"] == 0


def test_an_empty_narrowed_search_suggests_every_kind(textual: Palace) -> None:
    results = textual.search("my journal entries about raised beds")
    assert list(results) == []
    assert results.hint is not None
    assert "in your journal" in results.hint
    assert "searching every kind (leave out 'my journal entries')" in results.hint
    assert "raised beds" in results.suggestions
    # and the suggestion finds it
    (found,) = textual.search(results.suggestions[0])
    assert found.kind is MemoryKind.SPEC


def test_an_unknown_project_names_the_known_ones(semantic: Palace) -> None:
    results = semantic.search("issues about the timer", project="Kitchen")
    assert list(results) == []
    assert results.hint is not None
    assert "none is named 'Kitchen' (projects: Garden, MindPalace)" in results.hint


def test_a_project_the_query_names_must_exist_to_narrow(semantic: Palace) -> None:
    # "project management" is a topic, not a project: nothing is narrowed by it
    assert read_target("project management tips", ["Garden"]).project is None
    assert read_target("tips for project garden", ["Garden"]).project == "Garden"
    about = read_target("my journal entries about project management", ["Garden"])
    assert (about.text, about.project, about.unknown_project) == ("project management", None, None)
    results = semantic.search("issues in project Kitchen about the timer")
    assert results.project is None
    assert results.notice is not None
    assert "No project is named 'Kitchen' (projects: Garden, MindPalace)" in results.notice
    assert [r.memory.content for r in results][:1] == ["Irrigation timer resets after a power cut"]


def test_an_empty_palace_answers_with_a_hint(palace: Palace) -> None:
    results = palace.search("anything at all")
    assert list(results) == [] and results.hint


# -- read-only, scope, filters ---------------------------------------------------------------


def test_search_changes_no_memory(semantic: Palace) -> None:
    before = [m.to_dict() for m in semantic.store.iter_memories(Scope.management())]
    for query in ("migration", "my open issues", "what did I say about boots", "nothing here"):
        semantic.search(query)
    after = [m.to_dict() for m in semantic.store.iter_memories(Scope.management())]
    assert after == before


def test_another_agents_journal_is_not_searched(
    make_palace: Callable[..., Palace],
) -> None:
    settings = Settings(embedder="hashing")
    ann = make_palace("ann", settings=Settings(agent_id="ann", embedder="hashing"))
    bob = make_palace("bob", settings=Settings(agent_id="bob", embedder="hashing"))
    del settings
    ann.personal.journal("Secret plan for the surprise party", date="2026-01-03")
    bob.personal.journal("Bought balloons for the party", date="2026-01-04")
    ann.personal.add_issue("Party venue", project="Party", visibility="shared")
    assert [r.memory.agent_id for r in bob.search("my journal entries about the party")] == ["bob"]
    assert bob.personal.projects() == {"Party": 1}  # shared with every agent
    assert ann.personal.projects() == {"Party": 1}


def test_recall_and_memories_filter_by_kind_and_project(semantic: Palace) -> None:
    hits = semantic.recall("migration", kinds="spec,issue")
    assert hits and {h.memory.kind.value for h in hits} <= {"spec", "issue"}
    listed = semantic.memories(kinds=["journal", "node"])
    assert len(listed) == 6
    assert semantic.memories(projects="Garden") == semantic.memories(projects=["Garden"])
    garden = semantic.memories(projects=["Garden"])
    assert {m.content[:10] for m in garden} == {"Irrigation", "Raised bed"}
    assert [m.content for m in semantic.memories(kinds="issue", completed=True)] == [
        "The migration to PostgreSQL drops tags"
    ]
    text_hits = semantic.recall("migration", kinds=["message"], completed=None)
    assert {h.memory.kind for h in text_hits} == {MemoryKind.MESSAGE}


def test_archived_entries_are_searched_only_when_asked(semantic: Palace) -> None:
    (cello,) = semantic.search("my journal about the cello")
    semantic.forget(cello.memory.id)
    assert list(semantic.search("my journal about the cello")) == []
    (again,) = semantic.search("my journal about the cello", include_archived=True)
    assert again.memory.archived


# -- export, import, migrate, schema --------------------------------------------------------


def test_export_and_import_keep_kinds(semantic: Palace, tmp_path: Path) -> None:
    out = io.StringIO()
    semantic.export_jsonl(out)
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0])["version"] == 3
    memories = [r for r in map(json.loads, lines[1:]) if "record" not in r]
    assert {r["kind"] for r in memories} == set(KINDS)
    with Palace(tmp_path / "copy.db", settings=Settings(embedder="hashing")) as copy:
        assert copy.import_jsonl(lines).inserted == len(memories)
        original = {m.id: m for m in semantic.store.iter_memories(Scope.management())}
        restored = {m.id: m for m in copy.store.iter_memories(Scope.management())}
        assert restored == original
        assert copy.search("issues in project garden").lines == [
            "From project Garden, issue #1 (open, 1 Feb 2026):"
            " Irrigation timer resets after a power cut"
        ]


def test_a_version_1_export_still_imports(palace: Palace, tmp_path: Path) -> None:
    palace.remember("Ann: hi there", category="conversation")
    palace.remember("a plain fact")
    out = io.StringIO()
    palace.export_jsonl(out)
    old = []
    for number, line in enumerate(out.getvalue().splitlines()):
        record = json.loads(line)
        if "record" in record:  # version 1 held memories only
            continue
        if number == 0:
            record["version"] = 1
        else:  # what version 1 wrote: a record marker, no kind fields
            for name in ("project", "completed"):
                record.pop(name)
            record["kind"] = "memory"
        old.append(json.dumps(record))
    with Palace(tmp_path / "old.db", settings=Settings(embedder="none")) as target:
        assert target.import_jsonl(old).inserted == 2
        kinds = {m.content: m.kind.value for m in target.memories()}
    assert kinds == {"Ann: hi there": "message", "a plain fact": "memory"}


def test_migrate_between_backends_keeps_kinds(
    tmp_path: Path, postgres_url: str, backend: str
) -> None:
    sqlite_path = str(tmp_path / "source.db")
    source, destination = (
        (sqlite_path, postgres_url) if backend == "sqlite" else (postgres_url, sqlite_path)
    )
    with Palace(source, settings=Settings(embedder="hashing")) as palace:
        ingest(palace)
        expected = palace.search("migration", limit=20).lines
    report = migrate(source, destination)
    assert report.identical
    with Palace(destination, settings=Settings(embedder="hashing")) as copy:
        assert copy.search("migration", limit=20).lines == expected
        assert copy.personal.projects() == {"Garden": 2, "MindPalace": 5}


def test_migration_5_marks_earlier_turns_as_messages(store_target: str) -> None:
    # A palace as migration 4 left it: every later migration taken back out.
    old = open_store(store_target)
    with old._mutate(structural=True) as cur:  # type: ignore[attr-defined]
        old._exec(cur, "DROP INDEX memories_kind")  # type: ignore[attr-defined]
        for column in ("kind", "project", "completed"):
            old._exec(cur, f"ALTER TABLE memories DROP COLUMN {column}")  # type: ignore[attr-defined]
        old._exec(cur, "DROP TABLE scorer_weights")  # type: ignore[attr-defined]  # migration 6
        old._exec(cur, "DROP INDEX memories_constraints")  # type: ignore[attr-defined]  # 7
        old._exec(cur, "DROP INDEX memories_created")  # type: ignore[attr-defined]  # 10
        old._exec(cur, "DROP TABLE part_vectors")  # type: ignore[attr-defined]  # 13
        old._exec(cur, "DROP TABLE erasures")  # type: ignore[attr-defined]  # 14
        old._exec(cur, "DROP TABLE retention_rules")  # type: ignore[attr-defined]  # 15
        for statement in (  # 16: mentions by name, newest first
            "DROP INDEX mentions_entity_memory",
            "CREATE INDEX mentions_entity ON mentions (entity_seq)",
            # 17: a short name the same entity as a full one
            "DROP TABLE entity_apart",
            "DROP INDEX entities_same_as",
            "ALTER TABLE entities DROP COLUMN same_as",
            "ALTER TABLE entities DROP COLUMN link",
            # 18: erasure look-ups by index
            "DROP INDEX memories_superseded_by",
            # 21: flag changes read without a reload
            "DROP INDEX memories_flagged",
            "ALTER TABLE memories DROP COLUMN flagged",
            "DELETE FROM palace_meta WHERE key = 'flags'",
            # 22: mentions by facts that may be replaced
            "DROP INDEX mentions_fact",
            "ALTER TABLE mentions DROP COLUMN fact",
            # 27: the stated times kept
            "ALTER TABLE memories DROP COLUMN stated_times",
        ):
            old._exec(cur, statement)  # type: ignore[attr-defined]
        if store_target.startswith("postgresql://"):  # 8: pgvector (nothing on SQLite)
            for statement in (
                "DROP TABLE text_key_counts",  # 26: the postings' counts by key
                # 24: keyword postings
                "DROP TRIGGER memories_text_postings ON memories",
                "DROP FUNCTION mp_text_postings(),"
                " mp_text_postings_of(TEXT, TEXT, TEXT, TEXT, tsvector)",
                "DROP TABLE text_postings",
                # 20: the text statistics' triggers as before (text_scopes'
                # lengths go with the table, below)
                "DROP TRIGGER memories_text_stats ON memories",
                "CREATE TRIGGER memories_text_stats AFTER INSERT OR DELETE OR UPDATE OF fts_len"
                " ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_stats()",
                "DROP INDEX entities_name_prefix",  # 19
                "DROP TRIGGER embedding_config_index ON embedding_config",
                "DROP TRIGGER embeddings_vec ON embeddings",
                "DROP FUNCTION mp_embedding_config_index(), mp_vector_index(INTEGER),"
                " mp_embeddings_vec(), mp_vector(BYTEA)",
                "DROP INDEX memories_embed_hash",
                "ALTER TABLE embeddings DROP COLUMN vec",  # and its HNSW index
                # the per-scope text keys and counts (PostgreSQL)
                "DROP TRIGGER memories_text_scopes ON memories",
                "DROP FUNCTION mp_text_scopes()",
                "DROP TABLE text_scopes",
                "DROP INDEX memories_text_keys",
                "DROP FUNCTION mp_text_keys(TEXT, TEXT, TEXT, TEXT, tsvector),"
                " mp_text_key(TEXT, TEXT, TEXT, TEXT, TEXT)",
            ):
                old._exec(cur, statement)  # type: ignore[attr-defined]
        else:  # 9: the per-scope keyword index (SQLite only)
            for statement in (
                "DROP INDEX memories_by_embed_hash",  # 18
                "DROP TRIGGER memories_fts_scoped_insert",
                "DROP TRIGGER memories_fts_scoped_delete",
                "DROP TRIGGER memories_fts_scoped_update",
                "DROP TABLE memories_fts_scoped",
                "DROP TABLE memories_fts_parts",
                # 32: the whole-palace keyword index back, as migration 1 made it
                "DROP TABLE memories_fts_positions",
                *SQLiteDialect().text_index_schema(),
                "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')",
            ):
                old._exec(cur, statement)  # type: ignore[attr-defined]
        old._exec(cur, "DELETE FROM schema_migrations WHERE version >= 5")  # type: ignore[attr-defined]
        columns = "id, agent_id, content, content_hash, type, store, category, source, visibility"
        for memory_id, category in (("mem_turn", "conversation"), ("mem_fact", "fact")):
            old._exec(  # type: ignore[attr-defined]
                cur,
                f"INSERT INTO memories ({columns}, created_at, updated_at, strength, confidence)"
                " VALUES (?, 'default', ?, ?, 'unknown', 'semantic', ?, 'manual', 'isolated',"
                " 0, 0, 0.5, 1.0)",
                (memory_id, f"text of {memory_id}", memory_id, category),
            )
    assert old.schema_version() == 4
    old.close()
    new = open_store(store_target)
    try:
        assert new.schema_version() == migrations.latest_version()
        seen = {
            m.id: (m.kind, m.project, m.completed) for m in new.iter_memories(Scope.management())
        }
    finally:
        new.close()
    assert seen == {
        "mem_turn": (MemoryKind.MESSAGE, None, None),
        "mem_fact": (MemoryKind.MEMORY, None, None),
    }


# -- the server tool -------------------------------------------------------------------------


def test_memory_store_tool_takes_kind_and_refuses_a_bad_one(palace: Palace) -> None:
    stored = tools.memory_store(
        palace, content="Door hinge squeaks", kind="issue", project="House", completed=True
    )
    assert (stored["memory"]["kind"], stored["memory"]["completed"]) == ("issue", True)
    with pytest.raises(ValidationError, match="valid options: memory, journal"):
        tools.memory_store(palace, content="x", kind="chore")
    found = tools.personal_search(palace, query="issues in project house")
    assert found["narrowed_by"] == ["in project house", "issues"]
    assert found["results"][0]["line"].startswith("From project House, issue #1 (completed, ")


# -- the command line ------------------------------------------------------------------------


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_writes_kinds_and_searches_with_attribution(
    store_target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "none")
    db = ["--db", store_target]
    code, out, _ = run(
        [*db, "remember", "Hiked to the ridge", "--kind", "journal", "--date", "2026-01-15"],
        capsys,
    )
    assert code == 0 and json.loads(out)["kind"] == "journal"
    for text, extra in (
        ("Hiking app crashes", ["--completed"]),
        ("Hiking map is blurry", []),
    ):
        code, out, _ = run(
            [*db, "remember", text, "--kind", "issue", "--project", "Trails", *extra], capsys
        )
        assert code == 0, out
    issue = json.loads(out)
    assert (issue["project"], issue["completed"], issue["metadata"]) == (
        "Trails",
        False,
        {"issue_number": 2},
    )
    code, out, _ = run([*db, "personal-search", "hiking", "--plain"], capsys)
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith("Using text search (semantic search is not available).")
    assert "From your journal on 15 Jan 2026: Hiked to the ridge" in lines
    assert any(line.startswith("From project Trails, issue #1 (completed, ") for line in lines)
    code, out, _ = run([*db, "personal-search", "open issues in project trails", "--plain"], capsys)
    notice, narrowed, only, labels = out.splitlines()
    assert re.match(r"^    relevance \d\.\d\d · confidence 1\.00 \(high\) · mem_\w{26}$", labels)
    assert notice == "No words to search for: the newest entries are listed."
    assert narrowed == "Searched only: issue, project Trails, open (from the query)."
    assert only.startswith("From project Trails, issue #2 (open, ")
    assert only.endswith("): Hiking map is blurry")
    code, out, _ = run([*db, "personal-search", "hiking", "--kind", "journal"], capsys)
    result = json.loads(out)
    assert (result["kinds"], result["narrowed_by"], result["count"]) == (["journal"], [], 1)
    code, out, _ = run([*db, "list", "--kind", "issue", "--project", "Trails"], capsys)
    assert [m["content"] for m in json.loads(out)] == ["Hiking map is blurry", "Hiking app crashes"]
    code, out, _ = run([*db, "personal-search", "zebra crossings", "--plain"], capsys)
    assert code == 0 and "Nothing found for 'zebra crossings' in any of your data." in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remember", "x", "--kind", "diary"], "invalid --kind 'diary'; valid options: memory"),
        (["remember", "x", "--completed"], "completed belongs to kind 'issue'"),
        (["personal-search", "x", "--kind", "jornal"], "valid options: memory, journal, node"),
        (["personal-search", "x", "--limit", "0"], "limit"),
        (["recall", "x", "--kind", "todo"], "invalid --kind 'todo'"),
    ],
)
def test_cli_bad_kind_exits_2_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "none")
    db = tmp_path / "palace.db"
    code, _, err = run(["--db", str(db), *args], capsys)
    assert code == 2 and message in err
    if args[0] == "remember" and "--kind" in args:
        assert not db.exists()  # refused before the palace was opened
    else:
        with Palace(db, settings=Settings(embedder="none")) as palace:
            assert palace.stats().memories == 0


# -- completing issues -----------------------------------------------------------------------


def test_an_issue_is_completed_and_reopened(semantic: Palace) -> None:
    (slow,) = semantic.search("open issues about search")
    done = semantic.personal.complete_issue(slow.memory.id)
    assert done.completed is True and done.id == slow.memory.id
    assert "Search is slow" not in " ".join(semantic.search("my open issues").lines)
    closed = semantic.search("completed issues in project MindPalace").lines
    assert any(line.startswith("From project MindPalace, issue #1 (completed, ") for line in closed)
    assert semantic.personal.complete_issue(slow.memory.id, completed=False).completed is False


def test_only_an_owners_issue_is_completed(make_palace: Callable[..., Palace]) -> None:
    ann = make_palace("ann", settings=Settings(agent_id="ann", embedder="none"))
    bob = make_palace("bob", settings=Settings(agent_id="bob", embedder="none"))
    shared = ann.personal.add_issue("Shared bug", project="P", visibility="shared")
    private = ann.personal.add_issue("Private bug", project="P")
    entry = ann.personal.journal("A day")
    with pytest.raises(PermissionDenied):
        bob.personal.complete_issue(shared.id)
    with pytest.raises(NotFoundError):
        bob.personal.complete_issue(private.id)
    with pytest.raises(ValidationError, match="is a journal, not an issue"):
        ann.personal.complete_issue(entry.id)
    with pytest.raises(ValidationError, match="valid options: true, false"):
        ann.personal.complete_issue(shared.id, completed="yes")  # type: ignore[arg-type]
    assert ann.get(shared.id).completed is False  # nothing changed


def test_cli_complete(
    store_target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "none")
    db = ["--db", store_target]
    _, out, _ = run(
        [*db, "remember", "Gate sticks", "--kind", "issue", "--project", "Yard"], capsys
    )
    issue = json.loads(out)["id"]
    code, out, _ = run([*db, "complete", issue], capsys)
    assert code == 0 and json.loads(out)["completed"] is True
    code, out, _ = run([*db, "complete", issue, "--reopen"], capsys)
    assert code == 0 and json.loads(out)["completed"] is False
    _, out, _ = run([*db, "remember", "Nice day", "--kind", "journal"], capsys)
    code, _, err = run([*db, "complete", json.loads(out)["id"]], capsys)
    assert code == 2 and "not an issue" in err
