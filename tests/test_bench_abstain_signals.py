"""The abstention-signals dump (``bench/abstain_signals.py``): a row read
from a real palace says which question words the caller's memories hold,
and the read-back counts what a rule would label low."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.abstain_signals import low, row, unheard_share
from mindpalace import Palace
from mindpalace.config import Settings

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=timezone.utc)


def test_a_row_reads_only_what_the_caller_sees(tmp_path: Path) -> None:
    p = Palace(tmp_path / "p.db", settings=Settings(embedder="static"), clock=lambda: NOW)
    try:
        p.remember("The new sofa from Dunmore Furniture is delivered on Friday.")
        p.for_agent("other").remember("We pay £640 for the sofa, in two parts.")
        p.semantic.wait_for_vectors(timeout=60)
        question = "How much did we pay for the sofa?"
        hits = p.recall(question, limit=5)
        r = row(p, hits, question, None, benchmark="test")
    finally:
        p.close()
    present = {w["w"]: w["present"] for w in r["words"]}
    # "pay" (and the amount) only in the other agent's memory
    assert present == {"pay": False, "sofa": True}
    assert r["answerable"] is False
    assert r["missing"] == "an amount of money"
    assert r["top"] < 0.5 and low(r, False)


def _row(**fields: Any) -> dict[str, Any]:
    base = {"empty": False, "answerable": True, "evidence_relevance": 0.9, "top": 0.9}
    return {**base, **fields}


def test_low_and_unheard_share() -> None:
    assert not low(_row(), False)
    assert low(_row(), True)
    assert low(_row(evidence_relevance=0.3), False)
    assert low(_row(answerable=False, top=0.4, evidence_relevance=None), False)
    words = [
        {"w": "paying", "weight": 3.0, "said": 0.2, "present": False},
        {"w": "pen", "weight": 1.0, "said": 0.6, "present": False},  # near a head word
        {"w": "test", "weight": 4.0, "said": 1.0, "present": True},
    ]
    assert unheard_share(_row(words=words), 0.5) == 3.0 / 8.0
    assert unheard_share(_row(words=[]), 0.5) == 0.0
