"""Words as the keyword index sees them: FTS5's ``porter unicode61
remove_diacritics 2`` tokenizer, reproduced in Python.

The warm keyword index (``keyword.py``) scores documents in memory with the
same BM25 as SQLite's FTS5, so it must cut and stem text exactly as FTS5
does; a differential test runs both over large vocabularies.

- unicode61: a token is a run of letters and numbers (Unicode categories
  L* and N*); everything else separates. Tokens are lower-cased and, with
  ``remove_diacritics 2``, stripped of diacritics ("Café" -> "cafe").
- porter: M. F. Porter, "An algorithm for suffix stripping", Program 14(3),
  1980, in the variant of Porter's own reference C implementation (which
  SQLite follows): step 2 maps "bli" -> "ble" and "logi" -> "log". Like
  SQLite, it works on the token's UTF-8 bytes, treats every byte that is
  not an ASCII vowel as a consonant, and leaves tokens shorter than 3 or
  longer than 64 bytes as they are.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from functools import lru_cache

__all__ = ["porter", "stem", "terms", "tokens"]

# unicode61 treats every ASCII character that is not a letter or digit as a
# separator, so text splits there first; a chunk of ASCII letters and digits
# is one token, lower-cased. A chunk with other characters goes to FTS5's own
# unicode61 (categories, case folding and diacritics tables of its Unicode
# version, which Python's ``unicodedata`` does not match), once per chunk.
_ASCII_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")
_MAX_TOKEN = 64
_VOWELS = frozenset(b"aeiou")


class _Unicode61:
    """FTS5's ``unicode61 remove_diacritics 2`` tokenizer, run by SQLite in
    a private in-memory database (one per process, behind a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute(
            "CREATE VIRTUAL TABLE chunks USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')"
        )
        db.execute("CREATE VIRTUAL TABLE chunk_terms USING fts5vocab(chunks, 'instance')")
        return db

    def split(self, chunk: str) -> list[str]:
        with self._lock:
            if self._db is None:
                self._db = self._connect()
            db = self._db
            db.execute("INSERT INTO chunks (rowid, x) VALUES (1, ?)", (chunk,))
            try:
                rows = db.execute(
                    "SELECT term FROM chunk_terms WHERE doc = 1 ORDER BY offset"
                ).fetchall()
            finally:
                db.execute("DELETE FROM chunks")
        return [str(row[0]) for row in rows]


_UNICODE61 = _Unicode61()


@lru_cache(maxsize=1 << 14)
def _chunk_tokens(chunk: str) -> tuple[str, ...]:
    return tuple(_UNICODE61.split(chunk))


_ASCII_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """The folded tokens of ``text``, unstemmed, in order."""
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    out: list[str] = []
    for chunk in _ASCII_SEPARATORS.split(text):
        if not chunk:
            continue
        if chunk.isascii():
            out.append(chunk.lower())
        else:
            out.extend(_chunk_tokens(chunk))
    return out


def terms(text: str) -> list[str]:
    """The index terms of ``text`` (folded, stemmed), in order."""
    return [stem(t) for t in tokens(text)]


@lru_cache(maxsize=1 << 17)
def stem(token: str) -> str:
    """The Porter stem of one folded token (cached)."""
    return porter(token)


# -- Porter ------------------------------------------------------------------------


def _ends(word: bytes, suffix: bytes) -> bool:
    """``word`` ends with ``suffix`` and has something before it (as in SQLite)."""
    return len(word) > len(suffix) and word.endswith(suffix)


def _consonant(word: bytes, i: int) -> bool:
    c = word[i]
    if c in _VOWELS:
        return False
    if c == ord("y"):
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: bytes) -> int:
    """m in [C](VC){m}[V]."""
    m = 0
    i = 0
    n = len(stem)
    while i < n and _consonant(stem, i):
        i += 1
    while i < n:
        while i < n and not _consonant(stem, i):
            i += 1
        if i >= n:
            break
        while i < n and _consonant(stem, i):
            i += 1
        m += 1
    return m


def _has_vowel(stem: bytes) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: bytes) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: bytes) -> bool:
    """*o: ends consonant-vowel-consonant, the last not w, x or y."""
    n = len(word)
    return (
        n >= 3
        and _consonant(word, n - 1)
        and not _consonant(word, n - 2)
        and _consonant(word, n - 3)
        and word[-1] not in b"wxy"
    )


