"""The inspector's small component vocabulary, over ``html.h``.

A page says what it shows (columns and rows, names and values) and these
build the markup. Every cell goes through ``h``: a stored string in a cell
is text, always escaped, never markup; a cell that is ``Markup`` (a link, a
list of tags) was built by ``h`` too.

- ``table(columns, rows)``: a table with a heading row (``Column``: its
  heading, the class of its cells, whether its cells head their rows), or a
  muted sentence in its place when there are no rows (``empty``).
- ``fields(pairs)``: a name and a value a row, the names as row headings
  (a memory's fields, an erasure's counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mindpalace.ui.html import Markup, h

__all__ = ["Column", "fields", "table"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a ``table``.

    Attributes:
        heading: the column's heading (text, escaped).
        cell_class: the class of its cells (``num``, ``t``, ``nowrap``, ...).
        row_heading: its cells head their rows (``<th scope="row">``).
    """

    heading: str = ""
    cell_class: str | None = None
    row_heading: bool = False

    def cell(self, value: object) -> Markup:
        """``value`` as one of this column's cells."""
        if self.row_heading:
            return h("th", {"scope": "row", "class": self.cell_class}, value)
        return h("td", {"class": self.cell_class}, value)


def table(
    columns: Sequence[Column | str],
    rows: Iterable[Sequence[object]],
    *,
    attrs: Mapping[str, object] | None = None,
    caption: str | None = None,
    head: bool = True,
    empty: str | None = None,
) -> Markup:
    """A table: one row of cells for each of ``rows``, a cell a column.

    Args:
        columns: the columns, in order (a plain string: a column with that
            heading and no class).
        rows: the rows' cells, each as many as there are columns (text or
            ``Markup``; None leaves a cell empty).
        attrs: the table's attributes (``h``'s).
        caption: the table's caption.
        head: give the table its heading row.
        empty: with no rows, this sentence (muted) instead of the table.

    Raises:
        ValueError: a row whose cells are not as many as the columns.
    """
    shaped = [Column(c) if isinstance(c, str) else c for c in columns]
    body = []
    for row in rows:
        if len(row) != len(shaped):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(shaped)} columns")
        cells = (column.cell(value) for column, value in zip(shaped, row, strict=True))
        body.append(h("tr", None, *cells))
    if not body and empty is not None:
        return h("p", {"class": "muted"}, empty)
    return h(
        "table",
        attrs,
        h("caption", None, caption) if caption is not None else None,
        h("thead", None, h("tr", None, *(h("th", None, c.heading) for c in shaped)))
        if head
        else None,
        h("tbody", None, body),
    )


def fields(
    pairs: Iterable[tuple[str, object]],
    *,
    attrs: Mapping[str, object] | None = None,
    value_class: str | None = None,
) -> Markup:
    """Names and values, one pair a row, each name heading its row.

    Args:
        pairs: (name, value): text or ``Markup`` each.
        attrs: the table's attributes (``class`` defaults to ``fields``).
        value_class: the class of the value cells.
    """
    columns = [Column(row_heading=True), Column(cell_class=value_class)]
    return table(columns, pairs, attrs={"class": "fields", **(attrs or {})}, head=False)
