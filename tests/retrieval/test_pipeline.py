"""Pure stages of the recall pipeline: range_normalise, session_support,
squash, ranks_of, and the words the unknown-entity gate looks at."""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mindpalace.retrieval.sparse import STOPWORDS, gate_terms, query_terms, salient_terms
from mindpalace.retrieval.stages import (
    SessionLayout,
    range_normalise,
    ranks_of,
    session_support,
    squash,
)

finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_subnormal=False, width=32)
grid = st.integers(min_value=-1000, max_value=1000).map(lambda i: i / 1000)


@st.composite
def values_and_mask(draw: st.DrawFn) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    n = draw(st.integers(min_value=0, max_value=30))
    values = draw(hnp.arrays(np.float32, n, elements=finite))
    mask = draw(hnp.arrays(np.bool_, n))
    return values, mask


# -- range_normalise ------------------------------------------------------------------


def test_range_normalise_example() -> None:
    values = np.array([0.2, 0.9, -0.5, 0.5, 0.1], dtype=np.float32)
    mask = np.array([True, True, False, True, False])
    out = range_normalise(values, mask)
    assert out.dtype == np.float64
    assert out.tolist() == pytest.approx([0.0, 1.0, 0.0, 3 / 7, 0.0], abs=1e-6)


def test_range_normalise_constant_and_empty() -> None:
    values = np.array([0.4, 0.4, 0.9], dtype=np.float32)
    assert range_normalise(values, np.array([True, True, False])).tolist() == [1.0, 1.0, 0.0]
    assert range_normalise(values, np.zeros(3, dtype=bool)).tolist() == [0.0, 0.0, 0.0]
    assert range_normalise(np.zeros(0, dtype=np.float32), np.zeros(0, dtype=bool)).shape == (0,)


@settings(max_examples=150)
@given(values_and_mask())
def test_range_normalise_invariants(
    case: tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]],
) -> None:
    values, mask = case
    out = range_normalise(values, mask)
    assert out.shape == values.shape
    assert ((out >= 0.0) & (out <= 1.0)).all()
    assert (out[~mask] == 0.0).all()  # rows outside the mask never score
    if mask.any():
        chosen = values[mask].astype(np.float64)
        assert out[mask].max() == 1.0
        if chosen.max() > chosen.min():
            assert out[mask].min() == 0.0
            # order-preserving on the masked rows
            order = np.argsort(chosen, kind="stable")
            assert (np.diff(out[mask][order]) >= -1e-12).all()
        else:
            assert (out[mask] == 1.0).all()


@settings(max_examples=60)
@given(
    st.lists(st.tuples(grid, st.booleans()), max_size=30),
    st.floats(min_value=-2, max_value=2),
    st.floats(min_value=0.1, max_value=5),
)
def test_range_normalise_ignores_affine_maps(
    rows: list[tuple[float, bool]], shift: float, scale: float
) -> None:
    values = np.array([v for v, _ in rows], dtype=np.float64)
    mask = np.array([m for _, m in rows], dtype=bool)
    a = range_normalise(values, mask)  # type: ignore[arg-type]
    b = range_normalise(values * scale + shift, mask)  # type: ignore[arg-type]
    np.testing.assert_allclose(a, b, atol=1e-9)


# -- session_support ------------------------------------------------------------------

NEG = -math.inf


