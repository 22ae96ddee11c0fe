"""Bulk-ingest speed of the LoCoMo development split, two code trees side by
side in one run (issue 6: >= 300 turns/s with the default embedder)::

    python -m bench.ingest --old /tmp/old/src            # this tree vs another
    python -m bench.ingest --rounds 5 --only new

Two measurements, alternated between the trees round by round so that both
see the same machine load; medians are reported:

- encoder: texts/s of the ``local`` embedder over the 3,435 turn texts as
  ingest embeds them (date title + "speaker: text"), one ``embed`` call;
- ingest: ``mindpalace ingest FILE --format locomo`` of each of the six
  files into one fresh palace (separate processes, as a user runs it):
  turns/s per file (median of the six) and the whole split's wall time,
  process starts included.

``--old`` names another tree's ``src`` folder (e.g. ``git archive`` of an
older commit); it runs with this interpreter and its packages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.locomo import data_dir

SRC = Path(__file__).resolve().parent.parent / "src"

# Run inside the measured tree: the turn texts exactly as add_messages
# embeds them, then one timed embed() of them all after a warm-up.
ENCODE = """
import json, sys, time
from pathlib import Path
from mindpalace.conversations import spoken_date
from mindpalace.formats import read_messages
from mindpalace.embed import LocalEmbedder
from mindpalace.embed.texts import embed_text
texts = []
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    for m in read_messages(path, format="locomo"):
        texts.append(embed_text(spoken_date(m.created_at), f"{m.who}: {m.content.strip()}"))
e = LocalEmbedder()
e.embed(texts[:64])
started = time.perf_counter()
e.embed(texts)
print(json.dumps({"texts": len(texts), "seconds": time.perf_counter() - started}))
"""


def _env(src: Path, db: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src), MINDPALACE_EMBEDDER="local")
    if db is not None:
        env["MINDPALACE_DB"] = str(db)
    return env


def encoder_rate(src: Path, data: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", ENCODE, str(data)],
        env=_env(src),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    return float(result["texts"] / result["seconds"])


def ingest_rates(src: Path, data: Path) -> tuple[list[float], int, float]:
    """Per-file turns/s, total turns and wall seconds of the whole split."""
    rates, turns = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "palace.db"
        started = time.perf_counter()
        for path in sorted(data.glob("*.json")):
            out = subprocess.run(
                [sys.executable, "-m", "mindpalace.cli", "ingest", str(path), "--format", "locomo"],
                env=_env(src, db),
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout)
            rates.append(float(result["turns_per_second"]))
            turns += int(result["ingested"])
        return rates, turns, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--old", type=Path, help="another tree's src folder to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--only", choices=["encoder", "ingest"], help="one measurement only")
    args = parser.parse_args(argv)
    args.data = args.data or data_dir()
    if not args.data.is_dir():
        print(f"no LoCoMo data in {args.data}", file=sys.stderr)
        return 1
    trees = {"new": SRC, **({"old": args.old.resolve()} if args.old else {})}
    encoder: dict[str, list[float]] = {name: [] for name in trees}
    medians: dict[str, list[float]] = {name: [] for name in trees}
    walls: dict[str, list[tuple[int, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        # Alternate which tree goes first, so neither always meets the
        # same phase of the machine's background load.
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            if args.only != "ingest":
                encoder[name].append(encoder_rate(trees[name], args.data))
            if args.only != "encoder":
                rates, turns, seconds = ingest_rates(trees[name], args.data)
                medians[name].append(statistics.median(rates))
                walls[name].append((turns, seconds))
        print(f"round {round_ + 1}: {os.getloadavg()[0]:.1f} load", file=sys.stderr)
    print("| tree | encoder texts/s | ingest turns/s (median of six files) | whole split |")
    print("|---|---|---|---|")
    for name in trees:
        enc = f"{statistics.median(encoder[name]):.0f}" if encoder[name] else "-"
        ing = f"{statistics.median(medians[name]):.0f}" if medians[name] else "-"
        if walls[name]:
            turns = walls[name][0][0]
            wall = statistics.median(s for _, s in walls[name])
            whole = f"{turns:,} turns in {wall:.1f} s ({turns / wall:.0f}/s)"
        else:
            whole = "-"
        print(f"| {name} | {enc} | {ing} | {whole} |")
        print(
            f"<!-- {name} rounds: encoder {[round(r) for r in encoder[name]]},"
            f" ingest {[round(r) for r in medians[name]]} -->"
        )
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
