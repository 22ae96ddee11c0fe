"""Text too long for one memory, cut into parts a reader can put back together.

Pure functions, no I/O. ``split_text`` cuts at the last paragraph break
that leaves a part at least half the limit long, else at the last sentence
end, else line break, else space; only a run of text with no space at all
is cut mid-word. Each part comes with the whitespace the cut removed, so
``join_parts`` gives the text back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mindpalace.errors import ValidationError

__all__ = ["MAX_PARTS", "Part", "join_parts", "parts_within", "split_text"]

#: A text needing more parts than this is refused, not stored: no turn or
#: note people write is a hundred times the content limit (5 MB by default).
MAX_PARTS = 100

# The end of a sentence: its mark, any closing quotes or brackets, then space.
_SENTENCE_END = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019]*(?=\s)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a cut text: its text (no surrounding whitespace) and the
    whitespace that followed it in the original (empty for the last part, or
    where a word was cut)."""

    text: str
    gap: str = ""


def split_text(text: str, limit: int) -> list[Part]:
    """``text`` (stripped) in parts of at most ``limit`` characters.

    Raises:
        ValueError: ``limit`` is below 2.
    """
    if limit < 2:
        raise ValueError(f"limit must be at least 2, not {limit}")
    text = text.strip()
    parts: list[Part] = []
    start = 0
    while len(text) - start > limit:
        cut = _cut(text, start, limit)
        space = _SPACE.match(text, cut)
        resume = space.end() if space else cut
        parts.append(Part(text[start:cut], text[cut:resume]))
        start = resume
    parts.append(Part(text[start:]))
    return parts


def parts_within(text: str, limit: int, *, what: str) -> list[Part]:
    """``split_text``, for a text that may hold up to ``MAX_PARTS`` parts.

    Raises:
        ValidationError: naming ``what`` when the text is longer.
    """
    if len(text) > MAX_PARTS * limit:
        raise ValidationError(
            "content",
            f"<{len(text)} characters>",
            reason=f"{what} has {len(text)} characters, more than {MAX_PARTS} parts of"
            f" {limit} (the content limit; set MINDPALACE_MAX_CONTENT to change it)",
        )
    return split_text(text, limit)


def join_parts(parts: Sequence[Part]) -> str:
    """The text ``split_text`` cut into ``parts``."""
    return "".join(part.text + part.gap for part in parts)


def _cut(text: str, start: int, limit: int) -> int:
    """Where the part beginning at ``start`` ends: an index in
    ``(start, start + limit]`` that leaves no whitespace at the part's end."""
    end = start + limit
    floor = start + limit // 2  # no part shorter than half the limit, but the last
    window = text[start : end + 1]  # +1: a break right after the limit still counts
    for finder in (_last_paragraph, _last_sentence, _last_line, _last_space):
        found = finder(window)
        if found is not None and start + found > floor:
            return _trimmed(text, start, min(start + found, end))
    found = _last_space(window)
    if found is not None and found > 0:
        return _trimmed(text, start, min(start + found, end))
    return end  # one word longer than the limit: cut inside it


def _trimmed(text: str, start: int, cut: int) -> int:
    while cut > start + 1 and text[cut - 1].isspace():
        cut -= 1
    return cut


def _last_paragraph(window: str) -> int | None:
    found = None
    for match in _PARAGRAPH.finditer(window):
        found = match.start()
    return found


def _last_sentence(window: str) -> int | None:
    found = None
    for match in _SENTENCE_END.finditer(window):
        if match.end() < len(window):  # the mark itself within the limit
            found = match.end()
    return found


def _last_line(window: str) -> int | None:
    at = window.rfind("\n")
    return at if at > 0 else None


def _last_space(window: str) -> int | None:
    for at in range(len(window) - 1, 0, -1):
        if window[at].isspace():
            return at
    return None
