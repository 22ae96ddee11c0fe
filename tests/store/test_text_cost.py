"""Keyword search costs what the caller may see, not what other scopes hold.

A word held only by another agent's private memories must cost the caller's
search about what a word nobody has costs: otherwise the time of a search
tells whether (and how often) a word occurs where the caller may not read.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone

from bench.textcost import statement_work
from mindpalace.models import NewMemory, RecallFilters, Scope
from mindpalace.store import Store
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.validation import content_hash

OTHER_ROWS = 5000
CALLER = Scope(agent_id="caller")
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
# The word only the other agent has, and one nobody has.
HIDDEN = "zanzibar"
ABSENT = "quixotry"


def _fill(store: Store) -> None:
    def new(agent: str, text: str) -> NewMemory:
        return NewMemory(content=text, content_hash=content_hash(text, 32), agent_id=agent)

    other = Scope(agent_id="other")
    for start in range(0, OTHER_ROWS, 1000):
        items = [
            (new("other", f"note {i} about {HIDDEN} trip and plans"), f"mem_o{i}")
            for i in range(start, start + 1000)
        ]
        store.add_many(items, now=NOW, scope=other)
    mine = [(new("caller", f"caller note {i} on plans"), f"mem_c{i}") for i in range(50)]
    store.add_many(mine, now=NOW, scope=CALLER)


def _search(store: Store, word: str) -> Callable[[], object]:
    return lambda: store.search_text([word], CALLER, RecallFilters(), limit=20)


def _median_ratio(store: Store, runs: int = 41) -> float:
    """Median time of searching the secret word over a word nobody has,
    the two interleaved; each search runs after a write, so no cache of an
    earlier search serves it (a cold CLI call's cost)."""
    secret, absent = _search(store, HIDDEN), _search(store, ABSENT)
    times: dict[str, list[float]] = {"secret": [], "absent": []}
    for i in range(runs):
        order = [("secret", secret), ("absent", absent)]
        for name, call in order if i % 2 else reversed(order):
            _touch(store, i, name)
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["secret"]) / statistics.median(times["absent"])


def _touch(store: Store, i: int, name: str) -> None:
    text = f"touch {name} {i}"
    store.add(
        NewMemory(content=text, content_hash=content_hash(text, 32), agent_id="toucher"),
        memory_id=f"mem_t{name}{i}",
        now=NOW,
        scope=Scope(agent_id="toucher"),
    )


def test_secret_word_costs_what_an_absent_word_costs(store: Store) -> None:
    _fill(store)
    assert not store.search_text([HIDDEN], CALLER, RecallFilters(), limit=20)
    ratio = _median_ratio(store)
    assert ratio < 3.0, f"a word only another scope holds costs {ratio:.1f}x an absent one"


def _vm_steps(store: SQLiteStore, call: Callable[[], object]) -> int:
    """SQLite virtual-machine steps ``call`` runs (in thousands): work, not time."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = store._conn  # the test counts the connection's work
    conn.set_progress_handler(count, 1000)
    try:
        call()
    finally:
        conn.set_progress_handler(None, 0)
    return steps


def test_secret_word_does_the_work_of_an_absent_word(tmp_path: object) -> None:
    store = SQLiteStore(f"{tmp_path}/palace.db")
    try:
        _fill(store)
        _touch(store, 0, "steps")  # no cached count serves either search
        secret = _vm_steps(store, _search(store, HIDDEN))
        _touch(store, 1, "steps")
        absent = _vm_steps(store, _search(store, ABSENT))
    finally:
        store.close()
    assert secret <= 3 * max(absent, 1), (secret, absent)


def test_postgres_secret_word_does_the_work_of_an_absent_word(postgres_url: str) -> None:
    """On PostgreSQL, work is the rows the search's plans produce and the
    buffers they touch (``EXPLAIN (ANALYZE, BUFFERS)`` of each statement):
    the BM25 in SQL that counted every match of a word, and filtered every
    match by scope, produced thousands of rows for the hidden word and none
    for the absent one (a few milliseconds at 5,000 rows, under a larger
    cost every search paid to count the palace)."""
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        _fill(store)
        _touch(store, 0, "work")
        secret = statement_work(store, _search(store, HIDDEN))
        _touch(store, 1, "work")
        absent = statement_work(store, _search(store, ABSENT))
        # The same search for a word the caller holds does work (the measure can fail).
        _touch(store, 2, "work")
        own = statement_work(store, _search(store, "caller"))
    finally:
        store.close()
    assert own["rows"] >= 50, own
    for measure in ("rows", "buffers"):
        assert secret[measure] <= 3 * max(absent[measure], 20), (measure, secret, absent)
