"""The inspector's erasure over HTTP: the form, the dry-run preview, the
confirmation, the receipt and the log; CSRF and same-origin on both
writes; the permission rule of every surface; a selection that changed
since its preview erases nothing. The real app of ``mindpalace serve``
over a palace of its own (erasing would disturb the shared seeded one)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.hostile import MARKUP
from tests.ui.conftest import BASE, ORIGIN, TOKENS, csrf_of, login
from tests.ui.test_http import assert_inert, text_of

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.server.http import build_app
from mindpalace.ui import CSP
from mindpalace.web.identity import PalacePool, TokenTable

SETTINGS = Settings(embedder="hashing")
_DIGEST = re.compile(r'name="digest" value="([0-9a-f]{64})"')


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    with Palace(tmp_path / "palace.db", settings=SETTINGS) as opened:
        alice = opened.for_agent("alice")
        alice.remember("Heron census on the marsh: 14 birds", session="survey-1")
        alice.remember("Heron nest count at the weir: 3 nests", session="survey-1")
        alice.remember("The kiln fires on Thursdays")
        opened.for_agent("bob").remember("Bob's survey note", session="survey-1")
        yield opened


@pytest.fixture
def client(palace: Palace) -> Iterator[TestClient]:
    tokens = TokenTable.parse(TOKENS.split(","), origin="test tokens")
    with TestClient(
        build_app(PalacePool(palace), tokens), base_url=BASE, follow_redirects=False
    ) as running:
        yield running


def contents(palace: Palace) -> list[str]:
    admin = Palace(engine=palace.engine, management=True)
    return sorted(m.content for m in admin.memories(include_archived=True))


def digest_of(page: str) -> str:
    found = _DIGEST.search(page)
    assert found is not None, "no confirm form on the page"
    return found.group(1)


def test_preview_then_confirm(client: TestClient, palace: Palace) -> None:
    login(client, "alice-token")
    page = client.get("/erase")
    assert page.status_code == 200 and page.headers["content-security-policy"] == CSP
    assert "No erasure yet." in page.text
    form = {"csrf": csrf_of(page.text), "kind": "session", "value": "survey-1"}
    preview = client.post("/erase/preview", data=form, headers=ORIGIN)
    assert preview.status_code == 200, preview.text
    assert text_of(preview.text, "summary").startswith("Would erase 2 memories")
    assert len(contents(palace)) == 4  # a preview erases nothing
    assert "Heron" not in preview.text  # counts, never content
    done = client.post("/erase", data={**form, "digest": digest_of(preview.text)}, headers=ORIGIN)
    assert done.status_code == 200, done.text
    assert text_of(done.text, "summary").startswith("Erased 2 memories. Receipt era_")
    assert contents(palace) == ["Bob's survey note", "The kiln fires on Thursdays"]
    log = client.get("/erase").text
    assert "kind session · value survey-1" in text_of(log, "erasures")
    assert "Heron" not in log
    (receipt,) = palace.for_agent("alice").erasures()
    assert receipt.id is not None and receipt.id in log


def test_both_writes_need_the_form_token_and_this_site(client: TestClient, palace: Palace) -> None:
    login(client, "alice-token")
    token = csrf_of(client.get("/erase").text)
    preview = client.post(
        "/erase/preview", data={"csrf": token, "kind": "agent"}, headers=ORIGIN
    ).text
    fields = {"kind": "agent", "digest": digest_of(preview)}
    for path in ("/erase/preview", "/erase"):
        for data, headers in (
            (fields, ORIGIN),
            ({**fields, "csrf": "forged"}, ORIGIN),
            ({**fields, "csrf": token}, {"origin": "http://evil.example"}),
            ({**fields, "csrf": token}, {}),
        ):
            assert client.post(path, data=data, headers=headers).status_code == 403, path
    assert len(contents(palace)) == 4
    client.cookies.clear()
    assert client.post("/erase", data={**fields, "csrf": token}, headers=ORIGIN).status_code == 403


def test_the_permission_rule_decides(client: TestClient, palace: Palace) -> None:
    bobs = palace.for_agent("bob").remember("Bob's shared runbook", visibility="shared")
    login(client, "alice-token")
    token = csrf_of(client.get("/erase").text)
    refused = client.post(
        "/erase/preview", data={"csrf": token, "kind": "memory", "value": bobs.id}, headers=ORIGIN
    )
    assert refused.status_code == 403
    assert "not erase it" in refused.text
    login(client, "ops-token")  # the management view erases any agent's
    token = csrf_of(client.get("/erase").text)
    form = {"csrf": token, "kind": "memory", "value": bobs.id}
    preview = client.post("/erase/preview", data=form, headers=ORIGIN)
    assert text_of(preview.text, "summary").startswith("Would erase 1 memories")
    done = client.post("/erase", data={**form, "digest": digest_of(preview.text)}, headers=ORIGIN)
    assert done.status_code == 200
    assert "Bob's shared runbook" not in contents(palace)


def test_a_changed_selection_erases_nothing(client: TestClient, palace: Palace) -> None:
    login(client, "alice-token")
    form = {"csrf": csrf_of(client.get("/erase").text), "kind": "session", "value": "survey-1"}
    preview = client.post("/erase/preview", data=form, headers=ORIGIN)
    palace.for_agent("alice").remember("Heron chick seen", session="survey-1")
    stale = client.post("/erase", data={**form, "digest": digest_of(preview.text)}, headers=ORIGIN)
    assert stale.status_code == 409
    assert "changed since the preview" in text_of(stale.text, "changed")
    assert text_of(stale.text, "summary").startswith("Would erase 3 memories")
    assert len(contents(palace)) == 5
    missing = client.post("/erase", data=form, headers=ORIGIN)
    assert missing.status_code == 400 and len(contents(palace)) == 5


@pytest.mark.parametrize(
    ("form", "fragment"),
    [
        ({"kind": "everything"}, "valid options: memory, agent, channel"),
        ({"kind": "filter"}, "at least one of: types, categories, stores"),
        ({"kind": "filter", "store": "attic"}, "episodic"),
        ({"kind": "filter", "before": "someday"}, "created_before"),
        ({"kind": "session"}, "erasing a session needs its session"),
    ],
)
def test_bad_selections_say_what_is_valid(
    client: TestClient, palace: Palace, form: dict[str, str], fragment: str
) -> None:
    login(client, "alice-token")
    token = csrf_of(client.get("/erase").text)
    page = client.post("/erase/preview", data={"csrf": token, **form}, headers=ORIGIN)
    assert page.status_code == 400
    assert fragment in page.text.replace("&#x27;", "'")
    assert len(contents(palace)) == 4


def test_hostile_values_stay_text(client: TestClient, palace: Palace) -> None:
    login(client, "alice-token")
    token = csrf_of(client.get("/erase").text)
    for raw in MARKUP:
        page = client.post(
            "/erase/preview", data={"csrf": token, "kind": "entity", "value": raw}, headers=ORIGIN
        )
        assert page.status_code in (200, 400), raw
        assert_inert(page.text)
    assert_inert(client.get("/erase").text)
