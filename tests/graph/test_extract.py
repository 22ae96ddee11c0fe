"""Entity mentions found without an LLM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.graph import extract
from mindpalace.graph.extract import (
    MAX_MENTIONS,
    RuleExtractor,
    aliases_of,
    extract_mentions,
    normalise_name,
)
from mindpalace.models import MemoryType


def _found(text: str) -> dict[str, tuple[str, MemoryType]]:
    return {m.norm: (m.kind, m.type) for m in extract_mentions([text])}


def test_people_organisations_projects_and_dates() -> None:
    found = _found("Alice from Acme met Bob about Project Falcon on Tuesday")
    assert found == {
        "alice": ("name", MemoryType.PERSON),
        "acme": ("name", MemoryType.UNKNOWN),
        "bob": ("name", MemoryType.PERSON),
        "project falcon": ("name", MemoryType.PROJECT),
        "tuesday": ("date", MemoryType.UNKNOWN),
    }


@pytest.mark.parametrize(
    ("text", "norm", "kind", "type_"),
    [
        ("ping @bob_smith about it", "bob_smith", "handle", MemoryType.PERSON),
        ("tagged #storage today", "storage", "hashtag", MemoryType.CONCEPT),
        (
            "see https://example.org/a/b for details",
            "https://example.org/a/b",
            "url",
            MemoryType.SYSTEM,
        ),
        (
            "edit src/mindpalace/palace.py first",
            "src/mindpalace/palace.py",
            "path",
            MemoryType.UNKNOWN,
        ),
        ("call remember_many for bulk", "remember_many", "code", MemoryType.TOOL),
        ("run `make release` to ship", "make release", "code", MemoryType.TOOL),
        ("fixed in JIRA-1234 yesterday", "jira-1234", "ticket", MemoryType.TASK),
        ("we met on 2023-05-18 again", "2023-05-18", "date", MemoryType.UNKNOWN),
        ("it was 18 May 2023 then", "18 may 2023", "date", MemoryType.UNKNOWN),
        (
            'we read "The Left Hand of Darkness" together',
            "the left hand of darkness",
            "title",
            MemoryType.CONCEPT,
        ),
        ("the Billing service is slow", "billing", "name", MemoryType.SYSTEM),
    ],
)
def test_kinds(text: str, norm: str, kind: str, type_: MemoryType) -> None:
    found = _found(text)
    assert found.get(norm) == (kind, type_), found


def test_sentence_openers_are_not_names() -> None:
    assert _found("The meeting went well. We shipped it. Thanks for the help!") == {}


def test_speaker_prefix_is_a_person() -> None:
    assert _found("Caroline: I went to the support group")["caroline"] == (
        "name",
        MemoryType.PERSON,
    )


def test_normalisation_and_aliases() -> None:
    assert normalise_name("  Alice\u2019s ") == "alice"
    assert normalise_name("ACME  Corp.") == "acme corp"
    assert aliases_of("project falcon", "name") == ("falcon",)
    assert aliases_of("acme corp", "name") == ("acme",)
    assert aliases_of("alice chen", "name", MemoryType.PERSON) == ("alice",)
    assert aliases_of("main street", "name") == ()


def test_each_entity_once_in_order() -> None:
    mentions = RuleExtractor().extract("Bob met Alice. Later Bob met Alice again.")
    assert [m.norm for m in mentions] == ["bob", "alice"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_safe(text: str) -> None:
    mentions = extract_mentions([text, text[::-1]])
    assert len(mentions) <= MAX_MENTIONS
    assert len({m.norm for m in mentions}) == len(mentions)
    assert all(m.norm and m.norm == m.norm.strip() for m in mentions)


def _has_month(text: str) -> bool:
    return any(month in text for month in extract._MONTH_NAMES)


def _may_be_code(text: str) -> bool:
    return "_" in text or "()" in text or bool(extract._LOWER_UPPER.search(text))


# What the extractor checks before it runs each pattern over a text.
GATES = [
    (extract._URL, lambda t: "://" in t),
    (extract._HANDLE, lambda t: "@" in t),
    (extract._HASHTAG, lambda t: "#" in t),
    (extract._TICKET, lambda t: "-" in t),
    (extract._BACKTICK, lambda t: "`" in t),
    (extract._PATH, lambda t: "/" in t),
    (extract._ISO_DATE, lambda t: "-" in t),
    (extract._WORDY_DATE, _has_month),
    (extract._CODE, _may_be_code),
]


@pytest.mark.parametrize(("pattern", "gate"), GATES, ids=lambda v: getattr(v, "pattern", "")[:20])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_pattern_runs_on_every_text_it_can_match(pattern, gate, data) -> None:  # type: ignore[no-untyped-def]
    # Any text the pattern finds something in passes the check that lets
    # the pattern run: skipping the others finds the same mentions.
    text = data.draw(st.from_regex(pattern))
    assert gate(text)
