"""The inspector over HTTP: logging in, scoping, CSRF, headers, escaping.

The real app of ``mindpalace serve`` (REST, MCP and the inspector) over a
real palace file, driven in process by Starlette's test client.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest
from starlette.testclient import TestClient
from tests.hostile import MARKUP
from tests.ui.conftest import BASE, ORIGIN, Seeded, csrf_of, login

from mindpalace import Palace
from mindpalace.server.http import build_app
from mindpalace.ui import CSP
from mindpalace.web.identity import PalacePool, TokenTable

PAGES = [
    "/memories",
    "/memories?q=Zebra+deploys",
    "/memories?type=unknown&store=semantic&category=fact&tags=ops&agent=alice&after=2000-01-01",
    "/memories?session=standup-1",
    "/recall",
    "/recall?q=Zebra+service&max_tokens=512&mode=decision",
    "/entities",
    "/entities?q=zebra",
    "/skills",
    "/skills/hostile-skill",
    "/conversations",
    "/conversations/turns?session=standup-1",
    "/stats",
    "/erase",
]


class _Elements(HTMLParser):
    """Collects the tags and attributes of a page, and the scripts' text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text.append(data)


def elements(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def assert_inert(page: str) -> None:
    """No element or attribute on the page that stored text could have made."""
    found = elements(page)
    for tag, attrs in found.tags:
        assert tag not in {"iframe", "img", "base", "meta", "style", "math", "noscript"} or (
            tag == "meta" and set(attrs) <= {"charset", "name", "content"}
        ), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if tag == "script":
            assert attrs == {"src": "/static/app.js", "defer": None}
        for name in ("href", "src", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith(("/", "?", "#")), (tag, attrs)
    assert found.script_text == []


# -- logging in ----------------------------------------------------------------------


def test_pages_need_a_session(browser_client: TestClient) -> None:
    response = browser_client.get("/memories")
    assert response.status_code == 303 and response.headers["location"] == "/login"
    assert browser_client.get("/").headers["location"] == "/memories"
    form = browser_client.get("/login")
    assert form.status_code == 200 and 'name="token"' in form.text


@pytest.mark.parametrize(
    ("token", "agent", "who"),
    [("alice-token", "", "alice"), ("gateway-token", "carol", "carol"), ("ops-token", "", "ops")],
)
def test_login_with_a_bearer_token(
    browser_client: TestClient, token: str, agent: str, who: str
) -> None:
    login(browser_client, token, agent)
    cookie = next(
        value
        for key, value in browser_client.cookies.items()
        if key.startswith("mindpalace_session")
    )
    assert token not in cookie
    page = browser_client.get("/memories")
    assert page.status_code == 200
    assert f'<b class="t">{who}</b>' in page.text
    assert ("management view" in page.text) is (who == "ops")


def test_login_cookie_is_httponly_and_strict(browser_client: TestClient) -> None:
    response = browser_client.post("/login", data={"token": "alice-token"}, headers=ORIGIN)
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"token": "wrong"}, "unknown bearer token"),
        ({"token": ""}, "missing bearer token"),
        ({"token": "gateway-token"}, "x-mindpalace-agent-id"),
        ({"token": "gateway-token", "agent": "bad agent!"}, "x-mindpalace-agent-id"),
    ],
)
def test_bad_logins_are_refused(
    browser_client: TestClient, data: dict[str, str], reason: str
) -> None:
    response = browser_client.post("/login", data=data, headers=ORIGIN)
    assert response.status_code == 401
    assert reason in html.unescape(response.text)
    assert browser_client.get("/memories").status_code == 303


def test_login_from_another_site_is_refused(browser_client: TestClient) -> None:
    evil = {"origin": "http://evil.example"}
    assert (
        browser_client.post("/login", data={"token": "alice-token"}, headers=evil).status_code
        == 403
    )
    assert browser_client.post("/login", data={"token": "alice-token"}).status_code == 403


