"""PostgreSQL's keyword search from postings: the same rows, order and
scores as scoring every visible matching row from the row, whatever the
scope, filters and limit; a common word past the depth read newest first,
within the bound it reports; the postings kept on every write, erasure,
bulk copy and upgrade."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres
from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.models import Category, NewMemory, RecallFilters, Scope, StoreKind, Visibility
from mindpalace.store import pg_erase, pg_postings
from mindpalace.store.migrations import MIGRATIONS
from mindpalace.store.pg_text import ScopeKeyTextSearch
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace
from mindpalace.validation import content_hash

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
# A skewed vocabulary: a few words in most rows, many in few.
WORDS = [f"w{n}" for n in range(60)]
WEIGHTS = [1.0 / (n + 1) for n in range(60)]
AGENTS = ("ann", "bob", "cy")


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, weights=WEIGHTS, k=rng.randint(low, high)))


def _corpus(seed: int, size: int) -> list[tuple[NewMemory, str]]:
    rng = random.Random(seed)
    out = []
    for n in range(size):
        agent = rng.choice(AGENTS)
        visibility = rng.choice(list(Visibility)) if rng.random() < 0.5 else Visibility.ISOLATED
        text = _text(rng, 1, 40)
        out.append(
            (
                NewMemory(
                    content=text,
                    content_hash=content_hash(f"{n} {text}", 32),
                    agent_id=agent,
                    title=_text(rng, 1, 3) if rng.random() < 0.3 else None,
                    context=_text(rng, 1, 5) if rng.random() < 0.2 else None,
                    tags=tuple(rng.sample(WORDS[:20], 2)) if rng.random() < 0.2 else (),
                    visibility=visibility,
                    group="ops" if visibility is Visibility.GROUP else None,
                    category=Category.EVENT if n % 3 else Category.CONVERSATION,
                    store=StoreKind.EPISODIC if n % 2 else StoreKind.SEMANTIC,
                    created_at=NOW + timedelta(seconds=n % 50),  # ties of time
                ),
                f"mem_{n:04d}",
            )
        )
    return out


def _fill(store: PostgresStore, seed: int, size: int) -> None:
    for agent in AGENTS:
        items = [(m, key) for m, key in _corpus(seed, size) if m.agent_id == agent]
        store.add_many(items, now=NOW, scope=Scope(agent_id=agent))


@pytest.fixture(scope="module")
def palace(postgres_server: ThrowawayPostgres) -> Iterator[PostgresStore]:
    url = postgres_server.create()
    store = PostgresStore(url, max_connections=2)
    _fill(store, seed=5, size=600)
    for n in range(0, 600, 17):
        store.archive(f"mem_{n:04d}", owner=None, now=NOW)
    yield store
    store.close()
    postgres_server.drop(url)


READERS = [
    Scope(agent_id="ann"),
    Scope(agent_id="bob", groups=("ops",)),
    Scope.management(),
]
FILTERS = [
    RecallFilters(),
    RecallFilters(include_archived=True),
    RecallFilters(categories=(Category.CONVERSATION,)),
    RecallFilters(stores=(StoreKind.EPISODIC,)),
    # Partitions left out: read for the idf only (a write's restatement look).
    RecallFilters(
        agents=("ann", "cy"),
        visibilities=(Visibility.ISOLATED, Visibility.SHARED),
        categories=(Category.EVENT,),
    ),
]


def _queries(seed: int, count: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(WORDS[: rng.choice((8, 30, 60))], rng.randint(1, 5)) for _ in range(count)]


def _exhaustive(
    store: PostgresStore, terms: list[str], scope: Scope, f: RecallFilters, k: int
) -> Any:
    return ScopeKeyTextSearch.search_text(store, terms, scope, f, limit=k)


def _same_ranking(got: Any, want: Any) -> None:
    """The same scores place by place; rows may differ only where their
    scores tie up to rounding (sums of the same terms in another order)."""
    assert [m.bm25 for m in got] == pytest.approx([m.bm25 for m in want], rel=1e-12)
    scores = {m.memory.id: m.bm25 for m in want}
    last = want[-1].bm25 if want else 0.0
    for a, b in zip(got, want, strict=True):
        if a.memory.id != b.memory.id:
            assert a.bm25 == pytest.approx(b.bm25, rel=1e-12)
            other = scores.get(a.memory.id, last)
            assert other == pytest.approx(a.bm25, rel=1e-12)


@pytest.mark.parametrize("first_top", [1, pg_postings.FIRST_TOP])
def test_postings_rank_as_every_match_is_scored(
    palace: PostgresStore, first_top: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query, reader, filter (one that leaves few of the best rows:
    the search runs again over all, as each does where the first look
    checks fewest) and limit gets the exhaustive search's rows, order and
    scores."""
    monkeypatch.setattr(pg_postings, "FIRST_TOP", first_top)
    runs: list[str] = []
    execute = palace._exec

    def counted(cur: Any, sql: str, params: Any = ()) -> Any:
        runs.append(sql)
        return execute(cur, sql, params)

    monkeypatch.setattr(palace, "_exec", counted)
    for n, terms in enumerate(_queries(1, 40)):
        scope = READERS[n % len(READERS)]
        filters = FILTERS[n % len(FILTERS)]
        for limit in (1, 7, 40, 500):
            want = _exhaustive(palace, terms, scope, filters, limit)
            got = palace.search_text(terms, scope, filters, limit=limit)
            _same_ranking(got, want)
            with palace._read() as cur:
                ranking = palace._rank_postings(cur, terms, scope, filters, limit=limit)
            assert ranking.exact and ranking.unread == 0.0
    scored = [sql for sql in runs if "scored AS MATERIALIZED" in sql]
    searches = [sql for sql in runs if "text_scopes p" in sql and "row_number()" in sql]
    if first_top == 1:
        assert len(scored) > len(searches)  # some search summed again


