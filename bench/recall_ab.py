"""Warm recall p50/p95 on a speed-suite palace, for comparing two checkouts
side by side::

    # a palace built once by the older checkout (bench.speed --build 100k
    # --embedder static), copied for each side; the newer one migrates its copy
    PYTHONPATH=old/src:old python -m bench.recall_ab old.db before
    PYTHONPATH=new/src:new python -m bench.recall_ab new.db after

    # the million (bench.speed's palace-1m-static.db), its own query set
    PYTHONPATH=new/src:new python -m bench.recall_ab palace-1m-static.db after 1000000

Run the two alternately, several rounds, and compare the medians: on a
shared machine only the ratio of runs interleaved in time means anything.
Uses only what both checkouts have (``bench.speed.agent_palaces``, recall,
the query set of ``bench.corpus``), so it runs against older trees too.
Each line printed is one JSON object: label, recalls timed, p50, p95, mean
(ms), and the per-stage medians and 95th percentiles. The optional third
argument is the palace's size, which chooses ``bench.speed``'s queries for
it (100,000 unless given).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

from bench.corpus import queries
from bench.speed import agent_palaces, settings_for
from mindpalace.embed import from_settings


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    path, label = argv[:2]
    size = int(argv[2]) if len(argv) == 3 else 100_000
    settings = settings_for("static")
    model = from_settings(settings)
    assert model is not None
    model.embed_one("warm up")
    palaces = agent_palaces(path, settings, model)  # type: ignore[arg-type]
    asked = queries(200, size)
    for q in asked[:10]:
        palaces[q.agent].recall(q.text)
    next(iter(palaces.values())).semantic.wait_for_graph()
    for q in asked[:20]:
        palaces[q.agent].recall(q.text)
    times: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    for _ in range(3):
        for q in asked:
            palace = palaces[q.agent]
            palace.semantic.forget_queries()  # each timed recall embeds its query
            start = time.perf_counter()
            hits = palace.recall(q.text)
            times.append((time.perf_counter() - start) * 1000)
            for stage, ms in hits.timings.items():
                stages[stage].append(ms)
    figures = {
        "label": label,
        "recalls": len(times),
        "p50": round(statistics.median(times), 2),
        "p95": round(float(np.percentile(times, 95)), 2),
        "mean": round(statistics.mean(times), 2),
        "stages_p50": {k: round(statistics.median(v), 2) for k, v in stages.items()},
        "stages_p95": {k: round(float(np.percentile(v, 95)), 2) for k, v in stages.items()},
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
