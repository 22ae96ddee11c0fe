"""The front matter of a Markdown note: the YAML-like block between two
``---`` lines at its top, read without a YAML library.

What notes apps write is read: ``key: value``; a list as ``[a, b]`` or as
``- item`` lines under its key; quoted strings; ``#`` comments. Values are
strings or lists of strings (nothing is evaluated: ``yes`` stays "yes").
Nested blocks are skipped. A line of any other shape is left out, never an
error: the note's text is what matters.
"""

from __future__ import annotations

import re

__all__ = ["FrontMatter", "split_front_matter"]

FrontMatter = dict[str, str | list[str]]

_KEY = re.compile(r"([A-Za-z0-9_][\w .-]*?)\s*:(?:\s+(.*))?$")
_FENCES = ("---", "...")


def split_front_matter(text: str) -> tuple[FrontMatter, str]:
    """The front matter of ``text`` (keys lower-cased) and the text after it;
    ``({}, text)`` when it has none."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].rstrip() in _FENCES:
            return _parse(lines[1:end]), "\n".join(lines[end + 1 :])
    return {}, text  # no closing line: not front matter


def _parse(lines: list[str]) -> FrontMatter:
    found: FrontMatter = {}
    key: str | None = None
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[:1] in (" ", "\t", "-"):
            if key is not None and (stripped == "-" or stripped.startswith("- ")):
                items = found.get(key)
                if not isinstance(items, list):
                    items = [] if not items else [items]
                    found[key] = items
                item = _scalar(stripped[1:].strip())
                if item:
                    items.append(item)
            continue  # an item of no key, or a nested block
        match = _KEY.match(line)
        if match is None:
            key = None
            continue
        key = match.group(1).strip().lower()
        found[key] = _value(match.group(2) or "")
    return found


def _value(raw: str) -> str | list[str]:
    raw = raw.strip()
    if raw.startswith("[") and raw.endswith("]"):
        return [item for item in (_scalar(p) for p in _items(raw[1:-1])) if item]
    return _scalar(raw)


def _items(inner: str) -> list[str]:
    """``a, "b, c", d`` split at the commas outside quotes."""
    items, current, quote = [], [], ""
    for char in inner:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return items


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        if end > 0:  # a quoted string, then maybe a comment
            return raw[1:end]
    comment = raw.find(" #")
    return (raw[:comment] if comment >= 0 else raw).strip()
