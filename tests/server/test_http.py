"""The REST API against a real ``mindpalace serve`` on loopback (httpx)."""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.server.tools import OPERATIONS, Operation

from .conftest import Server, server_env
from .samples import SAMPLES


def call(client: httpx.Client, op: Operation, args: dict[str, Any]) -> httpx.Response:
    """The REST request for ``op``: path arguments in the path, the rest in
    the query (GET, DELETE) or the JSON body (POST)."""
    path_args = set(re.findall(r"{(\w+)}", op.path))
    path = op.path.format(**{k: args[k] for k in path_args})
    rest = {k: v for k, v in args.items() if k not in path_args}
    if op.method in ("POST", "PATCH"):
        return client.request(op.method, path, json=rest)
    return client.request(op.method, path, params=rest)


def body_schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The named schema of an operation's request body."""
    media = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    name = media["schema"]["$ref"].rpartition("/")[2]
    schema: dict[str, Any] = document["components"]["schemas"][name]
    return schema


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references
    resolve in the served document."""
    return Draft202012Validator({**schema, "components": document["components"]})


@pytest.fixture(scope="module")
def served_document(server: Server) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(f"{server.url}/openapi.json").json()
    return document


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_every_operation_round_trips(
    server: Server, served_document: dict[str, Any], op: Operation
) -> None:
    """Each operation's sample over HTTP to the real server: the body sent
    matches its request schema, the answer its result schema in the
    served OpenAPI document, and the sample's own checks."""
    sample = SAMPLES[op.name]
    args = sample.args(server.ids)
    method = op.method.lower()
    if op.method in ("POST", "PATCH"):
        schema = body_schema(served_document, op.path, method)
        lists = {k for k, p in schema["properties"].items() if p.get("type") == "array"}
        body = {  # (a sample may send one value for a list, as the server also takes)
            k: [v] if k in lists and not isinstance(v, list) else v
            for k, v in args.items()
            if "{" + k + "}" not in op.path
        }
        validator(served_document, schema).validate(body)
    with server.client() as client:
        response = call(client, op, args)
    assert response.status_code == op.status, response.text
    declared = served_document["paths"][op.path][method]["responses"][str(op.status)]
    result_schema = declared["content"]["application/json"]["schema"]
    errors = list(validator(served_document, result_schema).iter_errors(response.json()))
    assert errors == [], [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    sample.check(response.json(), server.ids)


def test_every_tool_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(op.name for op in OPERATIONS)


@pytest.mark.parametrize(
    ("path", "body", "field", "valid"),
    [
        ("/v1/memories", {"content": "x", "type": "persn"}, "type", "person"),
        ("/v1/memories", {"content": "x", "store": "semntic"}, "store", "semantic"),
        ("/v1/memories", {"content": "x", "category": "idea"}, "category", "decision"),
        ("/v1/memories", {"content": "x", "visibility": "public"}, "visibility", "shared"),
        ("/v1/recall", {"query": "x", "types": ["gadget"]}, "types", "tool"),
        ("/v1/recall", {"query": "x", "types": "fact"}, "types", "skill"),  # one value, a list
        ("/v1/recall", {"query": "x", "stores": ["longterm"]}, "stores", "episodic"),
        ("/v1/recall", {"query": "x", "categories": ["note"]}, "categories", "lesson"),
        ("/v1/recall", {"query": "x", "mode": "fast"}, "mode", "decision"),
        ("/v1/memories", {"content": "x", "kind": "diary"}, "kind", "journal"),
        ("/v1/personal/search", {"query": "x", "kinds": ["diary"]}, "kinds", "journal"),
    ],
)
def test_invalid_enum_is_400_naming_valid_options(
    server: Server, path: str, body: dict[str, Any], field: str, valid: str
) -> None:
    with server.client() as client:
        response = client.post(path, json=body)
    assert response.status_code == 400
    problem = response.json()
    assert problem["error"] == "invalid_argument"
    assert problem["field"] == field
    assert valid in problem["valid"]
    assert "valid options:" in problem["message"]
    assert "pydantic" not in response.text and "https://" not in response.text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/recall", {"query": "x", "limit": 0}),
        ("/v1/recall", {"query": "x", "limit": 21}),
        ("/v1/context", {"query": "x", "max_tokens": 100}),
        ("/v1/messages/search", {"phrase": "x", "around": 11}),
        ("/v1/memories", {"content": "   "}),
        ("/v1/memories", {"content": "x", "confidence": 1.5}),
        ("/v1/messages/search", {"phrase": ""}),
        ("/v1/personal/search", {"query": "x", "limit": 21}),
        ("/v1/memories", {"content": "x", "completed": True}),  # only issues are completed
    ],
)
def test_out_of_range_values_are_400(server: Server, path: str, body: dict[str, Any]) -> None:
    with server.client() as client:
        response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert "pydantic" not in response.text and "https://" not in response.text


