"""One server process answering many agents on one palace::

    python -m bench.agents                    # 1,000 agents, 20,000 memories
    python -m bench.agents --agents 200 --memories 5000

The palace holds private memories of every agent and some shared ones. The
process opens it once, as ``mindpalace serve`` does, and each agent reaches
it through the server's ``PalacePool``: the figures are the time of each
agent's first call (its palace made, then a recall), of a later call (the
palace found, a recall), and the process's resident memory before the first
agent and after the last. To compare another checkout side by side, build
the palace once (``--db``), then run ``PYTHONPATH=that/src python -m
bench.agents --db`` with the same file.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.web.identity import PalacePool

WORDS = (
    "deploy billing search cache invoice backup schedule review launch budget"
    " meeting design release customer report incident database queue token"
).split()


def rss_mb() -> float:
    """Resident memory of this process now (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build(path: Path, *, agents: int, memories: int, seed: int) -> None:
    rng = random.Random(seed)
    with Palace(path, management=True, settings=Settings(embedder="static")) as palace:
        per_agent = max(1, memories // agents)
        for a in range(agents):
            palace.for_agent(f"agent-{a}").remember_many(
                {
                    "content": " ".join(rng.choices(WORDS, k=8)) + f" note {a}-{i}",
                    "visibility": "shared" if i == 0 and a % 10 == 0 else "isolated",
                }
                for i in range(per_agent)
            )


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max": round(ordered[-1], 3),
    }


def run(path: Path, *, agents: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    base = Palace(path, settings=Settings(embedder="static"))
    pool = PalacePool(base, size=max(1024, agents))
    # Warm the engine as a server's first minutes would: model, indexes.
    for _ in range(2):
        base.recall("warm up the indexes")
    before = rss_mb()
    first, later, made = [], [], []
    for a in range(agents):
        query = " ".join(rng.choices(WORDS, k=3))
        started = time.perf_counter()
        palace = pool.for_agent(f"agent-{a}")
        made.append((time.perf_counter() - started) * 1000)
        palace.recall(query, limit=5)
        first.append((time.perf_counter() - started) * 1000)
    after_first = rss_mb()
    for a in range(agents):
        query = " ".join(rng.choices(WORDS, k=3))
        started = time.perf_counter()
        pool.for_agent(f"agent-{a}").recall(query, limit=5)
        later.append((time.perf_counter() - started) * 1000)
    after = rss_mb()
    base.close()
    return {
        "agents": agents,
        "palace_made_ms": percentiles(made),
        "first_call_ms": percentiles(first),
        "later_call_ms": percentiles(later),
        "rss_before_mb": round(before, 1),
        "rss_after_first_calls_mb": round(after_first, 1),
        "rss_after_mb": round(after, 1),
        "rss_per_agent_kb": round((after - before) * 1024 / agents, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", type=Path, help="reuse this palace (built when missing)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mindpalace-agents-") as tmp:
        path = args.db or Path(tmp) / "agents.db"
        if not path.exists():
            build(path, agents=args.agents, memories=args.memories, seed=args.seed)
        print(json.dumps(run(path, agents=args.agents, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
