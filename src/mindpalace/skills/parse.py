"""Reading skill files: ``SKILL.md`` with front matter, and JSON node files.

``SKILL.md``::

    ---
    name: watermark-media
    description: Stamp a visible watermark on images and videos before publishing.
    tags: [media, watermark]
    tools:
      - ffmpeg
    links:
      media-validation: 0.9
      schedule-post
    ---
    # Watermark media           (an optional level-1 title, ignored)
    Text before the first ``##`` becomes the section "Overview".
    ## Steps
    ...

The front matter is a strict subset of YAML written for this format (so no
YAML library is needed): ``key: value`` lines, inline lists ``[a, b]``,
block lists (``- item``) and, for ``links``, block lines ``name: weight``
or a bare ``name``. Quoted scalars are unquoted. Anything else is an error
naming the file, the line and the field.

A JSON node file is one object with the same keys; ``sections`` is an
object (title -> text) or a list of ``{"title", "content"}``; ``links`` (or
``correlations``) a list of names, a list of ``{"name", "weight"}`` or an
object name -> weight.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.skills.model import Section, SkillDefinition
from mindpalace.validation import check_tags

__all__ = ["FIELDS", "iter_skill_files", "parse_json_node", "parse_skill_file", "parse_skill_md"]

FIELDS = ("name", "description", "tags", "tools", "links", "correlations")
MAX_NAME = 64
MAX_DESCRIPTION = 2000
MAX_SECTION = 20_000
MAX_TOOLS = 64
DEFAULT_SECTION = "Overview"

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _fail(origin: str, field: str, value: object, reason: str) -> ValidationError:
    return ValidationError(field, value, reason=f"{origin}: {field}: {reason}")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _front_matter(text: str, origin: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into its front matter (parsed) and its body."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise _fail(origin, "front matter", None, "the file must start with a '---' line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise _fail(origin, "front matter", None, "no closing '---' line") from None
    data: dict[str, Any] = {}
    current: str | None = None  # the key whose block value is being read
    for number, raw in enumerate(lines[1:end], start=2):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t-":  # a block item of ``current``
            if current is None:
                raise _fail(
                    origin, "front matter", raw, f"line {number}: indented line outside a key"
                )
            item = raw.strip()
            block = data[current]
            if item.startswith("- "):
                block.append(_unquote(item[2:]))
            elif item == "-":
                raise _fail(origin, current, raw, f"line {number}: empty list item")
            elif current in ("links", "correlations"):
                block.append(item)  # "name: weight"
            else:
                raise _fail(origin, current, raw, f"line {number}: expected '- item'")
            continue
        match = _KEY.match(raw)
        if match is None:
            raise _fail(origin, "front matter", raw, f"line {number}: expected 'key: value'")
        key, value = match.group(1), match.group(2).strip()
        if key not in FIELDS:
            raise ValidationError(
                "front matter",
                key,
                valid=FIELDS,
                reason=f"{origin}: line {number}: unknown key {key!r}",
            )
        if key in data:
            raise _fail(origin, key, value, f"line {number}: given twice")
        if not value:
            data[key] = []
            current = key
        elif value.startswith("["):
            if not value.endswith("]"):
                raise _fail(origin, key, value, f"line {number}: unclosed '['")
            inner = value[1:-1].strip()
            data[key] = [_unquote(v) for v in inner.split(",")] if inner else []
            current = None
        else:
            data[key] = _unquote(value)
            current = None
    return data, "\n".join(lines[end + 1 :])


def _sections(body: str) -> list[Section]:
    """Level-2 sections of a Markdown body (``##`` inside code fences does not count)."""
    sections: list[tuple[str, list[str]]] = [(DEFAULT_SECTION, [])]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif not fenced and line.startswith("# ") and not sections[-1][1] and len(sections) == 1:
            continue  # a level-1 title before anything else: the name says it
        else:
            sections[-1][1].append(line)
    return [
        Section(title, "\n".join(lines).strip())
        for title, lines in sections
        if title != DEFAULT_SECTION or "\n".join(lines).strip()
    ]


def _as_list(origin: str, field: str, value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise _fail(origin, field, value, "must be a list of strings or a comma-separated string")


def _weight(origin: str, name: str, value: object) -> float:
    try:
        weight = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _fail(origin, "links", value, f"weight of {name!r} must be a number") from None
    if not 0.0 < weight <= 1.0:
        raise _fail(origin, "links", value, f"weight of {name!r} must be in (0, 1]")
    return weight


def _links(origin: str, value: object) -> list[tuple[str, float | None]]:
    """Explicit links from a list of names, "name: weight" lines, a list of
    objects or an object name -> weight."""
    out: list[tuple[str, float | None]] = []
    if value is None:
        return out
    if isinstance(value, Mapping):
        items: list[object] = [{"name": k, "weight": v} for k, v in value.items()]
    elif isinstance(value, list):
        items = list(value)
    elif isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    else:
        raise _fail(origin, "links", value, "must be a list or an object")
    for item in items:
        if isinstance(item, str):
            name, _, weight_text = item.partition(":")
            name = _unquote(name)
            weight = _weight(origin, name, weight_text.strip()) if weight_text.strip() else None
        elif isinstance(item, Mapping) and "name" in item:
            name = item["name"]
            raw = item.get("weight")
            weight = None if raw is None else _weight(origin, str(name), raw)
        else:
            raise _fail(origin, "links", item, "each link is a name or {name, weight}")
        out.append((_check_name(origin, name, field="links"), weight))
    return out


def _check_name(origin: str, value: object, *, field: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(origin, field, value, "a skill name is required")
    name = value.strip()
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise _fail(
            origin,
            field,
            value,
            f"a skill name is 1-{MAX_NAME} lower-case letters, digits, '-', '_' or '.',"
            " starting with a letter or digit",
        )
    return name


def _definition(origin: str, data: Mapping[str, Any], sections: list[Section]) -> SkillDefinition:
    name = _check_name(origin, data.get("name"))
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _fail(origin, "description", description, "a one-line description is required")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise _fail(origin, "description", "<long>", f"longer than {MAX_DESCRIPTION} characters")
    try:
        tags = check_tags(_as_list(origin, "tags", data.get("tags")))
    except ValidationError as exc:
        raise _fail(origin, "tags", exc.value, str(exc)) from None
    tools = tuple(dict.fromkeys(_as_list(origin, "tools", data.get("tools"))))
    if len(tools) > MAX_TOOLS or any(len(t) > MAX_NAME for t in tools):
        raise _fail(origin, "tools", list(tools), f"at most {MAX_TOOLS} names of {MAX_NAME} chars")
    if "links" in data and "correlations" in data:
        raise _fail(origin, "links", None, "give links or correlations, not both")
    links = _links(origin, data.get("links", data.get("correlations")))
    seen: dict[str, float | None] = {}
    for target, weight in links:
        if target != name:  # a skill does not correlate with itself
            seen[target] = weight if seen.get(target) is None else seen[target]
    titles = [s.title for s in sections]
    for section in sections:
        if not section.title:
            raise _fail(origin, "sections", "", "a section heading is empty")
        if len(section.content) > MAX_SECTION:
            raise _fail(origin, "sections", section.title, f"longer than {MAX_SECTION} characters")
        if titles.count(section.title) > 1:
            raise _fail(origin, "sections", section.title, "two sections have this heading")
    return SkillDefinition(
        name=name,
        description=description,
        sections=tuple(sections),
        tags=tags,
        tools=tools,
        links=tuple(seen.items()),
        origin=origin,
    )


def parse_skill_md(text: str, *, origin: str = "SKILL.md") -> SkillDefinition:
    """Parse a ``SKILL.md`` document.

    Raises:
        ValidationError: naming ``origin`` and the offending field.
    """
    data, body = _front_matter(text, origin)
    return _definition(origin, data, _sections(body))


def parse_json_node(text: str, *, origin: str = "node.json") -> SkillDefinition:
    """Parse a JSON node file.

    Raises:
        ValidationError: naming ``origin`` and the offending field.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(origin, "json", None, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(origin, "json", None, "a skill node is a JSON object")
    unknown = sorted(set(data) - {*FIELDS, "sections"})
    if unknown:
        raise ValidationError(
            "field", unknown[0], valid=(*FIELDS, "sections"), reason=f"{origin}: unknown field"
        )
    raw = data.get("sections", [])
    sections: list[Section] = []
    if isinstance(raw, Mapping):
        raw = [{"title": k, "content": v} for k, v in raw.items()]
    if not isinstance(raw, list):
        raise _fail(origin, "sections", raw, "an object or a list of {title, content}")
    for item in raw:
        if (
            not isinstance(item, Mapping)
            or not isinstance(item.get("title"), str)
            or not isinstance(item.get("content"), str)
        ):
            raise _fail(origin, "sections", item, "each section is {title, content} strings")
        sections.append(Section(item["title"].strip(), item["content"].strip()))
    return _definition(origin, data, sections)


def parse_skill_file(path: Path, *, origin: str | None = None) -> SkillDefinition:
    """Parse a ``.md`` or ``.json`` skill file.

    Raises:
        ValidationError: unreadable, unknown kind, or invalid content.
    """
    label = origin or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(label, "file", str(path), f"cannot read ({exc})") from None
    if path.suffix.lower() == ".json":
        return parse_json_node(text, origin=label)
    if path.suffix.lower() == ".md":
        return parse_skill_md(text, origin=label)
    raise ValidationError("file", str(path), valid=["SKILL.md", "*.md", "*.json"])


def iter_skill_files(root: Path) -> Iterator[tuple[Path, str]]:
    """The skill files under ``root`` with their origin label (path relative to
    ``root``), sorted: every ``SKILL.md`` and every ``*.json`` node file. A
    file path yields that file.

    Raises:
        ValidationError: ``root`` does not exist.
    """
    if root.is_file():
        yield root, root.name
        return
    if not root.is_dir():
        raise ValidationError("path", str(root), reason=f"no such file or folder: {root}")
    found = [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and (p.name.lower() == "skill.md" or p.suffix.lower() == ".json")
    ]
    for path in found:
        yield path, path.relative_to(root).as_posix()
