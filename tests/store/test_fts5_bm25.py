"""The re-scoring of FTS5's ``bm25()`` (``store/fts5_bm25.py``): its shadow
records are read as FTS5 wrote them, F is recovered exactly from FTS5's own
scores, and the bound the search windows rely on holds."""

from __future__ import annotations

import random
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from mindpalace.store.fts5_bm25 import (
    bm25_term,
    index_lengths,
    term_frequency,
    tokens_each,
    tokens_in,
    varints,
)
from mindpalace.store.scoped_text import fts5_idf
from mindpalace.store.sqlite_rank import Scoring

WEIGHTS = (1.5, 1.0, 0.5, 1.0)


def _table(rows: list[tuple[str, str, str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(title, content, context, tags)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    db.commit()
    return db


def _rows(count: int, seed: int = 5) -> list[tuple[str, str, str, str]]:
    rng = random.Random(seed)

    def words(high: int) -> str:
        return " ".join(rng.choice(["kiwi", "plum", "fig", "pear"]) for _ in range(high))

    # Lengths past 127 and 16383 tokens: varints of one, two and three bytes.
    sizes = [0, 1, 5, 127, 128, 300, 16384, 20000]
    return [
        (words(rng.choice(sizes[:4])), words(rng.choice(sizes)), words(rng.randint(0, 3)), "")
        for _ in range(count)
    ]


def test_shadow_records_read_as_fts5_counts() -> None:
    rows = _rows(40)
    db = _table(rows)
    sizes = dict(db.execute("SELECT id, sz FROM t_docsize").fetchall())
    for rowid, row in enumerate(rows, start=1):
        assert varints(sizes[rowid]) == [len(col.split()) for col in row]
    total = sum(len(col.split()) for row in rows for col in row)
    assert tokens_in(list(sizes.values())) == total
    averages = db.execute("SELECT block FROM t_data WHERE id = 1").fetchone()[0]
    assert index_lengths(averages) == (len(rows), total / len(rows))
    assert tokens_in([]) == 0
    ordered = [sizes[rowid] for rowid in range(1, len(rows) + 1)]
    assert tokens_each(ordered).tolist() == [sum(len(col.split()) for col in row) for row in rows]
    assert tokens_each([]).tolist() == []


def test_term_frequency_is_recovered_from_fts5s_score() -> None:
    rows = _rows(60, seed=9)
    db = _table(rows)
    averages = db.execute("SELECT block FROM t_data WHERE id = 1").fetchone()[0]
    count, avgdl = index_lengths(averages)
    for word in ("kiwi", "plum", "fig"):
        hits = db.execute("SELECT COUNT(*) FROM t WHERE t MATCH ?", (word,)).fetchone()[0]
        idf = fts5_idf(count, hits)
        found = db.execute(
            "SELECT rowid, -bm25(t, 1.5, 1.0, 0.5, 1.0), (SELECT sz FROM t_docsize"
            " WHERE id = t.rowid) FROM t WHERE t MATCH ?",
            (word,),
        ).fetchall()
        assert found
        for rowid, score, size in found:
            row = rows[rowid - 1]
            tf = sum(w * col.split().count(word) for w, col in zip(WEIGHTS, row, strict=True))
            assert term_frequency(score, idf, sum(varints(size)), avgdl) == tf


@given(
    tf=st.integers(1, 4000).map(lambda n: n / 2),
    length=st.integers(0, 50_000),
    avgdl=st.floats(1.0, 5000.0),
    idf=st.floats(1e-6, 20.0),
)
def test_no_row_scores_past_the_ceiling_of_its_word(
    *, tf: float, length: int, avgdl: float, idf: float
) -> None:
    # The bound the exact keyword search stops reading by (sqlite_rank.py).
    assert bm25_term(idf, tf, length, avgdl) <= Scoring(idf, avgdl).ceiling()  # type: ignore[arg-type]
