"""Ingest speed on real chat text: LongMemEval turns through
``Palace.add_messages``, two code trees side by side in one run::

    python -m bench.realingest --size 3000 --embedder static --old /tmp/main/src
    python -m bench.realingest --size 3000 --rounds 3 --embedder local
    python -m bench.realingest --size 3000 --profile ingest.prof   # this tree, cProfile
    python -m bench.realingest --size 3000 --old /tmp/main/src --same   # stored contents

The turns are ``bench.realspeed``'s (the LongMemEval_S development half,
sessions in date order, each turn once). Each round writes them into a fresh
SQLite palace in a fresh process, for each tree in turn (alternated, so
both see the same machine load), in calls of 2,000 turns as
``bench.realspeed`` builds its palaces; the figure is turns per second of
the ``add_messages`` calls alone (the model is loaded and warmed first),
and the process's CPU time a turn (all its threads: steadier than the wall
clock on a shared machine).
With ``--embedder local`` the model's own time for the same texts is
measured too, so the share of embedding in an ingest shows.

``--same`` builds one palace with each tree and compares what they stored
(memories, tags, entities, aliases, mentions, edges, relations, links,
vectors, the keyword index's terms): ids and write times differ between two
runs, so rows are compared by content, ids mapped to their memory's text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = SRC.parent

# Runs inside the measured tree: one timed ingest of the first SIZE turns.
CHILD = """
import json, sys, time, cProfile
from pathlib import Path
from bench.longmemeval import load
from bench.realspeed import turns, _batches, INGEST_BATCH
from bench.realingest import digest
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.texts import embed_text

size, embedder, db, profile, same = sys.argv[1:6]
messages = turns(load(), int(size))
settings = Settings(embedder=embedder)
model = from_settings(settings)
model.embed_one("warm up")
out = {"turns": len(messages)}
with Palace(Path(db), settings=settings, embedder=model) as palace:
    prof = cProfile.Profile() if profile != "-" else None
    started = time.perf_counter()
    cpu = time.process_time()
    if prof is not None:
        prof.enable()
    for chunk in _batches(messages, INGEST_BATCH):
        palace.add_messages(chunk)
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    out["seconds"] = time.perf_counter() - started
    out["cpu_seconds"] = time.process_time() - cpu
    if hasattr(palace, "wait_for_vectors"):  # vectors after the write (a bulk write)
        out["pending"] = palace.pending_vectors()
        palace.wait_for_vectors()
        out["vectors_seconds"] = time.perf_counter() - started
if embedder == "local":
    import sqlite3
    con = sqlite3.connect(db)
    texts = [embed_text(t, c) for t, c in con.execute("SELECT title, content FROM memories")]
    con.close()
    started = time.perf_counter()
    for i in range(0, len(texts), 256):
        model.embed(texts[i : i + 256])
    out["embed_seconds"] = time.perf_counter() - started
if same != "-":
    out["digest"] = digest(Path(db))
print(json.dumps(out))
"""


def digest(db: Path) -> dict[str, str]:
    """A hash of each table's contents, ids and times left out (rows keyed by
    their memory's content hash and entity names instead)."""
    import hashlib
    import sqlite3

    con = sqlite3.connect(db)
    mem = {
        seq: f"{h}|{session}"
        for seq, h, session in con.execute("SELECT seq, content_hash, session_id FROM memories")
    }
    ids = {i: mem[seq] for seq, i in con.execute("SELECT seq, id FROM memories")}
    ent = {
        r[0]: "|".join(str(v) for v in r[1:])
        for r in con.execute(
            "SELECT seq, agent_id, visibility, group_name, channel, norm FROM entities"
        )
    }

    def rows(sql: str, fix: object) -> list[str]:
        return sorted(json.dumps(fix(r), default=str) for r in con.execute(sql))  # type: ignore[operator]

    def cols(table: str, drop: set[str]) -> list[str]:
        names = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        return [n for n in names if n not in drop]

    out: dict[str, list[str]] = {}
    mcols = cols("memories", {"seq", "id", "updated_at", "superseded_by"})
    out["memories"] = rows(
        f"SELECT {', '.join(mcols)}, superseded_by FROM memories",
        lambda r: [*r[:-1], ids.get(r[-1], r[-1])],
    )
    # Keys are assigned in the order rows are written: that order too.
    out["memory_order"] = [
        str(h) for (h,) in con.execute("SELECT content_hash FROM memories ORDER BY seq")
    ]
    out["entity_order"] = [
        "|".join(map(str, r))
        for r in con.execute("SELECT agent_id, norm FROM entities ORDER BY seq")
    ]
    out["memory_tags"] = rows(
        "SELECT memory_seq, tag FROM memory_tags", lambda r: [mem[r[0]], r[1]]
    )
    ecols = cols("entities", {"seq", "id", "created_at", "updated_at"})
    out["entities"] = rows(f"SELECT {', '.join(ecols)} FROM entities", list)
    out["entity_aliases"] = rows("SELECT * FROM entity_aliases", lambda r: [ent.get(r[0]), *r[1:]])
    mncols = cols("mentions", {"created_at"})
    out["mentions"] = rows(
        f"SELECT {', '.join(mncols)} FROM mentions",
        lambda r: [mem.get(r[0]), ent.get(r[1]), *r[2:]],
    )
    edcols = cols("entity_edges", {"updated_at"})
    out["entity_edges"] = rows(
        f"SELECT {', '.join(edcols)} FROM entity_edges",
        lambda r: [ent.get(r[0]), ent.get(r[1]), *r[2:]],
    )
    out["entity_relations"] = rows(
        "SELECT memory_seq, src_seq, dst_seq, kind, sentence FROM entity_relations",
        lambda r: [mem.get(r[0]), ent.get(r[1]), ent.get(r[2]), *r[3:]],
    )
    out["memory_links"] = rows(
        "SELECT src_seq, dst_seq, kind, weight FROM memory_links",
        lambda r: [mem.get(r[0]), mem.get(r[1]), *r[2:]],
    )
    out["embeddings"] = rows("SELECT * FROM embeddings", list)
    out["palace_meta"] = rows("SELECT * FROM palace_meta", list)
    out["memories_fts"] = (
        rows("SELECT term, col, doc, cnt FROM memories_fts_v", list) if _make_vocab(con) else []
    )
    out["memories_fts_scoped"] = rows(
        "SELECT term, col, doc, cnt FROM memories_fts_scoped_v",
        lambda r: [*r[:2], "", r[3]],  # doc counts per term; rowids are seqs
    )
    out["memories_fts_parts"] = rows("SELECT * FROM memories_fts_parts", list)
    con.close()
    return {
        k: f"{len(v)}:{hashlib.sha256(chr(10).join(v).encode()).hexdigest()[:16]}"
        for k, v in out.items()
    }