def test_a_range_error_names_the_range(server: Server) -> None:
    with server.client() as client:
        problem = client.post("/v1/recall", json={"query": "x", "limit": 21}).json()
    assert problem["field"] == "limit"
    assert problem["message"] == "limit must be from 1 to 20, got 21"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer wrong-token"},
        {"authorization": "Basic YWxpY2U6eA=="},
        {"authorization": "Bearer gateway-token"},  # shared token needs the agent header
        {"authorization": "Bearer gateway-token", "x-mindpalace-agent-id": ""},
    ],
)
@pytest.mark.parametrize("path", ["/v1/stats", "/mcp"])
def test_no_identity_fails_closed(server: Server, headers: dict[str, str], path: str) -> None:
    with server.client(token=None, **headers) as client:
        response = client.get(path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        (
            [("authorization", "Bearer alice-token"), ("authorization", "Bearer bob-token")],
            "Authorization",
        ),
        (
            [("authorization", "Bearer bob-token"), ("authorization", "Bearer bob-token")],
            "Authorization",
        ),
        (
            [
                ("authorization", "Bearer gateway-token"),
                ("x-mindpalace-agent-id", "erin"),
                ("x-mindpalace-agent-id", "alice"),
            ],
            "x-mindpalace-agent-id",
        ),
    ],
)
@pytest.mark.parametrize("path", ["/v1/stats", "/mcp"])
def test_repeated_identity_headers_are_refused(
    server: Server, headers: list[tuple[str, str]], named: str, path: str
) -> None:
    """Two Authorization (or agent) headers are ambiguous: which one is the
    caller? Refused with 400, never resolved by picking one."""
    method = "POST" if path == "/mcp" else "GET"  # a GET of /mcp opens an event stream
    response = httpx.request(method, f"{server.url}{path}", headers=headers, json={}, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"] == "repeated_header"
    assert f"2 {named} headers" in response.json()["message"]


def test_shared_token_acts_as_the_named_agent(server: Server) -> None:
    gateway = server.client("gateway-token", **{"x-mindpalace-agent-id": "carol"})
    with gateway as client:
        stored = client.post("/v1/memories", json={"content": "Carol likes the blue theme"})
        assert stored.status_code == 201
        assert stored.json()["memory"]["agent_id"] == "carol"
        memory_id = stored.json()["memory"]["memory_id"]
    with server.client("alice-token") as alice:
        assert alice.get(f"/v1/memories/{memory_id}").status_code == 404


def test_agents_are_isolated(server: Server) -> None:
    with server.client("bob-token") as bob:
        assert bob.get(f"/v1/memories/{server.ids['bob']}").status_code == 200
        assert bob.get(f"/v1/memories/{server.ids['fact']}").status_code == 404
        found = bob.post("/v1/recall", json={"query": "sqlite storage"}).json()["memories"]
        assert {m["memory_id"] for m in found} == {server.ids["bob"], server.ids["bob_owns"]}
        owners = bob.get("/v1/owners", params={"entity": "Storage"}).json()
        assert [g["name"] for g in owners["groups"]] == ["Bob"]  # not alice's "Ann owns"


def test_forgetting_another_agents_shared_memory_is_403(server: Server) -> None:
    with server.client("bob-token") as bob:
        shared = bob.post(
            "/v1/memories", json={"content": "Team lunch is on Friday", "visibility": "shared"}
        )
        memory_id = shared.json()["memory"]["memory_id"]
    with server.client("alice-token") as alice:
        assert alice.get(f"/v1/memories/{memory_id}").status_code == 200
        response = alice.delete(f"/v1/memories/{memory_id}")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


def test_unknown_memory_and_route_are_404(server: Server) -> None:
    with server.client() as client:
        assert client.get("/v1/memories/mem_00000000000000000000000000").status_code == 404
        assert client.delete("/v1/memories/mem_00000000000000000000000000").status_code == 404
        missing = client.get("/v1/no-such-thing")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


@pytest.mark.parametrize(
    "body",
    [b'{"query": "x"', b"not json", b"[1, 2]", b'"just a string"', b"\xff\xfe"],
)
def test_malformed_json_is_422(server: Server, body: bytes) -> None:
    with server.client() as client:
        response = client.post(
            "/v1/recall", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 422
    assert response.json()["error"] == "malformed_json"


@pytest.mark.parametrize(
    "body",
    [{}, {"query": 5}, {"query": "x", "limit": "many"}, {"query": "x", "colour": "red"}],
)
def test_arguments_of_the_wrong_shape_are_422(server: Server, body: dict[str, Any]) -> None:
    with server.client() as client:
        response = client.post("/v1/recall", json=body)
    assert response.status_code == 422
    problem = response.json()
    assert problem["error"] == "invalid_arguments"
    assert "include_archived" in problem["message"]  # the valid arguments are named
    assert "pydantic" not in response.text and "https://" not in response.text


def test_oversize_body_is_413(server: Server) -> None:
    big = {"content": "a" * (1024 * 1024 + 10)}
    with server.client() as client:
        declared = client.post("/v1/memories", json=big)

        def chunks() -> Any:  # no Content-Length: the limit counts the stream
            yield b'{"content": "'
            for _ in range(20):
                yield b"b" * 65536
            yield b'"}'

        streamed = client.post("/v1/memories", content=chunks())
        mcp = client.post("/mcp", json=big)
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert mcp.status_code == 413
    assert declared.json()["error"] == "payload_too_large"


def test_openapi_is_served_and_valid(server: Server) -> None:
    response = httpx.get(f"{server.url}/openapi.json")  # public: no token needed
    assert response.status_code == 200
    document = response.json()
    validate(document)
    operations = {
        operation["operationId"]
        for path in document["paths"].values()
        for operation in path.values()
    }
    assert operations == {op.name for op in OPERATIONS}
    store = body_schema(document, "/v1/memories", "post")
    assert "person" in store["properties"]["type"]["enum"]
    assert "semantic: lasting facts" in store["properties"]["store"]["description"]
    limit = body_schema(document, "/v1/recall", "post")["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 20, 10)
    listing = {p["name"]: p for p in document["paths"]["/v1/memories"]["get"]["parameters"]}
    assert "conversation" in listing["categories"]["schema"]["items"]["enum"]


def test_openapi_names_are_snake_case(server: Server) -> None:
    """Every path argument, query parameter, body and result property."""
    document = httpx.get(f"{server.url}/openapi.json").json()
    names: list[str] = []
    for path, methods in document["paths"].items():
        names += re.findall(r"{(\w+)}", path)
        for operation in methods.values():
            names += [p["name"] for p in operation["parameters"]]
    for schema in document["components"]["schemas"].values():
        names += list(schema.get("properties", {}))
    assert names and all(re.match(r"^[a-z][a-z0-9_]*$", n) for n in names), names
    assert "/v1/search" not in document["paths"]  # memory search is /v1/recall: one name each


def test_every_body_and_result_is_a_named_schema(served_document: dict[str, Any]) -> None:
    schemas = served_document["components"]["schemas"]
    assert {"Memory", "Hit", "HitList", "Answer", "Context", "Skill", "Stats", "Problem"} <= set(
        schemas
    )
    for methods in served_document["paths"].values():
        for operation in methods.values():
            media = [
                media
                for part in (operation.get("requestBody", {}), *operation["responses"].values())
                for media in part.get("content", {}).values()
            ]
            assert media, operation["operationId"]
            for one in media:
                assert set(one["schema"]) == {"$ref"}, (operation["operationId"], one)
                assert one["schema"]["$ref"].rpartition("/")[2] in schemas
    for name, schema in schemas.items():
        if name != "Problem":
            assert schema["additionalProperties"] is False, name  # closed: no surprise fields


def test_a_schema_refuses_what_its_shape_does_not_declare(
    served_document: dict[str, Any],
) -> None:
    """The validation above can fail: a field no shape declares, a wrong
    type, a null, a value outside its set."""
    schema = {"$ref": "#/components/schemas/MemoryResult"}
    check = validator(served_document, schema)
    memory = {
        "memory_id": "mem_x",
        "content": "x",
        "store": "semantic",
        "category": "fact",
        "type": "unknown",
        "tags": [],
        "strength": 1.0,
        "confidence": 1.0,
        "source": "manual",
        "visibility": "isolated",
        "agent_id": "alice",
        "constraint": False,
        "archived": False,
        "created_at": "2026-03-02T08:30:00+00:00",
        "updated_at": "2026-03-02T08:30:00+00:00",
        "kind": "memory",
    }
    check.validate({"memory": memory})
    for wrong in ({"colour": "red"}, {"tags": "x"}, {"title": None}, {"store": "attic"}):
        assert not check.is_valid({"memory": {**memory, **wrong}}), wrong


def test_problems_match_the_problem_schema(served_document: dict[str, Any], server: Server) -> None:
    with server.client() as client:
        answers = [
            client.post("/v1/recall", json={"query": "x", "mode": "fast"}),
            client.post("/v1/recall", json={"query": "x", "colour": "red"}),
            client.get("/v1/memories/mem_00000000000000000000000000"),
        ]
    check = validator(served_document, {"$ref": "#/components/schemas/Problem"})
    assert [a.status_code for a in answers] == [400, 422, 404]
    for answer in answers:
        check.validate(answer.json())


def test_many_concurrent_clients_lose_nothing(server: Server) -> None:
    """20 clients x 10 mixed writes and recalls at once: no error, and every
    acknowledged write is readable afterwards."""

    def client_run(worker: int) -> list[str]:
        ids = []
        with server.client("gateway-token", **{"x-mindpalace-agent-id": f"load{worker % 4}"}) as c:
            for i in range(10):
                stored = c.post(
                    "/v1/memories", json={"content": f"load note {worker}-{i} about otters"}
                )
                assert stored.status_code == 201, stored.text
                ids.append(stored.json()["memory"]["memory_id"])
                found = c.post("/v1/recall", json={"query": f"otters {worker}", "limit": 3})
                assert found.status_code == 200, found.text
        return ids

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        written = [i for ids in pool.map(client_run, range(20)) for i in ids]
    assert len(set(written)) == 200
    with Palace(server.db, management=True, settings=Settings(embedder="hashing")) as palace:
        for memory_id in written:
            palace.get(memory_id)


def test_shutdown_keeps_every_acknowledged_write(fresh_server: Callable[..., Server]) -> None:
    """SIGTERM while clients write: the server exits cleanly, and every write
    it acknowledged is in the file."""
    running = fresh_server()
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        with running.client() as client:
            i = 0
            while not stop.is_set():
                try:
                    response = client.post(
                        "/v1/memories", json={"content": f"shutdown test {worker}-{i}"}
                    )
                except httpx.TransportError:
                    return  # the server is gone: this write was never acknowledged
                if response.status_code == 201:
                    with lock:
                        acknowledged.append(response.json()["memory"]["memory_id"])
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    status = running.stop()
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert status == 0
    assert len(acknowledged) > 10
    with Palace(running.db, management=True, settings=Settings(embedder="hashing")) as palace:
        for memory_id in acknowledged:
            palace.get(memory_id)


def test_auth_none_is_refused_off_loopback(fresh_server: Callable[..., Server]) -> None:
    with pytest.raises(AssertionError, match="refused on non-loopback"):
        fresh_server("--auth", "none", "--host", "0.0.0.0")  # noqa: S104 - refused before binding


def test_auth_none_on_loopback_acts_as_the_default_agent(
    fresh_server: Callable[..., Server],
) -> None:
    running = fresh_server("--auth", "none", "--agent", "solo")
    with running.client(token=None) as client:
        stored = client.post("/v1/memories", json={"content": "solo note"})
    assert stored.json()["memory"]["agent_id"] == "solo"


def test_missing_tokens_refuse_to_start(fresh_server: Callable[..., Server]) -> None:
    env = server_env()
    del env["MINDPALACE_TOKENS"]
    with pytest.raises(AssertionError, match="MINDPALACE_TOKENS is not set"):
        fresh_server(env=env)


def test_tokens_file(fresh_server: Callable[..., Server], tmp_path: Any) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# agents\ndana=dana-secret\n")
    running = fresh_server("--auth", str(tokens))
    with running.client("dana-secret") as client:
        assert client.get("/v1/stats").status_code == 200
    with running.client("alice-token") as client:  # env tokens are not used
        assert client.get("/v1/stats").status_code == 401


def test_all_agents_serve_is_refused(fresh_server: Callable[..., Server]) -> None:
    """``--all-agents`` used to hand the unscoped view to whichever token's
    agent matched ``--agent``; the management view is an admin token now."""
    with pytest.raises(AssertionError, match=r"exited with 2: .*admin:AGENT=TOKEN"):
        fresh_server("--all-agents", "--agent", "alice")


def test_an_admin_token_has_the_management_view(
    fresh_server: Callable[..., Server], tmp_path: Any
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice=alice-secret\nbob=bob-secret\nadmin:ops=ops-secret\n")
    running = fresh_server("--auth", str(tokens), "--agent", "alice")
    with running.client("bob-secret") as bob:
        stored = bob.post("/v1/memories", json={"content": "Bob's private kiln schedule"})
        bobs = stored.json()["memory"]["memory_id"]
    with running.client("alice-secret") as alice:  # --agent alice gives alice no more
        assert alice.get(f"/v1/memories/{bobs}").status_code == 404
    with running.client("ops-secret") as ops:
        assert ops.get(f"/v1/memories/{bobs}").json()["memory"]["agent_id"] == "bob"
        found = ops.post("/v1/recall", json={"query": "kiln schedule"}).json()
        assert [m["memory_id"] for m in found["memories"]] == [bobs]
        written = ops.post("/v1/memories", json={"content": "Audit done"}).json()
        assert written["memory"]["agent_id"] == "ops"
        assert ops.delete(f"/v1/memories/{bobs}").json() == {"forgotten": bobs, "hard": False}


def test_hard_forget_from_the_query_string(server: Server) -> None:
    with server.client() as client:
        stored = client.post("/v1/memories", json={"content": "Temporary heron count: 12"})
        memory_id = stored.json()["memory"]["memory_id"]
        forgotten = client.delete(f"/v1/memories/{memory_id}", params={"hard": "true"})
        assert forgotten.json() == {"forgotten": memory_id, "hard": True}
        assert client.get(f"/v1/memories/{memory_id}").status_code == 404
        assert (
            client.delete(f"/v1/memories/{memory_id}", params={"hard": "maybe"}).status_code == 422
        )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--threads", "0"), "--threads must be an integer from 1 to 256"),
        (("--max-body", "10"), "--max-body must be an integer from 1024"),
    ],
)
def test_bad_serve_options_are_refused(
    fresh_server: Callable[..., Server], option: tuple[str, str], message: str
) -> None:
    with pytest.raises(AssertionError, match=message):
        fresh_server(*option)


def test_memory_store_takes_a_kind_and_search_attributes_it(server: Server) -> None:
    with server.client() as client:
        stored = client.post(
            "/v1/memories",
            json={"content": "Spec: the kiln reaches 1200 C", "kind": "spec", "project": "Pottery"},
        )
        assert stored.status_code == 201, stored.text
        memory = stored.json()["memory"]
        assert (memory["kind"], memory["project"]) == ("spec", "Pottery")
        assert "completed" not in memory  # no value: left out, not null
        found = client.post("/v1/personal/search", json={"query": "kiln", "kinds": ["spec"]})
    assert found.status_code == 200, found.text
    lines = [r["line"] for r in found.json()["results"]]
    assert lines and lines[0].startswith("From a specification in project Pottery (")
    assert lines[0].endswith("): Spec: the kiln reaches 1200 C")


def test_update_and_listing_over_rest(fresh_server: Callable[..., Server]) -> None:
    server = fresh_server()
    with server.client() as alice, server.client("bob-token") as bob:
        for i in range(5):
            assert alice.post("/v1/memories", json={"content": f"note {i}"}).status_code == 201
        bobs = bob.post("/v1/memories", json={"content": "bob's note"}).json()["memory"]
        lesson = alice.post("/v1/memories", json={"content": "WAL mode"}).json()["memory"]
        lesson = lesson["memory_id"]
        changed = alice.patch(f"/v1/memories/{lesson}", json={"content": "WAL mode, always"})
        assert changed.status_code == 200, changed.text
        new_id = changed.json()["memory"]["memory_id"]
        old = alice.get(f"/v1/memories/{lesson}").json()["memory"]
        assert old["superseded_by"] == new_id
        bad = alice.patch(f"/v1/memories/{new_id}", json={"store": "longterm"})
        assert bad.status_code == 400 and "semantic" in bad.json()["valid"]
        unknown = alice.patch(f"/v1/memories/{new_id}", json={"colour": "red"})
        assert unknown.status_code == 422
        assert bob.patch(f"/v1/memories/{new_id}", json={"content": "x"}).status_code == 404
        assert alice.patch("/v1/memories/mem_nope", json={"content": "x"}).status_code == 404
        full = alice.get("/v1/memories", params={"limit": 100}).json()
        assert "next_cursor" not in full
        walked: list[str] = []
        params: dict[str, Any] = {"limit": 3}
        while True:
            page = alice.get("/v1/memories", params=params).json()
            walked += [m["memory_id"] for m in page["memories"]]
            if "next_cursor" not in page:
                break
            params["cursor"] = page["next_cursor"]
        assert walked == [m["memory_id"] for m in full["memories"]] and len(walked) == 6
        assert bobs["memory_id"] not in walked and len(set(walked)) == len(walked)
        tampered = alice.get("/v1/memories", params={"cursor": "AAAA" + params["cursor"][4:]})
        assert tampered.status_code == 400
        stats = alice.get("/v1/stats").json()["stats"]
        assert "path" not in stats and str(server.db) not in str(stats)


def test_errors_name_the_argument_as_the_api_spells_it(server: Server) -> None:
    """The library calls it ``id``; REST and MCP callers sent ``memory_id``."""
    with server.client() as client:
        stored = client.post("/v1/memories", json={"content": "Kingfisher seen at the weir"})
        old = stored.json()["memory"]["memory_id"]
        assert client.patch(f"/v1/memories/{old}", json={"tags": ["birds"]}).status_code == 200
        again = client.patch(f"/v1/memories/{old}", json={"tags": ["river"]})
        listed = client.get("/v1/memories", params={"created_after": "yesterday"})
    assert again.status_code == 400
    assert again.json()["field"] == "memory_id"
    assert listed.status_code == 400
    assert listed.json()["field"] == "created_after"
    assert "created_after must be an ISO 8601" in listed.json()["message"]
    assert "2026-03-02T09:30+01:00" in listed.json()["message"]  # a valid form, shown