def _groups(
    sessions: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """order / position / group_start / group_end / in_session for rows with
    these session names ("" is no session), as DenseIndex builds them."""
    names = sorted(set(sessions))
    codes = np.array([names.index(s) for s in sessions], dtype=np.int64)
    order = np.argsort(codes, kind="stable").astype(np.int64)
    position = np.empty(len(codes), dtype=np.int64)
    position[order] = np.arange(len(codes))
    start = np.empty(len(codes), dtype=np.int64)
    end = np.empty(len(codes), dtype=np.int64)
    for code in set(codes.tolist()):
        places = np.flatnonzero(codes[order] == code)
        start[codes == code] = places.min()
        end[codes == code] = places.max() + 1
    return order, position, start, end, np.array([s != "" for s in sessions], dtype=bool)


@given(st.lists(st.sampled_from(["", "a", "b", "c"]), max_size=30))
def test_session_layout_of_matches_the_reference(sessions: list[str]) -> None:
    names = sorted(set(sessions))
    codes = np.array([names.index(s) for s in sessions], dtype=np.int32)
    layout = SessionLayout.of(codes, [i for i, name in enumerate(names) if name == ""])
    expected = _groups(sessions)
    for got, want in zip(
        (layout.order, layout.position, layout.group_start, layout.group_end, layout.in_session),
        expected,
        strict=True,
    ):
        assert got.tolist() == want.tolist()


def _support(
    fused: list[float],
    sessions: list[str],
    rows: list[int] | None = None,
    *,
    neighbour: float = 0.0,
    session: float = 0.0,
    top: int = 3,
) -> dict[int, float]:
    values = np.array(fused, dtype=np.float64)
    # A hidden row reads -inf here; what hides it is the mask.
    return session_support(
        np.where(np.isfinite(values), values, 0.0),
        np.isfinite(values),
        range(len(fused)) if rows is None else rows,
        SessionLayout(*_groups(sessions)),
        neighbour_weight=neighbour,
        session_weight=session,
        session_top=top,
    )


def test_hidden_rows_are_skipped_and_sessions_need_not_be_adjacent() -> None:
    # session a's turns are rows 0, 2, 4; row 1 (session b) and row 3 (hidden) sit between
    fused = [1.0, 0.9, 0.2, NEG, 0.6]
    out = _support(fused, ["a", "b", "a", "a", "a"], neighbour=0.5)
    assert out[2] == pytest.approx(0.5 * 1.0)  # neighbours in a: rows 0 and (3 hidden) 4
    assert out[4] == pytest.approx(0.5 * 0.2)  # skips hidden row 3, reaches row 2
    assert out[1] == 0.0  # alone in session b


def test_session_support_neighbour_share() -> None:
    # rows 0-2 are session a, row 3 session b, row 4 no session
    fused = [0.2, 1.0, 0.4, 0.9, 0.8]
    out = _support(fused, ["a", "a", "a", "b", ""], neighbour=0.3)
    # row 4 is in no session: its own neighbour (a memory written on its own)
    assert out == pytest.approx({0: 0.3, 1: 0.3 * 0.4, 2: 0.3, 3: 0.0, 4: 0.3 * 0.8})


def test_session_support_session_mean_of_top() -> None:
    fused = [0.2, 1.0, 0.4, 0.6, 0.9]
    out = _support(fused, ["a", "a", "a", "a", "b"], session=0.5, top=2)
    mean_a = (1.0 + 0.6) / 2
    assert out == pytest.approx(
        {0: 0.5 * mean_a, 1: 0.5 * mean_a, 2: 0.5 * mean_a, 3: 0.5 * mean_a, 4: 0.5 * 0.9}
    )


def test_session_support_out_of_scope_rows_give_nothing() -> None:
    # -inf marks rows the reader may not see: a strong hidden neighbour lends nothing
    fused = [NEG, 0.3, NEG]
    out = _support(fused, ["a", "a", "a"], neighbour=0.5, session=0.5)
    assert out == pytest.approx({0: 0.5 * 0.3 + 0.5 * 0.3, 1: 0.5 * 0.3, 2: 0.5 * 0.3 + 0.5 * 0.3})
    alone = _support([NEG, 0.3, NEG], ["a", "a", "a"], [1], neighbour=0.5)
    assert alone == {1: 0.0}


def test_session_support_does_not_cross_session_boundaries() -> None:
    out = _support([1.0, 0.1, 1.0], ["a", "b", "c"], neighbour=1.0, session=0.0)
    assert out[1] == 0.0


def test_session_support_zero_weights_give_zero() -> None:
    out = _support([1.0, 0.5, 0.7], ["a", "a", "a"], neighbour=0.0, session=0.0)
    assert out == {0: 0.0, 1: 0.0, 2: 0.0}


def test_session_support_negative_scores_lend_nothing() -> None:
    out = _support([-0.5, 0.2, -0.9], ["a", "a", "a"], [1], neighbour=1.0, session=1.0)
    assert out == {1: 0.0}


@st.composite
def support_case(draw: st.DrawFn) -> tuple[list[float], list[str], list[int], float, float, int]:
    n = draw(st.integers(min_value=1, max_value=20))
    fused = draw(
        st.lists(
            st.one_of(st.just(NEG), st.floats(0.0, 1.5, allow_nan=False)), min_size=n, max_size=n
        )
    )
    sessions = draw(st.lists(st.sampled_from(["", "a", "b"]), min_size=n, max_size=n))
    rows = draw(st.lists(st.integers(0, n - 1), unique=True))
    neighbour = draw(st.floats(0.0, 1.0))
    session = draw(st.floats(0.0, 1.0))
    top = draw(st.integers(1, 5))
    return fused, sessions, rows, neighbour, session, top


@settings(max_examples=150)
@given(support_case())
def test_session_support_invariants(
    case: tuple[list[float], list[str], list[int], float, float, int],
) -> None:
    fused, sessions, rows, neighbour, session, top = case
    out = _support(fused, sessions, rows, neighbour=neighbour, session=session, top=top)
    assert set(out) == set(rows)
    finite = [v for v in fused if math.isfinite(v)]
    bound = (neighbour + session) * max(finite, default=0.0)
    for row, value in out.items():
        assert math.isfinite(value)
        assert 0.0 <= value <= bound + 1e-9
        if sessions[row] == "":  # in no session: its own neighbour and session
            assert value == pytest.approx((neighbour + session) * max(0.0, fused[row]))
    # a row's support never depends on rows of other sessions
    for row in rows:
        changed = list(fused)
        for other in range(len(fused)):
            if sessions[other] != sessions[row]:
                changed[other] = 1.5 if math.isfinite(changed[other]) else NEG
        again = _support(changed, sessions, [row], neighbour=neighbour, session=session, top=top)
        assert again[row] == pytest.approx(out[row])


@settings(max_examples=80)
@given(support_case(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_session_support_grows_with_weights(
    case: tuple[list[float], list[str], list[int], float, float, int], more_n: float, more_s: float
) -> None:
    fused, sessions, rows, neighbour, session, top = case
    low = _support(fused, sessions, rows, neighbour=neighbour, session=session, top=top)
    high = _support(
        fused, sessions, rows, neighbour=neighbour + more_n, session=session + more_s, top=top
    )
    assert all(high[r] >= low[r] - 1e-12 for r in rows)


# -- squash -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ceiling", "expected"),
    [
        (0.5, 1.0, 0.5),
        (1.0, 1.0, 1.0),
        (1.7, 1.0, 1.0),
        (0.0, 1.0, 0.0),
        (-0.3, 1.0, 0.0),
        (0.3, 0.0, 0.0),
        (0.3, -1.0, 0.0),
        (0.5, 2.0, 0.25),
    ],
)
def test_squash_examples(value: float, ceiling: float, expected: float) -> None:
    assert squash(value, ceiling) == pytest.approx(expected)


@given(
    st.floats(-10, 10, allow_nan=False),
    st.floats(-10, 10, allow_nan=False),
    st.floats(0.01, 10),
)
def test_squash_is_bounded_and_monotone(a: float, b: float, ceiling: float) -> None:
    low, high = sorted((a, b))
    assert 0.0 <= squash(low, ceiling) <= squash(high, ceiling) <= 1.0


# -- ranks_of -------------------------------------------------------------------------------


def test_ranks_of_counts_only_masked_rows() -> None:
    values = np.array([0.1, 0.9, 0.5, 0.95, 0.5], dtype=np.float32)
    mask = np.array([True, True, True, False, True])
    rank = ranks_of(values, mask)
    assert [rank(r) for r in (1, 2, 4, 0)] == [1, 2, 2, 4]


@given(values_and_mask())
def test_ranks_of_matches_counting(
    case: tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]],
) -> None:
    values, mask = case
    rank = ranks_of(values, mask)
    chosen = values[mask]
    for row in np.flatnonzero(mask):
        assert rank(int(row)) == 1 + int((chosen > values[row]).sum())