@pytest.mark.parametrize(("prune", "first_top"), [(150, 1), (150, 16), (250, 1)])
def test_common_words_read_at_the_rarer_words_rows_rank_as_every_match_is_scored(
    palace: PostgresStore, prune: int, first_top: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query with a word past ``PRUNE_POSTINGS`` reads that word only at
    the rows its rarer words found, where the bound allows: every query,
    reader, filter and limit still gets the exhaustive search's rows, order
    and scores, and the shortcut answered many of them."""
    monkeypatch.setattr(pg_postings, "PRUNE_POSTINGS", prune)
    monkeypatch.setattr(pg_postings, "FIRST_TOP", first_top)
    answered: list[bool] = []
    execute = palace._exec

    def counted(cur: Any, sql: str, params: Any = ()) -> Any:
        result = execute(cur, sql, params)
        if "partial AS MATERIALIZED" in sql:
            row = result.fetchone()
            answered.append(bool(row[3]))
            return _Fetched(row)
        return result

    monkeypatch.setattr(palace, "_exec", counted)
    for n, terms in enumerate(_queries(2, 60)):
        scope = READERS[n % len(READERS)]
        filters = FILTERS[n % len(FILTERS)]
        for limit in (1, 3, 7, 40):
            want = _exhaustive(palace, terms, scope, filters, limit)
            got = palace.search_text(terms, scope, filters, limit=limit)
            _same_ranking(got, want)
    assert sum(answered) >= 20  # the shortcut held for many searches
    assert not all(answered)  # and fell back where it could not tell


class _Fetched:
    """A result already fetched, fetched again."""

    def __init__(self, row: Any) -> None:
        self._row = row

    def fetchone(self) -> Any:
        return self._row


def test_a_common_word_past_the_depth_counts_its_newest_rows(palace: PostgresStore) -> None:
    """A word with more visible postings than the depth is read newest
    first: at most ``depth`` of each partition's, and its ``depth`` newest
    across them count. Each row's score then lacks at most ``unread``; the
    rows come in the order of their scores; the newest rows holding the
    cut word alone score as the exhaustive search scores them."""
    scope = Scope.management()
    with palace._read() as cur:
        parts = cur.execute("SELECT COUNT(*) FROM text_scopes WHERE docs > 0").fetchone()
        assert parts is not None
        for terms in (["w0", "w59"], ["w0", "w1", "w40"], ["w2"]):
            ranking = palace._rank_postings(cur, terms, scope, RecallFilters(), limit=30, depth=6)
            assert not ranking.exact and ranking.cut >= 1 and ranking.unread > 0
            # the rare word's postings in full, the common ones' cut
            assert ranking.read <= 6 * int(parts[0]) * len(terms) + 600
            full = {
                m.memory.id: m.bm25
                for m in _exhaustive(palace, terms, scope, RecallFilters(), 10_000)
            }
            ids = _ids(palace, ranking.seqs)
            assert list(ranking.scores) == sorted(ranking.scores, reverse=True)
            for key, score in zip(ids, ranking.scores, strict=True):
                assert score <= full[key] * (1 + 1e-9)
                assert full[key] <= score + ranking.unread + 1e-9
        ranking = palace._rank_postings(cur, ["w2"], scope, RecallFilters(), limit=50, depth=6)
        # the six newest holding it, of which those the default filters admit
        newest = cur.execute(
            "SELECT n.id FROM (SELECT m.id, m.archived, m.superseded_by FROM memories m"
            " WHERE m.fts @@ to_tsquery('mp_english', 'w2') ORDER BY m.seq DESC LIMIT 6) AS n"
            " WHERE n.archived = 0 AND n.superseded_by IS NULL"
        ).fetchall()
    assert newest
    assert sorted(_ids(palace, ranking.seqs)) == sorted(str(r[0]) for r in newest)
    for key, score in zip(_ids(palace, ranking.seqs), ranking.scores, strict=True):
        assert score == pytest.approx(full_w2(palace)[key], rel=1e-9)


def full_w2(store: PostgresStore) -> dict[str, float]:
    """Every row's exhaustive score for ``w2`` alone."""
    return {
        m.memory.id: m.bm25
        for m in _exhaustive(store, ["w2"], Scope.management(), RecallFilters(), 10_000)
    }


def _ids(store: PostgresStore, seqs: tuple[int, ...]) -> list[str]:
    with store._read() as cur:
        rows = cur.execute(
            "SELECT m.id FROM unnest(%s::BIGINT[]) WITH ORDINALITY AS u(seq, o)"
            " JOIN memories m ON m.seq = u.seq ORDER BY u.o",
            [list(seqs)],
        ).fetchall()
    return [str(r[0]) for r in rows]


def _postings(url: str) -> list[tuple[int, int, float, int]]:
    """The postings; with them, each key's kept count checked against them
    (no key left without postings: its row would name an erased word)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT key, seq, f, len FROM text_postings ORDER BY 1, 2").fetchall()
        kept = conn.execute("SELECT key, n FROM text_key_counts ORDER BY key").fetchall()
        counted = conn.execute(
            "SELECT key, COUNT(*) FROM text_postings GROUP BY key ORDER BY key"
        ).fetchall()
    assert [tuple(r) for r in kept] == [tuple(r) for r in counted]
    return [(int(a), int(b), float(c), int(d)) for a, b, c, d in rows]


def _recomputed(url: str) -> list[tuple[int, int, float, int]]:
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TEMPORARY TABLE fresh (LIKE text_postings)")
        conn.execute(pg_postings.FILL_POSTINGS.replace("INTO text_postings", "INTO fresh"))
        rows = conn.execute("SELECT key, seq, f, len FROM fresh ORDER BY 1, 2").fetchall()
    return [(int(a), int(b), float(c), int(d)) for a, b, c, d in rows]


def test_postings_follow_every_write(postgres_url: str) -> None:
    """Adds, an edit of each text column, a move between partitions, an
    archive and a hard delete: the table always equals the postings
    computed afresh from the rows."""
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        _fill(store, seed=2, size=60)
        assert _postings(postgres_url) == _recomputed(postgres_url)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE memories SET content = 'w1 w1 w2 and more' WHERE id = 'mem_0001'")
            conn.execute("UPDATE memories SET title = 'w7 w7 w7' WHERE id = 'mem_0002'")
            conn.execute("UPDATE memories SET context = 'w9' WHERE id = 'mem_0003'")
            conn.execute("UPDATE memories SET tags = '[\"w11\"]' WHERE id = 'mem_0004'")
            conn.execute("UPDATE memories SET agent_id = 'dee' WHERE id = 'mem_0005'")
            # Words only one memory holds: their keys' counts reach 0 and go.
            conn.execute("UPDATE memories SET content = 'w1 zqonly' WHERE id = 'mem_0008'")
            conn.execute("UPDATE memories SET content = 'zqgone w2' WHERE id = 'mem_0007'")
            assert _postings(postgres_url) == _recomputed(postgres_url)
            conn.execute("UPDATE memories SET content = 'w1 w3' WHERE id = 'mem_0008'")
        store.archive("mem_0006", owner=None, now=NOW)
        assert store.delete("mem_0007", owner=None)
        assert _postings(postgres_url) == _recomputed(postgres_url)
        with psycopg.connect(postgres_url) as conn:
            gone = conn.execute(
                "SELECT COUNT(*) FROM text_postings t WHERE NOT EXISTS"
                " (SELECT 1 FROM memories m WHERE m.seq = t.seq)"
            ).fetchone()
        assert gone == (0,)
    finally:
        store.close()


def _counts(url: str) -> tuple[Any, ...]:
    """The keyword counts the triggers keep, and the same counted afresh."""
    scope = "agent_id, visibility, group_name, channel"
    with psycopg.connect(url) as conn:
        kept = conn.execute("SELECT docs, tokens FROM text_stats").fetchall()
        fresh = conn.execute("SELECT COUNT(*), COALESCE(SUM(fts_len), 0) FROM memories").fetchall()
        parts = conn.execute(
            f"SELECT {scope}, docs, tokens FROM text_scopes WHERE docs > 0 ORDER BY 1, 2, 3, 4"
        ).fetchall()
        counted = conn.execute(
            f"SELECT {scope}, COUNT(*), SUM(fts_len) FROM memories GROUP BY {scope}"
            " ORDER BY 1, 2, 3, 4"
        ).fetchall()
    return kept, fresh, parts, counted


def _agent(store: PostgresStore, agent: str) -> Palace:
    return Palace(store=store, agent_id=agent, settings=Settings(agent_id=agent, embedder="none"))


@pytest.mark.parametrize("chunk", [pg_erase.SET_CHUNK, 7])
def test_an_erasure_keeps_the_keyword_records_by_set(
    postgres_url: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent erased (each chunk deleted in one statement with its
    postings, its partitions' and the palace's counts, the row triggers
    standing aside; one chunk, or many): postings and counts equal those
    computed afresh, and the triggers keep them again for the writes after
    it."""
    monkeypatch.setattr(pg_erase, "SET_CHUNK", chunk)
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        _fill(store, seed=3, size=240)
        bob = Palace(
            store=store, agent_id="bob", settings=Settings(agent_id="bob", embedder="none")
        )
        # Part of each partition (its postings one by one), then the rest
        # (whole partitions: their postings by key), then an agent at once.
        for agent, selection in (
            ("bob", Selection.matching(categories="conversation")),
            ("bob", Selection.matching(categories="event")),
            ("cy", Selection.agent()),
        ):
            receipt = _agent(store, agent).erase(selection, confirm=True)
            assert receipt.counts.memories > 0
            assert _postings(postgres_url) == _recomputed(postgres_url)
            kept, fresh, parts, counted = _counts(postgres_url)
            assert [tuple(r) for r in kept] == [tuple(r) for r in fresh]
            assert [tuple(r) for r in parts] == [tuple(r) for r in counted]
        assert not any(r[0] in ("bob", "cy") for r in parts)
        # The writes after it are kept row by row again.
        ann = Palace(
            store=store, agent_id="ann", settings=Settings(agent_id="ann", embedder="none")
        )
        ann.remember("w3 w4 w5 after the erasure")
        bob.remember("w6 bob writes again")
        assert _postings(postgres_url) == _recomputed(postgres_url)
        kept, fresh, parts, counted = _counts(postgres_url)
        assert [tuple(r) for r in kept] == [tuple(r) for r in fresh]
        assert [tuple(r) for r in parts] == [tuple(r) for r in counted]
    finally:
        store.close()


def test_a_bulk_copy_fills_the_postings(tmp_path: Path, postgres_url: str) -> None:
    """A palace copied in bulk (the postings trigger set aside) gets every
    row's postings, vacuumed, and ranks as the exhaustive search."""
    source = SQLiteStore(tmp_path / "source.db")
    for agent in AGENTS:
        items = [(m, key) for m, key in _corpus(4, 120) if m.agent_id == agent]
        source.add_many(items, now=NOW, scope=Scope(agent_id=agent))
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        copy_palace(source, store)
        assert _postings(postgres_url) == _recomputed(postgres_url)
        # Vacuumed after the commit: a word's postings come from the index alone.
        with psycopg.connect(postgres_url) as conn:
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET enable_bitmapscan = off")
            plan = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT COUNT(*) FROM text_postings"
                " WHERE key = (SELECT key FROM text_postings LIMIT 1)"
            ).fetchone()
        assert plan is not None
        assert '"Heap Fetches": 0' in json.dumps(plan[0]).replace("'", '"')
        assert "Index Only Scan" in json.dumps(plan[0])
        for terms in _queries(3, 6):
            want = _exhaustive(store, terms, Scope.management(), RecallFilters(), 20)
            got = store.search_text(terms, Scope.management(), RecallFilters(), limit=20)
            _same_ranking(got, want)
    finally:
        store.close()
        source.close()


