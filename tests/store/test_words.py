"""The keyword index cuts text exactly as SQLite's FTS5 does
(``porter unicode61 remove_diacritics 2``): differential tests against FTS5
itself, which ``fts5vocab`` lets us read token by token."""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.store import words

# Words exercising every step of Porter's algorithm, and the variant
# departures of the reference C implementation ("bli", "logi").
PORTER_WORDS = """
caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated
troubled sized hopping tanned falling hissing fizzed failing filing happy sky
relational conditional rational valenci hesitanci digitizer conformabli radicalli
differentli vileli analogousli vietnamization predication operator feudalism
decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate
formative formalize electriciti electrical hopeful goodness revival allowance
inference airliner gyroscopic adjustable defensible irritant replacement adjustment
dependent adoption homologou communism activate angulariti homologous effective
bowdlerize probate rate cease controll roll generalizations oscillators knightly
a an at is it by my go yes ye eyes y yy yyy days played playing flying skiing
running runner runs ran connection connected connecting connective connections
happiness relate relativity agreement measurement oed eed eing ing ings sses ies
abilities availability archaeology biology logically apology
""".split()
# Every suffix as a word of its own, and with one letter before it.
SUFFIXES = """
sses ies ss s eed ed ing at bl iz y ational tional enci anci izer bli alli entli eli
ousli ization ation ator alism iveness fulness ousness aliti iviti biliti logi icate
ative alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent ion
sion tion ou ism ate iti ous ive ize e ll
""".split()
PORTER_WORDS += SUFFIXES + [f"b{s}" for s in SUFFIXES] + [f"ab{s}" for s in SUFFIXES]


def _fts5_terms(texts: list[str]) -> list[list[str]]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    found: dict[int, list[tuple[int, str]]] = {}
    for term, doc, _col, offset in db.execute("SELECT term, doc, col, offset FROM v"):
        found.setdefault(int(doc), []).append((int(offset), str(term)))
    db.close()
    return [[t for _, t in sorted(found.get(i, []))] for i in range(1, len(texts) + 1)]


def test_porter_words_stem_as_fts5_does() -> None:
    assert [words.terms(w) for w in PORTER_WORDS] == _fts5_terms(PORTER_WORDS)


def test_known_stems() -> None:
    assert words.terms("Running connections, happily generalized!") == [
        "run",
        "connect",
        "happili",
        "gener",
    ]
    assert words.terms("snake_case e-mail Café") == ["snake", "case", "e", "mail", "cafe"]


@pytest.mark.parametrize("start", range(0x80, 0x3000, 0x400))
def test_letters_of_many_scripts_fold_as_fts5_does(start: int) -> None:
    letters = [
        chr(c) for c in range(start, start + 0x400) if unicodedata.category(chr(c))[0] in "LNMP"
    ]
    texts = letters + [f"ab{c}cd walking{c}" for c in letters]
    assert [words.terms(t) for t in texts] == _fts5_terms(texts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=20))
def test_any_text_cuts_as_fts5_does(texts: list[str]) -> None:
    texts = [t.replace("\x00", "") for t in texts]
    assert [words.terms(t) for t in texts] == _fts5_terms(texts)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14),
        min_size=1,
        max_size=30,
    )
)
def test_any_ascii_word_stems_as_fts5_does(ascii_words: list[str]) -> None:
    assert [words.terms(w) for w in ascii_words] == _fts5_terms(ascii_words)
