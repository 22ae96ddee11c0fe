"""The kind of value a question asks for, and whether a text states one.

Answer support (``answered.py``) judges a question by how much of it its best
hits say. A question about something the palace holds, asking for a detail
it never stored, passes that test: "how much are we paying Kestrel Security
for the pen test?" finds "the penetration test by Kestrel Security is booked
for 7 to 11 December" (most of its words, a close cosine), which says when
and with whom, not what it costs. Some answers have a shape a text either
has or lacks, whatever its wording: a question asking what something costs
is answered by an amount of money. When none of the best hits states one,
the palace does not hold the answer.

Only the price is read here. Other shapes were measured and left out
(``docs/benchmarks/10-everyday-and-models.md``): a count or a clock time
appears in nearly every hit (conversation turns carry their date and time
in the title), so their absence never told anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["AMOUNT", "asks_amount", "missing_kind", "states_amount"]

#: how the rule names the kind of answer a price question asks for
AMOUNT = "an amount of money"

_MONEY_WORDS = (
    r"cost|costs|costing|price|prices|priced|pay|paid|paying|pays|charge|charges|charged|spend|"
    r"spending|spent|rent|fee|fees|fare|fares|salary|wage|wages|budget|money|earn|earns|earned|"
    r"owe|owed|owes"
)
# "how much ... pay", "what does it cost", "what is the rent", "how expensive"
_ASKS = re.compile(
    rf"\bhow much\b[^?.!;]*\b(?:{_MONEY_WORDS})\b"
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


def _counted(word: str) -> bool:
    """Whether ``word`` (lower-cased, next to a currency word) is a number."""
    return word.rsplit("-", 1)[-1] in _NUMBER_WORDS or _NUMERIC.search(word) is not None


def asks_amount(question: str) -> bool:
    """Whether ``question`` asks what something costs (or was paid, charged,
    spent)."""
    return _ASKS.search(question) is not None


def states_amount(text: str) -> bool:
    """Whether ``text`` states an amount of money ("£15", "$1,200", "20
    euros", "USD 300", "50p", "free")."""
    if _SYMBOL.search(text):
        return True
    lowered = text.lower()
    for unit in _UNIT.finditer(lowered):
        before = lowered[: unit.start()].rstrip(" -").rsplit(maxsplit=1)[-1:]
        after = lowered[unit.end() :].split(maxsplit=1)[:1]
        if any(_counted(w) for w in before) or any(_NUMERIC.search(w) for w in after):
            return True
    return _SHORT.search(lowered) is not None or _FREE.search(lowered) is not None


def missing_kind(question: str, texts: Sequence[str]) -> str | None:
    """The kind of answer ``question`` asks for that none of ``texts``
    states (``AMOUNT``), or None (it asks for no such kind, or one states it)."""
    if texts and asks_amount(question) and not any(states_amount(t) for t in texts):
        return AMOUNT
    return None
