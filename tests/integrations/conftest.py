"""A palace per test on every backend (SQLite file, real PostgreSQL), opened
by target the way an integration user opens one, with the hashing embedder."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mindpalace import Palace
from mindpalace.embed import HashingEmbedder


@pytest.fixture
def palace(store_target: str) -> Iterator[Palace]:
    with Palace(store_target, embedder=HashingEmbedder()) as opened:
        yield opened


@pytest.fixture
def reopen(store_target: str) -> Iterator[Callable[[], Palace]]:
    """Opens the same palace again, as a later process would; closed afterwards."""
    opened: list[Palace] = []

    def make() -> Palace:
        opened.append(Palace(store_target, embedder=HashingEmbedder()))
        return opened[-1]

    yield make
    for p in opened:
        p.close()
