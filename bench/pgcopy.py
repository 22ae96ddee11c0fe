"""Copying a SQLite palace into PostgreSQL (``mindpalace migrate``): memories per second.

Builds a SQLite palace as ``bench.pgspeed`` builds its PostgreSQL ones
(``static`` embedder, synthetic texts, 20 agents, 1,000 memories per
``remember_many``), or takes ``--source``, then copies it into a fresh
database of the embedded PostgreSQL server of ``bench/pgserver.py`` with
``copy_palace`` (one transaction, verified by digests before it commits).
``--trees`` names source trees (``src`` folders) to copy with, one after the
other on the same source, e.g. the main branch's and this one's, so that
before and after are measured in one run::

    python -m bench.pgcopy --size 20000
    python -m bench.pgcopy --size 20000 --trees /path/to/main/src,src

Prints one JSON report: per tree, the copy's seconds and memories per second,
with the time in the row copy itself, the digests and the rest (index builds,
statistics). Also the PostgreSQL write path's own rate for the same build
(``--write-rate``), for comparison. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.pgserver import ThrowawayPostgres
from bench.pgspeed import _AGENTS, _text


def build_sqlite(path: Path, size: int) -> float:
    """``size`` memories into the SQLite palace ``path`` (bench.pgspeed's
    shape and texts); memories per second."""
    from mindpalace import Palace
    from mindpalace.config import Settings
    from mindpalace.embed import from_settings

    embedder = from_settings(Settings(embedder="static"))
    rng = random.Random(7)
    start = time.perf_counter()
    done = 0
    while done < size:
        n = min(1000, size - done)
        with Palace(path, agent_id=f"agent{(done // 1000) % _AGENTS}", embedder=embedder) as p:
            p.remember_many(
                [
                    {"content": _text(rng, done + k), "session": f"s{(done + k) // 50}"}
                    for k in range(n)
                ]
            )
        done += n
    return size / (time.perf_counter() - start)


def _copy_once(source: str) -> dict[str, Any]:
    """Copy ``source`` into a fresh database with the code on ``sys.path``."""
    from mindpalace.store import migrate, transfer

    spent: dict[str, float] = {}

    def timed(name: str) -> None:
        inner: Callable[..., Any] = getattr(transfer, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - began

        setattr(transfer, name, wrapper)

    for name in ("_copy_table", "_digest", "_memory_digests"):
        timed(name)
    server = ThrowawayPostgres(prefix="mindpalace_pgcopy")
    try:
        url = server.create("copy")
        began = time.perf_counter()
        report = migrate(source, url)
        seconds = time.perf_counter() - began
    finally:
        server.stop()
    assert report.identical
    rows = spent.pop("_copy_table")
    digests = spent.pop("_digest") + spent.pop("_memory_digests")
    return {
        "memories": report.memories,
        "seconds": round(seconds, 1),
        "memories_per_s": round(report.memories / seconds, 1),
        "rows_s": round(rows, 1),
        "digests_s": round(digests, 1),
        "rest_s": round(seconds - rows - digests, 1),
    }


def _write_rate(size: int) -> float:
    """PostgreSQL's write path (``remember_many``) on the same build."""
    from bench.pgspeed import _build
    from mindpalace.config import Settings
    from mindpalace.embed import from_settings

    server = ThrowawayPostgres(prefix="mindpalace_pgcopy")
    try:
        url = server.create("written")
        rate = _build(url, from_settings(Settings(embedder="static")), size, random.Random(7))
    finally:
        server.stop()
    return float(rate["memories_per_s"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=20_000, help="memories to build")
    parser.add_argument("--source", help="an existing SQLite palace (else one is built)")
    parser.add_argument("--trees", default="", help="comma-separated src folders to copy with")
    parser.add_argument("--write-rate", action="store_true", help="also time remember_many")
    parser.add_argument("--copy-only", help=argparse.SUPPRESS)  # one copy, JSON out
    args = parser.parse_args(argv)
    if args.copy_only:
        json.dump(_copy_once(args.copy_only), sys.stdout)
        return 0
    report: dict[str, Any] = {"embedder": "static"}
    source = Path(args.source) if args.source else None
    if source is None:
        source = Path(tempfile.mkdtemp(prefix="mindpalace-pgcopy-")) / "palace.db"
        report["sqlite_build_memories_per_s"] = round(build_sqlite(source, args.size), 1)
    trees = [t for t in args.trees.split(",") if t] or [""]
    for tree in trees:
        env = dict(os.environ)
        if tree:
            env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()), os.getcwd()])
        out = subprocess.run(
            [sys.executable, "-m", "bench.pgcopy", "--copy-only", str(source)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        report[f"copy {tree or 'this tree'}"] = json.loads(out)
    if args.write_rate:
        report["postgres_remember_many_memories_per_s"] = round(_write_rate(args.size), 1)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