def test_logout_ends_the_session(browser_client: TestClient) -> None:
    login(browser_client, "alice-token")
    token = csrf_of(browser_client.get("/memories").text)
    assert browser_client.post("/logout", data={"csrf": "stale"}, headers=ORIGIN).status_code == 403
    response = browser_client.post("/logout", data={"csrf": token}, headers=ORIGIN)
    assert response.status_code == 303
    assert browser_client.get("/memories").status_code == 303


def test_auth_none_opens_a_session_as_the_default_agent(app_palace: Palace) -> None:
    app = build_app(PalacePool(app_palace), TokenTable(anonymous="alice"))
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        assert client.get("/login").status_code == 303
        assert '<b class="t">alice</b>' in client.get("/memories").text


# -- scoping -----------------------------------------------------------------------------


def test_another_agents_memory_is_not_found_by_url(
    browser_client: TestClient, seeded: Seeded
) -> None:
    login(browser_client, "alice-token")
    response = browser_client.get(f"/memories/{seeded.ids['bob']}")
    assert response.status_code == 404  # not 403: its existence is not revealed
    token = csrf_of(browser_client.get("/memories").text)
    for action in ("forget", "restore", "update", "feedback"):
        answer = browser_client.post(
            f"/memories/{seeded.ids['bob']}/{action}",
            data={"csrf": token, "content": "x", "useful": "1"},
            headers=ORIGIN,
        )
        assert answer.status_code == 404, action
    missing = browser_client.get("/memories/mem_00000000000000000000000000")
    assert missing.status_code == 404
    assert missing.text.replace(seeded.ids["bob"], "") == missing.text


def test_a_shared_memory_is_shown_read_only(browser_client: TestClient, seeded: Seeded) -> None:
    login(browser_client, "alice-token")
    page = browser_client.get(f"/memories/{seeded.ids['bob_shared']}")
    assert page.status_code == 200 and "read only" in page.text
    assert "/update" not in page.text and "/forget" not in page.text
    assert "/feedback" in page.text  # judging it changes no memory: offered
    token = csrf_of(page.text)
    refused = browser_client.post(
        f"/memories/{seeded.ids['bob_shared']}/forget", data={"csrf": token}, headers=ORIGIN
    )
    assert refused.status_code == 403
    assert "not forget it: it belongs to agent" in refused.text
    judged = browser_client.post(
        f"/memories/{seeded.ids['bob_shared']}/feedback",
        data={"csrf": token, "useful": "1"},
        headers=ORIGIN,
    )
    assert judged.status_code == 303
    page = browser_client.get(f"/memories/{seeded.ids['bob_shared']}")
    assert "1 useful, 0 not useful" in page.text and "read only" in page.text
    listing = browser_client.get("/memories").text
    assert seeded.ids["bob_shared"] in listing and seeded.ids["bob"] not in listing


def test_the_admin_token_sees_every_agent(browser_client: TestClient, seeded: Seeded) -> None:
    login(browser_client, "ops-token")
    assert browser_client.get(f"/memories/{seeded.ids['bob']}").status_code == 200
    only_bob = browser_client.get("/memories?agent=bob").text
    assert seeded.ids["bob"] in only_bob and seeded.ids["decision"] not in only_bob
    stats = browser_client.get("/stats").text
    assert re.search(r'<td class="t">bob</td><td class="num">2</td>', stats)


# -- writes and CSRF ------------------------------------------------------------------------


def test_a_write_needs_the_sessions_form_token(browser_client: TestClient, seeded: Seeded) -> None:
    login(browser_client, "alice-token")
    target = f"/memories/{seeded.ids['forget']}/forget"
    for data, headers in (
        ({}, ORIGIN),
        ({"csrf": "forged"}, ORIGIN),
        (
            {"csrf": csrf_of(browser_client.get("/memories").text)},
            {"origin": "http://evil.example"},
        ),
        ({"csrf": csrf_of(browser_client.get("/memories").text)}, {}),
    ):
        response = browser_client.post(target, data=data, headers=headers)
        assert response.status_code == 403, (data, headers)
    page = browser_client.get(f"/memories/{seeded.ids['forget']}")
    assert "archived" not in page.text.split("<h2>Versions")[0]
    assert browser_client.get(target).status_code == 405  # a GET never writes


