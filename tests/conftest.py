"""Shared fixtures: every store test runs on every backend through ``store``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.store import Store
from mindpalace.store.sqlite import SQLiteStore

BACKENDS = ["sqlite"]


def open_backend(name: str, tmp_path: Path) -> Store:
    """A fresh, empty store of backend ``name``."""
    if name == "sqlite":
        return SQLiteStore(tmp_path / "palace.db", busy_timeout=10)
    raise AssertionError(f"unknown backend {name}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Store]:
    s = open_backend(backend, tmp_path)
    yield s
    s.close()


class Clock:
    """A settable clock: each call returns the current time, then advances a second."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        value = self.now
        self.now += timedelta(seconds=1)
        return value


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))


@pytest.fixture
def make_palace(store: Store, clock: Clock) -> Callable[..., Palace]:
    """Palaces over the same store acting as different agents."""

    def make(agent_id: str = "default", **options: object) -> Palace:
        settings = options.pop("settings", None) or Settings(agent_id=agent_id)
        return Palace(
            store=store,
            agent_id=agent_id,
            settings=settings,
            clock=clock,
            **options,  # type: ignore[arg-type]
        )

    return make


@pytest.fixture
def palace(make_palace: Callable[..., Palace]) -> Palace:
    return make_palace()
