"""Propagation arithmetic: seed score x edge weight / sqrt(degree)."""

from __future__ import annotations

import math

from mindpalace.retrieval.propagate import GraphSlice, propagate


def test_one_hop_scores_and_paths() -> None:
    graph = GraphSlice(
        seed_entities={"s": ["bob"]},
        members={"bob": (4, ["s", "a", "b", "c"])},
        names={"bob": "Bob"},
    )
    result = propagate([("s", 0.8)], graph, hops=1)
    assert set(result.best) == {"a", "b", "c"}  # never the seed itself
    assert math.isclose(result.best["a"].score, 0.8 / 2)
    assert result.best["a"].path == ("s", "Bob", "a")


def test_hubs_are_not_traversed_and_degree_dampens() -> None:
    graph = GraphSlice(
        seed_entities={"s": ["hub", "rare"]},
        members={"hub": (500, []), "rare": (2, ["s", "x"])},
    )
    result = propagate([("s", 1.0)], graph, max_degree=50)
    assert set(result.best) == {"x"}
    assert math.isclose(result.best["x"].score, 1 / math.sqrt(2))


def test_two_hops_through_co_occurrence() -> None:
    graph = GraphSlice(
        seed_entities={"s": ["falcon"]},
        members={"falcon": (2, ["s", "m1"]), "acme": (2, ["m1", "m2"])},
        co={"falcon": [("acme", 0.5)]},
        names={"falcon": "Project Falcon", "acme": "Acme"},
    )
    one = propagate([("s", 1.0)], graph, hops=1)
    two = propagate([("s", 1.0)], graph, hops=2)
    assert set(one.best) == {"m1"}
    assert set(two.best) == {"m1", "m2"}
    assert two.best["m2"].path == ("s", "Project Falcon", "Acme", "m2")
    # m1 is reached by one hop (1/sqrt2) and by two (smaller): the best path stays.
    assert two.best["m1"].path == ("s", "Project Falcon", "m1")


def test_best_path_wins_and_each_seed_keeps_its_own() -> None:
    graph = GraphSlice(
        seed_entities={"s1": ["e"], "s2": ["e"]},
        members={"e": (3, ["s1", "s2", "t"])},
    )
    result = propagate([("s1", 0.9), ("s2", 0.3)], graph, hops=1)
    assert result.best["t"].seed == "s1"
    assert set(result.by_seed) == {"s1", "s2"}
    assert result.by_seed["s2"]["t"].seed == "s2"


def test_reasons_never_pass_through_an_untold_entity() -> None:
    graph = GraphSlice(
        seed_entities={"s1": ["day"], "s2": ["bob"]},
        members={"day": (2, ["s1", "x"]), "bob": (3, ["s2", "x", "y"])},
        names={"day": "3 March, 2026", "bob": "Bob"},
        untold=frozenset({"day"}),
    )
    result = propagate([("s1", 1.0), ("s2", 0.5)], graph, hops=1)
    # The date is still traversed (x's best path), but never a reason.
    assert result.best["x"].path == ("s1", "3 March, 2026", "x")
    assert {seed: r.path for seed, r in result.told["x"].items()} == {"s2": ("s2", "Bob", "x")}
    assert result.told["x"]["s2"].keys == ("bob",)
    assert set(result.told) == {"x", "y"}