def test_each_session_has_its_own_form_token(
    browser_client: TestClient, app_palace: Palace
) -> None:
    login(browser_client, "alice-token")
    alice_token = csrf_of(browser_client.get("/memories").text)
    tokens = TokenTable.parse(["bob=bob-token"], origin="t")
    with TestClient(
        build_app(PalacePool(app_palace), tokens), base_url=BASE, follow_redirects=False
    ) as other:
        login(other, "bob-token")
        bob_token = csrf_of(other.get("/memories").text)
    assert alice_token != bob_token


def test_edit_forget_restore(browser_client: TestClient, app_palace: Palace) -> None:
    login(browser_client, "alice-token")
    memory = app_palace.for_agent("alice").remember("The Wombat queue drains at midnight")
    token = csrf_of(browser_client.get(f"/memories/{memory.id}").text)
    edited = browser_client.post(
        f"/memories/{memory.id}/update",
        data={
            "csrf": token,
            "content": "The Wombat queue drains at 1 am",
            "title": "Wombat",
            "tags": "queue, ops",
            "category": "fact",
            "type": "system",
            "store": "semantic",
        },
        headers=ORIGIN,
    )
    assert edited.status_code == 303
    new_id = edited.headers["location"].rsplit("/", 1)[1]
    assert new_id != memory.id
    page = browser_client.get(f"/memories/{new_id}").text
    assert "The Wombat queue drains at 1 am" in page and "Versions (2)" in page
    assert memory.id in page  # the old version, in the history
    bad = browser_client.post(
        f"/memories/{new_id}/update",
        data={
            "csrf": token,
            "content": "x",
            "category": "nonsense",
            "type": "system",
            "store": "semantic",
        },
        headers=ORIGIN,
    )
    assert bad.status_code == 400 and "decision" in bad.text  # names the valid options
    forgot = browser_client.post(f"/memories/{new_id}/forget", data={"csrf": token}, headers=ORIGIN)
    assert forgot.status_code == 303
    assert app_palace.for_agent("alice").get(new_id).archived
    browser_client.post(f"/memories/{new_id}/restore", data={"csrf": token}, headers=ORIGIN)
    assert not app_palace.for_agent("alice").get(new_id).archived
    browser_client.post(
        f"/memories/{new_id}/feedback", data={"csrf": token, "useful": "1"}, headers=ORIGIN
    )
    assert "1 useful, 0 not useful" in browser_client.get(f"/memories/{new_id}").text
    gone = browser_client.post(
        f"/memories/{new_id}/forget", data={"csrf": token, "hard": "1"}, headers=ORIGIN
    )
    assert gone.headers["location"] == "/memories"
    assert browser_client.get(f"/memories/{new_id}").status_code == 404


# -- headers, pages, escaping -----------------------------------------------------------------


def test_every_page_renders_with_the_security_headers(
    browser_client: TestClient, seeded: Seeded
) -> None:
    login(browser_client, "alice-token")
    paths = [
        *PAGES,
        f"/memories/{seeded.ids['decision']}",
        f"/memories/{seeded.ids['hostile-0']}",
        "/entities/graph?name=zebra+service",
        "/no/such/page",
        "/static/app.css",
        "/static/app.js",
        "/login",
    ]
    for path in paths:
        response = browser_client.get(path)
        assert response.status_code in (200, 303, 404), (path, response.text[:500])
        headers = response.headers
        assert headers["content-security-policy"] == CSP, path
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
        assert "frame-ancestors 'none'" in CSP
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
        if headers.get("content-type", "").startswith("text/html"):
            assert headers["cache-control"] == "no-store"
            assert_inert(response.text)
            assert "style=" not in response.text  # the CSP allows no inline style


class _Text(HTMLParser):
    """The text inside the element with a given id (nested tags counted)."""

    def __init__(self, wanted: str) -> None:
        super().__init__(convert_charrefs=True)
        self.wanted = wanted
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == self.wanted:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def text_of(page: str, element_id: str) -> str:
    parser = _Text(element_id)
    parser.feed(page)
    return "".join(parser.parts)


