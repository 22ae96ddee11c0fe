"""Inspector sessions shared by every process of a palace, and the login's
rate limit: sessions are signed under the palace's key and logouts are kept
in the palace (on every backend), so a session one server process opened is
honoured, and ended, in all of them; failed logins are limited per address
and overall, with 429 and Retry-After, never for good."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient
from tests.hostile import FORGED_COOKIES, LOGIN_GUESSES
from tests.server.conftest import Server, start_server
from tests.ui.conftest import BASE, ORIGIN, TOKENS

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.store import Store
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.ui.app import build_ui
from mindpalace.ui.sessions import Sessions
from mindpalace.ui.throttle import LoginThrottle
from mindpalace.web.identity import Caller, PalacePool, TokenTable


class Ticker:
    """A settable clock (seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def second_store(backend: str, store_target: str) -> Iterator[Store]:
    """Another connection to the same palace: another server process's."""
    other: Store
    if backend == "sqlite":
        other = SQLiteStore(store_target, busy_timeout=10)
    else:
        other = PostgresStore(store_target, busy_timeout=10, max_connections=2)
    yield other
    other.close()


def test_a_session_is_honoured_and_ended_in_every_process(
    store: Store, second_store: Store
) -> None:
    clock = Ticker()
    one, two = Sessions(store, clock=clock), Sessions(second_store, clock=clock)
    cookie, opened = one.open(Caller("alice", admin=True))
    seen = two.get(cookie)
    assert seen is not None
    assert (seen.caller, seen.csrf) == (Caller("alice", admin=True), opened.csrf)
    other, _ = two.open(Caller("bob"))
    two.close(cookie)  # logged out through the other process
    assert one.get(cookie) is None and two.get(cookie) is None
    assert one.get(other) is not None  # other sessions go on
    clock.now += 12 * 3600  # the session's time is up, in every process
    assert one.get(other) is None and two.get(other) is None


def _forged(cookie: str, **fields: object) -> str:
    payload, signature = cookie.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data.update(fields)
    raw = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{raw}.{signature}"


def test_a_cookie_that_is_not_ours_is_no_session(store: Store, tmp_path: Path) -> None:
    sessions = Sessions(store)
    cookie, _ = sessions.open(Caller("alice"))
    elsewhere = SQLiteStore(str(tmp_path / "elsewhere.db"), busy_timeout=10)
    try:
        foreign, _ = Sessions(elsewhere).open(Caller("alice"))  # another palace's key
    finally:
        elsewhere.close()
    payload, signature = cookie.split(".")
    forgeries = [
        _forged(cookie, a="bob"),
        _forged(cookie, m=True),
        _forged(cookie, e=4_000_000_000),
        foreign,
        f"{payload}.{signature[:-2]}",
        f"{payload}x.{signature}",
        f"{payload}.{signature}.{signature}",
        cookie + "=",
        *FORGED_COOKIES,
    ]
    for forged in forgeries:
        assert sessions.get(forged) is None, forged
    assert sessions.get(cookie) is not None


def test_logins_on_one_server_process_are_honoured_by_another(tmp_path: Path) -> None:
    """Two ``mindpalace serve`` processes on one palace file (as ``--workers``
    runs them): a login at one works at the other, and so does a logout."""
    db = tmp_path / "palace.db"
    Palace(db, settings=Settings(embedder="hashing")).close()
    servers: list[Server] = [start_server(db), start_server(db)]
    try:
        first, second = (httpx.Client(base_url=s.url, timeout=30) for s in servers)
        with first, second:

            def cookie_of(client: httpx.Client) -> str:
                return next(v for k, v in client.cookies.items() if k.startswith("mindpalace_"))

            def carry(value: str, server: Server, client: httpx.Client) -> None:
                client.cookies.set(f"mindpalace_session_{server.url.rsplit(':', 1)[1]}", value)

            answer = first.post(
                "/login", data={"token": "alice-token"}, headers={"origin": servers[0].url}
            )
            assert answer.status_code == 303
            carry(cookie_of(first), servers[1], second)
            page = second.get("/memories")
            assert page.status_code == 200 and '<b class="t">alice</b>' in page.text
            csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
            out = second.post("/logout", data={"csrf": csrf}, headers={"origin": servers[1].url})
            assert out.status_code == 303
            assert first.get("/memories").status_code == 303  # to the login: ended there too
    finally:
        for running in servers:
            running.stop()


def test_the_throttle_limits_per_address_and_overall_and_refills() -> None:
    clock = Ticker(0.0)
    throttle = LoginThrottle(per_address=3, overall=5, refill=10.0, clock=clock)
    assert [throttle.take("a") for _ in range(3)] == [None, None, None]
    wait = throttle.take("a")
    assert wait is not None and 0 < wait <= 10
    assert throttle.take("b") is None and throttle.take("c") is None
    overall = throttle.take("d")  # five tries in all: the overall bucket is empty
    assert overall is not None and 0 < overall <= 10 * 3 / 5
    clock.now += 10.0  # time refills both: nobody is locked out for good
    assert throttle.take("a") is None
    assert throttle.take("a") is not None
    throttle.give_back("a")  # a login that succeeded costs nothing
    assert throttle.take("a") is None


class LimitedInspector:
    """One inspector whose login allows 3 failed tries per address, 5 in
    all, one back every 60 s of ``clock``; clients by address."""

    def __init__(self, palace: Palace) -> None:
        self.clock = Ticker(0.0)
        tokens = TokenTable.parse(TOKENS.split(","), origin="test tokens")
        throttle = LoginThrottle(per_address=3, overall=5, refill=60.0, clock=self.clock)
        self.app = build_ui(PalacePool(palace), tokens, throttle=throttle)
        self.clients: list[TestClient] = []

    def client(self, address: str) -> TestClient:
        made = TestClient(self.app, base_url=BASE, follow_redirects=False, client=(address, 5000))
        self.clients.append(made)
        return made


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[LimitedInspector]:
    with Palace(tmp_path / "palace.db", settings=Settings(embedder="hashing")) as palace:
        inspector = LimitedInspector(palace)
        yield inspector
        for made in inspector.clients:
            made.close()


def test_failed_logins_get_429_with_retry_after(limited: LimitedInspector) -> None:
    guesser = limited.client("10.0.0.1")
    for _ in range(3):
        assert guesser.post("/login", data={"token": "guess"}, headers=ORIGIN).status_code == 401
    refused = guesser.post("/login", data={"token": "alice-token"}, headers=ORIGIN)
    assert refused.status_code == 429  # even the right token: the answer tells nothing
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert "Too many login attempts" in refused.text
    # Another address still logs in (and its successes cost no try).
    other = limited.client("10.0.0.2")
    for _ in range(4):
        answer = other.post("/login", data={"token": "alice-token"}, headers=ORIGIN)
        assert answer.status_code == 303
    # Once the wait is over, the first address logs in.
    limited.clock.now += int(refused.headers["retry-after"])
    answer = guesser.post("/login", data={"token": "alice-token"}, headers=ORIGIN)
    assert answer.status_code == 303


def test_hostile_cookies_and_guesses_are_refused_plainly(limited: LimitedInspector) -> None:
    """Each forged cookie is no session (to the login page) and each hostile
    guess a failed login; the limit then answers 429: never a 5xx."""
    browser = limited.client("10.0.3.1")
    for value in FORGED_COOKIES:
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            continue  # not sendable in a header; Sessions.get refuses it above
        if any(c in value for c in "\x00\r\n;"):
            continue
        browser.cookies.set("mindpalace_session_8765", value)
        assert browser.get("/memories").status_code == 303
    browser.cookies.clear()
    answers = [
        limited.client(f"10.0.4.{n}")
        .post("/login", data={"token": guess}, headers=ORIGIN)
        .status_code
        for n, guess in enumerate(LOGIN_GUESSES)
    ]
    assert answers[:5] == [401] * 5 and set(answers[5:]) == {429}, answers


def test_failed_logins_from_many_addresses_are_limited_overall(
    limited: LimitedInspector,
) -> None:
    for n in range(5):
        answer = limited.client(f"10.0.1.{n}").post("/login", data={"token": "x"}, headers=ORIGIN)
        assert answer.status_code == 401
    refused = limited.client("10.0.2.1").post("/login", data={"token": "x"}, headers=ORIGIN)
    assert refused.status_code == 429 and "retry-after" in refused.headers
