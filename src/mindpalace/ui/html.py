"""An HTML builder that escapes by default: stored text can never become markup.

Every page of the inspector is built from ``h(tag, attrs, *children)`` calls.
A child that is a ``str`` is text, always escaped; only ``Markup`` (what
``h`` itself returns) passes through as markup, and there is no way to turn
a stored string into ``Markup`` except through ``h``. Tag and attribute
names come from code, never from data (checked). Link targets (``href``,
``action``, ``src``) must be paths of this site (``/...``, ``?...`` or
``#...``), so no stored text can become a ``javascript:`` URL; values that
go into them are percent-encoded by ``url``.

Text is also made safe to *display*: lone surrogates (which cannot be
encoded) and control characters become visible replacement symbols, and
the CSS isolates each stored text's direction, so a right-to-left override
inside a memory cannot reorder the page around it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode

__all__ = ["Markup", "h", "join", "text", "url"]

_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_ATTR = re.compile(r"[a-z][a-z0-9:_-]*\Z", re.IGNORECASE)
_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())
_LINKS = frozenset({"href", "action", "src", "xlink:href"})
# C0 controls but tab, newline and carriage return; DEL; C1 controls; lone surrogates.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class Markup(str):
    """A string of markup this module built; children of this type are not escaped."""

    __slots__ = ()


def _site_path(link: str) -> bool:
    """Whether ``link`` stays on this site: a path, a query or a fragment,
    and not ``//host`` or ``/\\host`` (which browsers read as another host)."""
    return link.startswith(("/", "?", "#")) and link[1:2] not in ("/", "\\")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: NUL shows as ␀
    if code == 0x7F:
        return "\u2421"
    return "\ufffd"


def text(value: object) -> str:
    """``value`` as escaped HTML text (also safe inside a quoted attribute)."""
    shown = _UNSHOWABLE.sub(_visible, str(value))
    return (
        shown.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def _children(parts: Iterable[object], out: list[str]) -> None:
    for part in parts:
        if part is None or part is False:
            continue
        if isinstance(part, Markup):
            out.append(part)
        elif isinstance(part, str | int | float):
            out.append(text(part))
        elif isinstance(part, Iterable):
            _children(part, out)
        else:
            raise TypeError(f"cannot render {type(part).__name__} as HTML")


def h(tag: str, attrs: Mapping[str, object] | None = None, *children: object) -> Markup:
    """One element. ``attrs`` values: ``None``/``False`` leave the attribute
    out, ``True`` writes it bare, anything else is escaped text. A
    ``class_`` key is written ``class``.

    Raises:
        ValueError: a tag or attribute name that is not a plain name, or a
            link attribute that is not a path of this site.
    """
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    head = [f"<{tag}"]
    for key, value in (attrs or {}).items():
        name = key.rstrip("_").replace("_", "-") if key != "xlink:href" else key
        if not _ATTR.match(name) or name.lower().startswith("on"):
            raise ValueError(f"not an allowed attribute name: {key!r}")
        if value is None or value is False:
            continue
        if value is True:
            head.append(f" {name}")
            continue
        shown = str(value)
        if name in _LINKS and not _site_path(shown):
            raise ValueError(f"{name} must be a path of this site, not {shown[:40]!r}")
        head.append(f' {name}="{text(shown)}"')
    head.append(">")
    if tag in _VOID:
        if children:
            raise ValueError(f"<{tag}> takes no children")
        return Markup("".join(head))
    out = ["".join(head)]
    _children(children, out)
    out.append(f"</{tag}>")
    return Markup("".join(out))


def join(*parts: object) -> Markup:
    """Several nodes as one (text parts escaped)."""
    out: list[str] = []
    _children(parts, out)
    return Markup("".join(out))


def url(path: str, *segments: str, **params: object) -> str:
    """A path of this site: ``path`` (from code) followed by ``segments``
    percent-encoded as single path segments, then ``params`` as the query
    string (``None`` and empty values left out; lists repeat the key)."""
    if not _site_path(path) or not path.startswith("/"):
        raise ValueError(f"not a site path: {path!r}")
    out = path.rstrip("/") if segments else path
    for segment in segments:
        out += "/" + quote(segment.encode("utf-8", "replace"), safe="")
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if item is None or item == "" or item is False:
                continue
            shown = "1" if item is True else str(item)
            pairs.append((key, shown.encode("utf-8", "replace").decode("utf-8")))
    if pairs:
        out += "?" + urlencode(pairs)
    return out
