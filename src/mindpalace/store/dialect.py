"""What differs between SQL backends, and nothing else.

Shared SQL is written once with ``?`` placeholders; a dialect rewrites the
placeholders, names its column types and owns its full-text index.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Dialect", "array_literal"]


class Dialect(abc.ABC):
    """The per-backend part of the SQL."""

    name: str
    serial_pk: str  # auto-increment integer primary key column type
    ref_type: str  # column type of a reference to that key
    float_type: str
    blob_type: str
    lower: str = "LOWER"  # a Unicode-aware lower-case function
    placeholder: str = "?"
    # One column: the palace's tables, without full-text index internals.
    list_tables_sql: str
    # "table.column" names this backend derives itself (never data to copy).
    derived_columns: frozenset[str] = frozenset()

    def before_bulk_insert(self) -> list[str]:
        """Statements to run, in the copy's transaction, before a whole
        palace is inserted into an empty one: e.g. setting aside indexes
        that are cheaper to build once over every row than to keep up row
        by row (``after_bulk_insert`` builds them again)."""
        return []

    def after_bulk_insert(self, tables: Mapping[str, Sequence[str]]) -> list[str]:
        """Statements to run after rows were inserted with explicit keys
        (``tables``: table -> columns written), e.g. to move sequences on."""
        return []

    def derived_values(
        self, table: str, columns: Sequence[str]
    ) -> list[tuple[str, Callable[[Sequence[Any]], Any]]]:
        """Derived columns of ``table`` a bulk copy fills itself, each with
        how to compute it from a copied row (of ``columns``), where that is
        cheaper than the backend deriving it (none by default)."""
        return []

    def marks(self, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """What goes inside ``IN (...)`` for ``values``, and its parameters:
        one placeholder per value by default."""
        return ", ".join("?" for _ in values), list(values)

    def pair_rows(self, pairs: Sequence[tuple[int, int]]) -> tuple[str, list[Any]]:
        """A derived table of ``pairs`` (columns ``a`` and ``b``), for a
        join that probes a two-column key once per pair, and its
        parameters: one ``VALUES`` row per pair by default."""
        rows = ", ".join("(?, ?)" for _ in pairs)
        flat = [v for pair in pairs for v in pair]
        return f"(SELECT column1 AS a, column2 AS b FROM (VALUES {rows}))", flat

    def sql(self, text: str) -> str:
        """Rewrite shared SQL (``?`` placeholders) for this backend."""
        if self.placeholder == "?":
            return text
        return text.replace("?", self.placeholder)

    @abc.abstractmethod
    def text_index_schema(self) -> list[str]:
        """Statements creating the full-text index kept in sync with ``memories``."""

    def scoped_text_schema(self) -> list[str]:
        """Statements creating a text index partitioned by scope, so a
        search reads only the partitions its caller may see (none by
        default: the backend searches its one index)."""
        return []

    def scope_key_schema(self) -> list[str]:
        """Statements indexing each row's words under its scope partition,
        with each partition's row count, for a backend whose text index
        cannot be partitioned itself (none by default: SQLite's is, since
        ``scoped_text_schema``)."""
        return []

    def scope_tokens_schema(self) -> list[str]:
        """Statements keeping each partition's total length beside its row
        count (``scope_key_schema``), backfilled, so a search's mean length
        is that of the rows its caller sees (none by default)."""
        return []

    def partition_counts_schema(self) -> list[str]:
        """Statements keeping the partitioned text index's rows and tokens
        by partition (``scoped_text_schema``), backfilled (none by default:
        ``scope_tokens_schema`` keeps them where there is no such index)."""
        return []

    def one_text_index_schema(self) -> list[str]:
        """Statements dropping the whole-palace text index where the
        partitioned one (``scoped_text_schema``) serves every search, with
        what that search reads beside it (none by default: the backend
        keeps one index)."""
        return []

    def text_postings_schema(self) -> list[str]:
        """Statements keeping each row's words as postings per scope
        partition's key, with their counts and the row's length, backfilled,
        so a keyword search scores rows without reading them (none by
        default: SQLite's FTS5 index and the warm keyword index rank their
        own)."""
        return []

    def key_counts_schema(self) -> list[str]:
        """Statements keeping each posting key's count as postings are
        written, backfilled (none by default: no postings)."""
        return []

    def set_delete_schema(self) -> list[str]:
        """Statements letting an erasure keep by set the records row
        triggers keep (none by default: SQLite updates a row in place)."""
        return []

    def vector_storage_schema(self) -> list[str]:
        """Statements tuning how stored vectors are laid out (none by default)."""
        return []

    def half_vector_schema(self) -> list[str]:
        """Statements letting SQL the backend runs read half-precision
        vector bytes (none by default: only Python reads them)."""
        return []

    def keyed_tables_schema(self) -> list[str]:
        """Statements storing the graph's link tables (mentions, edges) in
        the order of their keys, without a separate key index (none by
        default: the backend has no separate row id)."""
        return []

    def short_keys_schema(self, short: int, full: int) -> list[str]:
        """Statements recording how many hex digits the palace keys texts by
        (``palace_meta`` ``hash_chars``): ``short`` for a palace without
        rows; ``full`` for one that holds rows, whose keys stay as they
        are (by default: cutting them is the backend's to offer)."""
        return [
            "INSERT INTO palace_meta (key, value) SELECT 'hash_chars', CASE WHEN"
            " EXISTS (SELECT 1 FROM memories) OR EXISTS (SELECT 1 FROM embeddings)"
            f" OR EXISTS (SELECT 1 FROM part_vectors) THEN {full} ELSE {short} END"
            " ON CONFLICT (key) DO NOTHING"
        ]

    def vector_codes_schema(self, code: str, codes: str) -> list[str]:
        """Statements letting the vector tables key a model by a code (the
        ``codes`` counter in ``palace_meta``, each model's code under
        ``code`` + its name): in a palace without vectors; one that holds
        some keeps their models' names (by default: rewriting its rows is
        the backend's to offer)."""
        return [
            f"INSERT INTO palace_meta (key, value) SELECT '{codes}', 0"
            " WHERE NOT EXISTS (SELECT 1 FROM embeddings)"
            " AND NOT EXISTS (SELECT 1 FROM part_vectors)"
            " ON CONFLICT (key) DO NOTHING"
        ]

    def vector_index_schema(self) -> list[str]:
        """Statements giving the stored vectors a nearest-neighbour index the
        backend keeps itself (none by default: recall's in-process graph
        serves)."""
        return []


def array_literal(values: Iterable[int] | Iterable[str]) -> str:
    """The text of a PostgreSQL array of ``values`` (all integers, or all
    strings, each quoted with its backslashes and double quotes escaped),
    for a parameter cast to ``BIGINT[]`` or ``TEXT[]``: psycopg's own
    dumping of a list checked each string with a regular expression and
    each integer's size (an erasure at a million sends each of its keys
    several times)."""
    items: list[object] = list(values)
    strings = [v for v in items if isinstance(v, str)]
    if len(strings) == len(items):
        if not strings:
            return "{}"
        quoted = (
            v if "\\" not in v and '"' not in v else v.replace("\\", "\\\\").replace('"', '\\"')
            for v in strings
        )
        return '{"' + '","'.join(quoted) + '"}'
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return "{" + ",".join(map(str, items)) + "}"
    raise TypeError("an array's values are all integers or all strings")
