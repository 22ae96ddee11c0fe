"""Embedder speed, side by side in one run: batch throughput, one-query
latency, and cold load time, for the bundled models::

    python -m bench.embedders
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time

from mindpalace.config import Settings
from mindpalace.embed import from_settings

WORDS = (
    "memory agent recall deploy kafka cluster alice bob project falcon release storage sqlite"
    " decision lesson meeting tuesday review budget design api latency index vector search"
    " customer invoice schedule backup migration postgres token budget context prompt skill"
).split()


def texts(count: int, low: int, high: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) for _ in range(count)
    ]


def cold_load(name: str) -> float:
    code = (
        "import time; t = time.perf_counter();"
        "from mindpalace.config import Settings; from mindpalace.embed import from_settings;"
        f"e = from_settings(Settings(embedder={name!r})); e.embed_one('warm up');"
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> int:
    corpus_short = texts(2000, 10, 30)
    corpus_long = texts(1000, 10, 80)
    print(
        "| model | dims | batch texts/s (10-30 words) | batch texts/s (10-80 words)"
        " | one query p50 ms | cold load + first embed s |"
    )
    print("|---|---|---|---|---|---|")
    for name in ("local", "static"):
        embedder = from_settings(Settings(embedder=name))
        assert embedder is not None
        embedder.embed_one("warm up")
        rates = []
        for corpus in (corpus_short, corpus_long):
            start = time.perf_counter()
            embedder.embed(corpus)
            rates.append(len(corpus) / (time.perf_counter() - start))
        latencies = []
        for text in corpus_short[:200]:
            start = time.perf_counter()
            embedder.embed_one(text)
            latencies.append((time.perf_counter() - start) * 1000)
        print(
            f"| {embedder.config.model} | {embedder.config.dimensions} | {rates[0]:.0f}"
            f" | {rates[1]:.0f} | {statistics.median(latencies):.2f} | {cold_load(name):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
