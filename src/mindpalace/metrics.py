"""Counters and latency histograms of one process, and the Prometheus text
exposition format (version 0.0.4) that ``mindpalace serve`` answers
``GET /metrics`` with.

A ``Registry`` is kept by each engine (``Engine.metrics``): recall adds its
stage timings, writes count themselves, and the HTTP server adds each
request's latency. Nothing leaves the process: the numbers are only read by
whoever scrapes ``/metrics``. Label values are fixed words from the code
(routes, stages, operations, status classes), never stored text; they are
escaped anyway, so no value can change the exposition's structure.

A ``Snapshot`` is a registry's numbers as plain JSON values, so the workers
of ``serve --workers`` can add up each other's (``server.metering``).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "FAMILIES",
    "LATENCY_BUCKETS",
    "RECALL_SECONDS",
    "RECALL_STAGE_SECONDS",
    "REQUEST_SECONDS",
    "WRITES",
    "WRITE_SECONDS",
    "Family",
    "Labels",
    "Registry",
    "Snapshot",
    "exposition",
    "merge",
]

#: upper bounds (seconds) of the latency histograms' buckets
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Kind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True, slots=True)
class Family:
    """One metric: its name, kind, help text and label names."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()


REQUEST_SECONDS = Family(
    "mindpalace_http_request_duration_seconds",
    "histogram",
    "Time to answer an HTTP request, by route (the operation, or mcp, inspector, metrics,"
    " openapi, healthz, unmatched) and status class (2xx, 4xx, 5xx).",
    ("route", "status_class"),
)
RECALL_SECONDS = Family(
    "mindpalace_recall_duration_seconds",
    "histogram",
    "Time of a whole recall (query embedding included), by mode (hybrid, text).",
    ("mode",),
)
RECALL_STAGE_SECONDS = Family(
    "mindpalace_recall_stage_duration_seconds",
    "histogram",
    "Time of each recall stage (embed, reads, sparse, dense, fusion, graph, hydrate, time,"
    " rank, rerank, scorer, constraints, ...).",
    ("stage",),
)
WRITES = Family(
    "mindpalace_writes_total",
    "counter",
    "Writes by operation (remember, remember_many, update, forget, restore, erase,"
    " add_messages, import) and outcome (ok, error).",
    ("operation", "outcome"),
)
WRITE_SECONDS = Family(
    "mindpalace_write_duration_seconds",
    "histogram",
    "Time of a write, by operation.",
    ("operation",),
)
#: the families a registry records, in the order they are written out
FAMILIES = (REQUEST_SECONDS, RECALL_SECONDS, RECALL_STAGE_SECONDS, WRITES, WRITE_SECONDS)

Labels = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A registry's numbers at one moment, as JSON-ready values.

    Attributes:
        counters: family name -> label values joined by ``\\x1f`` -> total.
        histograms: family name -> joined labels -> bucket counts (one per
            ``LATENCY_BUCKETS`` bound, not cumulative, then the +Inf
            bucket), then the sum of the observations.
    """

    counters: Mapping[str, Mapping[str, float]]
    histograms: Mapping[str, Mapping[str, Sequence[float]]]

    def to_dict(self) -> dict[str, object]:
        """The snapshot as JSON."""
        return {"counters": self.counters, "histograms": self.histograms}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Snapshot:
        """A snapshot from ``to_dict``'s JSON (anything else gives an empty one)."""
        counters = data.get("counters")
        histograms = data.get("histograms")
        return cls(
            counters=counters if isinstance(counters, dict) else {},
            histograms=histograms if isinstance(histograms, dict) else {},
        )


_SEP = "\x1f"


def _key(labels: Labels) -> str:
    return _SEP.join(labels)


