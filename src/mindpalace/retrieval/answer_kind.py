"""The kind of value a question asks for, and whether a text states one.

Answer support (``answered.py``) judges a question by how much of it its best
hits say. A question about something the palace holds, asking for a detail
it never stored, passes that test: "how much are we paying Kestrel Security
for the pen test?" finds "the penetration test by Kestrel Security is booked
for 7 to 11 December" (most of its words, a close cosine), which says when
and with whom, not what it costs. Some answers have a shape a text either
has or lacks, whatever its wording: a question asking what something costs
is answered by an amount of money. When the best hit states none, the
palace does not hold the answer.

Read here: a price (an amount of money), a phone number (a run of at
least seven digits, spaces, dots or dashes between them allowed) and an
email address. Other shapes were measured and left out
(``docs/benchmarks/10-everyday-and-models.md``): a count or a clock time
appears in nearly every hit (conversation turns carry their date and time
in the title), so their absence never told anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "AMOUNT",
    "EMAIL",
    "PHONE",
    "asks_amount",
    "asks_email",
    "asks_phone",
    "missing_kind",
    "states_amount",
    "states_email",
    "states_phone",
]

#: how the rule names the kind of answer a price question asks for
AMOUNT = "an amount of money"
#: ... a question asking for a phone number
PHONE = "a phone number"
#: ... a question asking for an email address
EMAIL = "an email address"

_MONEY_WORDS = (
    r"cost|costs|costing|price|prices|priced|pay|paid|paying|pays|charge|charges|charged|spend|"
    r"spending|spent|rent|fee|fees|fare|fares|salary|wage|wages|budget|money|earn|earns|earned|"
    r"owe|owed|owes|raise|raised|raising|deposit|bring in|brought in|put down"
)
# "how much ... pay", "how much is a ticket", "what does it cost", "what is
# the rent", "how expensive"
_ASKS = re.compile(
    rf"\bhow much\b[^?.!;]*\b(?:{_MONEY_WORDS})\b"
    r"|\bhow much(?:'s| is| are| was| were) (?:a|an|one|each)\b"
    r"|\bhow expensive\b"
    r"|\bwhat(?:'s| is| was| are| were| will| would| does| do| did)\b[^?.!;]*"
    r"\b(?:costs?|pay|paid|charge|charged|spend|spent)\b"
    r"|\bwhat(?:'s| is| was| are| were)(?: the| our| their| my| your)?\b[^?.!;]{0,40}"
    r"\b(?:price|prices|fee|fees|rent|fare|fares|salary)\b",
    re.IGNORECASE,
)
_SYMBOL = re.compile(r"[£$€¥₹]\s?\d")
_UNIT = re.compile(
    r"\b(?:pounds?|dollars?|euros?|quid|bucks|cents?|pence|grand|usd|gbp|eur|chf|jpy|cad|aud)\b"
)
_NUMBER_WORDS = frozenset(
    """a an one two three four five six seven eight nine ten eleven twelve fifteen twenty
    thirty forty fifty sixty seventy eighty ninety hundred thousand million few""".split()
)
_NUMERIC = re.compile(r"\d[\d,.]*$|^\d")
_SHORT = re.compile(r"\d\s?[pk]\b(?!\.)")
_FREE = re.compile(r"\bfree\b|\bno charge\b|\bat no cost\b")
# a share of a price ("a 50 percent deposit", "10% off")
_PERCENT = re.compile(r"\d\s?(?:%|per ?cent\b)")


def _counted(word: str) -> bool:
    """Whether ``word`` (lower-cased, next to a currency word) is a number."""
    return word.rsplit("-", 1)[-1] in _NUMBER_WORDS or _NUMERIC.search(word) is not None


def asks_amount(question: str) -> bool:
    """Whether ``question`` asks what something costs (or was paid, charged,
    spent)."""
    return _ASKS.search(question) is not None


def states_amount(text: str) -> bool:
    """Whether ``text`` states an amount of money ("£15", "$1,200", "20
    euros", "USD 300", "50p", "free"), or a share of one ("a 50 percent
    deposit")."""
    if _SYMBOL.search(text):
        return True
    lowered = text.lower()
    for unit in _UNIT.finditer(lowered):
        before = lowered[: unit.start()].rstrip(" -").rsplit(maxsplit=1)[-1:]
        after = lowered[unit.end() :].split(maxsplit=1)[:1]
        if any(_counted(w) for w in before) or any(_NUMERIC.search(w) for w in after):
            return True
    return any(p.search(lowered) is not None for p in (_SHORT, _FREE, _PERCENT))


# "what's the phone number of", "which number do I call", "how do I phone"
_ASKS_PHONE = re.compile(
    r"\b(?:phone|telephone|mobile|cell|contact|landline|fax)(?: numbers?| no\b)"
    r"|\b(?:what|which) number (?:do|should|can|shall) (?:i|we|you|they)"
    r" (?:call|ring|phone|text)\b",
    re.IGNORECASE,
)
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d(?:[\s().-]?\d){6,}(?!\w|\.\d)")
# dates and clock times, which are runs of digits too ("2023-05-08 13:56")
_DATE = re.compile(
    r"\d{4}[./-]\d{1,2}[./-]\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\b\d{1,2}[:.]\d{2}\b"
)
_ASKS_EMAIL = re.compile(r"\be-?mail address(?:es)?\b", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def asks_phone(question: str) -> bool:
    """Whether ``question`` asks for a phone number."""
    return _ASKS_PHONE.search(question) is not None


def states_phone(text: str) -> bool:
    """Whether ``text`` states a phone number: at least seven digits in a
    row, single spaces, dots, dashes or brackets between them allowed
    ("07700 900412", "+44 (0)20 7946 0018"), not a date or a sum."""
    plain = _DATE.sub(" ", text)
    return any(
        len(re.sub(r"\D", "", m.group())) >= 7
        and not _SYMBOL.search(plain[max(0, m.start() - 2) : m.end()])
        for m in _PHONE.finditer(plain)
    )


def asks_email(question: str) -> bool:
    """Whether ``question`` asks for an email address."""
    return _ASKS_EMAIL.search(question) is not None


def states_email(text: str) -> bool:
    """Whether ``text`` states an email address."""
    return "@" in text and _EMAIL.search(text) is not None


def missing_kind(question: str, texts: Sequence[str]) -> str | None:
    """The kind of answer ``question`` asks for that none of ``texts``
    states (``AMOUNT``, ``PHONE``, ``EMAIL``), or None (it asks for no such
    kind, or one states it)."""
    if not texts:
        return None
    for kind, asks, states in (
        (AMOUNT, asks_amount, states_amount),
        (PHONE, asks_phone, states_phone),
        (EMAIL, asks_email, states_email),
    ):
        if asks(question) and not any(states(t) for t in texts):
            return kind
    return None
