"""Any user text is a valid query: never an FTS syntax error."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.retrieval.sparse import MAX_TERMS, query_terms

NASTY = [
    '"',
    '"unbalanced quote',
    "a*",
    "*",
    "-x",
    "NOT",
    "a AND b OR c NOT d",
    "NEAR(a b, 2)",
    "col:value",
    "^start",
    "(((",
    ")",
    "{a b}",
    "title:secret",
    "'; DROP TABLE memories; --",
    "🔥🚀",
    "naïve café",
    "日本語のテキスト",
    "\x00\x01",
    "a" * 10_000,
    "word " * 2_000,
    "+",
    "tab\tnew\nline",
    "",
    "   ",
    "\u200b\u202e",
]


@pytest.fixture
def filled(palace: Palace) -> Palace:
    palace.remember("NEAR the AND gate, the NOT operator was tested with col:value syntax")
    palace.remember("Café naïve 日本語のテキスト 🔥 emoji memory")
    palace.remember("Plain memory about kafka topics")
    return palace


@pytest.mark.parametrize("query", NASTY)
def test_nasty_queries_do_not_raise(filled: Palace, query: str) -> None:
    hits = filled.recall(query, limit=20)
    assert isinstance(hits, list)


def test_operators_are_searched_as_words(filled: Palace) -> None:
    hits = filled.recall("NEAR AND NOT")
    assert len(hits) == 1 and "NEAR the AND gate" in hits[0].memory.content


def test_unicode_words_match(filled: Palace) -> None:
    assert len(filled.recall("cafe")) == 1  # diacritics folded
    assert len(filled.recall("日本語のテキスト")) == 1


def test_five_hundred_random_punctuation_and_unicode_strings(filled: Palace) -> None:
    rng = random.Random(20261122)
    alphabet = (
        "\"'*-:^()[]{}+~!@#$%&|\\/<>?,.;=_`" + "NEARORANDNOT" + " \t\n" + "éß漢字🔥\u200b\u202e"
    )
    for _ in range(500):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        filled.recall(query, limit=5)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_any_text_is_a_valid_query(filled: Palace, query: str) -> None:
    filled.recall(query)


@given(st.text(max_size=500))
def test_query_terms_are_plain_words(text: str) -> None:
    terms = query_terms(text)
    assert len(terms) <= MAX_TERMS
    assert len(set(terms)) == len(terms)
    for term in terms:
        assert term and '"' not in term and " " not in term


def test_stopwords_dropped_unless_all() -> None:
    assert query_terms("Why did we choose SQLite?") == ["choose", "sqlite"]
    assert query_terms("who are you") == ["who", "are", "you"]
