"""Export -> import into a fresh palace -> export gives the same lines, for
random palaces on every backend: the whole palace (management) and one
agent's view. Memories of several kinds and agents, skills from generated
SKILL.md files (with correlations, usage and learned links), superseded
facts, conversation sessions, feedback, scorer weights, the entity graph."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.conftest import Clock

from bench.pgserver import ThrowawayPostgres
from mindpalace import Palace, ValidationError
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.store import Store
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore

AGENTS = ("ann", "bob")
TOPICS = ("kafka", "postgres", "redis", "grafana")
KINDS = ("note", "shared", "fact", "decision", "message", "issue")
NAMES = ("Alice Chen", "Bob Stone", "Project Apollo", "Zed Corp")
_count = itertools.count()


class Targets:
    """Fresh palaces of one backend, closed and dropped afterwards."""

    def __init__(self, backend: str, base: Path, server: ThrowawayPostgres | None) -> None:
        self.backend, self.base, self.server = backend, base, server
        self.stores: list[Store] = []
        self.urls: list[str] = []

    def fresh(self) -> Store:
        store: Store
        if self.server is None:
            store = SQLiteStore(str(self.base / f"p{next(_count)}.db"), busy_timeout=10)
        else:
            url = self.server.create()
            self.urls.append(url)
            store = PostgresStore(url, busy_timeout=10, max_connections=2)
        self.stores.append(store)
        return store

    def close(self) -> None:
        for store in self.stores:
            store.close()
        for url in self.urls:
            assert self.server is not None
            self.server.drop(url)
        self.stores, self.urls = [], []


@pytest.fixture
def targets(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Targets]:
    server = request.getfixturevalue("postgres_server") if backend == "postgres" else None
    found = Targets(backend, tmp_path, server)
    yield found
    found.close()


def _open(store: Store, agent: str | None, clock: Clock) -> Palace:
    return Palace(
        store=store,
        agent_id=agent or "default",
        management=agent is None,
        settings=Settings(agent_id=agent or "default", embedder="hashing"),
        embedder=HashingEmbedder(),
        clock=clock,
    )


def _skill_files(folder: Path, count: int) -> None:
    names = [f"skill-{n}" for n in range(count)]
    for n, name in enumerate(names):
        links = "".join(f"  {other}: 0.7\n" for other in names if other != name)
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Handle {TOPICS[n % 4]} incidents for"
            f" {NAMES[n % 4]}.\ntags: [ops, {TOPICS[n % 4]}]\ntools:\n  - shell\n"
            + (f"links:\n{links}" if links else "")
            + f"---\n# {name}\n\n## Steps\n1. Look at the {TOPICS[n % 4]} dashboard.\n"
        )


writes = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(KINDS),
        st.integers(0, 3),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=8,
)


def _fill(
    palaces: dict[str, Palace], plan: list[tuple[str, str, int, int]], skills: int, folder: Path
) -> None:
    for agent, kind, a, b in plan:
        p = palaces[agent]
        topic, name = TOPICS[a], NAMES[b]
        if kind == "note":
            p.remember(f"{name} tuned {topic} yesterday", tags=[topic])
        elif kind == "shared":
            p.remember(f"{name} owns the {topic} cluster", visibility="shared")
        elif kind == "fact":  # a later value supersedes an earlier one
            p.remember(f"{name} status is {('green', 'amber', 'red', 'blue')[a]}")
        elif kind == "decision":
            p.remember(f"We chose {topic} for {name}", category="decision", constraint=a == 0)
        elif kind == "message":
            p.add_messages(
                [
                    Message(f"Did {name} fix {topic}?", speaker="Ana"),
                    Message("Yes.", speaker="Ben"),
                ],
                session=f"s{b}",
            )
        else:
            p.remember(f"{topic} broken for {name}", kind="issue", project="Ops")
    ann = palaces["ann"]
    if skills:
        _skill_files(folder, skills)
        ann.skills.import_path(folder)
        ann.skills.activate(f"{TOPICS[0]} incidents dashboard")
        ann.skills.get("skill-0")
        ann.skills.consolidate()
    for agent, p in palaces.items():
        for hit in p.recall(f"{TOPICS[0]} {NAMES[0]}", limit=3):
            p.feedback(hit.memory.id, useful=len(hit.memory.content) % 2 == 0)
        p.store.save_scorer(
            agent_id=agent, channel=None, data={"bias": 0.25, "agent": agent}, at=p.now()
        )


def _export(palace: Palace) -> list[str]:
    out = io.StringIO()
    palace.export_jsonl(out)
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0])["format"] == "mindpalace-export"
    return lines[1:]  # the header names the time of the export


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=writes, skills=st.integers(0, 3), whole=st.booleans())
@example(
    plan=[(a, k, 1, 2) for a in AGENTS for k in KINDS] + [("ann", "fact", 2, 2)],
    skills=3,
    whole=True,
)
@example(plan=[("ann", k, 0, 1) for k in KINDS] + [("ann", "fact", 3, 1)], skills=2, whole=False)
def test_export_import_export_is_identical(
    targets: Targets, plan: list[tuple[str, str, int, int]], skills: int, whole: bool
) -> None:
    clock = Clock(datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))
    try:
        source = targets.fresh()
        palaces = {agent: _open(source, agent, clock) for agent in AGENTS}
        _fill(palaces, plan, skills, targets.base / f"skills{next(_count)}")
        viewer = None if whole else "ann"
        first = _export(_open(source, viewer, clock))
        records = {json.loads(line).get("record") for line in first}
        assert {"signal", "scorer", "embedding"} <= records
        if skills:
            assert "skill" in records
        if whole and any(kind == "note" for _, kind, _, _ in plan):
            assert {"entity", "mention"} <= records
        if skills >= 2:
            assert "link" in records
        copy = targets.fresh()
        restored = _open(copy, None, clock)
        restored.import_jsonl(
            io.StringIO("\n".join(['{"format": "mindpalace-export", "version": 3}', *first]))
        )
        assert _export(_open(copy, viewer, clock)) == first
        if skills:
            got = _open(copy, "ann", clock).skills.get("skill-0")
            assert got.name == "skill-0"
    finally:
        targets.close()


def test_a_bad_record_line_writes_nothing(palace: Palace, tmp_path: Path) -> None:
    palace.remember("Alice Chen runs kafka")
    out = io.StringIO()
    palace.export_jsonl(out)
    lines = out.getvalue().splitlines()
    lines.append('{"record": "skil", "memory_id": "x"}')
    with Palace(tmp_path / "fresh.db", settings=palace.settings) as fresh:
        with pytest.raises(ValidationError, match=f"line {len(lines)}: unknown record") as err:
            fresh.import_jsonl(io.StringIO("\n".join(lines)))
        assert "skill" in err.value.valid
        assert fresh.stats().memories == 0
