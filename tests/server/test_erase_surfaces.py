"""Erasure over REST (``POST /v1/erase``) and MCP (``memory_erase``, in the
``manage`` tool set only), against a real ``mindpalace serve`` and a real
MCP client: a dry run by default, ``confirm`` erases and answers the
receipt the erasure log keeps; the one permission rule
(``scoping.check_change``) decides, so an agent erases only its own
memories and an admin token any agent's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp import Client

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.server.tools import select_tools

from .conftest import server_env, start_server
from .test_mcp import assert_tool_error, http, run, stdio

SETTINGS = Settings(embedder="hashing")


def seed(db: Path) -> dict[str, str]:
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        heron = alice.remember("Heron census on the marsh: 14 birds", session="survey-1")
        alice.remember("Heron nest count at the weir: 3 nests", session="survey-1")
        kept = alice.remember("The kiln fires on Thursdays")
        shared = alice.remember("The studio opens at nine", visibility="shared")
    with Palace(db, agent_id="bob", settings=SETTINGS) as bob:
        bobs = bob.remember("Bob's shared runbook lives in the wiki", visibility="shared")
        bob.remember("Bob's survey note", session="survey-1")
    return {"heron": heron.id, "kept": kept.id, "shared": shared.id, "bobs": bobs.id}


def ids_of(db: Path) -> set[str]:
    with Palace(db, settings=SETTINGS, management=True) as admin:
        return {m.id for m in admin.memories(include_archived=True, include_superseded=True)}


def test_rest_erase_is_a_dry_run_until_confirmed(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)
    before = ids_of(db)
    server = start_server(db)
    try:
        with server.client() as alice:
            body = {"kind": "session", "value": "survey-1"}
            dry = alice.post("/v1/erase", json=body)
            assert dry.status_code == 200, dry.text
            receipt = dry.json()["receipt"]
            assert receipt["erased"] is False and "id" not in receipt
            assert receipt["counts"]["memories"] == 2  # alice's two; bob's is not hers
            assert ids_of(db) == before  # nothing written

            done = alice.post("/v1/erase", json={**body, "confirm": True})
            assert done.status_code == 200, done.text
            receipt = done.json()["receipt"]
            assert receipt["erased"] is True and receipt["id"].startswith("era_")
            assert (
                receipt["counts"]["memories"] == 2
                and receipt["digest"] == dry.json()["receipt"]["digest"]
            )
            assert "Heron" not in done.text  # a receipt holds no erased text
            assert alice.get(f"/v1/memories/{ids['heron']}").status_code == 404
            assert alice.get(f"/v1/memories/{ids['kept']}").status_code == 200
    finally:
        assert server.stop() == 0
    assert len(before - ids_of(db)) == 2
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        (logged,) = alice.erasures()
    assert logged.id == receipt["id"] and logged.selection == {
        "kind": "session",
        "value": "survey-1",
    }


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"kind": "everything"}, 400, "valid options: memory, agent, channel"),
        ({"kind": "session"}, 400, "erasing a session needs its session"),
        ({"kind": "filter"}, 400, "at least one of: types, categories, stores"),
        ({"kind": "filter", "stores": ["attic"]}, 400, "episodic"),
        ({"kind": "filter", "created_before": "someday"}, 400, "created_before"),
        ({"kind": "agent", "confirm": "yes"}, 422, "confirm must be true or false"),
        ({"kind": "agent", "everything": True}, 422, "unknown argument 'everything'"),
    ],
)
def test_rest_erase_refuses_bad_selections(
    tmp_path: Path, body: dict[str, object], status: int, fragment: str
) -> None:
    db = tmp_path / "palace.db"
    seed(db)
    before = ids_of(db)
    server = start_server(db)
    try:
        with server.client() as alice:
            refused = alice.post("/v1/erase", json=body)
    finally:
        assert server.stop() == 0
    assert refused.status_code == status, refused.text
    assert fragment in refused.json()["message"], refused.json()
    assert ids_of(db) == before


def test_rest_erase_follows_the_permission_rule(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)
    server = start_server(db)
    try:
        with server.client() as alice:
            refused = alice.post(
                "/v1/erase", json={"kind": "memory", "value": ids["bobs"], "confirm": True}
            )
            assert refused.status_code == 403, refused.text
            assert refused.json()["message"].startswith(f"may not erase memory {ids['bobs']!r}")
            hidden = alice.post("/v1/erase", json={"kind": "memory", "value": "mem_missing"})
            assert hidden.status_code == 404
            # Erasing "everything of mine" leaves bob's memories alone.
            mine = alice.post("/v1/erase", json={"kind": "agent", "confirm": True})
            assert mine.json()["receipt"]["counts"]["memories"] == 4
        with server.client("ops-token") as ops:  # an admin token: the management view
            theirs = ops.post(
                "/v1/erase", json={"kind": "memory", "value": ids["bobs"], "confirm": True}
            )
            assert theirs.status_code == 200, theirs.text
            assert theirs.json()["receipt"]["agent_id"] == "ops"
    finally:
        assert server.stop() == 0
    with Palace(db, settings=SETTINGS, management=True) as admin:
        left = admin.memories(include_archived=True, include_superseded=True)
    assert [(m.agent_id, m.content) for m in left] == [("bob", "Bob's survey note")]


def test_mcp_erase_is_a_manage_tool(tmp_path: Path) -> None:
    assert "memory_erase" not in [op.name for op in select_tools("core")]
    assert "memory_erase" in [op.name for op in select_tools("manage")]
    db = tmp_path / "palace.db"
    ids = seed(db)
    seen: dict[str, object] = {}

    async def lean(client: Client) -> None:
        seen["core"] = [t.name for t in (await client.list_tools()).tools]

    async def manage(client: Client) -> None:
        seen["manage"] = [t.name for t in (await client.list_tools()).tools]
        await assert_tool_error(
            client,
            "memory_erase",
            {"kind": "memory", "value": ids["bobs"], "confirm": True},
            f"may not erase memory {ids['bobs']!r}",
        )
        await assert_tool_error(client, "memory_erase", {"kind": "all"}, "valid options:", "entity")
        dry = await client.call_tool("memory_erase", {"kind": "entity", "value": "Heron"})
        assert dry.structured_content is not None
        assert dry.structured_content["receipt"]["erased"] is False
        done = await client.call_tool(
            "memory_erase", {"kind": "memory", "value": ids["heron"], "confirm": True}
        )
        assert done.structured_content is not None
        seen["receipt"] = done.structured_content["receipt"]

    run(stdio(db, "--agent", "alice"), lean)
    run(stdio(db, "--agent", "alice", "--tools", "core,manage"), manage)
    assert "memory_erase" not in seen["core"]  # type: ignore[operator]
    assert "memory_erase" in seen["manage"]  # type: ignore[operator]
    receipt = seen["receipt"]
    assert isinstance(receipt, dict) and receipt["erased"] is True
    assert receipt["counts"]["memories"] == 1
    assert ids["heron"] not in ids_of(db) and ids["bobs"] in ids_of(db)


def test_mcp_http_erase_with_an_admin_token(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)
    server = start_server(db, "--tools", "manage")
    out: dict[str, object] = {}

    async def session(client: Client) -> None:
        done = await client.call_tool(
            "memory_erase", {"kind": "channel", "value": "none-such", "confirm": True}
        )
        assert done.structured_content is not None
        out["empty"] = done.structured_content["receipt"]["counts"]["memories"]
        done = await client.call_tool(
            "memory_erase", {"kind": "memory", "value": ids["bobs"], "confirm": True}
        )
        assert done.structured_content is not None
        out["bobs"] = done.structured_content["receipt"]

    try:
        run(http(server, authorization="Bearer ops-token"), session)
    finally:
        assert server.stop() == 0
    assert out["empty"] == 0
    receipt = out["bobs"]
    assert isinstance(receipt, dict) and receipt["counts"]["memories"] == 1
    assert ids["bobs"] not in ids_of(db)


def test_serve_applies_retention_rules_in_the_background(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        alice.remember(
            "Old heron chat", store="episodic", category="conversation", created_at="2020-01-01"
        )
        kept = alice.remember("Fresh heron chat", store="episodic", category="conversation")
        alice.retention.set(30, store="episodic", category="conversation")
    server = start_server(db, env=server_env(MINDPALACE_RETENTION_EVERY="1"))
    try:
        deadline = time.monotonic() + 30
        while len(ids_of(db)) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        assert server.stop() == 0
    assert ids_of(db) == {kept.id}
    with Palace(db, settings=SETTINGS, management=True) as admin:
        (receipt,) = admin.erasures()
    assert receipt.agent_id == "retention" and receipt.selection["kind"] == "retention"
