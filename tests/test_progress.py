"""Progress on standard error (``mindpalace.progress``): a bar on a
terminal, lines with ``--progress`` elsewhere, else one summary line for a
long job and nothing for a short one. The clock is the test's."""

from __future__ import annotations

import io

from mindpalace.progress import ProgressLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_a_bar_redrawn_in_place() -> None:
    out, clock = Terminal(), Clock()
    show = ProgressLine("import", stream=out, clock=clock)
    clock.now += 1
    show(150, 1000)
    clock.now += 0.01
    show(160, 1000)  # too soon after the last redraw: skipped
    clock.now += 9
    show(1000, 1000)
    show(1000, 1000)  # the end is told once
    assert out.getvalue() == (
        "\rimport [####--------------------------] 150/1000 (150/s)"
        "\rimport [##############################] 1000/1000 (100/s)\n"
    )
    shorter = Terminal()
    bar = ProgressLine("x", stream=shorter, clock=clock)
    clock.now += 1
    bar(9000, 10000)
    clock.now += 9999
    bar(10000, 10000)  # "(9000/s)" then "(1/s)": spaces over the old text
    assert shorter.getvalue().endswith("] 10000/10000 (1/s)  \n")


def test_off_a_terminal_a_short_job_is_silent_and_a_long_one_sums_up() -> None:
    out, clock = io.StringIO(), Clock()
    short = ProgressLine("export", stream=out, clock=clock)
    short(10, 20)
    short(20, 20)
    assert out.getvalue() == ""
    long = ProgressLine("export", stream=out, clock=clock)
    for done in range(500, 3001, 500):
        clock.now += 0.5
        long(done, 3000)
    assert out.getvalue() == "export: 3000 done in 3.0 s, 1000/s\n"
    slow = ProgressLine("reindex", stream=io.StringIO(), clock=clock)
    clock.now += 5
    slow(3, 3)
    assert slow._stream.getvalue() == "reindex: 3 done in 5.0 s, 1/s\n"  # type: ignore[attr-defined]


def test_asked_for_off_a_terminal_a_line_every_few_seconds() -> None:
    out, clock = io.StringIO(), Clock()
    show = ProgressLine("ingest", force=True, stream=out, clock=clock)
    for done in range(100, 1001, 100):
        clock.now += 1
        show(done, 1000)
    assert out.getvalue().splitlines() == [
        "ingest: 100/1000 (100/s)",
        "ingest: 600/1000 (100/s)",
        "ingest: 1000 done in 10.0 s, 100/s",
    ]
