"""What forgetting for good costs: SQLite's ``secure_delete`` on bulk
writes, and the time of an erasure.

- bulk insert: memories per second written with ``remember_many`` into a
  fresh SQLite palace, ``secure_delete`` on (the product's setting) and off,
  alternating, median of ``--repeat`` runs;
- erase: a palace of ``--memories`` memories spread over ``--agents``
  agents; the time of a dry run and of ``erase(Selection.agent())`` for one
  of them (``--memories / --agents`` memories): to its commit, and to its
  background cleanup done (the erasure log says so); the longest stall of a
  writer on another connection writing all through it, and any error it
  got; whether the other agents' recall of a fixed query set returns the
  same hits before and after; one hard forget in what is left; on SQLite
  and (``--postgres``) PostgreSQL, whose palace is the SQLite one copied in
  bulk before its erasure (``mindpalace migrate``; the copy's time is
  reported). The goal's shape is ``--memories 1000000 --agents 10``.

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
import threading
import time
from pathlib import Path
from typing import Any

from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.models import Scope
from mindpalace.store.transfer import copy_palace

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


# The embedder and index of the palaces opened (``--url`` names a palace
# written with another model; at a million, recall runs in the database).
_OPEN = {"embedder": "hashing", "index": "auto"}
# How long to wait for the erasure's cleanup (seconds; --cleanup-wait).
_CLEANUP_WAIT = [float("inf")]


def _palace(target: str, agent: str) -> Palace:
    settings = Settings(agent_id=agent, embedder=_OPEN["embedder"], index=_OPEN["index"])
    return Palace(target, agent_id=agent, settings=settings)


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


_QUERIES = tuple(f"{a} {b} {c}" for a, b, c in zip(_WORDS, _WORDS[5:], _WORDS[11:], strict=False))[
    :8
] + tuple(f"what did {name} say" for name in _NAMES[:4])


def _recalls(palace: Palace, agents: list[str]) -> dict[str, list[list[str]]]:
    """Each agent's hits (ids, in order) for the fixed query set, once the
    warm indexes are built (a recall before that reads the store's own
    text index, ranked a little differently)."""
    palace.recall(_QUERIES[0])
    if _OPEN["index"] != "database":
        palace.engine.semantic.wait_for_warm()
    return {
        agent: [
            [h.memory.id for h in palace.for_agent(agent).recall(q, limit=10)] for q in _QUERIES
        ]
        for agent in agents
    }


def _unchanged(
    palace: Palace, before: dict[str, list[list[str]]], after: dict[str, list[list[str]]]
) -> int:
    """Queries whose hits before the erasure, less the erased ones, are the
    first of their hits after it."""
    ids = sorted({i for lists in before.values() for hits in lists for i in hits})
    left = set(palace.store.get_many(ids, Scope.management()))
    same = 0
    for agent, lists in before.items():
        for hits, later in zip(lists, after[agent], strict=True):
            kept = [i for i in hits if i in left]
            same += later[: len(kept)] == kept
    return same


class _Writer(threading.Thread):
    """Writes one memory after another (as another process's writer would,
    through its own connection) and keeps the longest wait and any error."""

    def __init__(self, target: str) -> None:
        super().__init__(daemon=True)
        self.target = target
        self.stop = threading.Event()
        self.longest = 0.0
        self.writes = 0
        self.errors: list[str] = []

    def run(self) -> None:
        with _palace(self.target, "writer") as palace:
            while not self.stop.is_set():
                began = time.perf_counter()
                try:
                    palace.remember(f"writer note {self.writes} during the erasure")
                except Exception as exc:  # the measurement: any failure is reported
                    self.errors.append(repr(exc))
                self.longest = max(self.longest, time.perf_counter() - began)
                self.writes += 1
                time.sleep(0.01)


def fill(target: str, memories: int, agents: int) -> float:
    """Write ``memories`` over ``agents`` into ``target``; seconds taken."""
    rnd = random.Random(11)
    per = memories // agents
    start = time.perf_counter()
    for n in range(agents):
        with _palace(target, f"agent{n}") as palace:
            records = _records(per, n, rnd)
            for i in range(0, per, 2000):
                palace.remember_many(records[i : i + 2000])
    return time.perf_counter() - start


def copied(source: str, target: str) -> float:
    """Copy the palace ``source`` into the empty ``target`` in bulk (what
    ``mindpalace migrate`` does); seconds taken."""
    start = time.perf_counter()
    with _palace(source, "agent0") as src, _palace(target, "agent0") as dst:
        copy_palace(src.store, dst.store)
    return time.perf_counter() - start


def erase_times(
    target: str,
    memories: int,
    agents: int,
    *,
    filled: float | None = None,
    names: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Fill ``target`` (unless ``filled`` gives the seconds it took already),
    then time a dry run and the erasure of one agent (to its commit and to
    its cleanup done) while another connection writes, check the other
    agents' recall, and time a hard forget. ``names``: the palace's agents
    (the first is erased), where it was not filled here."""
    if filled is None:
        filled = fill(target, memories, agents)
    names_given = bool(names)
    names = names or tuple(f"agent{n}" for n in range(agents))
    others = list(names[1:4])
    with _palace(target, names[0]) as palace:
        before = _recalls(palace, others)
        start = time.perf_counter()
        preview = palace.erase(Selection.agent())
        dry = time.perf_counter() - start
        writer = _Writer(target)
        writer.start()
        time.sleep(0.5)
        start = time.perf_counter()
        receipt = palace.erase(Selection.agent(), confirm=True)
        committed = time.perf_counter() - start
        cleaned: float | None = None
        while time.perf_counter() - start < _CLEANUP_WAIT[0]:
            if palace.erasures(limit=1)[0].cleanup == "done":
                cleaned = time.perf_counter() - start
                break
            time.sleep(0.05)
        time.sleep(0.5)
        writer.stop.set()
        writer.join()
        after = _recalls(palace, others)
        other = palace.for_agent(names[1])
        victim = other.memories(limit=1)[0]
        start = time.perf_counter()
        other.forget(victim.id, hard=True)
        forget = time.perf_counter() - start
        left = palace.store.size()
        result = {
            "memories": memories,
            "agents": agents,
            "erased": receipt.counts.to_dict(),
            "same_as_dry_run": preview.counts == receipt.counts,
            "fill_s": round(filled, 1),
            "dry_run_s": round(dry, 3),
            "erase_to_commit_s": round(committed, 3),
            "erase_to_cleanup_done_s": None if cleaned is None else round(cleaned, 3),
            "receipt_cleanup": receipt.cleanup,
            "writer": {
                "writes": writer.writes,
                "errors": writer.errors[:3],
                "longest_stall_s": round(writer.longest, 3),
            },
            "other_agents_same_hits": before == after,
            # The erased agent's shared memories were in the others' hits:
            # a query counts as unchanged when its hits that remain keep
            # their order at the top (the freed places filled from below).
            "other_agents_unchanged_queries": _unchanged(palace, before, after),
            "recall_queries": len(_QUERIES) * len(others),
            "hard_forget_s": round(forget, 3),
            "left": left,
        }
        if names_given:
            # Before the palace closes: closing waits for the cleanup, which
            # on PostgreSQL at a million (the vector index rebuilt, then the
            # VACUUM) takes minutes.
            print(json.dumps({"postgres": result}, indent=2), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inserts", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--skip-inserts", action="store_true")
    parser.add_argument("--skip-erase", action="store_true")
    parser.add_argument(
        "--url",
        help="erase the first of --names from this existing palace (PostgreSQL), no build",
    )
    parser.add_argument("--names", nargs="+", default=[], help="its agents, for --url")
    parser.add_argument("--embedder", default="hashing", help="the model of --url's palace")
    parser.add_argument("--index", default="auto", help="recall's index (database at 1M)")
    parser.add_argument(
        "--cleanup-wait", type=float, default=float("inf"), help="seconds (reported null if not)"
    )
    args = parser.parse_args()
    _OPEN.update(embedder=args.embedder, index=args.index)
    _CLEANUP_WAIT[0] = args.cleanup_wait
    if args.url:
        names = tuple(args.names)
        if len(names) < 2:
            raise SystemExit("--url needs --names: the agent to erase, then others")
        with _palace(args.url, names[0]) as palace:
            size = palace.store.size()
        erase_times(args.url, size, len(names), filled=0.0, names=names)  # prints its report
        return
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
            lite = str(folder / "erase.db")
            built = fill(lite, args.memories, args.agents)
            server = None
            if args.postgres:  # the same palace, copied in bulk before SQLite's erasure
                from bench.pgserver import ThrowawayPostgres

                server = ThrowawayPostgres(prefix="mindpalace_erase")
                url = server.create()
                report["postgres_copy_s"] = round(copied(lite, url), 1)
            try:
                report["sqlite"] = erase_times(lite, args.memories, args.agents, filled=built)
                if server is not None:
                    report["postgres"] = erase_times(url, args.memories, args.agents, filled=0.0)
            finally:
                if server is not None:
                    server.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
