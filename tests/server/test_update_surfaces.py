"""One memory updated through every surface in turn, on every backend: the
Python API, the command line, REST, MCP over streamable HTTP and MCP over
stdio. Each update is a new version with a new id; every surface then reads
the same current version and the same history, oldest first."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from typing import Any

from mcp import Client

from mindpalace import Palace
from mindpalace.config import Settings

from .conftest import server_env, start_server
from .test_mcp import http, run, stdio


def cli(target: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "mindpalace.cli", "--db", target, "--agent", "alice", *args],
        capture_output=True,
        text=True,
        env=server_env(MINDPALACE_DAEMON="off"),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def mcp_update(client: Client, memory_id: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def session(c: Client) -> None:
        result = await c.call_tool("memory_update", {"memory_id": memory_id, **changes})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        out.update(result.structured_content)

    run(client, session)
    return out


def test_update_through_every_surface_keeps_one_history(store_target: str) -> None:
    settings = Settings(embedder="hashing")
    with Palace(store_target, agent_id="alice", settings=settings) as palace:
        first = palace.remember("The Billing service runs on Postgres 14", tags=["billing"])
        python = palace.update(first.id, content="The Billing service runs on Postgres 15")
    versions = [first.id, python.id]

    by_cli = cli(store_target, "update", python.id, "--tags", "billing,database")
    assert by_cli["previous_id"] == python.id and by_cli["updated"] is True
    versions.append(by_cli["id"])

    server = start_server(store_target, "--tools", "all")  # type: ignore[arg-type]
    try:
        with server.client() as alice:
            by_rest = alice.patch(
                f"/v1/memories/{versions[-1]}", json={"category": "decision", "title": "Database"}
            )
            assert by_rest.status_code == 200, by_rest.text
            assert by_rest.json()["previous_id"] == versions[-1]
            versions.append(by_rest.json()["memory"]["memory_id"])
        by_mcp_http = mcp_update(
            http(server, authorization="Bearer alice-token"),
            versions[-1],
            valid_from="2026-01-01T00:00:00+00:00",
        )
        versions.append(by_mcp_http["memory"]["memory_id"])
        by_stdio = mcp_update(
            stdio(store_target, "--agent", "alice", "--tools", "manage"),  # type: ignore[arg-type]
            versions[-1],
            content="The Billing service runs on Postgres 16",
            metadata={"ticket": "OPS-7"},
        )
        versions.append(by_stdio["memory"]["memory_id"])

        assert len(set(versions)) == 6  # every update a new version, a new id
        current = by_stdio["memory"]
        assert current["content"] == "The Billing service runs on Postgres 16"
        assert current["tags"] == ["billing", "database"]
        assert (current["category"], current["title"]) == ("decision", "Database")
        assert current["valid_from"].startswith("2026-01-01")
        assert current["metadata"] == {"ticket": "OPS-7"}
        assert "superseded_by" not in current

        # Every surface reads the same history and the same current version.
        with Palace(store_target, agent_id="alice", settings=settings) as palace:
            assert [m.id for m in palace.graph.history(first.id)] == versions
            assert [m.id for m in palace.memories()] == [versions[-1]]
        assert [m["id"] for m in cli(store_target, "history", versions[2])] == versions
        with server.client() as alice:
            for old, new in itertools.pairwise(versions):
                got = alice.get(f"/v1/memories/{old}").json()["memory"]
                assert got["superseded_by"] == new and "valid_to" in got
            listed = alice.get("/v1/memories").json()["memories"]
            assert [m["memory_id"] for m in listed] == [versions[-1]]
            rest_current = alice.get(f"/v1/memories/{versions[-1]}").json()["memory"]
        assert rest_current == current
        found = cli(store_target, "recall", "Billing Postgres", "--limit", "3")
        assert [h["id"] for h in found] == [versions[-1]]  # replaced versions are not recalled
    finally:
        assert server.stop() == 0
