"""A headless Chromium driven by Selenium, from the system's packages.

``apt-get install chromium chromium-driver`` provides both (a browser build
that a tool downloads fails on machines without network). ``missing()``
says what is absent, for a skip message; ``.ci/run`` installs them. Used by the browser tests and by
``bench/ui_screens.py``.
"""

from __future__ import annotations

import importlib.util
import shutil
from typing import Any

__all__ = ["chromium", "missing"]

_BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _browser() -> str | None:
    return next((path for name in _BROWSERS if (path := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser test can run here, or None when one can."""
    absent = []
    if importlib.util.find_spec("selenium") is None:
        absent.append("the selenium package (pip install 'mindpalace[test]')")
    if _browser() is None:
        absent.append("chromium (apt-get install chromium)")
    if shutil.which("chromedriver") is None:
        absent.append("chromedriver (apt-get install chromium-driver)")
    return "browser tests need " + ", ".join(absent) if absent else None


def chromium(*, width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium WebDriver that records the browser's console."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _browser() or "chromium"
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--lang=en-GB",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
