"""Speed and size on synthetic palaces, each figure beside a naive baseline
measured in the same run::

    python -m bench.speed --sizes 10k,100k        # builds missing palaces first
    python -m bench.speed --sizes 1m --embedder static
    python -m bench.speed --build 100k            # only build (and cache) a palace

The naive baseline is what one would write in an afternoon: every vector in
one numpy matrix (brute-force cosine under the same scope mask) and an
in-memory BM25 (``NaiveBM25`` below), fused 0.4 / 0.6 like the product's
first stage, with the same query embedding. Each mindpalace figure is also
given as a ratio to it (``x`` = mindpalace / naive; for throughput,
naive / mindpalace, so above 1 always means mindpalace is slower).

Palaces are cached under ``bench/.cache/speed/`` (``corpus.py`` says what is
in them). Timings are medians and percentiles over the query set; run it on
a quiet machine for figures to quote.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.corpus import AGENTS, agent_groups, queries, records
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.embed.texts import vector_key
from mindpalace.models import RecallFilters
from mindpalace.retrieval import pipeline
from mindpalace.retrieval.sparse import STOPWORDS
from mindpalace.store import vector_bytes

CACHE = Path(__file__).resolve().parent / ".cache" / "speed"
SIZES = {"1k": 1_000, "10k": 10_000, "20k": 20_000, "100k": 100_000, "1m": 1_000_000}
BUILD_BATCH = 2000
REMEMBER_BATCH = 250


def parse_size(text: str) -> int:
    key = text.strip().lower()
    if key in SIZES:
        return SIZES[key]
    return int(key)


def size_name(size: int) -> str:
    for name, value in SIZES.items():
        if value == size:
            return name
    return str(size)


def palace_path(size: int, embedder: str) -> Path:
    return CACHE / f"palace-{size_name(size)}-{embedder}.db"


def settings_for(embedder: str) -> Settings:
    return Settings(embedder=embedder, signals=True)


# -- building ------------------------------------------------------------------


def _stored(palace: Path, agent: str, content: str) -> bool:
    with sqlite3_connect(palace) as conn:
        row = conn.execute(
            "SELECT 1 FROM memories WHERE agent_id = ? AND content = ? LIMIT 1", (agent, content)
        ).fetchone()
    return row is not None


def build(size: int, embedder: str, *, log: Callable[[str], None] = print) -> Path:
    """Write the corpus of ``size`` into a cached palace (once). A build
    that was stopped resumes where it stopped (the 1M build takes hours)."""
    path = palace_path(size, embedder)
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.db")
    progress = path.with_suffix(".progress")
    resume = int(progress.read_text()) if progress.exists() and partial.exists() else 0
    if not resume:
        for leftover in CACHE.glob(partial.name + "*"):
            leftover.unlink()
    settings = settings_for(embedder)
    model = from_settings(settings)
    # One engine, a view per agent, as a server holds a palace: one warm
    # index for every agent's writes, not one per agent.
    palaces = agent_palaces(partial, settings, model)
    started = time.perf_counter()
    done = resume
    batch: list[Any] = []

    def flush(*, check: bool) -> None:
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for record in batch:
            by_agent.setdefault(record.agent, []).append(record.fields)
        for agent, wanted in by_agent.items():
            # The batch a stopped build was writing: some agents' parts may be in.
            fields = (
                [f for f in wanted if not _stored(partial, agent, f["content"])]
                if check
                else wanted
            )
            if fields:
                palaces[agent].remember_many(fields)
        batch.clear()

    if resume:
        log(f"  resuming at {resume:,}/{size:,}")
    checked = False
    for i, record in enumerate(records(size)):
        if i < resume:
            continue
        batch.append(record)
        if len(batch) >= BUILD_BATCH:
            done += len(batch)
            flush(check=bool(resume) and not checked)
            checked = True
            progress.write_text(str(done))
            rate = (done - resume) / (time.perf_counter() - started)
            log(f"  built {done:,}/{size:,} ({rate:.0f}/s, eta {(size - done) / rate:.0f} s)")
    done += len(batch)
    flush(check=bool(resume) and not checked)
    palaces[AGENTS[0]].close()  # the engine's owner: closes every view
    with sqlite3_connect(partial) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    partial.rename(path)
    progress.unlink(missing_ok=True)
    for leftover in CACHE.glob(partial.name + "-*"):  # the emptied -wal and -shm
        if leftover.is_dir():  # warm files saved while building: of the partial name
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    # Recalls in later runs add their signals to the palace: its size as
    # built is the disk figure.
    built_size(path).write_text(json.dumps({"bytes": _files_size(path)}))
    log(f"  built {size:,} in {time.perf_counter() - started:.0f} s -> {path}")
    return path


def built_size(path: Path) -> Path:
    return path.with_suffix(".size.json")


def _files_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def sqlite3_connect(path: Path) -> Any:
    import sqlite3

    return sqlite3.connect(path)


# -- the naive baseline ----------------------------------------------------------

_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class NaiveBM25:
    """Okapi BM25 (k1 1.2, b 0.75) over an in-memory inverted index (CSR arrays)."""

    def __init__(self, texts: Sequence[str]) -> None:
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.float32)
        tfs: list[int] = []
        for doc, text in enumerate(texts):
            counts = Counter(_tokens(text))
            lengths[doc] = sum(counts.values())
            for term, tf in counts.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                doc_ids.append(doc)
                tfs.append(tf)
        terms = np.asarray(term_ids, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        self.docs = np.asarray(doc_ids, dtype=np.int32)[order]
        self.tf = np.asarray(tfs, dtype=np.float32)[order]
        self.offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.add.at(self.offsets, terms + 1, 1)
        self.offsets = np.cumsum(self.offsets)
        self.vocab = vocab
        self.norm = 1.2 * (0.25 + 0.75 * lengths / max(float(lengths.mean()), 1.0))
        self.count = len(texts)

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        out = np.zeros(self.count, dtype=np.float32)
        for term in dict.fromkeys(_tokens(query)):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo, hi = self.offsets[tid], self.offsets[tid + 1]
            docs, tf = self.docs[lo:hi], self.tf[lo:hi]
            n = hi - lo
            idf = math.log(1 + (self.count - n + 0.5) / (n + 0.5))
            out[docs] += idf * tf * 2.2 / (tf + self.norm[docs])
        return out


@dataclass
class Naive:
    """Brute-force numpy cosine + in-memory BM25 over the same memories."""

    matrix: npt.NDArray[np.float32]
    bm25: NaiveBM25
    agent: npt.NDArray[np.int32]
    shared: npt.NDArray[np.bool_]
    group: npt.NDArray[np.int32]
    group_names: tuple[str, ...]
    agent_names: tuple[str, ...]

    def mask(self, agent: str) -> npt.NDArray[np.bool_]:
        own = self.agent == self.agent_names.index(agent) if agent in self.agent_names else False
        groups = [i for i, g in enumerate(self.group_names) if g in agent_groups(agent)]
        return self.shared | own | np.isin(self.group, groups)

    def recall(self, query_vector: npt.NDArray[np.float32], query: str, agent: str) -> list[int]:
        mask = self.mask(agent)
        sims = self.matrix @ query_vector
        keyword = self.bm25.scores(query)
        best = float(keyword[mask].max(initial=0.0))
        low, high = float(sims[mask].min()), float(sims[mask].max())
        dense = (sims - low) / (high - low) if high > low else sims
        fused = 0.4 * (keyword / best if best > 0 else keyword) + 0.6 * dense
        fused = np.where(mask, fused, -np.inf)
        top = np.argpartition(-fused, 10)[:10]
        return [int(i) for i in top[np.argsort(-fused[top])]]


def load_naive(path: Path, embedder: str) -> Naive:
    """The palace's texts and vectors, read once into the baseline's structures."""
    settings = settings_for(embedder)
    palace = Palace(path, management=True, settings=settings)
    assert palace.semantic.embedder is not None
    key = vector_key(palace.semantic.embedder.config)
    table = palace.store.load_vectors(key)
    with sqlite3_connect(path) as conn:
        texts = dict(conn.execute("SELECT id, COALESCE(title, '') || ' ' || content FROM memories"))
    palace.close()
    bm25 = NaiveBM25([texts[str(i)] for i in table.ids])
    vis = table.visibility_names
    shared = np.isin(table.visibility, [i for i, v in enumerate(vis) if v == "shared"])
    group = np.where(
        np.isin(table.visibility, [i for i, v in enumerate(vis) if v == "group"]),
        table.group,
        -1,
    ).astype(np.int32)
    return Naive(
        np.ascontiguousarray(table.matrix),
        bm25,
        table.agent,
        shared,
        group,
        tuple(table.group_names),
        tuple(table.agent_names),
    )


# -- measuring --------------------------------------------------------------------


def percentiles(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
        "p99": float(np.percentile(arr, 99)),
    }


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


class Suite:
    """Every figure for one palace size."""

    def __init__(self, size: int, embedder: str, n_queries: int, log: Callable[[str], None]):
        self.size = size
        self.embedder = embedder
        self.path = palace_path(size, embedder)
        self.queries = queries(n_queries, size)
        self.log = log
        self.settings = settings_for(embedder)
        self.model: Embedder | None = from_settings(self.settings)
        assert self.model is not None
        self.model.embed_one("warm up")
        self.figures: dict[str, Any] = {"size": size, "embedder": embedder}

    def palaces(self, path: Path) -> dict[str, Palace]:
        return agent_palaces(path, self.settings, self.model)

    def run(self) -> dict[str, Any]:
        f = self.figures
        f["memories"] = self.count()
        f["disk_bytes_per_memory"] = self.disk_per_memory()
        self.log("  naive baseline: loading")
        started = time.perf_counter()
        naive = load_naive(self.path, self.embedder)
        f["naive_load_s"] = time.perf_counter() - started
        f["naive_bytes_per_memory"] = self.naive_bytes(naive)
        self.log("  recall, warm")
        self.recall_warm(naive)
        del naive
        self.log("  cold CLI recall")
        self.cold_cli()
        self.log("  peak RSS")
        self.peak_rss()
        self.log("  remember (on a copy of the palace)")
        self.remember()
        return f

    def count(self) -> int:
        with sqlite3_connect(self.path) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    def disk_per_memory(self) -> float:
        """Bytes per memory of the palace as built (before any run's recall
        signals), where the build recorded its size."""
        sidecar = built_size(self.path)
        if sidecar.exists():
            total = int(json.loads(sidecar.read_text())["bytes"])
        else:
            total = _files_size(self.path)
        return total / max(self.figures["memories"], 1)

    def naive_bytes(self, naive: Naive) -> float:
        with sqlite3_connect(self.path) as conn:
            text = int(
                conn.execute("SELECT SUM(LENGTH(CAST(content AS BLOB))) FROM memories").fetchone()[
                    0
                ]
            )
        postings = naive.bm25.docs.nbytes + naive.bm25.tf.nbytes
        return (naive.matrix.nbytes + text + postings) / max(self.figures["memories"], 1)

    def recall_warm(self, naive: Naive) -> None:
        f = self.figures
        assert self.model is not None
        palaces = self.palaces(self.path)
        vectors = [self.model.embed_query(q.text) for q in self.queries]
        for q in self.queries[:10]:  # warm: indexes loaded, pages cached
            palaces[q.agent].recall(q.text)
        started = time.perf_counter()
        if palaces[AGENTS[0]].semantic.wait_for_graph():
            f["graph_build_s"] = time.perf_counter() - started
        for q in self.queries[:10]:
            palaces[q.agent].recall(q.text)
        full: list[float] = []
        no_graph: list[float] = []
        no_embed: list[float] = []
        no_embed_no_graph: list[float] = []
        naive_full: list[float] = []
        naive_no_embed: list[float] = []
        embed_only: list[float] = []
        exact_no_embed: list[float] = []
        same_top10: list[float] = []
        stages: dict[str, list[float]] = {}
        exact_options = replace(palaces[AGENTS[0]].recall_options, ann_candidates=0)
        for q, vector in zip(self.queries, vectors, strict=True):
            palace = palaces[q.agent]
            # Each timed recall embeds its query (the palace remembers recent
            # query vectors: a repeated text would cost nothing).
            palace.semantic.forget_queries()
            start = time.perf_counter()
            hits = palace.recall(q.text)
            full.append((time.perf_counter() - start) * 1000)
            for stage, ms in hits.timings.items():
                stages.setdefault(stage, []).append(ms)
            palace.semantic.forget_queries()
            no_graph.append(timed(lambda p=palace, t=q.text: p.recall(t, expand=False)))
            dense = palace.semantic.dense()
            for options, out in (
                (palace.recall_options, no_embed),
                (pipeline.RecallOptions(expand=False), no_embed_no_graph),
            ):
                out.append(
                    timed(
                        lambda p=palace, t=q.text, v=vector, o=options, d=dense: pipeline.recall(
                            p.store,
                            query=t,
                            scope=p.scope,
                            filters=RecallFilters(),
                            limit=10,
                            now=p.now(),
                            query_vector=v,
                            dense_index=d,
                            options=o,
                        )
                    )
                )
            # Every row scored exactly (no graph candidates), and how often
            # the top 10 agree with the default's.
            exact: list[Any] = []
            exact_no_embed.append(
                timed(
                    lambda p=palace, t=q.text, v=vector, d=dense, out=exact: out.append(
                        pipeline.recall(
                            p.store,
                            query=t,
                            scope=p.scope,
                            filters=RecallFilters(),
                            limit=10,
                            now=p.now(),
                            query_vector=v,
                            dense_index=d,
                            options=exact_options,
                        )
                    )
                )
            )
            ids = [h.memory.id for h in hits]
            exact_ids = [h.memory.id for h in exact[0]]
            same_top10.append(len(set(ids) & set(exact_ids)) / max(len(exact_ids), 1))
            embed_only.append(timed(lambda t=q.text: self.model.embed_query(t)))  # type: ignore[union-attr]
            naive_no_embed.append(
                timed(lambda v=vector, t=q.text, a=q.agent: naive.recall(v, t, a))
            )
            naive_full.append(
                timed(lambda t=q.text, a=q.agent: naive.recall(self.model.embed_query(t), t, a))  # type: ignore[union-attr]
            )
        f["recall"] = percentiles(full)
        f["recall_no_graph"] = percentiles(no_graph)
        f["recall_no_embed"] = percentiles(no_embed)
        f["recall_no_embed_no_graph"] = percentiles(no_embed_no_graph)
        f["recall_exact_no_embed"] = percentiles(exact_no_embed)
        f["top10_same_as_exact"] = statistics.mean(same_top10)
        f["naive_recall"] = percentiles(naive_full)
        f["naive_recall_no_embed"] = percentiles(naive_no_embed)
        f["query_embed"] = percentiles(embed_only)
        f["stages_p50"] = {k: statistics.median(v) for k, v in stages.items()}
        f["stages_p95"] = {k: float(np.percentile(v, 95)) for k, v in stages.items()}
        palaces[AGENTS[0]].close()

    def cold_cli(self, runs: int = 5) -> None:
        env = dict(os.environ, MINDPALACE_EMBEDDER=self.embedder)
        exe = Path(sys.executable).parent / "mindpalace"
        times = []
        naive_times = []
        for q in self.queries[:runs]:
            cmd = [str(exe), "--db", str(self.path), "--agent", q.agent, "recall", q.text]
            start = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            times.append((time.perf_counter() - start) * 1000)
            json.loads(out.stdout)
        # The naive CLI: start Python, load the model and a saved matrix, embed, score.
        with tempfile.TemporaryDirectory() as scratch:
            matrix_file = Path(scratch) / "matrix.npy"
            code = (
                "import sys, numpy as np; from mindpalace.config import Settings;"
                " from mindpalace.embed import from_settings;"
                f" e = from_settings(Settings(embedder={self.embedder!r}));"
                f" m = np.load({str(matrix_file)!r}, mmap_mode='r');"
                " s = m @ e.embed_query(sys.argv[1]); print(np.argsort(-s)[:10].tolist())"
            )
            with sqlite3_connect(self.path) as conn:
                blobs = [bytes(r[0]) for r in conn.execute("SELECT vector FROM embeddings")]
                matrix = vector_bytes.from_blobs(blobs, vector_bytes.blob_dimensions(blobs[0]))
                del blobs
            np.save(matrix_file, matrix)
            del matrix
            for q in self.queries[:runs]:
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", code, q.text], check=True, capture_output=True
                )
                naive_times.append((time.perf_counter() - start) * 1000)
        self.figures["cold_cli_ms"] = statistics.median(times)
        self.figures["naive_cold_cli_ms"] = statistics.median(naive_times)
        self.figures["daemon_cli_ms"] = statistics.median(self._through_daemon(exe, env, runs))

    def _through_daemon(self, exe: Path, env: dict[str, str], runs: int) -> list[float]:
        """The same CLI recalls, answered by a warm ``mindpalace daemon``
        started for the palace (its start, which warms up, is not timed)."""
        db = ["--db", str(self.path)]
        subprocess.run([str(exe), *db, "daemon", "start"], env=env, check=True, capture_output=True)
        try:
            times = []
            for q in self.queries[:runs]:
                cmd = [str(exe), *db, "--agent", q.agent, "recall", q.text]
                start = time.perf_counter()
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                times.append((time.perf_counter() - start) * 1000)
                json.loads(out.stdout)
            status = subprocess.run(
                [str(exe), *db, "daemon", "status"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if json.loads(status.stdout).get("requests", 0) < runs:
                raise RuntimeError("the daemon did not answer the timed recalls")
        finally:
            subprocess.run(
                [str(exe), *db, "daemon", "stop"], env=env, capture_output=True, check=False
            )
        return times

    def peak_rss(self) -> None:
        """Peak RSS of a process that opens the palace and recalls 20 times
        (and of one that loads the naive baseline and queries it 20 times)."""
        code = "import resource, sys; from bench.speed import _rss_child; _rss_child(*sys.argv[1:])"
        for kind in ("palace", "naive"):
            out = subprocess.run(
                [sys.executable, "-c", code, kind, str(self.size), self.embedder],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parents[1],
            )
            self.figures[f"{kind}_peak_rss_mb"] = float(out.stdout.strip().splitlines()[-1])

    def remember(self) -> None:
        """Single and batch remember on a scratch copy, and consolidation."""
        f = self.figures
        assert self.model is not None
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            copy = Path(scratch) / "palace.db"
            shutil.copyfile(self.path, copy)
            warm = Path(str(self.path) + "-warm")
            if warm.is_dir():  # a palace in use keeps its warm files beside it
                shutil.copytree(warm, str(copy) + "-warm")
            palaces = self.palaces(copy)
            fresh = [r for r in records(3000, seed=7)]
            palaces["agent-0"].recall("warm up")
            singles = []
            for record in fresh[:200]:
                singles.append(timed(lambda r=record: palaces[r.agent].remember(**r.fields)))
            # 2,000 memories as each agent writes them: batches of up to 250.
            by_agent: dict[str, list[dict[str, Any]]] = {}
            for r in fresh[200:2200]:
                by_agent.setdefault(r.agent, []).append(r.fields)
            batches = [
                (agent, fields[i : i + REMEMBER_BATCH])
                for agent, fields in by_agent.items()
                for i in range(0, len(fields), REMEMBER_BATCH)
            ]
            start = time.perf_counter()
            for agent, fields in batches:
                palaces[agent].remember_many(fields)
                if "remember_batch_first_per_s" not in f:
                    f["remember_batch_first_per_s"] = len(fields) / (time.perf_counter() - start)
            f["remember_batch_per_s"] = 2000 / (time.perf_counter() - start)
            f["remember_batches"] = len(batches)
            f["remember_single"] = percentiles(singles)
            # Naive: embed and append to the in-memory structures.
            texts = [r.fields["content"] for r in fresh[2200:3000]]
            start = time.perf_counter()
            vectors = self.model.embed(texts)
            _ = [Counter(_tokens(t)) for t in texts]
            np.concatenate([np.zeros((1, vectors.shape[1]), np.float32), vectors])
            f["naive_remember_batch_per_s"] = len(texts) / (time.perf_counter() - start)
            naive_single = []
            for text in texts[:200]:
                naive_single.append(
                    timed(lambda t=text: (self.model.embed_one(t), Counter(_tokens(t))))  # type: ignore[union-attr]
                )
            f["naive_remember_single"] = percentiles(naive_single)
            palaces[AGENTS[0]].close()
            manager = Palace(copy, management=True, settings=self.settings, embedder=self.model)
            start = time.perf_counter()
            manager.graph.consolidate()
            f["consolidate_s"] = time.perf_counter() - start
            manager.close()


def _rss_child(kind: str, size: str, embedder: str) -> None:
    path = palace_path(int(size), embedder)
    qs = queries(20, int(size))
    if kind == "palace":
        settings = settings_for(embedder)
        model = from_settings(settings)
        palaces = agent_palaces(path, settings, model)
        for q in qs:
            palaces[q.agent].recall(q.text)
    else:
        naive = load_naive(path, embedder)
        model = from_settings(settings_for(embedder))
        assert model is not None
        for q in qs:
            naive.recall(model.embed_query(q.text), q.text, q.agent)
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork and exec,
    # so a child started by a big parent would report the parent's peak.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            print(int(line.split()[1]) / 1024)
            return
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def agent_palaces(path: Path, settings: Settings, model: Embedder | None) -> dict[str, Palace]:
    """One palace per agent, views of one engine as the server's
    ``PalacePool`` has them (close the first to close the engine)."""
    base = Palace(
        path, agent_id=AGENTS[0], groups=agent_groups(AGENTS[0]), settings=settings, embedder=model
    )
    out = {AGENTS[0]: base}
    for agent in AGENTS[1:]:
        out[agent] = base.for_agent(agent, groups=agent_groups(agent))
    return out


# -- the report ------------------------------------------------------------------


GOALS = {
    "recall_p50_100k": 10.0,
    "recall_p95_100k": 25.0,
    "recall_p95_1m": 50.0,
    "remember_batch": 500.0,
    "remember_single": 15.0,
    "cold_cli": 400.0,
    "disk": 3072.0,
}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def markdown(results: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Machine: {meta['machine']}; load average at start {meta['load']}; "
        f"commit {meta['commit']}; {meta['date']}; embedder per size in the header.",
        "",
    ]
    head = (
        "| figure | "
        + " | ".join(f"{size_name(r['size'])} ({r['embedder']})" for r in results)
        + " | goal |"
    )
    lines += [head, "|---" * (len(results) + 2) + "|"]

    def row(name: str, cell: Callable[[dict[str, Any]], str], goal: str = "") -> None:
        lines.append(f"| {name} | " + " | ".join(cell(r) for r in results) + f" | {goal} |")

    def lat(key: str, naive: str | None, pct: str) -> Callable[[dict[str, Any]], str]:
        def cell(r: dict[str, Any]) -> str:
            v = r[key][pct]
            if naive is None:
                return f"{v:.1f}"
            n = r[naive][pct]
            return f"{v:.1f} (naive {n:.1f}, {_ratio(v, n)})"

        return cell

    row(
        "recall p50 ms, query embedding included",
        lat("recall", "naive_recall", "p50"),
        "<= 10 at 100k",
    )
    row(
        "recall p95 ms, query embedding included",
        lat("recall", "naive_recall", "p95"),
        "<= 25 at 100k, <= 50 at 1M",
    )
    row("recall p99 ms, query embedding included", lat("recall", "naive_recall", "p99"))
    row(
        "recall p50 / p95 ms, no graph",
        lambda r: f"{r['recall_no_graph']['p50']:.1f} / {r['recall_no_graph']['p95']:.1f}",
    )
    row(
        "recall p50 / p95 / p99 ms, query embedding excluded",
        lambda r: (
            f"{r['recall_no_embed']['p50']:.1f} / {r['recall_no_embed']['p95']:.1f} / "
            f"{r['recall_no_embed']['p99']:.1f} (naive {r['naive_recall_no_embed']['p50']:.1f} / "
            f"{r['naive_recall_no_embed']['p95']:.1f}, "
            f"{_ratio(r['recall_no_embed']['p50'], r['naive_recall_no_embed']['p50'])})"
        ),
    )
    row(
        "same, no graph",
        lambda r: (
            f"{r['recall_no_embed_no_graph']['p50']:.1f} / "
            f"{r['recall_no_embed_no_graph']['p95']:.1f} / "
            f"{r['recall_no_embed_no_graph']['p99']:.1f}"
        ),
    )
    row(
        "same, every row scored exactly (no HNSW candidates)",
        lambda r: (
            f"{r['recall_exact_no_embed']['p50']:.1f} / "
            f"{r['recall_exact_no_embed']['p95']:.1f} / "
            f"{r['recall_exact_no_embed']['p99']:.1f}"
        ),
    )
    row(
        "top 10 shared with exact scoring",
        lambda r: f"{r['top10_same_as_exact']:.3f}",
    )
    row(
        "HNSW graph build s (background, once per process)",
        lambda r: f"{r['graph_build_s']:.1f}" if "graph_build_s" in r else "no graph",
    )
    row(
        "query embedding alone p50 / p95 ms",
        lambda r: f"{r['query_embed']['p50']:.1f} / {r['query_embed']['p95']:.1f}",
    )
    row(
        "remember, single call, p50 / p95 ms",
        lambda r: (
            f"{r['remember_single']['p50']:.1f} / {r['remember_single']['p95']:.1f} (naive "
            f"{r['naive_remember_single']['p50']:.1f}, "
            f"{_ratio(r['remember_single']['p50'], r['naive_remember_single']['p50'])})"
        ),
        "p50 <= 15",
    )
    row(
        "remember, batch, memories/s",
        lambda r: (
            f"{r['remember_batch_per_s']:.0f} (naive {r['naive_remember_batch_per_s']:.0f}, "
            f"{_ratio(r['naive_remember_batch_per_s'], r['remember_batch_per_s'])};"
            f" first batch {r.get('remember_batch_first_per_s', 0):.0f})"
        ),
        ">= 500",
    )
    row(
        "cold CLI recall ms",
        lambda r: (
            f"{r['cold_cli_ms']:.0f} (naive {r['naive_cold_cli_ms']:.0f}, "
            f"{_ratio(r['cold_cli_ms'], r['naive_cold_cli_ms'])})"
        ),
        "<= 400",
    )
    row(
        "CLI recall through a warm daemon ms",
        lambda r: f"{r['daemon_cli_ms']:.0f}" if "daemon_cli_ms" in r else "-",
        "<= 400",
    )
    row(
        "peak RSS MB (open + 20 recalls)",
        lambda r: (
            f"{r['palace_peak_rss_mb']:.0f} (naive {r['naive_peak_rss_mb']:.0f}, "
            f"{_ratio(r['palace_peak_rss_mb'], r['naive_peak_rss_mb'])})"
        ),
    )
    row(
        "disk bytes per memory",
        lambda r: (
            f"{r['disk_bytes_per_memory']:.0f} (naive in memory {r['naive_bytes_per_memory']:.0f}, "
            f"{_ratio(r['disk_bytes_per_memory'], r['naive_bytes_per_memory'])})"
        ),
        "<= 3072",
    )
    row("consolidation s (all agents)", lambda r: f"{r['consolidate_s']:.1f}")
    lines.append("")
    stage_names = sorted({k for r in results for k in r["stages_p50"]})
    lines.append("Per-stage p50 / p95 ms of the full recall (`HitList.timings`):")
    lines.append("")
    lines.append("| stage | " + " | ".join(size_name(r["size"]) for r in results) + " |")
    lines.append("|---" * (len(results) + 1) + "|")
    for stage in stage_names:
        lines.append(
            f"| {stage} | "
            + " | ".join(
                f"{r['stages_p50'].get(stage, 0):.1f} / {r['stages_p95'].get(stage, 0):.1f}"
                for r in results
            )
            + " |"
        )
    return "\n".join(lines)


def _meta() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "src"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        commit += " (+ uncommitted changes)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "machine": f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10k,100k", help="e.g. 10k,100k,1m")
    parser.add_argument("--embedder", default="local", help="local (MiniLM) or static")
    parser.add_argument(
        "--embedder-1m",
        default="static",
        help="embedder of the 1M palace (MiniLM cannot embed 1M texts within the time budget)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--build", help="only build the palaces of these sizes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.build:
        for text in args.build.split(","):
            size = parse_size(text)
            embedder = args.embedder_1m if size >= 1_000_000 else args.embedder
            build(size, embedder)
        return 0
    meta = _meta()
    results = []
    for text in args.sizes.split(","):
        size = parse_size(text)
        embedder = args.embedder_1m if size >= 1_000_000 else args.embedder
        print(f"{size_name(size)} ({embedder}):", file=sys.stderr)
        build(size, embedder, log=lambda s: print(s, file=sys.stderr))
        results.append(
            Suite(size, embedder, args.queries, lambda s: print(s, file=sys.stderr)).run()
        )
    print(markdown(results, meta))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
