"""Skill files: SKILL.md front matter and sections, JSON nodes, and the
errors bad files get (naming the file and the field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindpalace.errors import ValidationError
from mindpalace.skills.model import Section
from mindpalace.skills.parse import (
    iter_skill_files,
    parse_json_node,
    parse_skill_file,
    parse_skill_md,
)

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "skills"

GOOD = """\
---
name: watermark-media
description: Stamp a visible watermark
  on media.
tags: [Media, watermark, media]
tools:
  - ffmpeg
  - "imagemagick"
links:
  media-validation: 0.9
  schedule-post
  - caption-writing
# a comment line
---
# Watermark media
Text before the first section.

## Steps
1. Probe.
```sh
## not a heading inside a fence
ffmpeg -i in.mp4 out.mp4
```
### A level-3 heading stays inside its section
## Gotchas
Keep the original.
"""


def test_skill_md_fields_and_sections() -> None:
    skill = parse_skill_md(GOOD.replace("\n  on media.", ""), origin="wm/SKILL.md")
    assert skill.name == "watermark-media"
    assert skill.description == "Stamp a visible watermark"
    assert skill.tags == ("media", "watermark")
    assert skill.tools == ("ffmpeg", "imagemagick")
    assert skill.links == (
        ("media-validation", 0.9),
        ("schedule-post", None),
        ("caption-writing", None),
    )
    assert [s.title for s in skill.sections] == ["Overview", "Steps", "Gotchas"]
    assert skill.sections[0].content == "Text before the first section."
    steps = skill.sections[1].content
    assert "## not a heading inside a fence" in steps
    assert "### A level-3 heading stays inside its section" in steps
    assert skill.sections[2] == Section("Gotchas", "Keep the original.")
    assert skill.origin == "wm/SKILL.md"


def test_skill_md_without_overview_or_sections() -> None:
    text = "---\nname: tiny\ndescription: Does one thing.\n---\n"
    skill = parse_skill_md(text)
    assert skill.sections == () and skill.tags == () and skill.links == ()
    assert skill.text() == "Does one thing."


def test_digest_changes_with_any_field() -> None:
    base = parse_skill_md("---\nname: a\ndescription: One.\ntags: [x]\n---\n## S\nbody\n")
    same = parse_skill_md("---\nname: a\ndescription: One.\ntags: [x]\n---\n## S\nbody\n")
    assert base.digest() == same.digest()
    for changed in (
        "---\nname: a\ndescription: Two.\ntags: [x]\n---\n## S\nbody\n",
        "---\nname: a\ndescription: One.\ntags: [y]\n---\n## S\nbody\n",
        "---\nname: a\ndescription: One.\ntags: [x]\n---\n## S\nbody!\n",
        "---\nname: a\ndescription: One.\ntags: [x]\ntools: [t]\n---\n## S\nbody\n",
    ):
        assert parse_skill_md(changed).digest() != base.digest()


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("name: a\n---\n", "front matter", "must start"),
        ("---\nname: a\ndescription: b\n", "front matter", "closing"),
        ("---\nname: a\ndescription: b\ncolour: red\n---\n", "front matter", "valid options: name"),
        ("---\ndescription: b\n---\n", "name", "required"),
        ("---\nname: Bad Name\ndescription: b\n---\n", "name", "lower-case"),
        ("---\nname: a\n---\n", "description", "required"),
        ("---\nname: a\ndescription: b\nname: c\n---\n", "name", "twice"),
        ("---\nname: a\ndescription: b\nlinks:\n  other: 2\n---\n", "links", "(0, 1]"),
        ("---\nname: a\ndescription: b\nlinks:\n  other: lots\n---\n", "links", "number"),
        ("---\nname: a\ndescription: b\ntags:\n  media\n---\n", "tags", "'- item'"),
        ("---\nname: a\ndescription: b\ntags: [a, b\n---\n", "tags", "unclosed"),
        ("---\nname: a\ndescription: b\n  - stray\n---\n", "front matter", "outside a key"),
        ("---\nname: a\ndescription: b\njust words\n---\n", "front matter", "key: value"),
        ("---\nname: a\ndescription: b\n---\n## S\none\n## S\ntwo\n", "sections", "two sections"),
        ("---\nname: a\ndescription: b\nlinks: [x]\ncorrelations: [y]\n---\n", "links", "not both"),
    ],
)
def test_bad_skill_md_names_file_and_field(text: str, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse_skill_md(text, origin="bad/SKILL.md")
    assert exc.value.field == field
    assert str(exc.value).startswith("bad/SKILL.md") or "bad/SKILL.md" in str(exc.value)
    assert words in str(exc.value)


def test_json_node_shapes() -> None:
    as_object = parse_json_node(
        json.dumps(
            {
                "name": "n1",
                "description": "A node.",
                "tags": "a, b",
                "tools": ["t"],
                "sections": {"Steps": "do it", "Notes": "careful"},
                "correlations": {"n2": 0.5},
            }
        )
    )
    as_list = parse_json_node(
        json.dumps(
            {
                "name": "n1",
                "description": "A node.",
                "tags": ["a", "b"],
                "tools": "t",
                "sections": [
                    {"title": "Steps", "content": "do it"},
                    {"title": "Notes", "content": "careful"},
                ],
                "links": [{"name": "n2", "weight": 0.5}],
            }
        )
    )
    assert as_object == as_list
    assert as_object.links == (("n2", 0.5),)
    plain = parse_json_node('{"name": "n3", "description": "d", "links": ["n1", "n3"]}')
    assert plain.links == (("n1", None),)  # a link to itself is dropped


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("{not json", "json"),
        ("[1, 2]", "json"),
        ('{"name": "a", "description": "b", "colour": 1}', "field"),
        ('{"name": "a", "description": "b", "sections": "text"}', "sections"),
        ('{"name": "a", "description": "b", "sections": [{"title": 1}]}', "sections"),
        ('{"name": "a", "description": "b", "tags": 5}', "tags"),
        ('{"name": "a", "description": "b", "links": [{"weight": 1}]}', "links"),
        ('{"name": "a", "description": "   "}', "description"),
    ],
)
def test_bad_json_node(text: str, field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse_json_node(text, origin="nodes/a.json")
    assert exc.value.field == field
    assert "nodes/a.json" in str(exc.value)


def test_file_discovery(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "SKILL.md").write_text("---\nname: one\ndescription: d\n---\n")
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "two.json").write_text('{"name": "two", "description": "d"}')
    (tmp_path / "README.md").write_text("not a skill")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.json").write_text("{}")
    found = [origin for _, origin in iter_skill_files(tmp_path)]
    assert found == ["nodes/two.json", "one/SKILL.md"]
    assert [o for _, o in iter_skill_files(tmp_path / "one" / "SKILL.md")] == ["SKILL.md"]
    with pytest.raises(ValidationError, match="no such file"):
        list(iter_skill_files(tmp_path / "missing"))
    (tmp_path / "notes.txt").write_text("text")
    with pytest.raises(ValidationError, match="valid options"):
        parse_skill_file(tmp_path / "notes.txt")


def test_the_sample_library_parses() -> None:
    skills = [parse_skill_file(path, origin=origin) for path, origin in iter_skill_files(LIBRARY)]
    names = [s.name for s in skills]
    assert len(names) >= 30 and len(set(names)) == len(names)
    assert any(o.endswith(".json") for o in (s.origin or "" for s in skills))
    for skill in skills:
        assert skill.description and skill.sections and skill.tags, skill.name
        for target, _ in skill.links:
            assert target in names, f"{skill.name} links to unknown {target}"
