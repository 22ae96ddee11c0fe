"""Memory an index load freed goes back to the system (``retrieval/heap.py``):
the trim returns freed heap pages, and recall asks for it after a load, not
on every recall."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval import heap, indexing
from mindpalace.store.sqlite import SQLiteStore

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# 256 MB in 64 KB arrays (below glibc's mmap threshold: they live in its
# heap), freed, with one small array allocated after them so that the heap's
# top never shrinks by itself: only a trim returns the freed pages.
CHILD = """
import numpy as np
from mindpalace.retrieval import heap

def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) // 1024

chunks = [np.ones(8192) for _ in range(4096)]
pin = np.ones(16)
for chunk in chunks:
    chunk[:] = 2.0
del chunks
before = anon()
assert heap.release()
print(before - anon())
"""


@pytest.mark.skipif(not GLIBC, reason="the trim is glibc's; elsewhere release does nothing")
def test_release_returns_freed_heap_pages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=120
    )
    returned_mb = int(done.stdout.strip())
    assert returned_mb >= 128, f"only {returned_mb} MB went back"


def test_recall_releases_after_a_load_not_on_every_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "release", lambda: calls.append(1) or True)
    assert indexing.heap is heap
    store = SQLiteStore(tmp_path / "heap.db")
    palace = Palace(store=store, settings=Settings(signals=False), embedder=HashingEmbedder())
    try:
        palace.remember_many([{"content": f"note {i} about the kafka cluster"} for i in range(30)])
        palace.recall("kafka")  # the first load of the vectors
        assert len(calls) == 1
        palace.semantic.wait_for_warm()  # the warm indexes adopted
        loads = len(calls)
        assert loads >= 2
        palace.recall("kafka")
        palace.recall("cluster")
        assert len(calls) == loads  # nothing new loaded: no trim
    finally:
        store.close()
