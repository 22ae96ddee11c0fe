"""Sparse (keyword) retrieval: turning any user text into safe search terms.

The backend scores with BM25 (Robertson & Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009); this module decides which words
are searched, and which words of a query name something (for the relevance gate).
"""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "STOPWORDS", "gate_terms", "query_terms", "salient_terms"]

MAX_TERMS = 64

# Function words that carry no topic. Kept short on purpose: words such as
# "why", "who" or "not" are stopwords here because BM25 over chat memories
# gains nothing from them; the dense stage handles question intent.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve y
    """.split()
)

_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text`` in order, stopwords dropped.

    When every word is a stopword they are kept, so "who are you" still
    searches. Punctuation, operators and symbols never reach the search
    engine; at most ``MAX_TERMS`` words are kept.
    """
    # Lower-cased only: FTS5's unicode61 tokenizer folds case (and, here,
    # diacritics) but not NFKC forms or "ß", so neither may the query.
    words = list(dict.fromkeys(_WORD.findall(text.lower())))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# In ASCII text, the tokens that open with a capital: a long text has few,
# and skipping the others makes its names cost a tenth.
_ASCII_CAPITALISED = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Za-z0-9]*")
_SENTENCE_END = frozenset(".?!:;\"'(")


def salient_terms(text: str) -> list[str]:
    """The words of ``text`` that name something: capitalised words that do
    not merely start a sentence, and acronyms. Lower-cased, in order.

    A query naming things the palace has never heard of is about something
    never stored; the relevance gate uses these to say so.
    """
    found: dict[str, None] = {}
    tokens = _ASCII_CAPITALISED if text.isascii() else _TOKEN
    for match in tokens.finditer(text):
        word = match.group()
        if not word[0].isupper():
            continue  # neither a name nor an acronym
        acronym = len(word) >= 2 and word.isupper() and word.isalpha()
        folded = word.lower()
        if folded in STOPWORDS or (not acronym and _opens_sentence(text, match.start())):
            continue
        found.setdefault(folded, None)
    return list(found)


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens the text or a sentence: what
    precedes it, spaces aside, is nothing or a sentence's end. Read back
    from the word (copying the text before every word made a long text's
    names cost its length squared)."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


# Words after which a name is a place someone goes to or is at: "a hotel for
# my trip to Miami", "restaurants near Shibuya".
_PLACE_WORDS = frozenset({"to", "in", "at", "near", "around", "visiting"})

# Words after which a capitalised word names a kind or a role, not someone:
# "a Muslim family", "my TA", "our CFO" ("her" is also the object of a verb:
# "did you tell her Bob called" names Bob).
_DETERMINERS = frozenset({"a", "an", "my", "our", "your", "his", "their", "its"})

# Names of days and months say when, which the time stage reads from the
# memories' dates: "the concert last Saturday" names nothing a memory must
# mention. Short forms are left out: "Jan" is also someone, "SAT" a test.
_CALENDAR = frozenset(
    """
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october
    november december
    """.split()
)


def gate_terms(text: str) -> list[str]:
    """``salient_terms`` less the names that only say where or when, or
    that are not names: a place the user is going to may be new while what
    they ask about (their taste in hotels) is stored, a day or month is a
    date, and a capitalised word after an article or a possessive ("a
    Muslim family", "my TA", "our CFO") is a kind of thing or a role, which
    the palace may hold in other words ("the teaching assistant"). A name
    also used elsewhere in the text without such a word stays."""
    names = [n for n in salient_terms(text) if n not in _CALENDAR]
    if not names:
        return names
    placed: dict[str, bool] = {}  # name -> whether every use follows a place word or a determiner
    words = [m.group().lower() for m in _TOKEN.finditer(text)]
    for before, word in zip(["", *words], words, strict=False):
        if word in names:
            placed[word] = placed.get(word, True) and (
                before in _PLACE_WORDS or before in _DETERMINERS
            )
    return [n for n in names if not placed.get(n, False)]
