"""A palace's warm indexes kept on disk beside it: a new process opening
the palace loads them instead of building them; they are used only for the
rows they cover and only while those rows are as they were; anything
damaged, stale or foreign is ignored and rebuilt. Thresholds are lowered so
that small palaces save (no timing)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tests.retrieval.test_warm_arrays import _file_backed

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.models import HitList
from mindpalace.retrieval import warm_arrays, warm_cache, warming
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.warming import WarmBuild
from mindpalace.store.sqlite import SQLiteStore

PEOPLE = ["Ana Ruiz", "Ben Okafor", "Carla Diaz", "Project Falcon", "the Billing service"]
TOPICS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue "
    "latency dashboards incident postmortem budget hiring roadmap"
).split()
AGENTS = ["bob", "cy"]
QUERIES = [
    "Ana Ruiz invoices audit",
    "kafka latency incident",
    "Project Falcon roadmap review",
    "postgres migration rollback plan",
    "Carla Diaz",
]
ROWS = 120
LIMIT = 60.0  # seconds a wait may take before the test fails instead of hanging


def _records(count: int = ROWS, seed: int = 5) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for _ in range(count):
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(4, 12)))
        out.append(
            {
                "content": f"{rng.choice(PEOPLE)} said {words}.",
                "visibility": rng.choice(["isolated", "shared"]),
            }
        )
    return out


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm_cache, "SAVE_ROWS", 10)
    monkeypatch.setattr(warm_cache, "RESAVE_ROWS", 5)


def _settings() -> Settings:
    return Settings(signals=False, ann_rows=20)


def _open(path: Path, agent: str | None = None) -> Palace:
    return Palace(
        store=SQLiteStore(path), settings=_settings(), embedder=HashingEmbedder(), agent_id=agent
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A palace file written by two agents, closed."""
    db = tmp_path / "palace.db"
    store = SQLiteStore(db)
    records = _records()
    for agent in AGENTS:
        Palace(
            store=store, settings=_settings(), embedder=HashingEmbedder(), agent_id=agent
        ).remember_many(records[AGENTS.index(agent) :: 2])
    store.close()
    return db


Answers = dict[str, list[tuple[str, float]]]


def _shape(hits: HitList) -> list[tuple[str, float]]:
    return [(h.memory.id, h.score) for h in hits]


def _answers(palace: Palace, queries: list[str] = QUERIES) -> Answers:
    return {q: _shape(palace.recall(q, limit=10)) for q in queries}


def _same(seen: Answers, expected: Answers) -> None:
    """The same memories in the same order, the same scores (up to the
    recency the clock adds between two runs)."""
    assert seen.keys() == expected.keys()
    for query, hits in seen.items():
        assert [i for i, _ in hits] == [i for i, _ in expected[query]], query
        assert [s for _, s in hits] == pytest.approx([s for _, s in expected[query]], abs=1e-4)


class Gate:
    """A ``warm_hook`` that holds the build until ``release``."""

    def __init__(self) -> None:
        self._open = threading.Event()

    def __call__(self) -> None:
        assert self._open.wait(LIMIT), "the test never released the build"

    def release(self) -> None:
        self._open.set()


def _warm(palace: Palace, queries: list[str] = QUERIES) -> tuple[WarmBuild, dict[str, object]]:
    """Recall ``queries`` while the build of the warm indexes is held (the
    store answers), then let it finish and save (or decline to); the build
    and the store's answers."""
    gate = Gate()
    palace.semantic.warm_hook = gate
    try:
        answers = _answers(palace, queries)
        build = palace.semantic.warming
        assert build is not None and not build.done
    finally:
        gate.release()
        palace.semantic.warm_hook = None
    assert palace.semantic.wait_for_warm() is not None
    assert build.wait_saved(LIMIT)
    return build, answers


def _wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIMIT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _save_all(path: Path) -> Answers:
    """Open, warm, build the graph, save both; the warm answers."""
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.saved and build.from_disk == 0
        assert palace.semantic.wait_for_graph()
        folder = Path(str(path) + warm_cache.SUFFIX)
        _wait_for((folder / warm_cache.GRAPH).exists)
        return _answers(palace)
    finally:
        palace.close()


