"""The inspector's components: every cell, heading and caption stays text,
and a table has the shape its columns say."""

from __future__ import annotations

import pytest
from tests.hostile import MARKUP
from tests.ui.test_html import parse, shown

from mindpalace.ui.components import Column, fields, table
from mindpalace.ui.html import h, join


@pytest.mark.parametrize("value", MARKUP)
def test_hostile_cells_stay_text(value: str) -> None:
    page = parse(
        join(
            table([value, Column(value, "num")], [(value, value)], caption=value),
            fields([(value, value)]),
        )
    )
    tags = [tag for tag, _ in page.starts]
    assert tags == [
        *("table", "caption", "thead", "tr", "th", "th", "tbody", "tr", "td", "td"),
        *("table", "tbody", "tr", "th", "td"),
    ]
    assert page.data == [shown(value)] * 7  # caption, 2 headings, 2 cells, a name and a value


def test_columns_give_their_cells_a_class_and_row_headings() -> None:
    columns = [Column("stage", row_heading=True), Column("rank", "num")]
    link = h("a", {"href": "/memories/m1"}, "m1")
    assert table(columns, [("bm25", 1), ("dense", link)], attrs={"class": "stages"}) == (
        '<table class="stages"><thead><tr><th>stage</th><th>rank</th></tr></thead><tbody>'
        '<tr><th scope="row">bm25</th><td class="num">1</td></tr>'
        '<tr><th scope="row">dense</th><td class="num"><a href="/memories/m1">m1</a></td></tr>'
        "</tbody></table>"
    )
    assert fields([("memories", "2")], attrs={"id": "counts"}, value_class="num") == (
        '<table class="fields" id="counts"><tbody>'
        '<tr><th scope="row">memories</th><td class="num">2</td></tr></tbody></table>'
    )


def test_no_rows_is_a_sentence_or_an_empty_table() -> None:
    assert table(["a"], [], empty="No skill.") == '<p class="muted">No skill.</p>'
    assert table(["a"], [], head=False) == "<table><tbody></tbody></table>"


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        table(["a", "b"], [("only one",)])
