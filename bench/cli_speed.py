"""How fast a script can call the command line: ten ``remember`` calls, then
one ``recall``, each a fresh process, on a fresh palace::

    python -m bench.cli_speed                      # the bundled model, 10 calls
    python -m bench.cli_speed --calls 20 --embedder static --json

Each call runs ``python -m mindpalace.launch`` (what the installed
``mindpalace`` executable runs) from a shell that never ran one before, in
two configurations side by side:

* ``cold``: ``MINDPALACE_DAEMON=off``: every call imports the package,
  opens the palace and loads the model itself;
* ``daemon``: ``MINDPALACE_DAEMON=auto`` (the default outside tests): the
  first call starts the palace's daemon and waits for it, the others are
  handed to it over its socket.

Each configuration gets its own palace and its own socket directory, so no
daemon from before is found; the daemon is stopped at the end. Times are
wall-clock seconds per process, from start to exit: the total of the ten
``remember`` calls (the goal: 5 s or less on two cores), their median, the
first call (the daemon's start is in it), the ``recall``, and everything.
The bytecode cache matters for a cold start (``PYTHONDONTWRITEBYTECODE``
with no cache compiles every module on every call): the header says which.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import mindpalace

__all__ = ["Timing", "main", "measure"]

_TEXTS = [
    "We deploy the billing service with blue-green releases on Fridays",
    "Decision: Postgres stays the primary database for billing",
    "Maria owns the billing service and its on-call rota",
    "The release checklist lives in the ops wiki",
    "Lesson: a schema migration needs a rollback script before it ships",
    "The search team moved standups to 9:30",
    "Rule: never rotate the signing keys on a Friday",
    "The staging cluster runs two replicas of every service",
    "Alex prefers written design reviews to meetings",
    "The mobile app talks to the gateway, never to services directly",
]


@dataclass(frozen=True, slots=True)
class Timing:
    """One configuration's wall-clock seconds, per process."""

    mode: str
    remember: list[float]
    recall: float
    found: int

    @property
    def remember_total(self) -> float:
        return sum(self.remember)

    @property
    def remember_median(self) -> float:
        return statistics.median(self.remember)

    @property
    def total(self) -> float:
        return self.remember_total + self.recall


def _environment(runtime: Path, mode: str, embedder: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MINDPALACE_") and k != "PYTEST_CURRENT_TEST"
    }
    env.pop("XDG_RUNTIME_DIR", None)
    env["TMPDIR"] = str(runtime)  # a socket directory of this run's own
    env["MINDPALACE_DAEMON"] = mode
    if embedder is not None:
        env["MINDPALACE_EMBEDDER"] = embedder
    return env


def _call(env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mindpalace.launch", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mindpalace {' '.join(args[2:4])} failed: {done.stderr.strip()}")
    return took, done.stdout


def measure(mode: str, *, calls: int = 10, embedder: str | None = None) -> Timing:
    """Ten (``calls``) ``remember`` and one ``recall`` with
    ``MINDPALACE_DAEMON=mode`` (off or auto) on a fresh palace."""
    work = Path(tempfile.mkdtemp(prefix="mpcli", dir="/tmp"))  # a short socket path
    db = str(work / "palace.db")
    env = _environment(work, "off" if mode == "cold" else "auto", embedder)
    try:
        remember = []
        for i in range(calls):
            text = f"{_TEXTS[i % len(_TEXTS)]} (note {i + 1})"
            remember.append(_call(env, "--db", db, "remember", text)[0])
        recall, out = _call(env, "--db", db, "recall", "who owns billing", "--limit", "5")
        return Timing(mode, remember, recall, len(json.loads(out)))
    finally:
        if mode != "cold":
            subprocess.run(
                [sys.executable, "-m", "mindpalace.launch", "--db", db, "daemon", "stop"],
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(work, ignore_errors=True)


def _bytecode() -> str:
    if not sys.flags.dont_write_bytecode:
        return "written and read (the usual case)"
    cache = Path(mindpalace.__file__).parent / "__pycache__"
    return "read, not written" + ("" if cache.is_dir() else " (none cached: every call compiles)")


def _table(timings: list[Timing]) -> str:
    rows = [
        ("remember, total", lambda t: t.remember_total),
        ("remember, median", lambda t: t.remember_median),
        ("remember, first", lambda t: t.remember[0]),
        ("recall", lambda t: t.recall),
        ("all calls", lambda t: t.total),
    ]
    calls = len(timings[0].remember)
    lines = [
        f"{f'{calls} x remember + recall (s)':<28}" + "".join(f"{t.mode:>10}" for t in timings)
    ]
    for name, value in rows:
        lines.append(f"{name:<28}" + "".join(f"{value(t):>10.2f}" for t in timings))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_speed", description=__doc__)
    parser.add_argument("--calls", type=int, default=10, help="remember calls (10)")
    parser.add_argument(
        "--embedder", help="MINDPALACE_EMBEDDER for the calls (default: the bundled model)"
    )
    parser.add_argument("--json", action="store_true", help="print the timings as JSON")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be 1 or more")
    timings = [
        measure(mode, calls=args.calls, embedder=args.embedder) for mode in ("cold", "daemon")
    ]
    if args.json:
        print(json.dumps([asdict(t) for t in timings], indent=2))
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, bytecode: {_bytecode()}")
    print(f"embedder: {args.embedder or 'default (bundled)'}")
    print(_table(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
