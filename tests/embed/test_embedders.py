"""Embedders: the bundled models, the OpenAI-compatible HTTP client (against a
real server on 127.0.0.1), the hashing embedder, and choosing one from settings."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace import Palace, embed
from mindpalace.config import EMBEDDERS, Settings
from mindpalace.embed import HashingEmbedder, HTTPEmbedder, LocalEmbedder
from mindpalace.embed.base import Embedder, Vectors
from mindpalace.embed.local import token_groups
from mindpalace.errors import ConfigError, EmbeddingError

StaticEmbedder: type[Embedder] | None = getattr(embed, "StaticEmbedder", None)
BUNDLED: list[type[Embedder]] = [LocalEmbedder] + ([StaticEmbedder] if StaticEmbedder else [])

# What each bundled model must keep calling itself: a palace records this
# config, so a silent change of name or size orphans every stored vector.
PINNED = {
    "LocalEmbedder": ("local", "all-minilm-l6-v2-int8", 384),
    "StaticEmbedder": ("static", "minilm-l6-m2v-256", 256),
}

KEY_ENV = "MINDPALACE_TEST_EMBED_KEY"


def _norms(matrix: Vectors) -> list[float]:
    return [float(n) for n in np.linalg.norm(matrix, axis=1)]


# -- the bundled models -----------------------------------------------------------------


@pytest.fixture(scope="module", params=BUNDLED, ids=lambda cls: cls.__name__)
def bundled(request: pytest.FixtureRequest) -> Embedder:
    cls: type[Embedder] = request.param
    return cls()


@pytest.mark.parametrize("cls", BUNDLED, ids=lambda cls: cls.__name__)
def test_bundled_config_is_pinned(cls: type[Embedder]) -> None:
    e = cls()
    assert (e.config.provider, e.config.model, e.config.dimensions) == PINNED[cls.__name__]
    assert e.embed_one("hello world").shape == (e.config.dimensions,)


def test_bundled_is_deterministic_across_instances(bundled: Embedder) -> None:
    texts = [
        "Alice's favourite is green tea.",
        "The deploy pipeline runs on Fridays.",
        "We chose SQLite because many processes share one file.",
    ]
    first = bundled.embed(texts)
    again = type(bundled)().embed(texts)
    assert first.dtype == np.float32
    assert first.shape == (3, bundled.config.dimensions)
    np.testing.assert_array_equal(first, again)
    assert _norms(first) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_bundled_places_related_texts_closer(bundled: Embedder) -> None:
    tea, cup, db = bundled.embed(
        ["Alice's favourite is green tea.", "a hot cup of tea", "database schema migration"]
    )
    assert float(tea @ cup) > float(tea @ db)


@pytest.mark.parametrize(
    "text",
    ["", " ", "   \n\t ", "🎉", "🎉🙂🚀", "\u200b", "…!?", "x" * 100_000, "word " * 20_000],
    ids=["empty", "space", "blank", "emoji", "emojis", "zwsp", "punct", "100k-x", "100k-words"],
)
def test_bundled_odd_texts_give_zero_or_unit_vectors(bundled: Embedder, text: str) -> None:
    started = time.perf_counter()
    vector = bundled.embed_one(text)
    assert time.perf_counter() - started < 5
    assert vector.shape == (bundled.config.dimensions,)
    assert np.isfinite(vector).all()
    norm = float(np.linalg.norm(vector))
    assert norm == pytest.approx(0.0, abs=1e-6) or norm == pytest.approx(1.0, abs=1e-5)


def test_bundled_long_text_batch(bundled: Embedder) -> None:
    texts = ["lorem ipsum dolor sit amet " * 4000, "short", "another text about tea"]
    matrix = bundled.embed(texts)
    assert matrix.shape == (3, bundled.config.dimensions)
    assert _norms(matrix) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_bundled_embed_of_nothing(bundled: Embedder) -> None:
    assert bundled.embed([]).shape == (0, bundled.config.dimensions)


_STATIC: list[Embedder] = []


def _static() -> Embedder:
    if not _STATIC:
        assert StaticEmbedder is not None
        _STATIC.append(StaticEmbedder())
    return _STATIC[0]


@pytest.mark.skipif(StaticEmbedder is None, reason="no static embedder in this version")
@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.sampled_from(["", "tea", "green tea", "🎉", "the deploy ran on friday", "  ", "Alice"]),
        min_size=1,
        max_size=8,
    )
)
def test_static_batch_rows_equal_single_embeddings(texts: list[str]) -> None:
    # The table model is a per-text mean: a row must not depend on its batch.
    e = _static()
    batch = e.embed(texts)
    for row, text in zip(batch, texts, strict=True):
        np.testing.assert_allclose(row, e.embed_one(text), atol=1e-6)


def _rows_mean(texts: list[str]) -> np.ndarray:
    """The static model's vectors as the rows of its table give them: each
    text's token rows summed along the table's first axis (what the model
    stored before it kept the table transposed), over their count."""
    from tokenizers import Tokenizer

    from mindpalace.embed.static import STATIC_DIR

    table = np.load(STATIC_DIR / "embeddings.npy").astype(np.float32)
    tokenizer = Tokenizer.from_file(str(STATIC_DIR / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=512)
    unknown = tokenizer.token_to_id("[UNK]")
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for k, text in enumerate(texts):
        ids = [i for i in tokenizer.encode(text[: 512 * 12], add_special_tokens=False).ids]
        ids = [i for i in ids if i != unknown]
        if ids:
            out[k] = np.add.reduceat(table[ids], [0], axis=0)[0] / len(ids)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


@pytest.mark.skipif(StaticEmbedder is None, reason="no static embedder in this version")
@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=3000), min_size=1, max_size=6))
def test_static_vectors_are_bit_for_bit_the_table_rows_mean(texts: list[str]) -> None:
    # Stored vectors must not change with how the sums are laid out.
    words = ["tea", "Alice", "deploy", "friday", "the", "ran", "on", "green"]
    texts = [t + " " + " ".join(words[: len(t) % 9] * (len(t) % 300)) for t in texts]
    assert np.array_equal(_static().embed(texts), _rows_mean(texts))


@pytest.mark.parametrize("cls", BUNDLED, ids=lambda cls: cls.__name__)
def test_bundled_missing_model_dir_is_an_embedding_error(cls: type[Any], tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="no embedding model"):
        cls(tmp_path / "nowhere")


@pytest.mark.parametrize("cls", BUNDLED, ids=lambda cls: cls.__name__)
def test_bundled_broken_model_files_fail_on_first_use(cls: type[Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"name": "broken", "dimensions": 8}))
    e = cls(tmp_path)  # construction only reads the config
    assert e.config.model == "broken"
    with pytest.raises(EmbeddingError, match="cannot load"):
        e.embed_one("hello")


# -- hashing and the base class ----------------------------------------------------------


class _Recording(Embedder):
    """A real embedder (hashing inside) that records each batch it receives."""

    def __init__(self, batch_size: int) -> None:
        self.inner = HashingEmbedder(dimensions=32)
        self.config = self.inner.config
        self.batch_size = batch_size
        self.batches: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return self.inner.embed_batch(texts)


@pytest.mark.parametrize(("count", "batch_size"), [(1, 4), (4, 4), (5, 4), (9, 2), (100, 64)])
def test_embed_splits_into_batches(count: int, batch_size: int) -> None:
    e = _Recording(batch_size)
    texts = [f"{'very long ' * (i % 4)}text {i}" for i in range(count)]  # mixed lengths
    matrix = e.embed(texts)
    assert len(e.batches) == math.ceil(count / batch_size)
    assert all(len(b) <= batch_size for b in e.batches)
    assert sorted(t for b in e.batches for t in b) == sorted(texts)  # each text once
    np.testing.assert_array_equal(matrix, e.inner.embed_batch(texts))


def test_hashing_is_deterministic_unit_and_sized() -> None:
    texts = ["Green tea", "green TEA", "kafka brokers", ""]
    a = HashingEmbedder(dimensions=64).embed(texts)
    assert a.shape == (4, 64)
    np.testing.assert_array_equal(a[0], a[1])  # case-folded
    assert _norms(a) == pytest.approx([1.0, 1.0, 1.0, 0.0], abs=1e-6)
    np.testing.assert_array_equal(a, HashingEmbedder(dimensions=64).embed(texts))
    assert HashingEmbedder().config.dimensions == 256


# -- from_settings and Settings.from_env ------------------------------------------------


def test_from_settings_builds_each_kind() -> None:
    assert embed.from_settings(Settings(embedder="none")) is None
    assert isinstance(embed.from_settings(Settings(embedder="hashing")), HashingEmbedder)
    assert isinstance(embed.from_settings(Settings(embedder="local")), LocalEmbedder)
    assert isinstance(embed.from_settings(Settings()), LocalEmbedder)  # the default


@pytest.mark.parametrize(
    "missing",
    [
        {"embed_url": None},
        {"embed_model": None},
        {"embed_dimensions": None},
        {"embed_url": ""},
    ],
    ids=["url", "model", "dims", "empty-url"],
)
def test_from_settings_http_needs_url_model_and_dims(missing: dict[str, Any]) -> None:
    options: dict[str, Any] = {
        "embedder": "http",
        "embed_url": "http://127.0.0.1:9/v1",
        "embed_model": "m",
        "embed_dimensions": 8,
        **missing,
    }
    with pytest.raises(ConfigError, match="MINDPALACE_EMBED_URL"):
        embed.from_settings(Settings(**options))


def test_palace_with_incomplete_http_settings_refuses_to_open(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Palace(tmp_path / "p.db", settings=Settings(embedder="http"))


def test_unknown_embedder_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"MINDPALACE_EMBEDDER": "bogus"})
    message = str(info.value)
    assert info.value.setting == "MINDPALACE_EMBEDDER"
    for name in ("local", "http", "hashing", "none", *EMBEDDERS):
        assert name in message
    with pytest.raises(ConfigError, match="local, "):
        embed.from_settings(Settings(embedder="bogus"))


def test_settings_from_env_reads_the_http_fields() -> None:
    s = Settings.from_env(
        {
            "MINDPALACE_EMBEDDER": " HTTP ",
            "MINDPALACE_EMBED_URL": "http://127.0.0.1:1234/v1",
            "MINDPALACE_EMBED_MODEL": "nomic-embed-text",
            "MINDPALACE_EMBED_DIMS": "768",
            "MINDPALACE_EMBED_KEY_ENV": "OPENAI_API_KEY",
        }
    )
    assert (s.embedder, s.embed_url, s.embed_model, s.embed_dimensions, s.embed_key_env) == (
        "http",
        "http://127.0.0.1:1234/v1",
        "nomic-embed-text",
        768,
        "OPENAI_API_KEY",
    )
    with pytest.raises(ConfigError, match="MINDPALACE_EMBED_DIMS"):
        Settings.from_env({"MINDPALACE_EMBED_DIMS": "many"})


# -- HTTPEmbedder against a real server ------------------------------------------------


class EmbeddingServer(ThreadingHTTPServer):
    """An OpenAI-compatible ``/v1/embeddings`` endpoint computing hashing vectors.

    ``behaviour`` picks what it answers: "ok" (vectors scaled by 3 and listed
    in reverse order, so the client must normalise and sort), "dims" (128-d
    vectors), "count" (one vector too few), "status" (HTTP 500), "json" (not
    JSON), "shape" (no ``data``), "truncated" (a body shorter than its
    Content-Length).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = "ok"
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, *, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "authorization": self.headers.get("Authorization"), **body}
        )
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": "not found"}')
            return
        behaviour = self.server.behaviour
        texts: list[str] = body["input"]
        dims = 128 if behaviour == "dims" else 256
        vectors = HashingEmbedder(dimensions=dims).embed(texts) * 3.0
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
            for i, v in enumerate(vectors)
        ]
        data.reverse()
        if behaviour == "count":
            data = data[1:]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        if behaviour == "status":
            self._send(500, b'{"error": "overloaded"}')
        elif behaviour == "json":
            self._send(200, b"<html>not json</html>")
        elif behaviour == "shape":
            self._send(200, b'{"embeddings": []}')
        elif behaviour == "truncated":
            self._send(200, payload[:10], length=len(payload))
            self.close_connection = True
        else:
            self._send(200, payload)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def test_http_vectors_equal_hashing_and_key_sent_as_bearer(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    e = HTTPEmbedder(
        server.url + "/", "hash-model", dimensions=256, api_key_env=KEY_ENV, batch_size=2
    )
    texts = ["green tea", "kafka brokers restart", "Alice", "the office move"]
    matrix = e.embed(texts)
    np.testing.assert_allclose(matrix, HashingEmbedder().embed(texts), atol=1e-6)
    assert _norms(matrix) == pytest.approx([1.0] * 4, abs=1e-6)
    assert e.config.model == "hash-model" and e.config.dimensions == 256
    assert [r["path"] for r in server.requests] == ["/v1/embeddings"] * 2
    assert [len(r["input"]) for r in server.requests] == [2, 2]
    assert sorted(t for r in server.requests for t in r["input"]) == sorted(texts)
    assert {r["model"] for r in server.requests} == {"hash-model"}
    assert {r["authorization"] for r in server.requests} == {"Bearer sk-test-123"}


def test_http_without_key_env_sends_no_authorization(server: EmbeddingServer) -> None:
    vector = HTTPEmbedder(server.url, "m", dimensions=256).embed_one("green tea")
    np.testing.assert_allclose(vector, HashingEmbedder().embed_one("green tea"), atol=1e-6)
    assert server.requests[0]["authorization"] is None


def test_http_key_is_read_at_call_time(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = HTTPEmbedder(server.url, "m", dimensions=256, api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, "first")
    e.embed_one("a")
    monkeypatch.setenv(KEY_ENV, "second")
    e.embed_one("b")
    assert [r["authorization"] for r in server.requests] == ["Bearer first", "Bearer second"]


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_http_missing_key_env_is_an_embedding_error(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, value)
    e = HTTPEmbedder(server.url, "m", dimensions=256, api_key_env=KEY_ENV)
    with pytest.raises(EmbeddingError, match=KEY_ENV):
        e.embed(["green tea"])
    assert server.requests == []  # refused before anything was sent


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("dims", "128-d"),
        ("count", "vectors for 3 texts"),
        ("status", "failed"),
        ("json", "failed"),
        ("shape", "unexpected response"),
    ],
)
def test_http_bad_answers_are_embedding_errors(
    server: EmbeddingServer, behaviour: str, message: str
) -> None:
    server.behaviour = behaviour
    e = HTTPEmbedder(server.url, "m", dimensions=256, timeout=5)
    with pytest.raises(EmbeddingError, match=message):
        e.embed(["a", "b", "c"])


