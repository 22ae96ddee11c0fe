"""Importing skills into a palace, and reading them back: idempotent
re-import, updates in place, correlations, scope, usage signals,
consolidation, get / find and their errors."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.errors import UnknownSkill, ValidationError
from mindpalace.store import Store

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "skills"
TABLES = (
    "memories",
    "memory_tags",
    "skills",
    "memory_links",
    "signals",
    "palace_meta",
    "embeddings",
    "embedding_config",
)

SKILL = """\
---
name: {name}
description: {description}
tags: [{tags}]
tools: [{tools}]
{links}---
## Steps
{steps}
## Gotchas
{gotchas}
"""


def write_skill(
    root: Path,
    name: str,
    *,
    description: str = "Does a thing.",
    tags: str = "alpha",
    tools: str = "",
    links: str = "",
    steps: str = "1. Do it.",
    gotchas: str = "None.",
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(
        SKILL.format(
            name=name,
            description=description,
            tags=tags,
            tools=tools,
            links=f"links:\n{links}" if links else "",
            steps=steps,
            gotchas=gotchas,
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    write_skill(
        root,
        "watermark-media",
        description="Stamp a logo onto videos and images.",
        tags="media, watermark, video",
        tools="ffmpeg",
        links="  schedule-post: 0.9\n",
        steps="1. Overlay the logo with ffmpeg.",
    )
    write_skill(
        root,
        "schedule-post",
        description="Queue a social post for a later time.",
        tags="social, scheduling, media",
        tools="scheduler",
        steps="1. Pick the audience's best hour.",
    )
    write_skill(
        root,
        "media-validation",
        description="Check codec and resolution with ffprobe.",
        tags="media, video, validation",
        tools="ffmpeg",
        steps="1. Run ffprobe on the file.",
    )
    write_skill(
        root,
        "postmortem",
        description="Write up an outage afterwards.",
        tags="ops, incident",
        steps="1. Build the timeline.",
    )
    return root


@pytest.fixture
def hashed(make_palace: Callable[..., Palace]) -> Callable[..., Palace]:
    def make(agent_id: str = "default", **options: Any) -> Palace:
        return make_palace(agent_id, embedder=HashingEmbedder(), **options)

    return make


def snapshot(store: Store) -> dict[str, list[str]]:
    """Every row of every table a skill operation may touch."""
    out = {}
    with store._read() as cur:  # type: ignore[attr-defined]
        for table in TABLES:
            rows = cur.execute(f"SELECT * FROM {table}").fetchall()
            out[table] = sorted(repr(tuple(r)) for r in rows)
    return out


# -- import ------------------------------------------------------------------------------


def test_import_then_reimport_changes_nothing(
    hashed: Callable[..., Palace], library: Path, store: Store
) -> None:
    palace = hashed()
    first = palace.skills.import_path(library)
    assert sorted(first.added) == [
        "media-validation",
        "postmortem",
        "schedule-post",
        "watermark-media",
    ]
    assert first.changed_correlations and first.correlations > 0
    before = snapshot(store)
    generation = store.generation()
    again = palace.skills.import_path(library)
    assert again.added == () and again.updated == ()
    assert sorted(again.unchanged) == sorted(first.added)
    assert not again.changed_correlations
    assert snapshot(store) == before
    assert store.generation() == generation
    # A second palace object (another process, say) agrees.
    assert hashed().skills.import_path(library).unchanged == again.unchanged
    assert snapshot(store) == before


def test_skills_are_procedural_memories_recall_finds(
    hashed: Callable[..., Palace], library: Path
) -> None:
    palace = hashed()
    palace.remember("The office wifi password rotates monthly; watermark policy is elsewhere.")
    palace.skills.import_path(library)
    hits = palace.recall("watermark logo videos", types="skill")
    assert hits and hits[0].memory.title == "watermark-media"
    assert all(h.memory.type.value == "skill" for h in hits)
    memory = hits[0].memory
    assert (memory.store.value, memory.category.value, memory.source.value) == (
        "procedural",
        "workflow",
        "skill",
    )
    assert memory.tags == ("media", "watermark", "video")
    assert memory.metadata["skill"]["tools"] == ["ffmpeg"]
    assert "## Steps" in memory.content
    everything = palace.recall("watermark", limit=20)
    assert {h.memory.type.value for h in everything} == {"skill", "unknown"}


def test_changed_file_updates_in_place(
    hashed: Callable[..., Palace], library: Path, store: Store
) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    old = palace.skills.get("media-validation")
    write_skill(
        library,
        "media-validation",
        description="Check codec and resolution with ffprobe.",
        tags="media, video, qa",
        tools="ffmpeg",
        steps="1. Run mediainfo on the file.",
    )
    result = palace.skills.import_path(library)
    assert result.updated == ("media-validation",)
    assert "media-validation" not in result.unchanged and len(result.unchanged) == 3
    new = palace.skills.get("media-validation")
    assert new.memory_id == old.memory_id
    assert new.tags == ("media", "video", "qa")
    assert new.sections[0].content == "1. Run mediainfo on the file."
    assert [h.memory.id for h in palace.recall("mediainfo", types="skill")] == [new.memory_id]
    assert not [
        h for h in palace.recall("ffprobe", types="skill") if "Run ffprobe" in h.memory.content
    ]
    assert [m.name for m in palace.skills.find("qa")] == ["media-validation"]
    assert palace.skills.find("validation") == []
    assert palace.stats().memories == 4
    # Its vector follows the new text: the dense index reloads and finds it.
    assert palace.semantic.dense() is not None
    again = snapshot(store)
    palace.skills.import_path(library)
    assert snapshot(store) == again


def test_sample_library_imports_twice(hashed: Callable[..., Palace], tmp_path: Path) -> None:
    copy = tmp_path / "skills"
    shutil.copytree(LIBRARY, copy)
    palace = hashed()
    first = palace.skills.import_path(copy)
    assert len(first.added) >= 30
    again = palace.skills.import_path(LIBRARY)  # same files, another place: same origins
    assert again.added == () and again.updated == () and not again.changed_correlations
    assert len(palace.skills.names()) == len(first.added)


def test_invalid_or_duplicate_files_write_nothing(
    hashed: Callable[..., Palace], library: Path
) -> None:
    palace = hashed()
    (library / "broken").mkdir()
    (library / "broken" / "SKILL.md").write_text("---\nname: Broken Name\ndescription: d\n---\n")
    with pytest.raises(ValidationError, match=r"broken/SKILL\.md: name"):
        palace.skills.import_path(library)
    assert palace.stats().memories == 0
    shutil.rmtree(library / "broken")
    (library / "dupe.json").write_text('{"name": "postmortem", "description": "again"}')
    with pytest.raises(ValidationError, match="also defined in"):
        palace.skills.import_path(library)
    assert palace.stats().memories == 0
    with pytest.raises(ValidationError, match="no such file"):
        palace.skills.import_path(library / "nowhere")
    empty = library / "empty"
    empty.mkdir()
    with pytest.raises(ValidationError, match=r"no SKILL\.md"):
        palace.skills.import_path(empty)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"visibility": "public"}, "valid options: isolated, shared, group"),
        ({"visibility": "group"}, "exactly with visibility 'group'"),
        ({"group": "team"}, "exactly with visibility 'group'"),
    ],
)
def test_bad_scope_options(
    hashed: Callable[..., Palace], library: Path, options: dict[str, str], words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        hashed().skills.import_path(library, **options)


# -- correlations ------------------------------------------------------------------------


def test_declared_correlations(hashed: Callable[..., Palace], library: Path) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    weights = {c.name: c.weight for c in palace.skills.get("watermark-media").correlations}
    assert weights["schedule-post"] == pytest.approx(0.9)  # explicit, and larger than shared
    assert 0 < weights["media-validation"] < 0.9  # shared tags and tool
    assert "postmortem" not in weights
    back = {c.name: c.weight for c in palace.skills.get("schedule-post").correlations}
    assert back["watermark-media"] == pytest.approx(0.9)  # links go both ways
    # Removing the link from the file removes the explicit weight.
    write_skill(
        library,
        "watermark-media",
        description="Stamp a logo onto videos and images.",
        tags="media, watermark, video",
        tools="ffmpeg",
        steps="1. Overlay the logo with ffmpeg.",
    )
    result = palace.skills.import_path(library)
    assert result.changed_correlations
    weights = {c.name: c.weight for c in palace.skills.get("watermark-media").correlations}
    assert weights.get("schedule-post", 0.0) < 0.9


# -- get / find --------------------------------------------------------------------------


def test_get_returns_the_whole_skill(hashed: Callable[..., Palace], library: Path) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    detail = palace.skills.get("watermark-media").to_dict()
    assert detail["description"] == "Stamp a logo onto videos and images."
    assert [s["title"] for s in detail["sections"]] == ["Steps", "Gotchas"]
    assert detail["tools"] == ["ffmpeg"] and detail["tags"] == ["media", "watermark", "video"]
    assert detail["origin"] == "watermark-media/SKILL.md"
    assert {c["name"] for c in detail["correlations"]} >= {"schedule-post", "media-validation"}
    assert detail["usage"]["gets"] == 1


@pytest.mark.parametrize(
    ("asked", "closest"),
    [
        ("watermark", "watermark-media"),
        ("watermark-medias", "watermark-media"),
        ("schedule", "schedule-post"),
        ("post-mortem", "postmortem"),
    ],
)
def test_unknown_name_lists_the_closest(
    hashed: Callable[..., Palace], library: Path, asked: str, closest: str
) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    with pytest.raises(UnknownSkill) as exc:
        palace.skills.get(asked)
    assert exc.value.closest[0] == closest
    assert isinstance(exc.value, ValidationError) and exc.value.field == "name"
    assert f"closest names: {closest}" in str(exc.value)


def test_get_in_an_empty_palace_says_to_import(hashed: Callable[..., Palace]) -> None:
    with pytest.raises(UnknownSkill, match="skills import"):
        hashed().skills.get("anything")
    with pytest.raises(ValidationError, match="required"):
        hashed().skills.get("  ")


def test_find_ranks_by_tag_overlap(hashed: Callable[..., Palace], library: Path) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    found = palace.skills.find("media,watermark")
    assert (found[0].name, found[0].score) == ("watermark-media", 1.0)
    assert {m.name for m in found[1:]} == {"schedule-post", "media-validation"}
    assert all(m.score == 0.5 and m.matched == ("media",) for m in found[1:])
    # Ties go to the skill whose own tags matched more (3 tags each here), then name.
    assert [m.name for m in found[1:]] == ["media-validation", "schedule-post"]
    assert palace.skills.find(["Incident"])[0].name == "postmortem"
    assert palace.skills.find("gardening") == []
    with pytest.raises(ValidationError, match="at least one tag"):
        palace.skills.find(" , ")
    with pytest.raises(ValidationError, match="limit"):
        palace.skills.find("media", limit=0)


# -- scope -------------------------------------------------------------------------------


def test_isolated_skills_stay_with_their_agent(
    hashed: Callable[..., Palace], library: Path, tmp_path: Path
) -> None:
    alice, bob = hashed("alice"), hashed("bob")
    alice.skills.import_path(library)
    assert bob.skills.names() == []
    assert bob.skills.activate("stamp a logo on a video") == []
    with pytest.raises(UnknownSkill) as exc:
        bob.skills.get("watermark-media")
    assert exc.value.closest == ()
    assert bob.recall("logo videos", types="skill") == []
    shared = tmp_path / "shared"
    write_skill(shared, "team-standup", description="Run the daily standup.", tags="meetings")
    alice.skills.import_path(shared, visibility="shared")
    assert bob.skills.names() == ["team-standup"]
    assert bob.skills.get("team-standup").correlations == ()
    # Bob's own skill of the same name wins over the shared one, for Bob.
    mine = tmp_path / "mine"
    write_skill(mine, "team-standup", description="Bob's own standup notes.", tags="meetings")
    bob.skills.import_path(mine)
    assert bob.skills.get("team-standup").description == "Bob's own standup notes."
    assert alice.skills.get("team-standup").description == "Run the daily standup."


# -- usage and consolidation -------------------------------------------------------------


def test_activate_and_get_record_usage_without_touching_memories(
    hashed: Callable[..., Palace], library: Path, store: Store
) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    before = snapshot(store)
    hits = palace.skills.activate("stamp a logo on a video and queue the post")
    assert hits
    palace.skills.get(hits[0].name)
    after = snapshot(store)
    for table in ("memories", "memory_tags", "skills", "memory_links", "embeddings"):
        assert after[table] == before[table], table
    assert len(after["signals"]) == len(hits) + 1
    detail = palace.skills.get(hits[0].name)
    assert (detail.activations, detail.gets) == (1, 2)
    assert detail.last_used is not None
    other = next(h.name for h in hits[1:]) if len(hits) > 1 else None
    if other:
        assert palace.skills.get(other).activations == 1


def test_consolidation_learns_from_coactivation(
    hashed: Callable[..., Palace], library: Path
) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    assert palace.skills.consolidate() == {"activations": 0, "strengthened": 0}
    query = "stamp a logo on a video, check its codec, then queue the post"
    first = [h.name for h in palace.skills.activate(query)]
    palace.skills.activate(query)
    assert len(first) >= 2
    report = palace.skills.consolidate(rate=0.5)
    assert report["activations"] == 2 and report["strengthened"] >= 2
    learned = {c.name: c for c in palace.skills.get(first[0]).correlations}
    pair = learned[first[1]]
    assert pair.learned == pytest.approx(0.75)  # two co-activations at rate 0.5
    assert pair.weight == pytest.approx(1 - (1 - pair.declared) * (1 - pair.learned))
    assert palace.skills.consolidate() == {"activations": 0, "strengthened": 0}
    # Re-importing (even a changed library) keeps what was learned.
    write_skill(library, "postmortem", description="Write up an outage.", tags="ops")
    palace.skills.import_path(library)
    assert {c.name: c for c in palace.skills.get(first[0]).correlations}[
        first[1]
    ].learned == pytest.approx(0.75)
    with pytest.raises(ValidationError, match="rate"):
        palace.skills.consolidate(rate=0)


def test_without_embeddings_skills_still_work(
    make_palace: Callable[..., Palace], library: Path
) -> None:
    palace = make_palace(settings=Settings(embedder="none"))
    report = palace.skills.import_path(library)
    assert len(report.added) == 4
    hits = palace.skills.activate("ffprobe codec resolution")
    assert hits and hits[0].name == "media-validation"
    assert "cosine" not in hits[0].stages


def test_write_skills_is_all_or_nothing(
    hashed: Callable[..., Palace], library: Path, store: Store
) -> None:
    from datetime import datetime, timezone

    from mindpalace.skills.parse import parse_skill_file
    from mindpalace.store.skill_rows import SkillOwner, SkillWrite

    palace = hashed()
    owner = SkillOwner("default")
    skills = [
        parse_skill_file(library / name / "SKILL.md", origin=name)
        for name in ("postmortem", "schedule-post")
    ]
    writes = [
        SkillWrite(s.name, s.digest(), s.origin, palace.skills._new_memory(s, owner), "mem_same")
        for s in skills
    ]
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        store.write_skills(
            owner,
            writes,
            correlations={("postmortem", "schedule-post"): 0.5},
            now=datetime.now(timezone.utc),
        )
    assert palace.stats().memories == 0
    assert store.skills(palace.scope) == [] and store.skill_links(palace.scope) == []


def test_forgotten_skill_is_hidden_then_revived_by_import(
    hashed: Callable[..., Palace], library: Path
) -> None:
    palace = hashed()
    palace.skills.import_path(library)
    memory_id = palace.skills.get("postmortem").memory_id
    palace.forget(memory_id)
    assert "postmortem" not in palace.skills.names()
    with pytest.raises(UnknownSkill):
        palace.skills.get("postmortem")
    result = palace.skills.import_path(library)
    assert result.updated == ("postmortem",)
    assert palace.skills.get("postmortem").memory_id == memory_id
