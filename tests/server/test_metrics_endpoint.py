"""``GET /metrics`` of a real ``mindpalace serve``: behind the same tokens as
``/v1``, the Prometheus text format, request latencies labelled by route
(never by the path a caller chose), recall stages, writes, palace size,
nothing stored; and with ``--workers 2`` the sum of both workers."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
from tests.server.conftest import Server, start_server
from tests.test_metrics import parse

from mindpalace import Palace
from mindpalace.config import Settings

STORED = "Quixotically"  # a word stored and asked for: it must not appear in /metrics


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert STORED.lower() not in response.text.lower()
    _, samples = parse(response.text)
    return {(name, frozenset(labels.items())): value for name, labels, value in samples}


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


REQUESTS = "mindpalace_http_request_duration_seconds_count"


def test_metrics_need_a_token_like_the_api(server: Server) -> None:
    with server.client(token=None) as anonymous:
        refused = anonymous.get("/metrics")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    with server.client("unknown-token") as stranger:
        assert stranger.get("/metrics").status_code == 401
    with server.client("gateway-token") as gateway:  # a shared token names its agent
        assert gateway.get("/metrics").status_code == 401
        named = gateway.get("/metrics", headers={"x-mindpalace-agent-id": "carol"})
        assert named.status_code == 200


def test_requests_recalls_and_writes_are_counted(server: Server) -> None:
    with server.client() as alice:
        before = scrape(alice)
        stored = alice.post("/v1/memories", json={"content": f"{STORED} lighthouse notes"})
        assert stored.status_code == 201
        assert alice.post("/v1/recall", json={"query": f"{STORED} lighthouse"}).status_code == 200
        assert alice.post("/v1/recall", json={"query": 5}).status_code == 422
        hostile = f"/v1/{STORED}%22%7D%201%0Ax"  # '"} 1' and a new line, decoded
        assert alice.get(hostile).status_code == 404
        assert alice.get(f"/{STORED}-page").status_code in (200, 303, 401, 404)
        after = scrape(alice)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew(REQUESTS, route="memory_store", status_class="2xx") == 1
    assert grew(REQUESTS, route="memory_search", status_class="2xx") == 1
    assert grew(REQUESTS, route="memory_search", status_class="4xx") == 1
    assert grew(REQUESTS, route="unmatched", status_class="4xx") == 1
    pages = sum(grew(REQUESTS, route="inspector", status_class=f"{n}xx") for n in (2, 3, 4))
    assert pages == 1
    assert grew(REQUESTS, route="metrics", status_class="2xx") == 1  # the first scrape
    routes = {dict(labels).get("route") for _, labels in after if dict(labels).get("route")}
    assert routes <= {
        "memory_store", "memory_search", "unmatched", "inspector", "metrics", "healthz",
    }  # fmt: skip
    assert grew("mindpalace_writes_total", operation="remember", outcome="ok") == 1
    assert grew("mindpalace_recall_duration_seconds_count", mode="hybrid") == 1
    for stage in ("embed", "reads", "sparse", "dense", "fusion", "rank", "constraints"):
        assert grew("mindpalace_recall_stage_duration_seconds_count", stage=stage) == 1, stage
    assert value(after, "mindpalace_workers") == 1


def test_palace_size_and_pending_vectors(server: Server) -> None:
    with server.client() as alice:
        found = scrape(alice)
    with server.client("bob-token") as bob:
        seen_by_bob = scrape(bob)
    with Palace(server.db, settings=Settings(embedder="hashing")) as palace:
        rows = palace.store.size()
    assert value(found, "mindpalace_memories") == rows > 8
    assert value(found, "mindpalace_palace_bytes") >= server.db.stat().st_size > 0
    assert value(found, "mindpalace_pending_vectors") == 0
    # whole-palace numbers: the same for every agent, nothing per agent
    assert value(seen_by_bob, "mindpalace_memories") == rows
    assert not any("agent" in dict(labels) for _, labels in found)


def test_two_workers_answer_the_sum_of_their_counts(tmp_path: Path) -> None:
    folders = set(Path(tempfile.gettempdir()).glob("mindpalace-metrics-*"))
    server = start_server(tmp_path / "palace.db", "--workers", "2", "--threads", "2")
    try:
        headers = {"authorization": "Bearer alice-token"}
        for i in range(12):  # a new connection each time: the kernel picks a worker
            response = httpx.post(
                f"{server.url}/v1/memories",
                json={"content": f"worker note {i} about lighthouses"},
                headers=headers,
                timeout=30,
            )
            assert response.status_code == 201, response.text
        deadline = time.monotonic() + 20
        while True:  # the other worker's numbers are at most a second old
            with server.client() as alice:
                found = scrape(alice)
            stored = value(found, REQUESTS, route="memory_store", status_class="2xx")
            writes = value(found, "mindpalace_writes_total", operation="remember", outcome="ok")
            if (stored, writes, value(found, "mindpalace_workers")) == (12, 12, 2):
                break
            assert time.monotonic() < deadline, (stored, writes, found)
            time.sleep(0.2)
        assert value(found, "mindpalace_memories") == 12
    finally:
        assert server.stop() == 0
    # the folder the workers shared is removed with them
    assert set(Path(tempfile.gettempdir()).glob("mindpalace-metrics-*")) <= folders
