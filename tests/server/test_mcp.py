"""The official MCP SDK client against our server, over stdio and over
streamable HTTP: it lists every tool and calls each one."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mindpalace.server.tools import OPERATIONS

from .conftest import Server, seed, server_env
from .samples import SAMPLES

Session = Callable[[Client], Awaitable[None]]


def stdio(db: Path, *args: str, **env: str) -> Client:
    """A client that starts ``mindpalace mcp`` as a subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mindpalace.cli", "--db", str(db), "mcp", *args],
        env=server_env(**env),
    )
    return Client(params)


def http(server: Server, statuses: list[int] | None = None, **headers: str) -> Client:
    """A client of ``/mcp`` on a running ``mindpalace serve``; the HTTP
    status of each response is appended to ``statuses``."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    client = httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]})
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=client))


def run(client: Client, session: Session) -> None:
    async def main() -> None:
        async with client:
            await session(client)

    anyio.run(main)


async def list_and_call_every_tool(client: Client, ids: dict[str, str]) -> None:
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == sorted(op.name for op in OPERATIONS)
    for tool in tools.values():
        assert len(tool.description or "") > 30, tool.name
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema is not None, tool.name
    for op in OPERATIONS:
        sample = SAMPLES[op.name]
        result = await client.call_tool(op.name, sample.args(ids))
        assert not result.is_error, (op.name, result.content)
        assert result.structured_content is not None
        sample.check(result.structured_content, ids)


async def assert_tool_error(
    client: Client, tool: str, args: dict[str, Any], *fragments: str
) -> None:
    result = await client.call_tool(tool, args)
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    for fragment in fragments:
        assert fragment in text, text


async def errors_name_valid_options(client: Client, ids: dict[str, str]) -> None:
    await assert_tool_error(
        client, "memory_store", {"content": "x", "type": "gizmo"}, "valid options:", "concept"
    )
    await assert_tool_error(
        client, "recall", {"query": "x", "stores": ["attic"]}, "valid options:", "procedural"
    )
    await assert_tool_error(client, "recall", {"query": "x", "limit": 50}, "from 1 to 20")
    await assert_tool_error(client, "memory_get", {"memoryId": "mem_missing"}, "no memory")
    await assert_tool_error(client, "memory_get", {}, "memoryId")


async def unknown_arguments_are_refused(client: Client) -> None:
    """As REST answers 422: an argument the tool does not take is an error
    naming the valid ones, and nothing runs."""
    await assert_tool_error(
        client,
        "memory_store",
        {"content": "Heron census: 14 birds", "colour": "grey"},
        "unknown argument 'colour' for memory_store",
        "valid options: content, title,",
    )
    await assert_tool_error(
        client,
        "recall",
        {"query": "herons", "include_archived": True},
        "unknown argument 'include_archived'",
        "did you mean 'includeArchived'?",
    )
    await assert_tool_error(client, "memory_stats", {"ctx": {}}, "unknown argument 'ctx'")
    found = await client.call_tool("memory_search", {"query": "Heron census"})
    assert found.structured_content is not None
    assert found.structured_content["memories"] == []  # the refused store wrote nothing


def test_stdio_round_trip_of_every_tool(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)

    async def session(client: Client) -> None:
        await list_and_call_every_tool(client, ids)
        await errors_name_valid_options(client, ids)
        await unknown_arguments_are_refused(client)

    run(stdio(db, "--agent", "alice"), session)


def test_stdio_agent_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)

    async def session(client: Client) -> None:
        mine = await client.call_tool("memory_get", {"memoryId": ids["bob"]})
        assert not mine.is_error
        assert mine.structured_content is not None
        assert mine.structured_content["memory"]["agentId"] == "bob"
        await assert_tool_error(client, "memory_get", {"memoryId": ids["fact"]}, "no memory")

    run(stdio(db, MINDPALACE_AGENT_ID="bob"), session)


def test_http_round_trip_of_every_tool(server: Server) -> None:
    async def session(client: Client) -> None:
        await list_and_call_every_tool(client, server.ids)
        await errors_name_valid_options(client, server.ids)
        await unknown_arguments_are_refused(client)

    run(http(server, authorization="Bearer alice-token"), session)


def test_http_identity_comes_from_the_token(server: Server) -> None:
    async def as_bob(client: Client) -> None:
        await assert_tool_error(client, "memory_get", {"memoryId": server.ids["fact"]}, "no memory")
        stored = await client.call_tool("memory_store", {"content": "bob over mcp"})
        assert stored.structured_content is not None
        assert stored.structured_content["memory"]["agentId"] == "bob"

    async def as_gateway_for_erin(client: Client) -> None:
        stored = await client.call_tool("memory_store", {"content": "erin over mcp"})
        assert stored.structured_content is not None
        assert stored.structured_content["memory"]["agentId"] == "erin"

    run(http(server, authorization="Bearer bob-token"), as_bob)
    run(
        http(server, authorization="Bearer gateway-token", **{"x-mindpalace-agent-id": "erin"}),
        as_gateway_for_erin,
    )


def test_http_admin_token_sees_every_agent(server: Server) -> None:
    async def as_ops(client: Client) -> None:
        bobs = await client.call_tool("memory_get", {"memoryId": server.ids["bob"]})
        assert bobs.structured_content is not None
        assert bobs.structured_content["memory"]["agentId"] == "bob"

    run(http(server, authorization="Bearer ops-token"), as_ops)


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer nope"}, {"authorization": "Bearer gateway-token"}],
)
def test_http_without_identity_cannot_connect(server: Server, headers: dict[str, str]) -> None:
    async def session(client: Client) -> None:
        raise AssertionError("connected without an identity")

    statuses: list[int] = []
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 in task groups
        run(http(server, statuses, **headers), session)
    assert statuses and set(statuses) == {401}
