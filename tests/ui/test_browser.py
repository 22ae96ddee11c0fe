"""The inspector in a real browser: headless Chromium (the system's package)
driven by Selenium, against the real ``mindpalace serve`` and ``mindpalace
ui`` processes.

Flows: search, open, edit, and the history shows the old version; forget
and restore; another agent's memory by URL is not found; the hostile
corpus renders as its own text and nothing in it runs; the browser enforces
the Content-Security-Policy; the one-time link of ``mindpalace ui`` works
once and leaves the address bar.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.hostile import MARKUP
from tests.server.conftest import Server, server_env, start_server
from tests.ui.conftest import TOKENS, Seeded
from tests.ui.test_http import raw_display

from bench.browser import chromium, missing

why = missing()
if why is not None and os.environ.get("MINDPALACE_TEST_BROWSER") == "required":
    raise RuntimeError(f"MINDPALACE_TEST_BROWSER=required, but {why}")  # CI runs them
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")


@pytest.fixture(scope="module")
def server(seeded: Seeded) -> Iterator[Server]:
    running = start_server(seeded.db, env=server_env(MINDPALACE_TOKENS=TOKENS))
    running.ids = seeded.ids
    yield running
    assert running.stop() == 0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    yield driver
    driver.quit()


def navigates(driver: Any, action: Any) -> None:
    """Do ``action`` and wait for the page it leads to."""
    from selenium.webdriver.support.ui import WebDriverWait

    before = driver.find_element("tag name", "html")
    action()
    WebDriverWait(driver, 20).until(
        lambda d: _stale(before) and d.execute_script("return document.readyState") == "complete"
    )


def _stale(element: Any) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.tag_name  # noqa: B018 - raises once the page is gone
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        # Asked mid-navigation, Chrome may answer that the node no longer
        # belongs to the document instead of calling it stale: it is gone.
        if "does not belong to the document" in str(error):
            return True
        raise
    return False


def log_in(driver: Any, server: Server, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get_log("browser")  # what earlier tests left
    driver.delete_all_cookies()
    driver.get(f"{server.url}/login")
    driver.find_element(By.ID, "token").send_keys(token)
    navigates(driver, driver.find_element(By.ID, "login").click)
    assert driver.current_url == f"{server.url}/memories"


def assert_nothing_ran(driver: Any) -> None:
    """No script of the page's data ran: no flag set, no dialog open, and the
    browser reported no Content-Security-Policy violation by our own page."""
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises when no dialog is open
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_search_open_edit_and_the_history_keeps_the_old_version(
    browser: Any, server: Server
) -> None:
    from selenium.webdriver.common.by import By

    log_in(browser, server, "alice-token")
    box = browser.find_element(By.ID, "q")
    box.send_keys("Zebra deploys")
    navigates(browser, box.submit)
    old_id = server.ids["edit"]
    navigates(browser, browser.find_element(By.CSS_SELECTOR, f'a[href="/memories/{old_id}"]').click)
    assert browser.find_element(By.ID, "content").text == "The Zebra service deploys on Tuesdays"
    text = browser.find_element(By.NAME, "content")
    text.clear()
    text.send_keys("The Zebra service deploys on Thursdays")
    navigates(browser, browser.find_element(By.ID, "save").click)
    new_id = browser.current_url.rsplit("/", 1)[1]
    assert new_id != old_id
    assert browser.find_element(By.ID, "content").text == "The Zebra service deploys on Thursdays"
    versions = browser.find_elements(By.CSS_SELECTOR, "#versions > li")
    assert len(versions) == 2
    assert old_id in versions[0].text and "Tuesdays" in versions[0].text
    assert new_id in versions[1].text and "this version" in versions[1].text
    navigates(browser, versions[0].find_element(By.LINK_TEXT, old_id).click)
    assert "replaced by" in browser.page_source and new_id in browser.page_source
    assert_nothing_ran(browser)


def test_forget_then_restore(browser: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    log_in(browser, server, "alice-token")
    memory_id = server.ids["forget"]
    browser.get(f"{server.url}/memories/{memory_id}")
    asked = []

    def forget() -> None:
        browser.find_element(By.ID, "forget").click()
        dialog = browser.switch_to.alert  # the page asks first
        asked.append(dialog.text)
        dialog.accept()

    navigates(browser, forget)
    assert "Archive this memory" in asked[0]
    assert browser.find_element(By.ID, "restore")  # archived now
    browser.get(f"{server.url}/memories?q=Quokka+dashboard")
    assert memory_id not in browser.page_source  # recall no longer finds it
    browser.get(f"{server.url}/memories/{memory_id}")
    navigates(browser, browser.find_element(By.ID, "restore").click)
    assert browser.find_element(By.ID, "forget")
    browser.get(f"{server.url}/memories?q=Quokka+dashboard")
    assert memory_id in browser.page_source
    assert_nothing_ran(browser)


def test_forget_asks_first_and_a_no_keeps_the_memory(browser: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    log_in(browser, server, "alice-token")
    browser.get(f"{server.url}/memories/{server.ids['decision']}")
    browser.find_element(By.ID, "forget").click()
    browser.switch_to.alert.dismiss()
    assert browser.current_url.endswith(server.ids["decision"])
    assert browser.find_elements(By.ID, "restore") == []


def test_another_agents_memory_is_not_found_by_url(browser: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    log_in(browser, server, "alice-token")
    browser.get(f"{server.url}/memories/{server.ids['bob']}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "backup key" not in browser.page_source
    log_in(browser, server, "ops-token")  # the management view sees it
    browser.get(f"{server.url}/memories/{server.ids['bob']}")
    assert "backup key" in browser.find_element(By.ID, "content").text


def test_the_hostile_corpus_renders_as_text(browser: Any, server: Server) -> None:
    log_in(browser, server, "alice-token")
    for n, raw in enumerate(MARKUP):
        browser.get(f"{server.url}/memories/{server.ids[f'hostile-{n}']}")
        shown = browser.execute_script("return document.getElementById('content').textContent")
        assert shown == raw_display(f"Hostile note {n}: {raw}"), n
        assert_nothing_ran(browser)
    for path in (
        "/memories",
        "/memories?q=Hostile+note+script",
        "/recall?q=Hostile+note+script+window",
        "/skills/hostile-skill",
        "/conversations/turns?session=standup-1",
        "/entities",
        "/stats",
    ):
        browser.get(server.url + path)
        assert browser.title.endswith("mindpalace"), path
        assert_nothing_ran(browser)


def test_the_browser_enforces_the_policy(browser: Any, server: Server) -> None:
    log_in(browser, server, "alice-token")
    browser.get(f"{server.url}/memories")
    browser.get_log("browser")  # drop what came before
    browser.execute_script(
        "const s = document.createElement('script');"
        "s.textContent = 'window.__inline = 1'; document.body.appendChild(s);"
    )
    time.sleep(0.2)
    assert browser.execute_script("return typeof window.__inline") == "undefined"
    refused = [e["message"] for e in browser.get_log("browser")]
    assert any("Content Security Policy" in message for message in refused)


def test_the_one_time_link_of_mindpalace_ui(browser: Any, seeded: Seeded, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env["MINDPALACE_EMBEDDER"] = "hashing"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mindpalace.cli",
            "--db",
            str(seeded.db),
            "--agent",
            "alice",
            "ui",
            "--no-browser",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        link = ""
        while not link and time.monotonic() < deadline:
            line = process.stderr.readline()
            if "/login?token=" in line:
                link = line.strip()
        assert link.startswith("http://127.0.0.1:"), link
        browser.delete_all_cookies()
        browser.get(link)
        base = link.split("/login")[0]
        assert browser.current_url == f"{base}/memories"  # the token left the address bar
        assert browser.find_element(By.CSS_SELECTOR, ".who b").text == "alice"
        browser.delete_all_cookies()
        browser.get(link)  # a second time: used up
        assert "used up" in browser.page_source
        browser.get(f"{base}/memories")
        assert browser.current_url == f"{base}/login"
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
