"""OpenTelemetry spans of recall and writes (``mindpalace.telemetry``), taken
by the SDK's in-memory exporter; and a palace without the API, which imports
nothing of it.

The SDK's tracer provider is set once per process (the API refuses a
second), so one provider serves the module, each test clears its exporter,
and the exporter keeps nothing after the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.errors import ValidationError
from mindpalace.selection import Selection

HASHING = Settings(embedder="hashing")
STORED = "Zanzibar"  # a word stored in memories and asked for: it must appear in no span

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider() -> Iterator[None]:
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):  # another module of the run may have set it
        current = TracerProvider()
        trace.set_tracer_provider(current)
    current.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    yield
    _EXPORTER.shutdown()  # the rest of the run's spans are not kept


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    with Palace(tmp_path / "p.db", settings=HASHING) as palace:
        palace.remember(f"The {STORED} release ships on Tuesday", tags=["release"])
        palace.remember(f"Ann owns the {STORED} deployment pipeline")
        palace.remember("Bo reviews every database migration")
        yield palace


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name == name]


def text_of(spans: InMemorySpanExporter) -> str:
    """Every span's name and attributes, as one text."""
    return json.dumps(
        [{"name": s.name, **dict(s.attributes or {})} for s in spans.get_finished_spans()]
    )


def test_a_recall_is_a_span_with_a_child_per_stage(
    palace: Palace, spans: InMemorySpanExporter
) -> None:
    hits = palace.recall(f"when does {STORED} ship", limit=5)
    assert hits.mode == "hybrid" and len(hits) > 0
    (recall,) = named(spans, "recall")
    assert recall.attributes is not None
    assert dict(recall.attributes) == {
        "mindpalace.limit": 5,
        "mindpalace.expand": True,
        "mindpalace.mode": "hybrid",
        "mindpalace.hits": len(hits),
    }
    assert recall.context is not None
    children = [
        s
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == recall.context.span_id
    ]
    ordered = sorted(children, key=lambda s: s.start_time or 0)
    stages = [s.name.removeprefix("recall.") for s in ordered]
    # the query's embedding, then every stage the pipeline timed, in order
    assert stages == ["embed", *hits.timings]
    assert {"reads", "sparse", "dense", "fusion", "graph", "rank", "constraints"} <= set(stages)
    for child in children:  # inside the recall, back to back
        assert child.start_time is not None and child.end_time is not None
        assert recall.start_time is not None and recall.end_time is not None
        assert recall.start_time <= child.start_time <= child.end_time <= recall.end_time
    (fusion,) = (c for c in children if c.name == "recall.fusion")
    assert fusion.attributes is not None and fusion.attributes["mindpalace.candidates"] >= 2
    (reads,) = (c for c in children if c.name == "recall.reads")
    assert reads.attributes is not None and reads.attributes["mindpalace.terms"] >= 1
    assert STORED.lower() not in text_of(spans).lower()


def test_a_keyword_only_recall_has_its_stages_too(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    with Palace(tmp_path / "p.db", settings=Settings(embedder="none")) as palace:
        palace.remember(f"The {STORED} release ships on Tuesday")
        hits = palace.recall(STORED)
    (recall,) = named(spans, "recall")
    assert recall.attributes is not None and recall.attributes["mindpalace.mode"] == "text"
    assert named(spans, "recall.sparse")[0].attributes == {"mindpalace.hits": len(hits)}
    assert STORED.lower() not in text_of(spans).lower()


def test_each_write_is_a_span_counting_its_memories(
    palace: Palace, spans: InMemorySpanExporter
) -> None:
    first = palace.remember(f"{STORED} notes for the write span")
    many = palace.remember_many([{"content": f"bulk {STORED} note {i}"} for i in range(3)])
    changed = palace.update(first.id, content=f"{STORED} notes, changed")
    palace.forget(changed.id)
    palace.restore(changed.id)
    palace.erase(Selection.memory(many[0].id))  # a dry run: no write, no span
    palace.erase(Selection.memory(many[0].id), confirm=True)
    names = [s.name for s in spans.get_finished_spans() if not s.name.startswith("recall")]
    assert names == ["remember", "remember_many", "update", "forget", "restore", "erase"]
    counted = {s.name: dict(s.attributes or {}) for s in spans.get_finished_spans()}
    assert counted["remember_many"] == {"mindpalace.memories": 3}
    assert counted["erase"] == {"mindpalace.memories": 1}
    assert STORED.lower() not in text_of(spans).lower()


def test_a_failed_write_ends_its_span_with_an_error(
    palace: Palace, spans: InMemorySpanExporter
) -> None:
    with pytest.raises(ValidationError):
        palace.remember("a memory", category="gossip")
    (span,) = named(spans, "remember")
    assert span.status.status_code is StatusCode.ERROR
    counts = palace.engine.metrics.snapshot().counters["mindpalace_writes_total"]
    assert counts["remember\x1ferror"] == 1


def test_without_the_api_nothing_is_imported_and_the_palace_works(tmp_path: Path) -> None:
    """A fresh interpreter in which ``opentelemetry`` cannot be imported
    (``sys.modules`` entry None): remember and recall work, the metrics
    still count, and no module of the API was loaded."""
    script = f"""
import json, sys
sys.modules["opentelemetry"] = None  # import opentelemetry... raises ImportError
from mindpalace import Palace, telemetry
from mindpalace.config import Settings
with Palace({str(tmp_path / "p.db")!r}, settings=Settings(embedder="hashing")) as palace:
    palace.remember("The Zanzibar release ships on Tuesday")
    hits = palace.recall("when does Zanzibar ship")
    counters = palace.engine.metrics.snapshot().counters
loaded = sorted(m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v)
print(json.dumps({{"hits": len(hits), "enabled": telemetry.enabled(), "loaded": loaded,
                   "writes": counters["mindpalace_writes_total"]}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {
        "hits": 1,
        "enabled": False,
        "loaded": [],
        "writes": {"remember\x1fok": 1.0},
    }
