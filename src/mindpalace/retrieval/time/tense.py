"""Which way a weekday named without a date points, from the tense of the
words around it: "the party is on Saturday" (the coming Saturday) or "on
Saturday we went hiking" (the last one).

Pure functions, no I/O. Only the clause holding the weekday is read (cut
at ``. ! ? ;`` and line breaks). Its tense cues are words: a past cue is
a past-tense verb ("went", "had", "won", "finished"; not a participle
after a present "to be", as in "I'm excited"), "yesterday", "ago" or
"last"; a future cue is "will" ("'ll", "won't"), "shall", "gonna", "to be"
in the present right before the weekday ("is on Saturday") or shortly
before a verb in -ing ("we're meeting", "is Andrew going"), "tomorrow", "next",
"upcoming", or a word of intent ("plan", "hope", "can't wait", "let's",
"need to"...). The cue nearest the weekday decides; without one the
caller's default does.
"""

from __future__ import annotations

import re

__all__ = ["BACKWARD", "FORWARD", "direction"]

FORWARD = 1
BACKWARD = -1

_CLAUSE_END = re.compile(r"[.!?;\n]")
_WORD = re.compile(r"[a-z]+(?:['\u2019][a-z]+)?")
_PRESENT_BE = frozenset({"am", "is", "are", "'m", "'re", "'s"})
_SPLIT = frozenset({"ll", "m", "re", "s", "d", "ve"})  # contractions read as words
_PAST = frozenset(
    """
    was were wasn't weren't did didn't had hadn't went got came saw met took made said
    told gave left felt found kept knew thought brought bought caught taught fought sought
    ran won lost sat stood spent sent built lent bent meant heard held paid laid read led
    fed fled sped wore tore bore swore drove rode wrote spoke broke chose froze woke stole
    began sang rang sank drank swam ate fell forgot hid bit slept wept crept swept dealt
    dreamt learnt burnt threw grew flew drew knew blew shook understood became overcame
    yesterday ago last earlier
    """.split()
)
_FUTURE = frozenset(
    """
    will shall gonna won't tomorrow next upcoming coming soon plan plans planning hope
    hoping hopefully expect expecting want wants wanna intend intending let's should
    must need needs gotta due scheduled
    """.split()
)
# Words in -ed that are not past-tense verbs.
_NOT_PAST = frozenset(
    """
    speed breed bleed proceed succeed exceed indeed embed hundred sacred naked wicked
    beloved kindred
    """.split()
)


def direction(text: str, start: int, end: int, *, default: int) -> int:
    """``FORWARD`` or ``BACKWARD``: where the weekday at ``text[start:end]``
    points, by the tense cue nearest to it in its clause; ``default`` when
    the clause has none."""
    before = text[:start]
    cut = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
    after = text[end:]
    stop = _CLAUSE_END.search(after)
    left = _words(before[cut:])
    right = _words(after[: stop.start()] if stop else after)
    # "is on Saturday": a present "to be" right before the weekday's "on".
    if left and _is_present_be(left[-1]):
        return FORWARD
    cues = [(len(left) - i, cue) for i, cue in enumerate(_cues(left)) if cue]
    cues += [(i + 1, cue) for i, cue in enumerate(_cues(right)) if cue]
    if not cues:
        return default
    return min(cues, key=lambda item: item[0])[1]


def _words(text: str) -> list[str]:
    """Lower-case words, with "we'll" as "we" "'ll" (contractions split off)."""
    words: list[str] = []
    for word in _WORD.findall(text.lower().replace("\u2019", "'")):
        head, _, tail = word.partition("'")
        if tail in _SPLIT and word not in _FUTURE:
            words += [head, f"'{tail}"]
        else:
            words.append(word)  # "can't", "didn't", "let's" stay whole
    return words


def _is_present_be(word: str) -> bool:
    return word in _PRESENT_BE


def _cues(words: list[str]) -> list[int]:
    """Each word's cue: ``FORWARD``, ``BACKWARD`` or 0."""
    found = []
    for i, word in enumerate(words):
        previous = words[i - 1] if i else ""
        if word in _FUTURE or word == "'ll" or (word == "wait" and previous == "can't"):
            found.append(FORWARD)
        elif word.endswith("ing") and any(_is_present_be(w) for w in words[max(0, i - 3) : i]):
            # "we're meeting on Friday", "is Andrew going on Sunday": an arrangement
            found.append(FORWARD)
        elif word in _PAST or _regular_past(word, previous):
            found.append(BACKWARD)
        else:
            found.append(0)
    return found


def _regular_past(word: str, previous: str) -> bool:
    """A verb in -ed said of the past: not a word that merely ends so
    ("indeed"), nor an adjective after "to be" or "so" ("I'm excited")."""
    return (
        len(word) > 4
        and word.endswith("ed")
        and word not in _NOT_PAST
        and not _is_present_be(previous)
        and previous not in ("so", "very", "really", "too", "be", "get", "feel")
    )
