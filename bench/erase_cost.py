"""What forgetting for good costs: SQLite's ``secure_delete`` on bulk
writes, and the time of an erasure.

- bulk insert: memories per second written with ``remember_many`` into a
  fresh SQLite palace, ``secure_delete`` on (the product's setting) and off,
  alternating, median of ``--repeat`` runs;
- erase: a palace of ``--memories`` memories spread over ``--agents``
  agents; the time of a dry run and of ``erase(Selection.agent())`` for one
  of them (``--memories / --agents`` memories), and of one hard forget in
  what is left, on SQLite and (``--postgres``) PostgreSQL.

The ``hashing`` embedder keeps the model's time out of it::

    python -m bench.erase_cost --memories 50000 --agents 5 --postgres

Prints one JSON report.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mindpalace import Palace, Selection
from mindpalace.config import Settings

_WORDS = (
    "alpha beta gamma delta river stone falcon eagle garden budget deploy release"
    " billing payments standup review design schema index vector cache window"
).split()
_NAMES = ("Alice Chen", "Bob Stone", "Carol Diaz", "Dan Wu", "Eve Park", "Frank Lee")


def _records(count: int, agent: int, rnd: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "content": f"{rnd.choice(_NAMES)} said "
            + " ".join(rnd.choices(_WORDS, k=14))
            + f" (note {agent}-{i})",
            "session": f"s{agent}-{i // 50}",
            "tags": [rnd.choice(_WORDS)],
        }
        for i in range(count)
    ]


def _palace(target: str, agent: str) -> Palace:
    return Palace(target, agent_id=agent, settings=Settings(agent_id=agent, embedder="hashing"))


def insert_rate(folder: Path, count: int, *, secure: bool) -> float:
    """Memories a second written by ``remember_many`` in batches of 1,000."""
    path = folder / f"insert-{secure}-{time.monotonic_ns()}.db"
    records = _records(count, 0, random.Random(7))
    with _palace(str(path), "a") as palace:
        palace.store._conn.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")  # type: ignore[attr-defined]
        start = time.perf_counter()
        for i in range(0, count, 1000):
            palace.remember_many(records[i : i + 1000])
        return count / (time.perf_counter() - start)


def erase_times(target: str, memories: int, agents: int) -> dict[str, Any]:
    """Fill ``target``, then time a dry run, the erasure of one agent, and a
    hard forget."""
    rnd = random.Random(11)
    per = memories // agents
    start = time.perf_counter()
    for n in range(agents):
        with _palace(target, f"agent{n}") as palace:
            records = _records(per, n, rnd)
            for i in range(0, per, 2000):
                palace.remember_many(records[i : i + 2000])
    filled = time.perf_counter() - start
    with _palace(target, "agent0") as palace:
        store = palace.store
        scrub = store.scrub
        scrubbed: list[float] = []

        def timed_scrub() -> bool:
            began = time.perf_counter()
            try:
                return scrub()
            finally:
                scrubbed.append(time.perf_counter() - began)

        store.scrub = timed_scrub  # type: ignore[method-assign]
        start = time.perf_counter()
        preview = palace.erase(Selection.agent())
        dry = time.perf_counter() - start
        start = time.perf_counter()
        receipt = palace.erase(Selection.agent(), confirm=True)
        done = time.perf_counter() - start
        other = palace.for_agent("agent1")
        victim = other.memories(limit=1)[0]
        start = time.perf_counter()
        other.forget(victim.id, hard=True)
        forget = time.perf_counter() - start
        left = palace.store.size()
    return {
        "memories": memories,
        "erased": receipt.counts.to_dict(),
        "same_as_dry_run": preview.counts == receipt.counts,
        "fill_s": round(filled, 1),
        "dry_run_s": round(dry, 3),
        "erase_s": round(done, 3),
        "of_which_scrub_s": round(scrubbed[0], 3),
        "hard_forget_s": round(forget, 3),
        "left": left,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inserts", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--skip-inserts", action="store_true")
    parser.add_argument("--skip-erase", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mindpalace-erase-") as scratch:
        folder = Path(scratch)
        if not args.skip_inserts:
            rates: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeat):
                for secure in (False, True):
                    rates[secure].append(insert_rate(folder, args.inserts, secure=secure))
            on, off = statistics.median(rates[True]), statistics.median(rates[False])
            report["bulk_insert_per_s"] = {
                "secure_delete_on": round(on),
                "secure_delete_off": round(off),
                "cost_percent": round(100 * (off - on) / off, 1),
            }
        if not args.skip_erase:
            report["sqlite"] = erase_times(str(folder / "erase.db"), args.memories, args.agents)
        if args.postgres and not args.skip_erase:
            from bench.pgserver import ThrowawayPostgres

            server = ThrowawayPostgres(prefix="mindpalace_erase")
            try:
                url = server.create()
                report["postgres"] = erase_times(url, args.memories, args.agents)
            finally:
                server.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
