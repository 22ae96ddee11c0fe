"""``mindpalace serve --workers N``: N processes behind one port, each with
its own palace, nothing shared in memory; all of them answer, a write
through one is read through another, and SIGTERM stops them all cleanly."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.server.conftest import Server, start_server


def _workers(parent: int) -> list[int]:
    """The worker processes of ``serve --workers`` (not multiprocessing's
    resource tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    found = []
    for pid in children:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        if b"spawn_main" in command:
            found.append(int(pid))
    return found


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_two_workers_share_the_port_and_the_palace(tmp_path: Path) -> None:
    server: Server = start_server(tmp_path / "palace.db", "--workers", "2", "--threads", "2")
    try:
        workers = _workers(server.process.pid)
        assert len(workers) == 2
        before = {pid: _cpu_ticks(pid) for pid in workers}
        headers = {"authorization": "Bearer alice-token"}
        written = []
        for i in range(16):  # a new connection each time: the kernel picks a worker
            response = httpx.post(
                f"{server.url}/v1/memories",
                json={"content": f"worker note {i} about lighthouses"},
                headers=headers,
                timeout=30,
            )
            assert response.status_code == 201, response.text
            written.append(response.json()["memory"]["memory_id"])
        for _ in range(30):
            found = httpx.post(
                f"{server.url}/v1/recall",
                json={"query": "lighthouses", "limit": 20},
                headers=headers,
                timeout=30,
            )
            assert found.status_code == 200
            assert {m["memory_id"] for m in found.json()["memories"]} == set(written)
        assert all(_cpu_ticks(pid) > before[pid] for pid in workers)  # both answered
    finally:
        assert server.stop() == 0
    assert all(not Path(f"/proc/{pid}").exists() for pid in workers)


def test_workers_out_of_range_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="workers"):
        start_server(tmp_path / "palace.db", "--workers", "0")
