"""A web page against ``mindpalace serve --auth none`` on loopback: through
DNS rebinding (its own name in Host) it may not read the palace on any
route, and it may not plant a memory with a request it can send without
asking (a cross-origin POST of ``text/plain`` or a form)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .conftest import Server, start_server

REBOUND = "attacker.test"
EVIL = "http://evil.example"
ROUTES = [
    ("GET", "/v1/memories"),
    ("GET", "/v1/stats"),
    ("POST", "/v1/recall"),
    ("POST", "/v1/memories"),
    ("POST", "/mcp"),
    ("GET", "/openapi.json"),
    ("GET", "/healthz"),
    ("GET", "/memories"),  # the inspector
    ("GET", "/login"),
]


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("open") / "palace.db", "--auth", "none")
    yield running
    assert running.stop() == 0


def contents(server: Server) -> list[str]:
    with server.client(token=None) as client:
        listed = client.get("/v1/memories", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    return [m["content"] for m in listed.json()["memories"]]


def port_of(server: Server) -> str:
    return server.url.rsplit(":", 1)[1]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("host", [REBOUND, f"{REBOUND}:8765", "127.0.0.1.nip.io", "[::2]"])
def test_a_rebound_host_name_is_refused_on_every_route(
    open_server: Server, method: str, path: str, host: str
) -> None:
    with open_server.client(token=None, host=host) as client:
        response = client.request(method, path, json={"content": "planted", "query": "x"})
    assert response.status_code == 421, response.text
    assert response.json()["error"] == "misdirected_request"
    assert "loopback host name" in response.json()["message"]
    assert "planted" not in contents(open_server)


@pytest.mark.parametrize("path", ["/v1/stats", "/healthz"])
def test_a_rebound_host_name_is_refused_with_a_token_too(server: Server, path: str) -> None:
    with server.client(host=REBOUND) as client:
        assert client.get(path).status_code == 421


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_loopback_host_names_are_answered(open_server: Server, name: str) -> None:
    for host in (name, f"{name}:{port_of(open_server)}"):
        with open_server.client(token=None, host=host) as client:
            assert client.get("/v1/stats").status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        None,
    ],
)
@pytest.mark.parametrize(("method", "path"), [("POST", "/v1/memories"), ("POST", "/v1/recall")])
def test_a_write_that_is_not_json_is_415(
    open_server: Server, content_type: str | None, method: str, path: str
) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    with open_server.client(token=None) as client:
        response = client.request(
            method, path, content=b'{"content":"planted","query":"x"}', headers=headers
        )
    assert response.status_code == 415, response.text
    problem = response.json()
    assert problem["error"] == "unsupported_media_type"
    assert problem["valid"] == ["application/json"]
    assert "application/json" in problem["message"]
    assert "planted" not in contents(open_server)


def test_update_and_forget_with_another_type_are_415(open_server: Server) -> None:
    with open_server.client(token=None) as client:
        stored = client.post("/v1/memories", json={"content": "kept as it is"})
        memory_id = stored.json()["memory"]["memory_id"]
        plain = {"content-type": "text/plain"}
        patched = client.patch(
            f"/v1/memories/{memory_id}", content=b'{"content":"changed"}', headers=plain
        )
        assert patched.status_code == 415
        forgot = client.request("DELETE", f"/v1/memories/{memory_id}", content=b"x", headers=plain)
        assert forgot.status_code == 415
        assert client.get(f"/v1/memories/{memory_id}").status_code == 200
        # A DELETE without a body needs no type: its arguments are in the query.
        assert client.delete(f"/v1/memories/{memory_id}").status_code == 200


@pytest.mark.parametrize("origin", [EVIL, "null", "http://localhost:1", "https://127.0.0.1"])
@pytest.mark.parametrize(("method", "path"), [("POST", "/v1/memories"), ("GET", "/v1/memories")])
def test_a_request_from_another_origin_is_403(
    open_server: Server, origin: str, method: str, path: str
) -> None:
    with open_server.client(token=None, origin=origin) as client:
        response = client.request(
            method,
            path,
            json={"content": "planted"} if method == "POST" else None,
            headers={"content-type": "text/plain"} if method == "POST" else None,
        )
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "cross_origin"
    assert "planted" not in contents(open_server)


def test_the_servers_own_origin_may_write(open_server: Server) -> None:
    with open_server.client(token=None, origin=open_server.url) as client:
        stored = client.post("/v1/memories", json={"content": "from the server's own page"})
    assert stored.status_code == 201, stored.text
    assert "from the server's own page" in contents(open_server)


def test_the_probe_repro(open_server: Server) -> None:
    """The two requests of the report, as curl sends them."""
    with httpx.Client(base_url=open_server.url) as client:
        read = client.get("/v1/memories", headers={"host": REBOUND})
        planted = client.post(
            "/v1/memories",
            content=b'{"content":"planted"}',
            headers={"origin": EVIL, "content-type": "text/plain"},
        )
    assert read.status_code == 421
    assert planted.status_code == 403
    assert "planted" not in contents(open_server)
