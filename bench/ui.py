"""Server time of every inspector page on a large palace.

    python -m bench.ui                 # the speed suite's 100,000-memory palace
    python -m bench.ui --size 20k --rounds 9

The palace is the speed suite's (``bench/speed.py``: synthetic corpus, 8
agents, a quarter of it conversation turns, ``static`` embedder, written
with ``remember_many``), built once and cached. Each page is requested
through the app of ``mindpalace serve`` in process, as an agent (its own
view) and as an admin token (every agent's memories); the server time is
what the page reports in its ``Server-Timing`` header: reading the palace
and rendering, in the worker thread (no network). The first request of each
page is reported apart (cold caches: the first recall loads the warm
indexes and starts the HNSW graph in the background); then, once the graph
is built, ``--rounds`` rounds, pages interleaved, and the median and worst
of each. The machine's load average is reported too. Prints one JSON report.
A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from typing import Any
from urllib.parse import quote

from starlette.testclient import TestClient

from bench.corpus import AGENTS
from bench.speed import build, parse_size, settings_for
from mindpalace import Palace
from mindpalace.server.http import build_app
from mindpalace.web.identity import PalacePool, TokenTable

BASE = "http://127.0.0.1:8765"
BAR_MS = 300.0
_TIMING = re.compile(r"app;dur=([0-9.]+)")


def pages(palace: Palace) -> dict[str, str]:
    """One URL per page kind, with real ids, names and a next-page cursor."""
    view = palace.for_agent(AGENTS[0])
    newest = view.memories(limit=51)
    turn = view.memories(categories="conversation", limit=1)[0]
    entities = view.graph.entities(limit=50)
    hub, typical = entities[0], entities[len(entities) // 2]
    session = view.timeline.sessions(limit=1)[0].session
    linked = next(m for m in newest if view.graph.mentions(m.id))
    from mindpalace import listing

    return {
        "memories": "/memories",
        "memories page 2": f"/memories?cursor={listing.encode_cursor(newest[49])}",
        "memories filtered": "/memories?category=decision&store=semantic&after=2025-02-01",
        "search (recall + explain)": "/memories?q=deploy+release+budget+meeting",
        "memory": f"/memories/{linked.id}",
        "memory (turn)": f"/memories/{turn.id}",
        "recall playground": "/recall?q=what+did+we+decide+about+the+database+migration",
        "entities": "/entities",
        "entity graph (typical)": f"/entities/graph?name={quote(typical.norm)}",
        "entity graph (top hub)": f"/entities/graph?name={quote(hub.norm)}",
        "skills": "/skills",
        "conversations": "/conversations",
        "conversation turns": f"/conversations/turns?session={quote(session)}",
        "stats": "/stats",
    }


def server_ms(response: Any) -> float:
    assert response.status_code == 200, (response.status_code, response.text[:300])
    found = _TIMING.search(response.headers.get("server-timing", ""))
    assert found is not None
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k", help="palace size: 1k, 10k, 20k, 100k or N")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per page")
    args = parser.parse_args()
    size = parse_size(args.size)
    path = build(size, "static", log=lambda line: print(line, file=sys.stderr))
    report: dict[str, Any] = {"memories": size, "embedder": "static", "bar_ms": BAR_MS}
    with Palace(path, settings=settings_for("static")) as palace:
        urls = pages(palace)
        tokens = TokenTable.parse(
            [f"{AGENTS[0]}=agent-token", "admin:ops=admin-token"], origin="bench"
        )
        app = build_app(PalacePool(palace), tokens)
        with TestClient(app, base_url=BASE) as client:
            for view, token in (("agent", "agent-token"), ("admin", "admin-token")):
                client.cookies.clear()
                client.post("/login", data={"token": token}, headers={"origin": BASE})
                cold: dict[str, float] = {}
                times: dict[str, list[float]] = {name: [] for name in urls}
                walls: dict[str, list[float]] = {name: [] for name in urls}
                for name, url in urls.items():
                    cold[name] = server_ms(client.get(url))
                # Steady state, as the speed suite measures: the HNSW graph a
                # first recall starts building in the background is complete.
                palace.semantic.wait_for_graph()
                for _ in range(args.rounds):
                    for name, url in urls.items():
                        began = time.perf_counter()
                        response = client.get(url)
                        walls[name].append((time.perf_counter() - began) * 1000)
                        times[name].append(server_ms(response))
                report[view] = {
                    name: {
                        "median_ms": round(statistics.median(times[name]), 1),
                        "max_ms": round(max(times[name]), 1),
                        "first_ms": round(cold[name], 1),
                        "wall_median_ms": round(statistics.median(walls[name]), 1),
                    }
                    for name in urls
                }
                worst = max(v["median_ms"] for v in report[view].values())
                report[view + "_all_under_bar"] = worst < BAR_MS
                print(f"{view}: slowest median {worst:.1f} ms", file=sys.stderr)
    report["load_average"] = [round(x, 1) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
