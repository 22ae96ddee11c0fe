"""Seed 003's ``channel`` argument on the recall tools: over REST, MCP over
HTTP and MCP over stdio, a call through a channel sees exactly what a
peer-facing palace of that channel may see."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mindpalace import Palace
from mindpalace.config import Settings

from .conftest import Server, start_server
from .test_mcp import http, run, stdio

SETTINGS = Settings(embedder="hashing")
CHANNELS = ("peer-coach:1", "peer-coach:2")


def seed(db: Path) -> dict[str, str]:
    ids: dict[str, str] = {}
    with Palace(db, agent_id="alice", settings=SETTINGS) as own:
        ids["own"] = own.remember("Alice's own garden plan: private notes on compost").id
        ids["shared"] = own.remember(
            "The garden centre opens at nine, for every client", visibility="shared"
        ).id
    for number, channel in enumerate(CHANNELS, start=1):
        with Palace(db, agent_id="alice", channel=channel, peer=True, settings=SETTINGS) as peer:
            ids[f"c{number}"] = peer.remember(f"Client {number} wants a garden with roses").id
            ids[f"owner{number}"] = peer.remember(f"Owner{number} owns the Garden plan").id
    return ids


def peer_view(db: Path, channel: str, query: str) -> set[str]:
    with Palace(db, agent_id="alice", channel=channel, peer=True, settings=SETTINGS) as peer:
        return {h.memory.id for h in peer.recall(query, limit=20)}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("channels") / "palace.db"
    ids = seed(db)
    running = start_server(db)
    running.ids = ids
    yield running
    assert running.stop() == 0


def ids_of(result: dict[str, Any]) -> set[str]:
    """The memory ids of a search result, or of a recall-family answer's groups."""
    if "groups" in result:
        return {m["memory_id"] for g in result["groups"] for m in g["memories"]}
    return {m["memory_id"] for m in result["memories"]}


@pytest.mark.parametrize("channel", CHANNELS)
def test_rest_recall_through_a_channel_sees_what_the_peer_may(served: Server, channel: str) -> None:
    ids = served.ids
    with served.client() as alice:
        response = alice.post(
            "/v1/recall", json={"query": "garden roses compost", "limit": 20, "channel": channel}
        )
    assert response.status_code == 200, response.text
    found = ids_of(response.json())
    assert found == peer_view(served.db, channel, "garden roses compost")
    mine = "c1" if channel == CHANNELS[0] else "c2"
    other = "c2" if mine == "c1" else "c1"
    assert ids[mine] in found and ids["shared"] in found
    assert ids[other] not in found and ids["own"] not in found  # nor the agent's isolated notes


def test_without_a_channel_the_agent_sees_no_channel(served: Server) -> None:
    with served.client() as alice:
        found = ids_of(alice.post("/v1/recall", json={"query": "garden", "limit": 20}).json())
    assert served.ids["own"] in found
    assert not found & {served.ids["c1"], served.ids["c2"]}


def test_family_tools_through_a_channel(served: Server) -> None:
    ids = served.ids
    with served.client() as alice:
        owners = alice.get("/v1/owners", params={"entity": "Garden plan", "channel": CHANNELS[1]})
        scan = alice.post(
            "/v1/what-do-i-know", json={"topic": "garden", "channel": CHANNELS[0]}
        ).json()
    assert [g["name"] for g in owners.json()["groups"]] == ["Owner2"]
    assert ids["owner1"] not in ids_of(owners.json())
    assert ids["c1"] in ids_of(scan) and ids["c2"] not in ids_of(scan)


@pytest.mark.parametrize("channel", ["", "x" * 200])
def test_bad_channel_is_400(served: Server, channel: str) -> None:
    with served.client() as alice:
        response = alice.post("/v1/recall", json={"query": "garden", "channel": channel})
    assert response.status_code == 400
    assert response.json()["field"] == "channel"


def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def session(c: Client) -> None:
        result = await c.call_tool(tool, args)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        out.update(result.structured_content)

    run(client, session)
    return out


def test_mcp_http_recall_through_a_channel(served: Server) -> None:
    args = {"query": "garden roses compost", "limit": 20, "channel": CHANNELS[1]}
    found = ids_of(call(http(served, authorization="Bearer alice-token"), "memory_search", args))
    assert found == peer_view(served.db, CHANNELS[1], "garden roses compost")
    assert served.ids["c2"] in found and served.ids["c1"] not in found


def test_mcp_stdio_recall_through_a_channel(served: Server) -> None:
    args = {"query": "garden roses compost", "limit": 20, "channel": CHANNELS[0]}
    found = ids_of(call(stdio(served.db, "--agent", "alice"), "memory_search", args))
    assert found == peer_view(served.db, CHANNELS[0], "garden roses compost")
    assert served.ids["c1"] in found and served.ids["own"] not in found
