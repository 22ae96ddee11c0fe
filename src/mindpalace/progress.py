"""Progress of a long command, on standard error.

On a terminal (or with ``--progress``) a bar is redrawn in place as the
job goes; otherwise nothing is shown while it runs, and a long job (many
items, or some seconds) ends with one summary line, so a log or a script
reading standard error gets one line, not hundreds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressLine"]

_WIDTH = 30
_REDRAW = 0.1  # seconds between two redraws on a terminal
_LOG_EVERY = 5.0  # seconds between two lines where --progress writes to a file
_LONG_ITEMS = 1000  # a job this big, or this slow, gets a summary line
_LONG_SECONDS = 2.0


class ProgressLine:
    """A ``progress(done, total)`` callback for one job.

    Args:
        label: what the job is ("import").
        force: show progress even when ``stream`` is not a terminal
            (``--progress``): a line every few seconds instead of a bar.
        stream: where to write (standard error).
        clock: seconds, for the rate (tests pass their own).
    """

    def __init__(
        self,
        label: str,
        *,
        force: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._label = label
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = self._stream.isatty()
        self._live = force or self._terminal
        self._clock = clock
        self._started = clock()
        self._shown = float("-inf")
        self._finished = False
        self._width = 0

    def __call__(self, done: int, total: int) -> None:
        if self._finished:
            return
        now = self._clock()
        end = done >= total
        self._finished = end
        elapsed = now - self._started
        if not self._live:
            if end and (total >= _LONG_ITEMS or elapsed >= _LONG_SECONDS):
                self._write(f"{self._summary(done, elapsed)}\n")
            return
        pause = _REDRAW if self._terminal else _LOG_EVERY
        if not end and now - self._shown < pause:
            return
        self._shown = now
        if not self._terminal:
            line = self._summary(done, elapsed) if end else self._status(done, total, elapsed)
            self._write(f"{line}\n")
            return
        filled = _WIDTH * min(done, total) // max(total, 1)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        line = f"{self._label} [{bar}] {self._status(done, total, elapsed, bare=True)}"
        # Spaces over what a longer line before left on the screen.
        self._write(f"\r{line.ljust(self._width)}" + ("\n" if end else ""))
        self._width = len(line)

    def _status(self, done: int, total: int, elapsed: float, *, bare: bool = False) -> str:
        rate = done / elapsed if elapsed > 0 else 0.0
        text = f"{done}/{total} ({rate:.0f}/s)"
        return text if bare else f"{self._label}: {text}"

    def _summary(self, done: int, elapsed: float) -> str:
        rate = f", {done / elapsed:.0f}/s" if elapsed > 0 else ""
        return f"{self._label}: {done} done in {elapsed:.1f} s{rate}"

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()