def test_http_truncated_answer_is_an_embedding_error(server: EmbeddingServer) -> None:
    server.behaviour = "truncated"
    e = HTTPEmbedder(server.url, "m", dimensions=256, timeout=5)
    with pytest.raises(EmbeddingError):
        e.embed(["a"])


def test_http_server_down_fails_fast() -> None:
    with socket.socket() as s:  # a port that was just free: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = HTTPEmbedder(f"http://127.0.0.1:{port}/v1", "m", dimensions=256, timeout=1.0)
    started = time.perf_counter()
    with pytest.raises(EmbeddingError, match=f"127.0.0.1:{port}"):
        e.embed(["green tea"])
    assert time.perf_counter() - started < 3


def test_from_settings_builds_a_working_http_embedder(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-env")
    e = embed.from_settings(
        Settings(
            embedder="http",
            embed_url=server.url,
            embed_model="hash-model",
            embed_dimensions=256,
            embed_key_env=KEY_ENV,
        )
    )
    assert isinstance(e, HTTPEmbedder)
    assert e.config.dimensions == 256
    np.testing.assert_allclose(e.embed_one("tea"), HashingEmbedder().embed_one("tea"), atol=1e-6)
    assert server.requests[0]["authorization"] == "Bearer sk-env"


def test_palace_over_http_recalls_hybrid(server: EmbeddingServer, tmp_path: Path) -> None:
    e = HTTPEmbedder(server.url, "hash-model", dimensions=256)
    with Palace(tmp_path / "p.db", settings=Settings(), embedder=e) as palace:
        palace.remember("the kafka brokers restart nightly")
        palace.remember("Alice's favourite is green tea")
        hits = palace.recall("kafka brokers")
        assert hits.mode == "hybrid" and hits.notice is None
        assert hits[0].memory.content == "the kafka brokers restart nightly"
        assert "dense" in hits[0].ranks
        assert palace.store.embedding_config() == e.config


# -- the local model's grouping by tokens ----------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=300), max_size=60), st.integers(1, 2048))
def test_token_groups_cover_every_input_once_shortest_first(
    lengths: list[int], budget: int
) -> None:
    groups = token_groups(lengths, budget)
    flat = [i for group in groups for i in group]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for group in groups:
        padded = len(group) * max(lengths[i] for i in group)
        assert padded <= budget or len(group) == 1


def test_local_batched_rows_match_one_at_a_time() -> None:
    # int8 dynamic quantisation scales activations per run, so a row moves a
    # little with its batch-mates; it must stay the same text's vector.
    e = LocalEmbedder()
    texts = [
        "hi",
        "Alice's favourite is green tea.",
        "7 May 2023\nCaroline: I went to the LGBTQ support group yesterday and it was powerful.",
        "The deploy pipeline runs on Fridays, unless the release train is late again.",
        "lorem ipsum dolor sit amet " * 40,
        "",
        "🎉",
    ] * 3
    batched = e.embed(texts)
    single = np.stack([e.embed_one(t) for t in texts])
    cosines = (batched * single).sum(axis=1)
    # Measured: 0.977-1.0 for sentences; 0.955 for "" and an emoji, whose
    # two or three tokens feel their batch-mates' scales the most.
    assert cosines[:5].min() >= 0.97
    assert cosines.min() >= 0.94
    np.testing.assert_allclose(batched[:7], batched[7:14], atol=1e-6)  # same run, same rows


# -- the retrieval-tuned bundled model (bge-small-en-v1.5) ------------------------------


@pytest.fixture(scope="module")
def bge() -> Embedder:
    built = embed.from_settings(Settings(embedder="bge"))
    assert isinstance(built, LocalEmbedder)
    return built


def test_bge_is_pinned_and_encodes_queries_with_their_prefix(bge: Embedder) -> None:
    assert (bge.config.provider, bge.config.model, bge.config.dimensions) == (
        "local",
        "bge-small-en-v1.5-int8",
        384,
    )
    assert bge.query_prefix.startswith("Represent this sentence")
    question = "when did Kenji join the team?"
    as_query = bge.embed_query(question)
    np.testing.assert_allclose(as_query, bge.embed_one(bge.query_prefix + question), atol=1e-6)
    assert float(as_query @ bge.embed_one(question)) < 0.999  # not the passage encoding
    fact, chat, other = bge.embed(
        [
            "Kenji Sato joined the platform team on 2 November 2026.",
            "Kenji: Yes, report by Thursday.",
            "We use PostgreSQL as our main database.",
        ]
    )
    assert float(as_query @ fact) > float(as_query @ chat) > float(as_query @ other)


def test_bge_reads_long_texts_and_odd_ones(bge: Embedder) -> None:
    matrix = bge.embed(["lorem ipsum dolor sit amet " * 800, "short", "🎉"])
    assert matrix.shape == (3, 384)
    assert _norms(matrix) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_a_model_folder_with_an_unknown_pooling_is_refused(tmp_path: Path) -> None:
    config = {"name": "odd", "dimensions": 8, "pooling": "max"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(EmbeddingError, match="graph, cls, mean"):
        LocalEmbedder(tmp_path)
