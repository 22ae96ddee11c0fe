"""The command-line speed benchmark, run small: both configurations, side
by side, and no daemon left behind."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from bench import cli_speed

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the daemon needs Unix sockets")


def _daemons() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mindpalace.daemon" in argv and any(v.startswith(b"TMPDIR=/tmp/mpcli") for v in env):
            found.add(int(entry.name))
    return found


def test_both_configurations_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    before = _daemons()
    assert cli_speed.main(["--calls", "2", "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    head, *rows = out.splitlines()[2:]
    assert head.split()[-2:] == ["cold", "daemon"]
    names = [row[:28].strip() for row in rows]
    assert names == [
        "remember, total",
        "remember, median",
        "remember, first",
        "recall",
        "all calls",
    ]
    assert all(float(value) > 0 for row in rows for value in row[28:].split())
    if os.path.isdir("/proc"):  # the daemon it started was stopped
        deadline = time.monotonic() + 30
        while not _daemons() <= before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _daemons() <= before


def test_a_configuration_measures_what_it_wrote() -> None:
    timing = cli_speed.measure("cold", calls=2, embedder="hashing")
    assert len(timing.remember) == 2 and timing.found >= 1  # both mention billing
    assert timing.total == pytest.approx(sum(timing.remember) + timing.recall)
