"""The process metrics (``mindpalace.metrics``): what recall and writes
record in a real palace, and the Prometheus text format they are written
in, read back by a strict parser of format 0.0.4 written here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.metrics import (
    LATENCY_BUCKETS,
    RECALL_STAGE_SECONDS,
    REQUEST_SECONDS,
    WRITES,
    Family,
    Registry,
    Snapshot,
    exposition,
    merge,
)

HASHING = Settings(embedder="hashing")

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
_SAMPLE = re.compile(
    rf"^({_NAME})(\{{(?:{_LABEL})(?:,{_LABEL})*\}})? ([-+]?(?:[0-9.e+-]+|Inf|NaN))$"
)
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def parse(text: str) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    """(family -> type, samples) of a text exposition; fails on any line
    the format does not allow."""
    assert text.endswith("\n")
    types: dict[str, str] = {}
    samples = []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram") and name not in types
            types[name] = kind
            continue
        found = _SAMPLE.match(line)
        assert found is not None, f"not a sample line: {line!r}"
        name, labels, value = found.groups()
        pairs = {
            k: v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
            for k, v in _PAIR.findall(labels or "")
        }
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or family in types, f"{name} has no TYPE line before it"
        samples.append((name, pairs, float(value)))
    return types, samples


def test_a_histogram_is_cumulative_with_sum_count_and_inf() -> None:
    registry = Registry()
    for seconds in (0.0005, 0.003, 0.003, 0.2, 60.0):
        registry.observe(REQUEST_SECONDS, ("memory_store", "2xx"), seconds)
    types, samples = parse(exposition(registry.snapshot()))
    assert types[REQUEST_SECONDS.name] == "histogram"
    buckets = {s[1]["le"]: s[2] for s in samples if s[0] == f"{REQUEST_SECONDS.name}_bucket"}
    assert len(buckets) == len(LATENCY_BUCKETS) + 1
    assert buckets["0.001"] == 1 and buckets["0.0025"] == 1 and buckets["0.005"] == 3
    assert buckets["0.25"] == 4 and buckets["10"] == 4 and buckets["+Inf"] == 5
    values = list(buckets.values())
    assert values == sorted(values)  # cumulative
    (count,) = (s for s in samples if s[0] == f"{REQUEST_SECONDS.name}_count")
    (total,) = (s for s in samples if s[0] == f"{REQUEST_SECONDS.name}_sum")
    assert count[1] == {"route": "memory_store", "status_class": "2xx"} and count[2] == 5
    assert math.isclose(total[2], 60.2065)


@pytest.mark.parametrize("hostile", ['a"b', "back\\slash", "two\nlines", '"} 1\nx{y="'])
def test_a_label_value_cannot_change_the_structure(hostile: str) -> None:
    """No label value comes from stored text, but none could break a line
    or a label either."""
    registry = Registry()
    registry.add(WRITES, (hostile, "ok"))
    gauge = Family("mindpalace_test", "gauge", "a test\nwith two lines", ("name",))
    _, samples = parse(exposition(registry.snapshot(), [(gauge, (hostile,), 2)]))
    assert (WRITES.name, {"operation": hostile, "outcome": "ok"}, 1.0) in samples
    assert ("mindpalace_test", {"name": hostile}, 2.0) in samples


def test_merge_adds_workers_numbers() -> None:
    one, two = Registry(), Registry()
    one.add(WRITES, ("remember", "ok"), 2)
    two.add(WRITES, ("remember", "ok"), 3)
    two.add(WRITES, ("forget", "error"))
    one.observe(RECALL_STAGE_SECONDS, ("dense",), 0.002)
    two.observe(RECALL_STAGE_SECONDS, ("dense",), 0.02)
    total = merge([one.snapshot(), Snapshot.from_dict(two.snapshot().to_dict())])
    assert total.counters[WRITES.name] == {"remember\x1fok": 5, "forget\x1ferror": 1}
    counts = total.histograms[RECALL_STAGE_SECONDS.name]["dense"]
    assert sum(counts[:-1]) == 2 and math.isclose(counts[-1], 0.022)
    odd = Snapshot.from_dict({"histograms": {RECALL_STAGE_SECONDS.name: {"dense": [1, 2]}}})
    assert merge([total, odd]) == total  # another version's buckets are left out
    assert Snapshot.from_dict({"counters": "junk"}) == Snapshot({}, {})


def test_a_palace_records_recall_stages_and_writes(tmp_path: Path) -> None:
    with Palace(tmp_path / "p.db", settings=HASHING) as palace:
        palace.remember("The lighthouse keeper logs the storms")
        palace.remember_many([{"content": f"storm log entry {i}"} for i in range(3)])
        hits = palace.recall("storms at the lighthouse")
        palace.recall("storm log", limit=3)
        snapshot = palace.engine.metrics.snapshot()
    stages = snapshot.histograms[RECALL_STAGE_SECONDS.name]
    assert set(stages) == {"embed", *hits.timings}
    assert all(sum(counts[:-1]) == 2 for counts in stages.values())  # two recalls
    whole = snapshot.histograms["mindpalace_recall_duration_seconds"]["hybrid"]
    assert sum(whole[:-1]) == 2 and whole[-1] >= sum(c[-1] for c in stages.values()) * 0.99
    assert snapshot.counters[WRITES.name] == {"remember\x1fok": 1, "remember_many\x1fok": 1}
    durations = snapshot.histograms["mindpalace_write_duration_seconds"]
    assert set(durations) == {"remember", "remember_many"}


def test_views_of_one_engine_share_its_metrics(tmp_path: Path) -> None:
    with Palace(tmp_path / "p.db", agent_id="alice", settings=HASHING) as palace:
        bob = palace.for_agent("bob")
        palace.remember("alice's note")
        bob.remember("bob's note")
        counted = palace.engine.metrics.snapshot().counters[WRITES.name]
    assert counted == {"remember\x1fok": 2}


def test_disk_bytes_grow_with_the_palace(store_target: str) -> None:
    with Palace.open(store_target, settings=HASHING) as palace:
        before = palace.store.disk_bytes()
        palace.remember_many([{"content": f"note {i} " + "padding " * 60} for i in range(300)])
        after = palace.store.disk_bytes()
    assert 0 < before < after