def _make_vocab(con: object) -> bool:
    """The keyword indexes' vocabularies; True where the palace still has
    the whole-palace index (written before schema 32)."""
    con.execute(  # type: ignore[attr-defined]
        "CREATE VIRTUAL TABLE temp.memories_fts_scoped_v"
        " USING fts5vocab(main, memories_fts_scoped, 'col')"
    )
    whole = con.execute(  # type: ignore[attr-defined]
        "SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'"
    ).fetchone()
    if whole is None:
        return False
    con.execute(  # type: ignore[attr-defined]
        "CREATE VIRTUAL TABLE temp.memories_fts_v USING fts5vocab(main, memories_fts, 'col')"
    )
    return True


def _run(src: Path, size: int, embedder: str, profile: str, same: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="mp-realingest-") as tmp:
        env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(size), embedder, str(Path(tmp) / "p.db"),
             profile, "1" if same else "-"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realingest", description=__doc__)
    parser.add_argument("--size", type=int, default=3000, help="turns (default 3000)")
    parser.add_argument("--embedder", default="static", help="static (default) or local")
    parser.add_argument("--old", type=Path, help="another tree's src folder to compare")
    parser.add_argument("--new", type=Path, default=SRC, help="the src folder measured as new")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", help="cProfile this tree's ingest into this file")
    parser.add_argument("--same", action="store_true", help="compare stored contents")
    args = parser.parse_args(argv)
    if args.profile:
        r = _run(SRC, args.size, args.embedder, str(Path(args.profile).resolve()), False)
        print(f"{r['turns']} turns, {r['turns'] / r['seconds']:.0f}/s under the profiler")  # type: ignore[operator]
        return 0
    trees = {"new": args.new} | ({"old": args.old} if args.old else {})
    if args.same:
        found = {
            name: _run(src, args.size, args.embedder, "-", True) for name, src in trees.items()
        }
        digests = {name: r["digest"] for name, r in found.items()}
        for table in digests["new"]:  # type: ignore[union-attr]
            shown = "  ".join(f"{n} {d[table]}" for n, d in digests.items())  # type: ignore[index]
            print(f"{table:22} {shown}")
        equal = len({json.dumps(d, sort_keys=True) for d in digests.values()}) == 1
        print("identical" if equal else "DIFFERENT")
        return 0 if equal else 1
    rates: dict[str, list[float]] = {name: [] for name in trees}
    shares: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            load = _load()
            r = _run(trees[name], args.size, args.embedder, "-", False)
            rate = r["turns"] / r["seconds"]  # type: ignore[operator]
            rates[name].append(rate)
            cpu_ms = 1000 * r["cpu_seconds"] / r["turns"]  # type: ignore[operator]
            cpus[name].append(cpu_ms)
            extra = ""
            if r.get("pending"):
                extra += (f", {r['pending']} left to the background upgrade, all vectors in"
                          f" after {r['vectors_seconds']:.1f} s")  # fmt: skip
            if "embed_seconds" in r:
                share = r["embed_seconds"] / r["seconds"]  # type: ignore[operator]
                shares[name].append(share)
                extra += f", embedding alone {r['embed_seconds']:.1f} s ({share:.0%})"
            print(f"round {round_ + 1} {name}: {rate:.0f} turns/s ({r['seconds']:.1f} s,"
                  f" CPU {cpu_ms:.2f} ms a turn, load {load}){extra}", flush=True)  # fmt: skip
    for name, values in rates.items():
        text = ", ".join(f"{v:.0f}" for v in values)
        cpu = statistics.median(cpus[name])
        print(f"{name}: median {statistics.median(values):.0f} turns/s ({text});"
              f" CPU {cpu:.2f} ms a turn")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
