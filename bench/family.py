"""What the recall family costs: relation extraction on write, and the
latency of each flow, side by side in one run.

Write: the same realistic notes (``bench.linking``) remembered one call at
a time on two fresh palaces (hashing embedder, so the model's cost does not
hide the difference), with typed relations and with them dropped before
the write. Read: medians over a palace of those notes (bundled MiniLM), of
plain recall, recall in each mode, and each family flow::

    python -m bench.family [--n 2000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.linking import notes
from mindpalace import Palace, writing
from mindpalace.config import Settings
from mindpalace.draft import Draft
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.embed.texts import embed_text
from mindpalace.graph.extract import extract_mentions
from mindpalace.graph.relations import extract_graph
from mindpalace.retrieval.modes import MODES


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def write_cost(texts: list[str], tmp: Path) -> dict[str, float]:
    out = {
        "extract_mentions_ms": statistics.median(
            _timed(lambda t: extract_mentions([None, t]), texts)
        ),
        "extract_graph_ms": statistics.median(_timed(lambda t: extract_graph([None, t]), texts)),
    }
    for label, keep in (("remember_without_relations_ms", False), ("remember_ms", True)):
        palace = Palace(
            tmp / f"{label}.db", settings=Settings(embedder="hashing"), embedder=HashingEmbedder()
        )
        times = []
        for text in texts:
            started = time.perf_counter()
            # Supersession runs in the store's write.
            new = writing.new_memory(palace.seat, Draft(text))
            if not keep:
                new = replace(new, relations=())
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
        out[label] = statistics.median(times)
        palace.close()
    return out


def _timed(fn: Callable[[str], object], texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - started) * 1000)
    return times


def read_cost(texts: list[str], tmp: Path, repeat: int) -> dict[str, float]:
    palace = Palace(tmp / "read.db")
    palace.remember_many([{"content": t} for t in texts])
    query = "who leads Project Falcon and the Billing API migration"
    family = palace.family
    flows: dict[str, Callable[[], object]] = {
        "recall": lambda: palace.recall(query),
        **{f"recall mode={m}": (lambda m=m: palace.recall(query, mode=m)) for m in MODES},
        "what_do_i_know": lambda: family.what_do_i_know("Project Falcon"),
        "why_did_we": lambda: family.why_did_we("ship the migration next week"),
        "who_owns": lambda: family.who_owns("the Billing API"),
        "depends_on": lambda: family.depends_on("Orion"),
        "preflight": lambda: family.preflight("deploy the Billing API"),
    }
    for fn in flows.values():  # warm the index and caches
        fn()
    out = {name: median_ms(fn, repeat) for name, fn in flows.items()}
    out["relations_answering_who_owns"] = float(len(family.who_owns("the Billing API").items))
    palace.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="notes (default 2000)")
    parser.add_argument("--repeat", type=int, default=20, help="calls per flow (default 20)")
    args = parser.parse_args()
    texts = notes(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        for name, value in write_cost(texts, Path(tmp)).items():
            print(f"write  {name:32} {value:8.3f}")
        for name, value in read_cost(texts, Path(tmp), args.repeat).items():
            print(f"read   {name:32} {value:8.2f}")


if __name__ == "__main__":
    main()
