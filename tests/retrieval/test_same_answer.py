"""Same palace, same query, same answer: every recall stage is bounded by
work (rows, edges), never by wall time, so a machine under load returns
exactly the hits a quiet one does."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from mindpalace import Palace
from mindpalace.config import Settings

QUERIES = (
    "What did Alice Moreno decide about the Kafka rollout?",
    "who reviewed Project Falcon",
    "what happened last week with the audit",
)


def _spin(until: float) -> None:
    while time.monotonic() < until:
        pass


def _answers(palace: Palace) -> list[list[tuple[str, float]]]:
    return [[(h.memory.id, round(h.score, 6)) for h in palace.recall(q, limit=10)] for q in QUERIES]


def test_recall_is_identical_under_a_cpu_hog(tmp_path: Path) -> None:
    palace = Palace(tmp_path / "p.db", settings=Settings(embedder="hashing", signals=False))
    people = ["Alice Moreno", "Bruno Diaz", "Chen Wei", "Dana Okafor", "Elif Kaya"]
    projects = ["Project Falcon", "Kafka", "the audit", "Project Heron", "the billing service"]
    palace.remember_many(
        [
            {"content": f"{p} {verb} {q} with {people[(i + 1) % 5]} on day {i}"}
            for i, (p, q, verb) in enumerate(
                (p, q, v)
                for p in people
                for q in projects
                for v in ("reviewed", "decided about", "moved")
            )
        ]
    )
    _answers(palace)
    _answers(palace)  # the second recall starts the warm keyword and mention indexes
    palace.semantic.wait_for_warm()
    quiet = _answers(palace)
    assert all(quiet), "every query finds something"
    ctx = multiprocessing.get_context("spawn")
    until = time.monotonic() + 60
    workers = [ctx.Process(target=_spin, args=(until,), daemon=True) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        loaded = [_answers(palace) for _ in range(3)]
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()
    assert all(answer == quiet for answer in loaded)
    palace.close()
