"""The inspector's erasure in a real browser (headless Chromium, Selenium)
against a real ``mindpalace serve`` on a palace of its own: choose a
session, see the dry run's counts, confirm, read the receipt and the log;
the memories are gone and nothing of the page's data ran."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import Server, server_env, start_server
from tests.ui.conftest import TOKENS
from tests.ui.test_browser import assert_nothing_ran, browser, log_in, navigates, pytestmark

from mindpalace import Palace
from mindpalace.config import Settings

__all__ = ["browser", "pytestmark"]  # the module's browser, and its skip when none is found

SETTINGS = Settings(embedder="hashing")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("erase") / "palace.db"
    with Palace(db, agent_id="alice", settings=SETTINGS) as alice:
        alice.remember("Heron census on the marsh: 14 birds", session="survey-1")
        alice.remember("<script>window.__pwned=1</script> heron nest", session="survey-1")
        alice.remember("The kiln fires on Thursdays")
    running = start_server(db, env=server_env(MINDPALACE_TOKENS=TOKENS))
    yield running
    assert running.stop() == 0


def remaining(db: Path) -> list[str]:
    with Palace(db, settings=SETTINGS, management=True) as admin:
        return sorted(m.content for m in admin.memories(include_archived=True))


def test_preview_confirm_and_the_log(browser: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    log_in(browser, server, "alice-token")
    navigates(browser, browser.find_element(By.LINK_TEXT, "Erase").click)
    assert browser.current_url == f"{server.url}/erase"
    Select(browser.find_element(By.ID, "kind")).select_by_value("session")
    browser.find_element(By.ID, "value").send_keys("survey-1")
    navigates(browser, browser.find_element(By.ID, "preview").click)
    summary = browser.find_element(By.ID, "summary").text
    assert summary.startswith("Would erase 2 memories"), summary
    assert len(remaining(server.db)) == 3  # the preview erased nothing
    navigates(browser, browser.find_element(By.ID, "confirm").click)
    summary = browser.find_element(By.ID, "summary").text
    assert summary.startswith("Erased 2 memories. Receipt era_"), summary
    assert remaining(server.db) == ["The kiln fires on Thursdays"]
    navigates(browser, browser.find_element(By.LINK_TEXT, "Back to erasure").click)
    log = browser.find_element(By.ID, "erasures").text
    assert "survey-1" in log and "heron" not in log.lower()
    assert_nothing_ran(browser)


def test_cancel_erases_nothing(browser: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    before = remaining(server.db)
    log_in(browser, server, "alice-token")
    browser.get(f"{server.url}/erase")
    Select(browser.find_element(By.ID, "kind")).select_by_value("agent")
    navigates(browser, browser.find_element(By.ID, "preview").click)
    assert browser.find_element(By.ID, "summary").text.startswith("Would erase")
    navigates(browser, browser.find_element(By.LINK_TEXT, "Cancel").click)
    assert browser.current_url == f"{server.url}/erase"
    assert remaining(server.db) == before
