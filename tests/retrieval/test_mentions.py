"""The warm mention index: rows per entity key, counted under a mask."""

from __future__ import annotations

import numpy as np

from mindpalace.retrieval.mentions import MentionIndex


def test_members_under_a_mask_with_hubs() -> None:
    seqs = np.array([3, 5, 8, 13, 21], dtype=np.int64)
    ids = np.array(["a", "b", "c", "d", "e"], dtype=object)
    pairs = [("ana", 3), ("ana", 8), ("ana", 21), ("falcon", 5), ("ana", 8), ("later", 34)]
    index = MentionIndex.build(pairs, seqs)
    visible = np.array([True, True, False, True, True])
    assert index.members(["ana", "falcon", "later", "nobody"], visible, ids, max_degree=5) == {
        "ana": (2, ["a", "e"]),
        "falcon": (1, ["b"]),
    }
    # Above the cap a key is a hub: its degree is cap + 1 and no ids.
    assert index.members(["ana"], np.ones(5, dtype=bool), ids, max_degree=2) == {"ana": (3, [])}


def test_build_on_a_base_adds_new_rows() -> None:
    seqs = np.array([1, 2], dtype=np.int64)
    first = MentionIndex.build([("ana", 1), ("ben", 2), ("ana", 3)], seqs)
    more = np.array([1, 2, 3], dtype=np.int64)
    ids = np.array(["x", "y", "z"], dtype=object)
    grown = MentionIndex.build([("ana", 3), ("cy", 3)], more, base=first)
    everything = np.ones(3, dtype=bool)
    assert grown.members(["ana", "ben", "cy"], everything, ids, max_degree=9) == {
        "ana": (2, ["x", "z"]),
        "ben": (1, ["y"]),
        "cy": (1, ["z"]),
    }
    # The base is unchanged.
    assert first.members(["ana"], np.ones(2, dtype=bool), ids[:2], max_degree=9) == {
        "ana": (1, ["x"])
    }


def test_a_name_of_many_mentions_is_counted_block_by_block_to_the_same_answer() -> None:
    # 5,000 memories name "ana"; the caller sees every 7th, or only the last few.
    count = 5_000
    seqs = np.arange(1, count + 1, dtype=np.int64)
    ids = np.array([f"m{i:05d}" for i in range(count)], dtype=object)
    index = MentionIndex.build([("ana", int(s)) for s in seqs], seqs)
    sparse = np.zeros(count, dtype=bool)
    sparse[::7] = True
    late = np.zeros(count, dtype=bool)
    late[-40:] = True
    for visible in (sparse, late, np.zeros(count, dtype=bool)):
        seen = int(visible.sum())
        for cap in (10, 39, 40, 714, 715, 10_000):
            got = index.members(["ana"], visible, ids, max_degree=cap)
            if not seen:
                assert got == {}
            elif seen > cap:
                assert got == {"ana": (cap + 1, [])}
            else:
                assert got == {"ana": (seen, sorted(ids[visible].tolist()))}
