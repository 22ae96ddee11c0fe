"""``mindpalace ui``: a real process, its one-time link, over plain HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from tests.ui.conftest import Seeded


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    env["MINDPALACE_EMBEDDER"] = "hashing"
    return env


@contextmanager
def inspector(db: Path, *args: str) -> Iterator[str]:
    """``mindpalace --db DB [args] ui --no-browser``; yields its link."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mindpalace.cli", "--db", str(db), *args, "ui", "--no-browser"],
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        link = ""
        while not link and time.monotonic() < deadline and process.poll() is None:
            line = process.stderr.readline()
            if "/login?token=" in line:
                link = line.strip()
        assert link, "no link printed"
        yield link
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0  # a clean stop on SIGTERM


def test_the_link_opens_one_session_once(seeded: Seeded) -> None:
    with inspector(seeded.db, "--agent", "alice") as link:
        base = link.split("/login")[0]
        with httpx.Client(base_url=base) as browser:
            assert browser.get("/memories").status_code == 303  # no session yet
            first = browser.get(link)
            assert first.status_code == 303 and first.headers["location"] == "/memories"
            assert "httponly" in first.headers["set-cookie"].lower()
            page = browser.get("/memories")
            assert page.status_code == 200 and "own view" in page.text
            assert seeded.ids["bob"] not in page.text
            assert link.split("token=")[1] not in page.text
        with httpx.Client(base_url=base) as other:
            assert other.get(link).status_code == 403  # used up
            assert (
                other.post(
                    "/login", data={"token": "alice-token"}, headers={"origin": base}
                ).status_code
                == 401
            )  # no bearer tokens


def test_all_agents_gives_the_management_view(seeded: Seeded) -> None:
    with (
        inspector(seeded.db, "--agent", "ops", "--all-agents") as link,
        httpx.Client() as browser,
    ):
        browser.get(link)
        base = link.split("/login")[0]
        page = browser.get(f"{base}/memories/{seeded.ids['bob']}")
        assert page.status_code == 200 and "management view" in page.text


def test_only_a_loopback_address(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mindpalace.cli",
            "--db",
            str(tmp_path / "p.db"),
            "ui",
            "--host",
            "0.0.0.0",  # noqa: S104 - the address that is refused
            "--no-browser",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "loopback" in done.stderr