@pytest.mark.parametrize("before", [24, 26], ids=["no postings", "no key counts"])
def test_an_older_palace_gets_its_postings_on_upgrade(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]], before: int
) -> None:
    url, store = older_pg_palace(before)
    _fill(store, seed=3, size=40)
    store.close()
    store = PostgresStore(url)
    try:
        assert store.schema_version() == MIGRATIONS[-1].version
        assert _postings(url) and _postings(url) == _recomputed(url)
        terms = ["w0", "w3"]
        want = _exhaustive(store, terms, Scope(agent_id="ann"), RecallFilters(), 10)
        got = store.search_text(terms, Scope(agent_id="ann"), RecallFilters(), limit=10)
        assert want
        _same_ranking(got, want)
    finally:
        store.close()


def test_queries_without_a_matching_word(palace: PostgresStore) -> None:
    """No terms, only stop words, words no row holds, a scope that sees
    nothing, a limit of 0: nothing, and no error."""
    scope = Scope.management()
    assert palace.search_text([], scope, RecallFilters(), limit=5) == []
    assert palace.search_text(["the", "and"], scope, RecallFilters(), limit=5) == []
    assert palace.search_text(["zebra"], scope, RecallFilters(), limit=5) == []
    nobody = Scope(agent_id="nobody", peer=True)  # a peer without a channel sees nothing
    assert palace.search_text(["w0"], nobody, RecallFilters(), limit=5) == []
    assert palace.search_text(["w0"], scope, RecallFilters(), limit=0) == []
