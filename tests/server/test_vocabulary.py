"""Every value of every fixed set is said what it means, once, and the
tools' argument descriptions carry it."""

from __future__ import annotations

import enum

import pytest

from mindpalace.family import DIRECTIONS
from mindpalace.retrieval.modes import MODES
from mindpalace.selection import SELECTION_KINDS
from mindpalace.server.tools import OPERATIONS
from mindpalace.vocabulary import MEANINGS


@pytest.mark.parametrize("values", list(MEANINGS), ids=str)
def test_each_table_covers_its_set_exactly(values: type[enum.Enum] | str) -> None:
    expected = (
        {
            "mode": list(MODES),
            "direction": list(DIRECTIONS),
            "selection": list(SELECTION_KINDS),
        }.get(values)
        if isinstance(values, str)
        else [m.value for m in values]
    )
    assert list(MEANINGS[values]) == expected
    assert all(len(text) > 3 for text in MEANINGS[values].values())


def test_every_enum_argument_describes_each_value() -> None:
    described = 0
    for op in OPERATIONS:
        for name, schema in op.input_schema["properties"].items():
            values = schema.get("enum", schema.get("items", {}).get("enum", []))
            for value in values:
                assert f"{value}: " in schema["description"], (op.name, name, value)
            described += bool(values)
    assert described >= 15