def _fresh(path: Path, queries: list[str] = QUERIES, agent: str | None = None) -> Answers:
    """The warm answers of indexes built from scratch: the (closed) palace
    copied to a folder without a cache, warmed there."""
    folder = path.parent / f"fresh-{agent}"
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    palace = _open(folder / path.name, agent)
    try:
        build, _ = _warm(palace, queries)
        assert build.from_disk == 0
        assert palace.semantic.wait_for_graph()
        return _answers(palace, queries)
    finally:
        palace.close()


def _no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any build of the warm indexes from the palace's texts."""

    def refuse(*_args: object, **_kwargs: object) -> DenseIndex:
        raise AssertionError("the warm indexes were built, not loaded")

    monkeypatch.setattr(DenseIndex, "warmed", refuse)
    monkeypatch.setattr(warming, "_in_child", refuse)


def test_a_reopened_palace_loads_its_indexes_and_graph(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _save_all(path)
    _no_build(monkeypatch)
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and build.from_disk == ROWS and not build.in_process
        assert not build.saved  # nothing new to save
        assert build.graph is not None and len(build.graph) == ROWS
        # faiss reads the graph in place: its bytes are the file's pages
        view = build.graph._view
        assert view is not None and _file_backed(view) and not view.flags.writeable
        warm = palace.semantic.wait_for_warm()
        assert warm is not None and warm.keyword is not None and warm.mentions is not None
        assert palace.semantic.wait_for_graph()
        assert palace.semantic._ann is build.graph  # the saved graph serves
        _same(_answers(palace), expected)
    finally:
        palace.close()


def test_rows_written_after_the_save_are_found(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _save_all(path)
    palace = _open(path)
    late = palace.remember("Zanzibar gateway timeouts reported by Dora Lindqvist")
    more = palace.remember_many(_records(8, seed=9))
    queries = [*QUERIES, "zanzibar gateway", "Dora Lindqvist"]
    _no_build(monkeypatch)
    try:
        build, _ = _warm(palace, queries)
        assert build.error is None and build.from_disk == ROWS
        warm = palace.semantic.wait_for_warm()
        assert warm is not None and warm.keyword is not None and warm.mentions is not None
        assert len(warm.keyword) == len(warm) == ROWS + 1 + len(more)
        assert build.saved  # nine rows past the file: saved again
        assert palace.recall("zanzibar gateway")[0].memory.id == late.id
        palace.semantic.wait_for_graph()
        assert palace.semantic._ann is build.graph
        assert palace.semantic._ann is not None and len(palace.semantic._ann) == len(warm)
        # grown past the file (read in place when loaded): copied into this
        # process's memory first, as faiss cannot grow a graph it reads in
        # place (it would abort the process)
        assert build.graph._view is None
        answers = _answers(palace, queries)
    finally:
        palace.close()
    monkeypatch.undo()
    _same(answers, _fresh(path, queries))


@pytest.mark.parametrize("change", ["archive", "delete", "update"])
def test_rows_changed_after_the_save(path: Path, change: str) -> None:
    """A delete makes the saved files stale (rebuilt and saved again); an
    archive or an update changes flags, which the files do not hold: they
    are read, and answer as a fresh build."""
    _save_all(path)
    palace = _open(path)
    try:
        victim = palace.recall("kafka latency incident")[0].memory
        owner = palace.for_agent(victim.agent_id)
        if change == "update":
            owner.update(victim.id, content="Quokka census moved to Thursday")
        else:
            owner.forget(victim.id, hard=change == "delete")
        build, _ = _warm(palace, [*QUERIES, "quokka census"])
        assert build.error is None
        if change == "delete":
            assert build.from_disk == 0 and build.graph is None
            assert build.saved  # rebuilt, and saved for the palace as it is now
        else:
            assert build.from_disk > 0  # the rows are the same: the files still fit
        found = {h.memory.id for h in palace.recall("kafka latency incident", limit=50)}
        assert victim.id not in found
        assert palace.semantic.wait_for_graph()
        answers = _answers(palace, [*QUERIES, "quokka census"])
    finally:
        palace.close()
    _same(answers, _fresh(path, [*QUERIES, "quokka census"]))
    reopened = _open(path)
    try:
        build, _ = _warm(reopened)
        # an update's new version is read from the store after the saved rows
        later = 1 if change == "update" else 0
        assert build.from_disk == len(reopened.semantic._dense or []) - later
    finally:
        reopened.close()


def _arrays(file: Path) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    """A cache file's metadata and arrays (copies)."""
    with open(file, "rb") as handle:
        meta, mapped = warm_arrays.load(handle)
    return meta, {key: np.array(value) for key, value in mapped.items()}


def _rewrite(file: Path, edit: Callable[[dict[str, object], dict[str, np.ndarray]], None]) -> None:
    meta, arrays = _arrays(file)
    edit(meta, arrays)
    with open(file, "wb") as handle:
        warm_arrays.dump(handle, meta, arrays)


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _flip(file: Path) -> None:
    data = bytearray(file.read_bytes())
    for at in range(len(data) // 3, len(data) // 3 + 64):
        data[at] ^= 0x5A
    file.write_bytes(bytes(data))


def _garbage(file: Path) -> None:
    file.write_bytes(os.urandom(4096))


def _other_model(file: Path) -> None:
    _rewrite(file, lambda meta, _: meta.update(model="local/other-model/256"))


def _other_format(file: Path) -> None:
    _rewrite(file, lambda meta, _: meta.update(format=warm_cache.FORMAT + 1))


def _out_of_range(file: Path) -> None:
    def edit(meta: dict[str, object], arrays: dict[str, np.ndarray]) -> None:
        for name in list(arrays):
            if name.endswith("_rows") or name == "seqs":
                arrays[name] = arrays[name] + 10_000

    _rewrite(file, edit)


def _pickled(file: Path) -> None:
    # An array of objects named in the header.
    data = file.read_bytes()
    size = int.from_bytes(data[8:16], "little")
    header = json.loads(data[16 : 16 + size])
    name = "lengths" if file.name == warm_cache.TEXT else "seqs"
    header["arrays"][name]["dtype"] = "|O"
    raw = json.dumps(header).encode("utf-8").ljust(size)
    file.write_bytes(data[:16] + raw + data[16 + size :])


def _writable_by_others(file: Path) -> None:
    file.chmod(0o666)


DAMAGE = {
    "truncated": _truncate,
    "corrupt": _flip,
    "garbage": _garbage,
    "other model": _other_model,
    "other format": _other_format,
    "out of range": _out_of_range,
    "pickled": _pickled,
    "writable by others": _writable_by_others,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_file_is_ignored_and_rebuilt(path: Path, damage: str) -> None:
    expected = _save_all(path)
    folder = Path(str(path) + warm_cache.SUFFIX)
    for name in (warm_cache.TEXT, warm_cache.GRAPH):
        DAMAGE[damage](folder / name)
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and build.from_disk == 0 and build.graph is None
        assert build.saved
        _same(_answers(palace), expected)
        assert palace.semantic.wait_for_graph()
        _same(_answers(palace), expected)
    finally:
        palace.close()


def test_a_foreign_file_is_ignored(path: Path, tmp_path: Path) -> None:
    expected = _save_all(path)
    other = tmp_path / "other" / "palace.db"
    other.parent.mkdir()
    store = SQLiteStore(other)
    Palace(store=store, settings=_settings(), embedder=HashingEmbedder()).remember_many(
        _records(seed=11)  # as many rows, the same seqs, other memories
    )
    store.close()
    _save_all(other)
    folder = Path(str(path) + warm_cache.SUFFIX)
    shutil.rmtree(folder)
    shutil.copytree(Path(str(other) + warm_cache.SUFFIX), folder)
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.from_disk == 0 and build.graph is None
        _same(_answers(palace), expected)
    finally:
        palace.close()


def test_a_folder_that_cannot_be_written_means_no_cache(path: Path) -> None:
    in_the_way = Path(str(path) + warm_cache.SUFFIX)
    in_the_way.write_text("not a folder")
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and not build.saved
        assert palace.semantic.wait_for_graph()
        assert _answers(palace)
    finally:
        palace.close()
    assert in_the_way.read_text() == "not a folder"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes read-only folders"
)
def test_a_read_only_folder_means_no_cache(path: Path) -> None:
    palace = _open(path)
    palace.recall("kafka")  # the palace is open (and its journal files exist)
    path.parent.chmod(0o555)
    try:
        build, _ = _warm(palace)
        assert build.error is None and not build.saved
        assert _answers(palace)
    finally:
        path.parent.chmod(0o755)
        palace.close()


def test_partitions_follow_renumbered_scopes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent whose name sorts first renumbers every agent code of a
    later load: the saved postings' partitions are matched to the rows'
    scopes as they are now, and every scope sees what a build from scratch
    shows it."""
    _save_all(path)
    store = SQLiteStore(path)
    Palace(
        store=store, settings=_settings(), embedder=HashingEmbedder(), agent_id="al"
    ).remember_many(_records(6, seed=13))
    store.close()
    agents = ["al", *AGENTS]
    seen: dict[str, Answers] = {}
    monkeypatch.setattr(warm_cache, "RESAVE_ROWS", 1_000)  # each view loads the same file
    _no_build(monkeypatch)
    for agent in agents:
        view = _open(path, agent)
        try:
            build, _ = _warm(view)
            assert build.error is None and build.from_disk == ROWS
            assert view.semantic.wait_for_graph()
            seen[agent] = _answers(view)
        finally:
            view.close()
    monkeypatch.undo()
    for agent in agents:
        _same(seen[agent], _fresh(path, agent=agent))


def test_saves_at_once_leave_one_whole_file(path: Path) -> None:
    palace = _open(path)
    try:
        _warm(palace)
        index = palace.semantic.wait_for_warm()
        assert index is not None
        errors: list[BaseException] = []

        def saving() -> None:
            try:
                for _ in range(5):
                    assert warm_cache.save_text(palace.store, index)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=saving) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LIMIT)
        assert not errors
        saved = warm_cache.load_text(palace.store, index)
        assert saved is not None and saved.rows == len(index)
        folder = Path(str(path) + warm_cache.SUFFIX)
        names = {p.name for p in folder.iterdir()}
        assert warm_cache.TEXT in names and names <= {warm_cache.TEXT, warm_cache.GRAPH}
    finally:
        palace.close()


def test_memory_palaces_keep_none() -> None:
    store = SQLiteStore(":memory:")
    try:
        assert warm_cache.folder_of(store) is None
    finally:
        store.close()


CHILD = """
import json, sys, threading
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval import warm_cache
from mindpalace.store.sqlite import SQLiteStore
warm_cache.SAVE_ROWS = 10
warm_cache.RESAVE_ROWS = 5
palace = Palace(store=SQLiteStore(sys.argv[1]), settings=Settings(signals=False, ann_rows=20),
                embedder=HashingEmbedder())
palace.recall("kafka"); palace.recall("kafka")
build = palace.semantic.warming
palace.semantic.wait_for_warm()
palace.semantic.wait_for_graph()
answers = {q: [(h.memory.id, h.score) for h in palace.recall(q, limit=10)]
           for q in json.loads(sys.argv[2])}
build.wait_saved(60)
for thread in threading.enumerate():
    if thread.name == "mindpalace-save-graph":
        thread.join(60)
print(json.dumps({"from_disk": build.from_disk, "graph": build.graph is not None,
                  "in_process": build.in_process, "answers": answers}))
"""


def test_a_child_process_build_serves_the_next_process(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warming, "PROCESS_ROWS", 1)  # built by a child interpreter
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.in_process and build.saved
        assert palace.semantic.wait_for_graph()
        _wait_for(Path(str(path) + warm_cache.SUFFIX, warm_cache.GRAPH).exists)
        expected = _answers(palace)
    finally:
        palace.close()
    src = str(Path(warming.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=LIMIT,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["from_disk"] == ROWS and seen["graph"] and not seen["in_process"]
    _same({q: [(i, s) for i, s in hits] for q, hits in seen["answers"].items()}, expected)


def test_saved_postings_score_as_built(path: Path) -> None:
    """Counts too large for a narrow float are kept exact; a term every row
    and a term one row holds score as they did."""
    palace = _open(path)
    try:
        palace.remember("zq " * 2049 + "wide counts")  # a count float16 cannot hold
        _warm(palace)
        index = palace.semantic.wait_for_warm()
        assert index is not None and index.keyword is not None and index.mentions is not None
        assert warm_cache.save_text(palace.store, index)
        _, arrays = _arrays(Path(str(path) + warm_cache.SUFFIX, warm_cache.TEXT))
        assert arrays["segment0_tf"].dtype == np.float32
        saved = warm_cache.load_text(palace.store, index)
        assert saved is not None and saved.rows == len(index)
        visible = index.scope_mask(palace.scope)
        for words in (["zq"], ["said"], ["kafka", "audit"], ["nowhere"]):
            expected = index.keyword.scores(words, visible)
            assert saved.keyword.scores(words, visible).tolist() == expected.tolist()
        names = ["ana ruiz", "carla diaz", "project falcon", "nobody"]
        assert saved.mentions.members(names, visible, index.table.ids, max_degree=5) == (
            index.mentions.members(names, visible, index.table.ids, max_degree=5)
        )
    finally:
        palace.close()


def test_loaded_indexes_are_mapped_from_the_file(path: Path) -> None:
    """The postings and the mentions a process loads are the file's pages
    (shared by every process mapping it), not copies; the file of the
    older layout goes at the next save."""
    palace = _open(path)
    try:
        _warm(palace)
        index = palace.semantic.wait_for_warm()
        assert index is not None
        folder = Path(str(path) + warm_cache.SUFFIX)
        (folder / warm_cache.OLD_TEXT).write_bytes(b"an older layout")
        assert warm_cache.save_text(palace.store, index)
        assert not (folder / warm_cache.OLD_TEXT).exists()
        saved = warm_cache.load_text(palace.store, index)
        assert saved is not None
        keyword = saved.keyword
        arrays = [keyword.lengths, keyword.row_parts]
        for segment in keyword._segments:
            arrays += [segment.rows, segment.tf, segment.parts, segment.start]
        arrays += list(saved.mentions._rows.values())
        assert all(_file_backed(a) and not a.flags.writeable for a in arrays)
        (folder / warm_cache.OLD_TEXT).write_bytes(b"an older layout")
        assert warm_cache.discard(palace.store) >= 2
        assert not (folder / warm_cache.OLD_TEXT).exists()
        assert not (folder / warm_cache.TEXT).exists()
    finally:
        palace.close()


def test_a_linked_or_shared_folder_is_neither_read_nor_written(path: Path, tmp_path: Path) -> None:
    _save_all(path)
    folder = Path(str(path) + warm_cache.SUFFIX)
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.stat().st_mtime_ns for p in elsewhere.iterdir()}
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and build.from_disk == 0 and not build.saved
    finally:
        palace.close()
    for thread in threading.enumerate():  # a graph still saving in the background
        if thread.name == "mindpalace-save-graph":
            thread.join(LIMIT)
    assert {p.name: p.stat().st_mtime_ns for p in elsewhere.iterdir()} == before
    folder.unlink()
    elsewhere.rename(folder)
    folder.chmod(0o777)  # others may write into it: what is there may be theirs
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and build.from_disk == 0 and not build.saved
    finally:
        palace.close()


def test_two_processes_saving_at_once_leave_whole_files(path: Path) -> None:
    src = str(Path(warming.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), json.dumps(QUERIES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    seen = []
    for child in children:
        out, err = child.communicate(timeout=LIMIT)
        assert child.returncode == 0, err
        seen.append(json.loads(out.strip().splitlines()[-1]))
    # Each built and saved, or loaded what the other had saved by then.
    assert seen[0]["from_disk"] == 0 or seen[1]["from_disk"] == 0
    assert {s["from_disk"] for s in seen} <= {0, ROWS}
    folder = Path(str(path) + warm_cache.SUFFIX)
    assert sorted(p.name for p in folder.iterdir()) == [warm_cache.GRAPH, warm_cache.TEXT]
    palace = _open(path)
    try:
        build, _ = _warm(palace)
        assert build.error is None and build.from_disk == ROWS and build.graph is not None
        assert palace.semantic.wait_for_graph()
        _same(_answers(palace), {q: [(i, s) for i, s in h] for q, h in seen[0]["answers"].items()})
    finally:
        palace.close()
