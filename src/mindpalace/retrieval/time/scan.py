"""The parts of a text that can hold a time expression, so that
``temporal``'s pattern (a long alternation tried at every word) reads only
those: ``time_matches`` finds what ``pattern.finditer(text)`` finds.

Two facts about ``temporal._PATTERN`` make this exact:

- a match holds only letters, digits, spaces and ``-.,``: it never spans
  one of ``_BREAKS``, and its edges (``\\b``, and the look-aheads for
  ``-``, ``/`` and ``:``, none of them a break) read a break as they read
  the end of the text. So the text is read a stretch between breaks at a
  time, with ``finditer``'s ``pos`` and ``endpos``;
- every match holds a digit or a time word (``_ANCHOR``: the units, the
  named days, months and seasons, "yesterday", "tonight"...), starting a
  word: a stretch without one holds no match, and is skipped.

A property test compares both readings on generated texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["time_matches"]

_BREAKS = "!?;()[]{}\"*<>|#@$%^&=+~`'"
_STRETCH = re.compile("[^" + re.escape(_BREAKS) + "]+")
# Prefixes suffice ("sat" finds "saturday"): a stretch is skipped only when
# it holds none.
_ANCHOR = re.compile(
    r"\d|\b(?:day|night|week|fortnight|month|year|yesterday|today|tonight|tomorrow"
    r"|morning|afternoon|evening|spring|summer|fall|autumn|winter"
    r"|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)


def time_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for ``temporal``'s pattern, reading only
    the stretches of ``text`` that can hold a match."""
    for stretch in _STRETCH.finditer(text):
        start, end = stretch.span()
        if _ANCHOR.search(text, start, end):
            yield from pattern.finditer(text, start, end)