class Registry:
    """The counters and histograms of one process; safe across threads.

    Adding is a few dictionary updates under a lock: cheap enough for
    every recall and write (a recall's 13 observations take about 10 µs).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[str, float]] = {}
        self._histograms: dict[str, dict[str, list[float]]] = {}

    def add(self, family: Family, labels: Labels, amount: float = 1.0) -> None:
        """Add ``amount`` to a counter."""
        key = _key(labels)
        with self._lock:
            values = self._counters.setdefault(family.name, {})
            values[key] = values.get(key, 0.0) + amount

    def observe(self, family: Family, labels: Labels, seconds: float) -> None:
        """Count one observation of ``seconds`` in a histogram."""
        with self._lock:
            self._observe(family, _key(labels), seconds)

    def _observe(self, family: Family, key: str, seconds: float) -> None:
        series = self._histograms.setdefault(family.name, {})
        counts = series.get(key)
        if counts is None:
            counts = series[key] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        counts[_bucket(seconds)] += 1
        counts[-1] += seconds

    def recall(self, timings: Mapping[str, float], *, mode: str, seconds: float) -> None:
        """A recall's stage timings (milliseconds, as ``HitList.timings``)
        and its whole time, under one lock."""
        with self._lock:
            self._observe(RECALL_SECONDS, mode, seconds)
            for stage, ms in timings.items():
                self._observe(RECALL_STAGE_SECONDS, stage, ms / 1000)

    def snapshot(self) -> Snapshot:
        """A copy of the numbers now."""
        with self._lock:
            counters = {name: dict(values) for name, values in self._counters.items()}
            histograms = {
                name: {key: list(counts) for key, counts in series.items()}
                for name, series in self._histograms.items()
            }
        return Snapshot(counters, histograms)


def _bucket(seconds: float) -> int:
    """The bucket of ``seconds``: the first bound at or above it (+Inf last)."""
    return bisect.bisect_left(LATENCY_BUCKETS, seconds)


def merge(snapshots: Iterable[Snapshot]) -> Snapshot:
    """The sum of ``snapshots`` (the workers of one server)."""
    counters: dict[str, dict[str, float]] = {}
    histograms: dict[str, dict[str, list[float]]] = {}
    width = len(LATENCY_BUCKETS) + 2
    for snap in snapshots:
        for name, values in snap.counters.items():
            into = counters.setdefault(name, {})
            for key, value in values.items():
                into[key] = into.get(key, 0.0) + float(value)
        for name, series in snap.histograms.items():
            into_h = histograms.setdefault(name, {})
            for key, counts in series.items():
                if len(counts) != width:  # from another version's buckets: not comparable
                    continue
                total = into_h.setdefault(key, [0.0] * width)
                for i, value in enumerate(counts):
                    total[i] += float(value)
    return Snapshot(counters, histograms)


# -- the text format ------------------------------------------------------------------


def _escape(value: str) -> str:
    """A label value as the text format quotes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=False)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def exposition(snapshot: Snapshot, gauges: Sequence[tuple[Family, Labels, float]] = ()) -> str:
    """``snapshot`` (and ``gauges``, read at the moment of the scrape) in
    the Prometheus text format 0.0.4: HELP and TYPE lines for every family,
    then its samples, sorted by labels."""
    lines: list[str] = []
    for family in FAMILIES:
        lines.append(f"# HELP {family.name} {_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        if family.kind == "counter":
            for key, value in sorted(snapshot.counters.get(family.name, {}).items()):
                labels = _labels(family.labels, key.split(_SEP))
                lines.append(f"{family.name}{labels} {_number(value)}")
            continue
        for key, counts in sorted(snapshot.histograms.get(family.name, {}).items()):
            values = key.split(_SEP)
            running = 0.0
            for bound, count in zip((*LATENCY_BUCKETS, math.inf), counts, strict=False):
                running += count
                le = f'le="{_number(bound)}"'
                lines.append(
                    f"{family.name}_bucket{_labels(family.labels, values, le)} {_number(running)}"
                )
            labels = _labels(family.labels, values)
            lines.append(f"{family.name}_sum{labels} {_number(counts[-1])}")
            lines.append(f"{family.name}_count{labels} {_number(running)}")
    seen: set[str] = set()
    for family, named, value in gauges:
        if family.name not in seen:
            seen.add(family.name)
            lines.append(f"# HELP {family.name} {_help(family.help)}")
            lines.append(f"# TYPE {family.name} {family.kind}")
        lines.append(f"{family.name}{_labels(family.labels, named)} {_number(value)}")
    return "\n".join(lines) + "\n"