# -- the words the unknown-entity gate looks at -------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did Zanzibar Quimby say about NASA?", ["zanzibar", "quimby", "nasa"]),
        ("Zanzibar is lovely", []),  # sentence-initial capital: not a name
        ("NASA launched it", ["nasa"]),  # acronyms count anywhere
        ("where is the office", []),
        ("Tell me about The Beatles and I", ["beatles"]),  # stopwords never count
        ("Hello there. Bob went home! Carol stayed", []),  # each sentence start ignored
        ("hello there, Bob went home", ["bob"]),
        ('She said "Dave" was there (Eve too)', []),  # after quotes and brackets
        ("ask Alice and alice and ALICE", ["alice"]),  # folded, first seen once
        ("the API of PostgreSQL uses SQL", ["api", "postgresql", "sql"]),
        ("meet Zoë in Zürich", ["zoë", "zürich"]),
        ("", []),
        ("   ", []),
        ("??? !!!", []),
    ],
)
def test_salient_terms(text: str, expected: list[str]) -> None:
    assert salient_terms(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Can you suggest a hotel for my trip to Miami?", []),  # where: may be new
        ("What did Caroline do in Paris?", ["caroline"]),
        ("restaurants near Shibuya for NASA folks", ["nasa"]),
        ("we met at Google and visiting Oslo", []),
        ("Paris told me to go to Paris", ["paris"]),  # also named as who: kept
        ("What did Zanzibar Quimby say about NASA?", ["zanzibar", "quimby", "nasa"]),
        ("a gift for Caroline", ["caroline"]),
        ("Can a Muslim family get a halal parcel?", []),  # a kind, not a name
        ("How do I get the plan to my TA? Ask Bob", ["bob"]),  # a role
        ("My CFO is our CFO", []),
        ("Is the CFO my CFO?", ["cfo"]),  # also named without a determiner: kept
        ("Who did I go with to the concert last Saturday?", []),  # when, not who
        ("What did Melanie paint in May and on Sunday?", ["melanie"]),
        ("What did Jan say about the SAT?", ["jan", "sat"]),  # short forms may be names
        ("", []),
    ],
)
def test_gate_terms_leave_out_places_someone_goes_to(text: str, expected: list[str]) -> None:
    assert gate_terms(text) == expected


