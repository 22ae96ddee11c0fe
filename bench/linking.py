"""What entity linking adds to one ``remember`` (issue bar: <= 3 ms median).

Side by side in one run, on two fresh palaces with the deterministic hashing
embedder (so the model's cost does not hide the difference): the same
realistic notes remembered one call at a time, with linking and supersession
(the product) and with both switched off. Prints medians and p95::

    python -m bench.linking [--n 2000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from mindpalace import Palace, writing
from mindpalace.config import Settings
from mindpalace.draft import Draft
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.embed.texts import embed_text

PEOPLE = ["Alice Chen", "Bob", "Carol Diaz", "Dan", "Erin", "Frank Moss", "Grace", "Heidi"]
THINGS = ["Project Falcon", "the Billing API", "Acme Corp", "Atlas service", "Orion", "Zephyr"]
VERBS = ["met", "reviewed", "deployed", "discussed", "fixed", "planned", "owns", "leads"]
TAILS = [
    "on Tuesday after the standup",
    "and agreed to ship the migration next week",
    "see src/billing/invoices.py and JIRA-412",
    "because the latency budget is 25 ms at p95",
    "with @grace in #release before 2024-03-18",
    "",
]


def notes(n: int, seed: int = 7) -> list[str]:
    """Deterministic notes of 6-30 words with names, code, dates."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(TAILS)}"
        f" (note {i})".replace("  ", " ")
        for i in range(n)
    ]


def run(n: int) -> dict[str, dict[str, float]]:
    texts = notes(n)
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, linking in (("without linking", False), ("with linking", True)):
            palace = Palace(
                Path(tmp) / f"{label}.db",
                settings=Settings(embedder="hashing"),
                embedder=HashingEmbedder(),
            )
            times = []
            for text in texts:
                started = time.perf_counter()
                new = writing.new_memory(palace.seat, Draft(text))  # the facade's own validation
                if not linking:  # no mentions: no links, nor supersession (in the store's write)
                    new = replace(new, mentions=())
                vectors = palace.semantic.vectors_for([embed_text(new.title, new.content)])
                now = palace.now()
                palace.store.add(
                    new,
                    memory_id=palace.engine.ids.next(now),
                    now=now,
                    scope=palace.scope,
                    vectors=vectors,
                )
                times.append((time.perf_counter() - started) * 1000)
            palace.close()
            times.sort()
            out[label] = {
                "median_ms": statistics.median(times),
                "p95_ms": times[int(len(times) * 0.95) - 1],
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="notes to remember (default 2000)")
    args = parser.parse_args()
    result = run(args.n)
    for label, figures in result.items():
        print(f"{label:16} median {figures['median_ms']:.2f} ms  p95 {figures['p95_ms']:.2f} ms")
    added = result["with linking"]["median_ms"] - result["without linking"]["median_ms"]
    print(f"linking adds {added:.2f} ms to the median remember")


if __name__ == "__main__":
    main()
