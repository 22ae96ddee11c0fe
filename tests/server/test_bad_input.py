"""Hostile requests against a real ``mindpalace serve`` (real HTTP, real
SQLite file): lone surrogates, JSON nested too deep to parse, integers too
long to read, and a hypothesis fuzz over every REST route. The property:
a 4xx with a JSON problem, never a 5xx; the keep-alive connection goes on
serving; a refused request changes no stored row; the server logs no
traceback."""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hostile import texts, to_json, to_query, wire_values
from mindpalace.server.tools import OPERATIONS, Operation
from test_cli import db_snapshot

from .conftest import Server, seed, start_server
from .samples import SAMPLES


class Watched:
    """A seeded server whose log is read as it runs (an unread pipe would
    fill and stall the server) and kept for the test to inspect."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.log: list[str] = []
        self.client = server.client()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.server.process.stdout is not None
        for line in self.server.process.stdout:
            self.log.append(line)

    def tracebacks(self) -> list[str]:
        return [line for line in self.log if "Traceback" in line or "Error" in line]


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    db = tmp_path_factory.mktemp("hostile") / "palace.db"
    ids = seed(db)
    server = start_server(db)
    server.ids = ids
    running = Watched(server)
    yield running
    running.client.close()
    assert server.stop() == 0
    assert running.tracebacks() == []


def post(watched: Watched, path: str, body: str) -> httpx.Response:
    """POST ``body`` as it is, on the one keep-alive connection."""
    return watched.client.post(
        path, content=body.encode(), headers={"content-type": "application/json"}
    )


def assert_refused(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    problem: dict[str, Any] = response.json()
    assert problem["error"] == error
    return problem


SURROGATE = '"bad \\ud800 text"'  # JSON for a string with a lone surrogate


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/memories", f'{{"content": {SURROGATE}}}', "content"),
        ("/v1/memories", f'{{"content": "ok", "tags": [{SURROGATE}]}}', "tags"),
        ("/v1/memories", f'{{"content": "ok", "title": {SURROGATE}}}', "title"),
        ("/v1/recall", f'{{"query": {SURROGATE}}}', "query"),
        ("/v1/what-do-i-know", f'{{"topic": {SURROGATE}}}', "topic"),
        ("/v1/why-did-we", f'{{"query": {SURROGATE}}}', "query"),
        ("/v1/preflight", f'{{"action": {SURROGATE}}}', "action"),
        ("/v1/personal/search", f'{{"query": {SURROGATE}}}', "query"),
        ("/v1/messages/search", f'{{"phrase": {SURROGATE}}}', "phrase"),
        ("/v1/context", f'{{"query": {SURROGATE}}}', "query"),
        ("/v1/skills/activate", f'{{"query": {SURROGATE}}}', "query"),
        ("/v1/feedback", f'{{"memory_id": {SURROGATE}, "useful": true}}', "memory_id"),
    ],
)
def test_a_lone_surrogate_is_400_and_the_connection_goes_on(
    watched: Watched, path: str, body: str, field: str
) -> None:
    before = db_snapshot(watched.server.db)
    problem = assert_refused(post(watched, path, body), 400, "invalid_argument")
    assert problem["field"] == field
    assert "lone surrogate (U+D800)" in problem["message"]
    assert watched.client.get("/healthz").status_code == 200  # same connection, not reset
    assert db_snapshot(watched.server.db) == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"content": ' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
        ('{"content": "x", "confidence": ' + "9" * 5000 + "}", "Exceeds the limit (4300 digits)"),
        ('{"query": "x", "limit": -' + "1" * 4301 + "}", "Exceeds the limit (4300 digits)"),
    ],
    ids=["deep list", "deep object", "huge integer", "huge negative integer"],
)
def test_unreadable_json_is_422_and_the_connection_goes_on(
    watched: Watched, body: str, message: str
) -> None:
    before = db_snapshot(watched.server.db)
    for path in ("/v1/memories", "/v1/recall"):
        problem = assert_refused(post(watched, path, body), 422, "malformed_json")
        assert message in problem["message"]
        assert watched.client.get("/healthz").status_code == 200
    assert db_snapshot(watched.server.db) == before


# -- fuzz ---------------------------------------------------------------------------


def _wire_names(op: Operation) -> list[str]:
    return sorted(op.input_schema["properties"])


def _request(op: Operation, args: dict[str, Any]) -> tuple[str, str, str | None]:
    """(method, URL, body) for ``op`` with ``args``: path arguments in the
    path, the rest in the query (GET, DELETE) or the body (POST), every
    text percent-encoded as UTF-8 with surrogates passed through (bytes
    that are not UTF-8 on the wire)."""

    def quoted(value: object) -> str:
        return urllib.parse.quote(to_query(value), safe="", errors="surrogatepass")

    in_path = set(re.findall(r"{(\w+)}", op.path))
    path = op.path.format(**{k: quoted(args.get(k, "x")) or "x" for k in in_path})
    rest = {k: v for k, v in args.items() if k not in in_path}
    if op.method == "POST":
        return op.method, path, to_json(rest)
    query = "&".join(f"{quoted(k)}={quoted(v)}" for k, v in rest.items())
    return op.method, f"{path}?{query}" if query else path, None


@st.composite
def requests(draw: st.DrawFn, ids: dict[str, str]) -> tuple[Operation, dict[str, Any]]:
    op = draw(st.sampled_from(OPERATIONS))
    args: dict[str, Any] = dict(SAMPLES[op.name].args(ids))
    names = [*_wire_names(op), "unknownArgument"]
    for name in draw(st.sets(st.sampled_from(names), min_size=1, max_size=3)):
        args[name] = draw(wire_values)
    if draw(st.booleans()):  # and sometimes a hostile argument name
        args[draw(texts)] = draw(wire_values)
    return op, args


@pytest.fixture(scope="module")
def seeded_ids(watched: Watched) -> dict[str, str]:
    return watched.server.ids


def test_fuzz_every_route(watched: Watched, seeded_ids: dict[str, str]) -> None:
    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(request=requests(seeded_ids))
    def check(request: tuple[Operation, dict[str, Any]]) -> None:
        op, args = request
        method, url, body = _request(op, args)
        assume(len(url) < 60_000)  # httpx sends no longer URL (and the body limit is tested)
        before = db_snapshot(watched.server.db)
        response = watched.client.request(
            method,
            url,
            content=None if body is None else body.encode("utf-8", "surrogatepass"),
            headers={"content-type": "application/json"},
        )
        assert response.status_code < 500, response.text
        answer = response.json()
        assert isinstance(answer, dict)
        if response.status_code >= 400:
            assert set(answer) >= {"error", "message"}
            assert db_snapshot(watched.server.db) == before, f"{op.name} refused but wrote"
        assert watched.tracebacks() == []

    check()
    assert watched.client.get("/healthz").status_code == 200
