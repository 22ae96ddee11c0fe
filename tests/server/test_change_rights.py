"""Who may change a memory, over REST and MCP: the rule of the Python API
(``scoping.check_change``; tests/test_permissions.py has the whole table),
reached through the same facade. A refusal names the action, the memory and
why, and changes nothing; a peer-facing view (MCP over stdio with
``--channel --peer``) is refused the agent's unchannelled shared memory and
may forget its own channel's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from mindpalace import Palace
from mindpalace.config import Settings

from .conftest import start_server
from .test_mcp import assert_tool_error, http, run, stdio

SETTINGS = Settings(embedder="hashing")
CHANNEL = "peer-coach:1"


def seed(db: Path) -> dict[str, str]:
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        shared = alice.remember("The studio opens at nine for every client", visibility="shared")
    with Palace(db, agent_id="alice", channel=CHANNEL, peer=True, settings=SETTINGS) as peer:
        mine = peer.remember("Client one prefers morning sessions")
    with Palace(db, agent_id="bob", settings=SETTINGS) as bob:
        bobs = bob.remember("Bob's runbook lives in the wiki", visibility="shared")
    return {"shared": shared.id, "mine": mine.id, "bobs": bobs.id}


def state(db: Path, memory_id: str) -> tuple[bool, str | None]:
    """(archived, superseded_by) of a memory, as the management view reads it."""
    with Palace(db, settings=SETTINGS, management=True) as admin:
        memory = admin.get(memory_id)
    return memory.archived, memory.superseded_by


def test_rest_and_mcp_http_refuse_another_agents_memory(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)
    server = start_server(db, "--tools", "all")
    try:
        with server.client() as alice:
            for hard in ("false", "true"):
                refused = alice.delete(f"/v1/memories/{ids['bobs']}", params={"hard": hard})
                assert refused.status_code == 403, refused.text
                assert refused.json()["error"] == "forbidden"
                message = refused.json()["message"]
                assert message.startswith(f"may not forget memory {ids['bobs']!r}: ")
                assert "belongs to agent 'bob', not to 'alice'" in message
            # Writes over REST are never peer-facing: forget takes no channel.
            through = alice.delete(f"/v1/memories/{ids['shared']}", params={"channel": CHANNEL})
            assert through.status_code == 422
            assert "unknown argument 'channel'" in through.json()["message"]

        async def session(client: Client) -> None:
            await assert_tool_error(
                client,
                "memory_forget",
                {"memory_id": ids["bobs"]},
                f"may not forget memory {ids['bobs']!r}",
                "belongs to agent 'bob'",
            )
            await assert_tool_error(
                client, "memory_forget", {"memory_id": ids["shared"], "channel": CHANNEL}, "channel"
            )

        run(http(server, authorization="Bearer alice-token"), session)
    finally:
        assert server.stop() == 0
    assert state(db, ids["bobs"]) == (False, None)
    assert state(db, ids["shared"]) == (False, None)


def test_mcp_stdio_peer_forgets_only_its_channels_memories(tmp_path: Path) -> None:
    db = tmp_path / "palace.db"
    ids = seed(db)
    out: dict[str, Any] = {}

    async def session(client: Client) -> None:
        for hard in (False, True):
            await assert_tool_error(
                client,
                "memory_forget",
                {"memory_id": ids["shared"], "hard": hard},
                f"may not forget memory {ids['shared']!r}: it is unchannelled",
                "peer-facing view (channel 'peer-coach:1')",
            )
        await assert_tool_error(
            client,
            "memory_update",
            {"memory_id": ids["shared"], "content": "The studio opens at ten"},
            f"may not update memory {ids['shared']!r}",
        )
        judged = await client.call_tool(
            "memory_feedback", {"memory_id": ids["shared"], "useful": True}
        )
        assert not judged.is_error, judged.content
        out["feedback"] = judged.structured_content
        forgotten = await client.call_tool("memory_forget", {"memory_id": ids["mine"]})
        assert not forgotten.is_error, forgotten.content
        out["forget"] = forgotten.structured_content

    peer = ("--agent", "alice", "--channel", CHANNEL, "--peer", "--tools", "manage")
    run(stdio(db, *peer), session)
    assert out["feedback"]["recorded"] is True
    assert out["forget"] == {"forgotten": ids["mine"], "hard": False}
    assert state(db, ids["shared"]) == (False, None)
    assert state(db, ids["mine"]) == (True, None)
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        assert ids["shared"] in {h.memory.id for h in alice.recall("studio opens")}
