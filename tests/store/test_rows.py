"""A stored row and the ``Memory`` it stands for convert both ways without
loss, for every value of every enum column, with and without tags and
metadata; a value no enum knows is refused, not mapped to a default."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest

from mindpalace.models import (
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    Source,
    StoreKind,
    Visibility,
)
from mindpalace.store.fragments import MEMORY_COLUMNS, memory_row, row_to_memory


def _memory(i: int, **changes: object) -> Memory:
    base = dict(
        id=f"mem_{i}",
        content=f"content {i}",
        content_hash=f"{i:064x}",
        agent_id="ana",
        title=None,
        context=None,
        session=None,
        type=MemoryType.UNKNOWN,
        store=StoreKind.SEMANTIC,
        category=Category.FACT,
        tags=(),
        source=Source.MANUAL,
        visibility=Visibility.ISOLATED,
        group=None,
        channel=None,
        created_at=datetime(2025, 3, 1, 12, 30, tzinfo=timezone.utc),
        updated_at=datetime(2025, 3, 2, 8, 0, 15, 250_000, tzinfo=timezone.utc),
        last_accessed_at=None,
        valid_from=None,
        valid_to=None,
        superseded_by=None,
        strength=0.5,
        confidence=1.0,
        access_count=0,
        archived=False,
        constraint=False,
        metadata={},
        kind=MemoryKind.MEMORY,
        project=None,
        completed=None,
    )
    base.update(changes)
    return Memory(**base)  # type: ignore[arg-type]


ENUMS = [
    ("type", MemoryType),
    ("store", StoreKind),
    ("category", Category),
    ("source", Source),
    ("visibility", Visibility),
    ("kind", MemoryKind),
]


@pytest.mark.parametrize(("field", "enum"), ENUMS)
def test_every_enum_value_round_trips(field: str, enum: type) -> None:
    for i, value in enumerate(enum):
        memory = _memory(i, **{field: value})
        again = row_to_memory(memory_row(memory))
        assert again == memory
        assert getattr(again, field) is value


def test_every_column_round_trips() -> None:
    memory = _memory(
        7,
        title="Deploy",
        context="the turn before",
        session="s-1",
        tags=("ops", "deploy"),
        group="team-red",
        channel="slack",
        last_accessed_at=datetime(2025, 4, 1, tzinfo=timezone.utc),
        valid_from=datetime(2025, 1, 1, tzinfo=timezone.utc),
        valid_to=datetime(2026, 1, 1, tzinfo=timezone.utc),
        superseded_by="mem_9",
        strength=0.75,
        confidence=0.25,
        access_count=3,
        archived=True,
        constraint=True,
        metadata={"a": [1, 2], "b": {"c": None}},
        project="mindpalace",
        completed=True,
    )
    row = memory_row(memory)
    assert len(row) == len(MEMORY_COLUMNS)
    assert row_to_memory(row) == memory
    for blank in (_memory(1), _memory(2, completed=False)):
        again = row_to_memory(memory_row(blank))
        assert again == blank
        assert again.metadata == {} and again.tags == ()


def test_each_empty_metadata_is_its_own_dict() -> None:
    row = memory_row(_memory(1))
    first, second = row_to_memory(row), row_to_memory(row)
    first.metadata["x"] = 1
    assert second.metadata == {}


@pytest.mark.parametrize("column", [field for field, _ in ENUMS])
def test_a_value_no_enum_knows_is_refused(column: str) -> None:
    row = list(memory_row(_memory(1)))
    row[MEMORY_COLUMNS.index(column)] = "no-such-value"
    with pytest.raises(ValueError, match="no-such-value"):
        row_to_memory(row)


def test_the_columns_are_the_ones_row_to_memory_unpacks() -> None:
    # Every column lands in its own field: give each a distinct value.
    memory = _memory(3, title="T", context="C", session="S", group="G", channel="H", project="P")
    row = memory_row(memory)
    pairs = dict(zip(MEMORY_COLUMNS, row, strict=True))
    again = row_to_memory(row)
    for column, field in itertools.chain(
        [("title", "title"), ("context", "context"), ("session_id", "session")],
        [("group_name", "group"), ("channel", "channel"), ("project", "project")],
    ):
        assert getattr(again, field) == pairs[column]