def _replace(word: bytes, rules: tuple[tuple[bytes, bytes], ...], min_m: int) -> bytes:
    """The first rule whose suffix ends ``word`` decides: applied when the
    stem's measure exceeds ``min_m - 1``, else the word is left alone."""
    for suffix, repl in rules:
        if _ends(word, suffix):
            stem = word[: len(word) - len(suffix)]
            return stem + repl if _measure(stem) >= min_m else word
    return word


_STEP2 = (
    (b"ational", b"ate"),
    (b"tional", b"tion"),
    (b"enci", b"ence"),
    (b"anci", b"ance"),
    (b"izer", b"ize"),
    (b"bli", b"ble"),
    (b"alli", b"al"),
    (b"entli", b"ent"),
    (b"eli", b"e"),
    (b"ousli", b"ous"),
    (b"ization", b"ize"),
    (b"ation", b"ate"),
    (b"ator", b"ate"),
    (b"alism", b"al"),
    (b"iveness", b"ive"),
    (b"fulness", b"ful"),
    (b"ousness", b"ous"),
    (b"aliti", b"al"),
    (b"iviti", b"ive"),
    (b"biliti", b"ble"),
    (b"logi", b"log"),
)
_STEP3 = (
    (b"icate", b"ic"),
    (b"ative", b""),
    (b"alize", b"al"),
    (b"iciti", b"ic"),
    (b"ical", b"ic"),
    (b"ful", b""),
    (b"ness", b""),
)
_STEP4 = (
    b"al",
    b"ance",
    b"ence",
    b"er",
    b"ic",
    b"able",
    b"ible",
    b"ant",
    b"ement",
    b"ment",
    b"ent",
    b"ion",
    b"ou",
    b"ism",
    b"ate",
    b"iti",
    b"ous",
    b"ive",
    b"ize",
)


def _longest(word: bytes, suffixes: tuple[bytes, ...]) -> bytes | None:
    if not word.endswith(suffixes):  # one C call rules most words out
        return None
    best = None
    for suffix in suffixes:
        if _ends(word, suffix) and (best is None or len(suffix) > len(best)):
            best = suffix
    return best


def _step2(word: bytes) -> bytes:
    # The longest matching suffix decides (e.g. "ational" over "tional").
    match = _longest(word, tuple(s for s, _ in _STEP2))
    if match is None:
        return word
    return _replace(word, ((match, dict(_STEP2)[match]),), 1)


def _step3(word: bytes) -> bytes:
    match = _longest(word, tuple(s for s, _ in _STEP3))
    if match is None:
        return word
    return _replace(word, ((match, dict(_STEP3)[match]),), 1)


def _step4(word: bytes) -> bytes:
    match = _longest(word, _STEP4)
    if match is None:
        return word
    stem = word[: len(word) - len(match)]
    if _measure(stem) <= 1:
        return word
    if match == b"ion" and not stem.endswith((b"s", b"t")):
        return word
    return stem


def _stem_bytes(w: bytes) -> bytes:
    # Step 1a
    if _ends(w, b"sses") or _ends(w, b"ies"):
        w = w[:-2]
    elif _ends(w, b"ss"):
        pass
    elif _ends(w, b"s"):
        w = w[:-1]
    # Step 1b
    if _ends(w, b"eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        cut = None
        if _ends(w, b"ed") and _has_vowel(w[:-2]):
            cut = w[:-2]
        elif _ends(w, b"ing") and _has_vowel(w[:-3]):
            cut = w[:-3]
        if cut is not None:
            w = cut
            if _ends(w, b"at") or _ends(w, b"bl") or _ends(w, b"iz"):
                w += b"e"
            elif _double_consonant(w) and w[-1] not in b"lsz":
                w = w[:-1]
            elif _measure(w) == 1 and _cvc(w):
                w += b"e"
    # Step 1c
    if _ends(w, b"y") and _has_vowel(w[:-1]):
        w = w[:-1] + b"i"
    w = _step2(w)
    w = _step3(w)
    w = _step4(w)
    # Step 5a
    if _ends(w, b"e"):
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    # Step 5b
    if _measure(w) > 1 and _double_consonant(w) and _ends(w, b"l"):
        w = w[:-1]
    return w


def porter(token: str) -> str:
    """The Porter stem of one folded token, as FTS5's porter tokenizer gives it."""
    raw = token.encode("utf-8")
    if len(raw) < 3 or len(raw) > _MAX_TOKEN:
        return token
    return _stem_bytes(raw).decode("utf-8", errors="replace")