def test_the_hostile_corpus_is_escaped_everywhere(
    browser_client: TestClient, seeded: Seeded, app_palace: Palace
) -> None:
    login(browser_client, "alice-token")
    pages = [browser_client.get(path).text for path in PAGES]
    pages.append(browser_client.get("/memories?q=Hostile+note").text)
    pages.append(browser_client.get("/recall?q=Hostile+note+script").text)
    for n, raw in enumerate(MARKUP):
        page = browser_client.get(f"/memories/{seeded.ids[f'hostile-{n}']}").text
        pages.append(page)
        shown = text_of(page, "content")
        # The same text, with controls shown as symbols (never dropped).
        assert shown == raw_display(f"Hostile note {n}: {raw}"), n
    for page in pages:
        assert_inert(page)
        assert "<script>window" not in page
        assert "onerror=window" not in page.replace("onerror=window.__pwned=1", "")
    assert any("Hostile note" in page for page in pages[:3])


def raw_display(text: str) -> str:
    """How the inspector shows a stored text: controls as visible symbols."""
    return re.sub(
        "[\x00-\x08\x0b\x0c\x0e-\x1f]", lambda m: chr(0x2400 + ord(m.group())), text
    ).replace("\x7f", "\u2421")


def test_no_secret_in_any_page(browser_client: TestClient, seeded: Seeded) -> None:
    login(browser_client, "ops-token")
    for path in [*PAGES, f"/memories/{seeded.ids['bob']}"]:
        page = browser_client.get(path).text
        for secret in ("alice-token", "bob-token", "ops-token", "gateway-token", str(seeded.db)):
            assert secret not in page, (path, secret)


def test_the_api_beside_the_inspector_is_unchanged(browser_client: TestClient) -> None:
    assert browser_client.get("/healthz").json()["status"] == "ok"
    assert browser_client.get("/v1/stats").status_code == 401  # no cookie gets into the API
    login(browser_client, "alice-token")
    assert browser_client.get("/v1/stats").status_code == 401  # the session is no bearer token
    authorised = {"authorization": "Bearer alice-token"}
    assert browser_client.get("/v1/stats", headers=authorised).status_code == 200
    missing = browser_client.get("/v1/nothing-here", headers=authorised)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    wrong = browser_client.put("/v1/stats", headers=authorised)
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"


def test_only_loopback_names_are_answered(app_palace: Palace) -> None:
    tokens = TokenTable(anonymous="alice")
    app = build_app(PalacePool(app_palace), tokens)  # served on 127.0.0.1
    with TestClient(app, base_url="http://rebound.example:8765") as client:
        response = client.get("/memories")
        assert response.status_code == 421
        assert response.headers["x-frame-options"] == "DENY"
    app = build_app(PalacePool(app_palace), tokens)
    with TestClient(app, base_url="http://localhost:8765", follow_redirects=False) as client:
        assert client.get("/login").status_code == 303


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        ("/memories?after=yesterday", 400, "ISO 8601"),
        ("/memories?type=mammal", 400, "person"),
        ("/memories?cursor=forged", 400, "cursor"),
        ("/memories?agent=no+spaces+here", 400, "agents"),
        ("/recall?q=x&max_tokens=10", 400, "256"),
        ("/recall?q=x&max_tokens=many", 400, "whole number"),
        ("/recall?q=x&mode=sideways", 400, "general"),
        ("/entities/graph?name=nobody+at+all", 404, "Not found"),
        ("/skills/no-such-skill", 404, "Not found"),
        ("/conversations?cursor=%00", 400, "cursor"),
    ],
)
def test_bad_input_gets_a_page_that_says_what_is_valid(
    browser_client: TestClient, path: str, status: int, text: str
) -> None:
    login(browser_client, "alice-token")
    response = browser_client.get(path)
    assert response.status_code == status, response.text[:400]
    assert text in html.unescape(response.text)
    assert_inert(response.text)
