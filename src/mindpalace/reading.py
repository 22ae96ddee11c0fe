"""The read operation over a seat: ``recall(seat, request)``.

A request arrives as a ``RecallRequest`` (recall_request.py), already
validated; here it meets the palace: the query is embedded with the
engine's model (when one is usable), the pipeline runs over the store in
the seat's scope, a mode re-ranks, and the outcome is recorded as a signal
(recall changes no memory). ``Palace.recall`` delegates here with its own
seat; every other surface builds its request and calls this.

The prompt-ready block (``Palace.context``) is the skills' operation: it
recalls through here too.
"""

from __future__ import annotations

import time
from dataclasses import replace

from mindpalace import signals, telemetry
from mindpalace.models import HitList
from mindpalace.recall_request import MAX_RECALL_LIMIT, RecallRequest
from mindpalace.retrieval import modes, pipeline
from mindpalace.retrieval.options import RecallOptions
from mindpalace.seat import Seat

__all__ = ["recall"]


def recall(seat: Seat, request: RecallRequest, *, options: RecallOptions | None = None) -> HitList:
    """The memories most relevant to ``request.query`` that ``seat`` sees,
    best first (``Palace.recall`` documents it).

    Args:
        seat: who recalls, at which engine.
        request: the query, its filters and how to rank.
        options: the pipeline's constants (the engine's when omitted; a
            palace view may try others, as the benchmarks do).

    Raises:
        EmbeddingMismatch: the palace's vectors come from another model.
    """
    engine = seat.engine
    semantic = engine.semantic
    query = request.query
    if not query.strip():
        return HitList([], mode="hybrid" if semantic.available else "text")
    if options is None:
        options = engine.recall_options
    if not request.expand:
        options = replace(options, expand=False)
    prior = request.prior
    started = time.perf_counter()
    with telemetry.span("recall", limit=request.limit, expand=request.expand) as trace:
        # The palace's recorded model is read once per recall, here.
        usable = semantic.usable()
        with telemetry.span("recall.embed"):
            vector = None if usable is None else semantic.embed_query(usable, query)
        embedded = time.perf_counter()
        in_store = None
        dense = None
        if usable is not None and vector is not None:
            in_store = semantic.database_key(usable)
            dense = None if in_store else semantic.dense_index(usable)
        limit = request.limit
        # A mode re-ranks a deeper list than it returns.
        depth = limit if prior.neutral else min(MAX_RECALL_LIMIT, max(3 * limit, 30))
        hits = pipeline.recall(
            engine.store,
            query=query,
            scope=seat.scope,
            filters=request.filters,
            limit=depth,
            now=seat.now(),
            query_vector=vector,
            dense_index=dense,
            in_store=in_store,
            options=options,
            scorer=signals.active_scorer(seat),
        )
        if not prior.neutral:
            hits = modes.apply_mode(
                hits, prior, store=engine.store, scope=seat.scope, now=seat.now(), limit=limit
            )
        trace.count(mode=hits.mode, hits=len(hits))
    timings = {"embed": (embedded - started) * 1000, **hits.timings}
    engine.metrics.recall(timings, mode=hits.mode, seconds=time.perf_counter() - started)
    if hits.mode == "text" and hits.notice == pipeline.TEXT_ONLY_NOTICE:
        reason = semantic.failure
        if reason:
            hits.notice = f"{pipeline.TEXT_ONLY_NOTICE} Reason: {reason}."
    signals.record_recall(seat, query, hits)
    return hits