def _salient_by_definition(text: str) -> list[str]:
    """``salient_terms`` as its docstring defines it, word by word with
    the whole text before each word at hand."""
    found: dict[str, None] = {}
    for match in re.finditer(r"[^\W_]+", text):
        word, before = match.group(), text[: match.start()].rstrip()
        opens = not before or before[-1] in ".?!:;\"'("
        acronym = len(word) >= 2 and word.isupper() and word.isalpha()
        if (acronym or (word[0].isupper() and not opens)) and word.lower() not in STOPWORDS:
            found.setdefault(word.lower(), None)
    return list(found)


@given(st.text(alphabet=st.sampled_from("aBcDÉß ._?!:;'\"(\n\t\u00a0IT"), max_size=60))
def test_salient_terms_as_defined(text: str) -> None:
    assert salient_terms(text) == _salient_by_definition(text)


@given(st.text(alphabet=st.sampled_from("aBcZ09_ .?!:;'\"(\n\tIT-"), max_size=80))
def test_salient_terms_of_ascii_text_as_defined(text: str) -> None:
    assert salient_terms(text) == _salient_by_definition(text)


@given(st.text(max_size=80))
def test_gate_terms_are_salient_terms_in_order(text: str) -> None:
    names = gate_terms(text)
    salient = salient_terms(text)
    assert names == [n for n in salient if n in names]


@given(st.text(max_size=80))
def test_salient_terms_are_lowered_words_of_the_text_and_never_stopwords(text: str) -> None:
    # lower() only, as the full-text index folds case (no NFKC, no casefold)
    terms = salient_terms(text)
    assert len(terms) == len(set(terms))
    for term in terms:
        assert term not in STOPWORDS
        assert term == term.lower()
        assert term in text.lower()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Why did we choose SQLite?", ["choose", "sqlite"]),
        ("who are you", ["who", "are", "you"]),  # all stopwords: kept
        ('kafka "OR" brokers* -- NEAR(x)', ["kafka", "brokers", "near", "x"]),
        ("", []),
    ],
)
def test_query_terms(text: str, expected: list[str]) -> None:
    assert query_terms(text) == expected
