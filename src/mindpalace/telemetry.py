"""OpenTelemetry spans for recall and writes, when ``opentelemetry-api`` is
installed (the ``telemetry`` extra); nothing at all when it is not.

The API is looked for once, at the first recall or write, never at import:
without it no ``opentelemetry`` module is imported and every call here is a
check of one cached value. With it, spans go to whatever tracer provider
the program set up (``opentelemetry-sdk`` and an exporter); with none set,
the API's own spans record nothing and stage spans are not even made.

Spans (instrumentation scope ``mindpalace``):

* ``recall``, with one child span per pipeline stage, ``recall.<stage>``
  (``embed``, ``reads``, ``sparse``, ``dense``, ``fusion``, ``graph``,
  ``hydrate``, ``time``, ``rank``, ``rerank``, ``scorer``,
  ``constraints``...), made from the stage timings the pipeline measures;
* one span per write, named by its operation: ``remember``,
  ``remember_many``, ``update``, ``forget``, ``restore``, ``erase``,
  ``add_messages``, ``import``.

Attributes are counts and settings, never stored text, a query or an id:
``mindpalace.limit``, ``mindpalace.mode``, ``mindpalace.hits``,
``mindpalace.memories`` and, on stage spans, what each stage counted.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from mindpalace.metrics import WRITE_SECONDS, WRITES, Registry

__all__ = ["StageSpans", "Trace", "enabled", "observed_write", "span", "stage_spans", "write"]

P = ParamSpec("P")
R = TypeVar("R")

Attribute = str | int | float | bool


class _Span(Protocol):
    """The part of an OpenTelemetry span used here."""

    def set_attribute(self, key: str, value: Attribute) -> None: ...

    def is_recording(self) -> bool: ...

    def end(self, end_time: int | None = None) -> None: ...


@functools.cache
def _api() -> Any:
    """``opentelemetry.trace``, or None when the API is not installed."""
    try:
        import opentelemetry.trace  # noqa: PLC0415 - optional: looked for on first use only
    except ImportError:
        return None
    return opentelemetry.trace


def enabled() -> bool:
    """Whether spans are made (``opentelemetry-api`` is installed)."""
    return _api() is not None


def _tracer() -> Any:
    api = _api()
    return None if api is None else api.get_tracer("mindpalace")


class Trace:
    """A span being made (or, with telemetry off, nothing): attributes are
    counts, set with ``count``."""

    __slots__ = ("_span",)

    def __init__(self, span: _Span | None) -> None:
        self._span = span

    def count(self, **counts: Attribute) -> None:
        """Set ``mindpalace.<name>`` attributes (counts and settings only)."""
        if self._span is not None:
            for name, value in counts.items():
                self._span.set_attribute(f"mindpalace.{name}", value)


_OFF = Trace(None)


@contextlib.contextmanager
def span(name: str, **counts: Attribute) -> Iterator[Trace]:
    """A span named ``name`` around the block, current inside it (its
    stage spans are its children); an exception ends it with an error
    status. With telemetry off, a ``Trace`` that records nothing."""
    tracer = _tracer()
    if tracer is None:
        yield _OFF
        return
    with tracer.start_as_current_span(name) as current:
        trace = Trace(current)
        trace.count(**counts)
        yield trace


class StageSpans:
    """Child spans of the current span, one per recall stage, made after
    the fact from the stage's start and end (``time.perf_counter_ns``)."""

    __slots__ = ("_offset", "_tracer")

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer
        # perf_counter_ns is monotonic, spans take wall-clock nanoseconds
        self._offset = time.time_ns() - time.perf_counter_ns()

    def stage(self, stage: str, start: int, end: int, counts: Mapping[str, Attribute]) -> None:
        """A ``recall.<stage>`` span from ``start`` to ``end``."""
        made = self._tracer.start_span(f"recall.{stage}", start_time=start + self._offset)
        for name, value in counts.items():
            made.set_attribute(f"mindpalace.{name}", value)
        made.end(end_time=end + self._offset)


def stage_spans() -> StageSpans | None:
    """Where a recall's stages go: None when telemetry is off or the
    current span records nothing (no tracer provider set)."""
    api = _api()
    if api is None or not api.get_current_span().is_recording():
        return None
    return StageSpans(api.get_tracer("mindpalace"))


# -- writes ---------------------------------------------------------------------------


@contextlib.contextmanager
def write(metrics: Registry, operation: str, **counts: Attribute) -> Iterator[Trace]:
    """A write named ``operation``: its span, and its count (outcome ok,
    or error when the block raises) and time in ``metrics``."""
    started = time.perf_counter()
    outcome = "error"
    try:
        with span(operation, **counts) as trace:
            yield trace
        outcome = "ok"
    finally:
        metrics.add(WRITES, (operation, outcome))
        metrics.observe(WRITE_SECONDS, (operation,), time.perf_counter() - started)


def observed_write(
    operation: str,
) -> Callable[[Callable[Concatenate[Any, P], R]], Callable[Concatenate[Any, P], R]]:
    """A palace method observed as the write ``operation`` (``write``),
    its span counting the memories it returned."""

    def decorate(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
        @functools.wraps(method)
        def observed(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            with write(self.engine.metrics, operation) as trace:
                result = method(self, *args, **kwargs)
                trace.count(memories=_memories(result))
            return result

        return observed

    return decorate


def _memories(result: object) -> int:
    """How many memories a write's result holds (written or found there)."""
    if isinstance(result, list):
        return len(result)
    inserted = getattr(result, "inserted", None)
    if isinstance(inserted, int):
        return inserted
    tally = getattr(result, "counts", None)
    erased = getattr(tally, "memories", None)
    return erased if isinstance(erased, int) else 1
