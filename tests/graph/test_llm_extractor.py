"""The optional LLM extractor against a real local HTTP service that speaks
the OpenAI chat-completions protocol (the model itself is a third party)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.graph.llm import LLMExtractor, llm_extractor
from mindpalace.models import MemoryType

ANSWER = {
    "entities": [
        {"name": "Falcon", "type": "project"},
        {"name": "the pricing engine", "type": "system"},
        {"name": "Zanzibar", "type": "person"},  # not in the text: invented
        {"name": "Bob", "type": "wizard"},  # not a taxonomy type
    ]
}


@pytest.fixture
def service() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            reply = {"choices": [{"message": {"content": json.dumps(ANSWER)}}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_entities_from_the_model_are_checked_against_the_text(
    service: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = service
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    extractor = LLMExtractor(url, "tiny", api_key_env="TEST_LLM_KEY")
    found = {m.norm: m.type for m in extractor.extract("bob moved falcon onto the pricing engine")}
    assert found == {
        "falcon": MemoryType.PROJECT,
        "the pricing engine": MemoryType.SYSTEM,
        "bob": MemoryType.UNKNOWN,
    }
    assert seen[0]["path"] == "/v1/chat/completions"
    assert seen[0]["auth"] == "Bearer sk-test"
    assert seen[0]["body"]["messages"][1]["content"].startswith("bob moved")


def test_palace_adds_llm_mentions_to_the_rules(
    service: tuple[str, list[dict[str, Any]]], make_palace: Callable[..., Palace]
) -> None:
    url, _ = service
    settings = Settings(agent_id="llm", extract_url=url, extract_model="tiny")
    palace = make_palace("llm", settings=settings)
    assert isinstance(palace.extractor, LLMExtractor)
    memory = palace.remember("We moved Falcon onto the pricing engine with Dana")
    names = {e.norm for e in palace.graph.mentions(memory.id)}
    assert {"falcon", "the pricing engine", "dana"} <= names  # model + rules


def test_a_failing_service_leaves_the_rules(make_palace: Callable[..., Palace]) -> None:
    extractor = LLMExtractor("http://127.0.0.1:9/v1", "tiny", timeout=0.5)
    palace = make_palace("down", extractor=extractor)
    memory = palace.remember("Erin reviewed the Atlas rollout")
    assert {e.name for e in palace.graph.mentions(memory.id)} == {"Erin", "Atlas"}
    assert extractor.last_error is not None and "failed" in extractor.last_error


def test_no_settings_no_extractor() -> None:
    assert llm_extractor(Settings()) is None
