"""The learned scorer through a palace, on every backend: judged recalls in,
weights out, recall order as the weights say, one agent's (and channel's)
judgments only, nothing to train with signals off, the switch validated."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import ConfigError, Palace, ValidationError
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval import scorer as learned
from mindpalace.store import Store

MakePalace = Callable[..., Palace]
TOPICS = ["kafka", "postgres", "redis", "nginx", "grafana"]


def _palace(
    make_palace: MakePalace, agent: str = "ann", *, scorer: bool = False, **options: object
) -> Palace:
    settings = Settings(agent_id=agent, embedder="hashing", scorer=scorer)
    return make_palace(agent, settings=settings, embedder=HashingEmbedder(), **options)


def _seed(palace: Palace) -> None:
    """Per topic, notes written by a skill and by hand, worded alike."""
    records = []
    for topic in TOPICS:
        for n in range(3):
            records.append({"content": f"{topic} note {n} by hand", "source": "manual"})
            records.append({"content": f"{topic} note {n} from a skill", "source": "skill"})
    palace.remember_many(records)


def _judge(palace: Palace, *, useful_source: str, rounds: int = 3) -> int:
    """Recall every topic, judging each hit useful when written by ``useful_source``."""
    judged = 0
    for _ in range(rounds):
        for topic in TOPICS:
            for hit in palace.recall(f"{topic} note", limit=6):
                palace.feedback(hit.memory.id, useful=hit.memory.source.value == useful_source)
                judged += 1
    return judged


def _sources(hits: list[object]) -> list[str]:
    return [h.memory.source.value for h in hits]  # type: ignore[attr-defined]


def test_judgments_train_weights_and_recall_follows_them(make_palace: MakePalace) -> None:
    palace = _palace(make_palace)
    _seed(palace)
    judged = _judge(palace, useful_source="skill")
    assert judged >= learned.MIN_JUDGED
    report = palace.signals.train()
    assert report.trained and report.judged == judged == len(palace.signals.pairs())
    assert report.weights is not None
    stored = palace.signals.weights()
    assert stored is not None and stored.to_dict() == report.weights.to_dict()
    w = stored.weights
    assert w["source:skill"] > 0 > w["source:manual"]

    off = palace.recall("grafana note", limit=6)
    on = _palace(make_palace, scorer=True).recall("grafana note", limit=6)
    assert set(_sources(off)) == {"manual", "skill"}
    assert _sources(on)[:3] == ["skill", "skill", "skill"]
    assert _sources(off)[:3] != ["skill"] * 3  # the pipeline alone mixes them
    scores = [h.score for h in on]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all("scorer" in h.stage_scores and "pipeline" in h.ranks for h in on)
    assert "scorer" in on.timings


def test_untrained_or_cold_start_scorer_changes_nothing(
    make_palace: MakePalace, store: Store
) -> None:
    palace = _palace(make_palace)
    _seed(palace)
    on = _palace(make_palace, scorer=True)
    queries = [f"{t} note" for t in TOPICS] + ["skill", "by hand"]
    expected = [[h.memory.id for h in palace.recall(q)] for q in queries]
    assert [[h.memory.id for h in on.recall(q)] for q in queries] == expected  # nothing stored
    # Weights equal to the cold start, stored as if trained: the same order.
    cold = learned.ScorerWeights(learned.COLD_START.weights, learned.COLD_START.bias, judged=1)
    store.save_scorer(agent_id="ann", channel=None, data=cold.to_dict(), at=palace.now())
    assert on.signals.active_scorer() is not None
    assert [[h.memory.id for h in on.recall(q)] for q in queries] == expected


def test_too_few_judgments_train_nothing(make_palace: MakePalace) -> None:
    palace = _palace(make_palace)
    _seed(palace)
    for hit in palace.recall("kafka note", limit=6):
        palace.feedback(hit.memory.id, useful=hit.memory.source.value == "skill")
    report = palace.signals.train()
    assert not report.trained and report.judged == 6
    assert report.reason is not None and f"{learned.MIN_JUDGED}" in report.reason
    assert palace.signals.weights() is None


def test_training_never_mixes_agents_or_channels(make_palace: MakePalace) -> None:
    # Shared memories: every agent recalls the same ones and judges them oppositely.
    ann = _palace(make_palace, "ann")
    records = [
        {"content": f"{t} note {n} {'from a skill' if s == 'skill' else 'by hand'}", "source": s}
        for t in TOPICS
        for n in range(3)
        for s in ("manual", "skill")
    ]
    ann.remember_many([{**r, "visibility": "shared"} for r in records])
    bob = _palace(make_palace, "bob")
    ann_on_c1 = _palace(make_palace, "ann", channel="c1")
    ann_judged = _judge(ann, useful_source="skill")
    bob_judged = _judge(bob, useful_source="manual", rounds=4)
    assert ann_judged != bob_judged

    ann_report, bob_report = ann.signals.train(), bob.signals.train()
    assert ann_report.judged == ann_judged and bob_report.judged == bob_judged
    assert ann_report.weights is not None and bob_report.weights is not None
    assert ann_report.weights.weights["source:skill"] > 0
    assert bob_report.weights.weights["source:skill"] < 0
    # The channel has judged nothing: nothing to train on, and no weights to use.
    c1_report = ann_on_c1.signals.train()
    assert not c1_report.trained and c1_report.judged == 0
    assert ann_on_c1.signals.weights() is None
    # Each stored row is its own.
    ann_weights, bob_weights = ann.signals.weights(), bob.signals.weights()
    assert ann_weights is not None and bob_weights is not None
    assert ann_weights.to_dict() == ann_report.weights.to_dict()
    assert bob_weights.to_dict() == bob_report.weights.to_dict()
    # A management palace sees every agent's pairs: it may not train one scorer on them.
    admin = make_palace("admin", management=True, embedder=HashingEmbedder())
    with pytest.raises(ValidationError, match="one agent"):
        admin.signals.train()
    assert admin.signals.weights() is None


def test_the_scorer_uses_only_the_agents_own_judgments(make_palace: MakePalace) -> None:
    ann = _palace(make_palace, "ann")
    memory = ann.remember("nginx reload procedure", visibility="shared")
    bob = _palace(make_palace, "bob")
    bob.recall("nginx")
    bob.feedback(memory.id, useful=True)
    ann.recall("nginx")
    ann.feedback(memory.id, useful=False)
    ann.feedback(memory.id, useful=False)
    counts = ann.store.feedback_counts([memory.id], agent_id="ann", channel=None)
    assert counts == {memory.id: (0, 2)}
    assert bob.store.feedback_counts([memory.id], agent_id="bob", channel=None) == {
        memory.id: (1, 0)
    }
    assert ann.store.feedback_counts([memory.id], agent_id="ann", channel="c1") == {}


def test_signals_off_means_nothing_to_train(make_palace: MakePalace, store: Store) -> None:
    settings = Settings.from_env(
        {"MINDPALACE_SIGNALS": "off", "MINDPALACE_SCORER": "on", "MINDPALACE_AGENT_ID": "ann"}
    )
    palace = make_palace("ann", settings=settings, embedder=HashingEmbedder())
    _seed(palace)
    _judge(palace, useful_source="skill")
    report = palace.signals.train()
    assert not report.trained and report.judged == 0 and "MINDPALACE_SIGNALS" in str(report.reason)
    assert palace.signals.weights() is None and palace.signals.active_scorer() is None
    assert list(store.iter_signals(agent_id=None)) == []


def test_the_setting_is_validated() -> None:
    assert Settings.from_env({}).scorer is False  # off by default (BENCHMARKS.md)
    assert Settings.from_env({"MINDPALACE_SCORER": "ON"}).scorer is True
    assert Settings.from_env({"MINDPALACE_SCORER": "off"}).scorer is False
    with pytest.raises(ConfigError, match="valid options: on, off") as caught:
        Settings.from_env({"MINDPALACE_SCORER": "learned"})
    assert caught.value.setting == "MINDPALACE_SCORER"


def test_cli_signals_train(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    env = {"MINDPALACE_EMBEDDER": "hashing", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mindpalace.cli", "--db", str(db), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    memory = json.loads(cli("remember", "the staging database is postgres").stdout)
    assert cli("recall", "staging database").returncode == 0
    assert cli("feedback", memory["id"], "--useful").returncode == 0
    done = cli("signals", "train")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["trained"] is False and report["judged"] == 1
    assert "not enough judgments" in report["reason"]
    bad = cli("signals", "learn")
    assert bad.returncode == 2 and "export" in bad.stderr and "train" in bad.stderr
