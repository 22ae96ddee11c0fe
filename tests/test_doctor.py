"""``mindpalace doctor`` and ``Palace.doctor``: a healthy palace passes, and
each seeded fault is found with the command that fixes it.

Real SQLite files (and the real PostgreSQL server for one test); the
command line runs in this process (``cli.main``) with no ``MINDPALACE_*``
variable from the outer environment.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from mindpalace import Check, DoctorReport, Palace
from mindpalace.cli import main
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder, StaticEmbedder
from mindpalace.embed.base import Vectors
from mindpalace.embed.static import STATIC_DIR
from mindpalace.errors import EmbeddingError
from mindpalace.retrieval import warm_cache
from mindpalace.retrieval.indexing import BULK_TEXTS
from mindpalace.store.migrations import latest_version
from mindpalace.store.vector_bytes import from_blob

HASHING = Settings(embedder="hashing")
Doctor = Callable[..., tuple[int, dict[str, Any]]]


class Failing(HashingEmbedder):
    """The hashing embedder, failing: what it should embed keeps waiting.
    With ``fast`` off it is a slow model, whose bulk writes defer their
    vectors to a background upgrade (which fails too)."""

    def __init__(self, *, fast: bool) -> None:
        super().__init__()
        self.fast = fast

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        raise EmbeddingError("the model is unavailable")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("MINDPALACE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    return monkeypatch


@pytest.fixture
def cli(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., Any]:
    """``mindpalace ARGS`` in this process: (exit status, standard output)."""

    def call(*args: str) -> tuple[int, str]:
        code = main(list(args))
        return code, capsys.readouterr().out

    return call


@pytest.fixture
def doctor(cli: Callable[..., tuple[int, str]]) -> Doctor:
    """``mindpalace --db PATH doctor``: (exit status, the JSON report)."""

    def call(db: str | Path) -> tuple[int, dict[str, Any]]:
        code, out = cli("--db", str(db), "doctor")
        return code, json.loads(out)

    return call


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A palace with a few memories of the hashing embedder, closed."""
    path = tmp_path / "palace.db"
    with Palace(path, settings=HASHING) as palace:
        palace.remember("We chose SQLite because many processes share one file")
        palace.remember("Alice owns the Billing service")
    return path


def check(report: dict[str, Any] | DoctorReport, name: str) -> dict[str, Any]:
    checks = report.to_dict()["checks"] if isinstance(report, DoctorReport) else report["checks"]
    found: dict[str, Any] = next(c for c in checks if c["name"] == name)
    return found


def problems(report: dict[str, Any]) -> list[str]:
    return [c["name"] for c in report["checks"] if not c["ok"]]


# -- healthy -------------------------------------------------------------------------------


def test_a_healthy_palace_exits_zero(db: Path, doctor: Doctor) -> None:
    code, report = doctor(db)
    assert code == 0, report
    assert report["ok"] is True and report["problems"] == 0
    assert report["palace"] == str(db)
    names = [c["name"] for c in report["checks"]]
    for name in ("model", "palace_model", "schema", "integrity", "pending_vectors", "warm_cache"):
        assert name in names
    assert {"extra:server", "extra:postgres", "extra:langchain"} <= set(names)
    assert check(report, "schema")["detail"] == f"version {latest_version()}, the latest"
    assert all(c["fix"] is None for c in report["checks"] if not c["name"].startswith("extra:"))


def test_plain_output_for_people(db: Path, cli: Callable[..., tuple[int, str]]) -> None:
    code, out = cli("--db", str(db), "doctor", "--plain")
    assert code == 0
    assert out.splitlines()[0] == f"palace: {db}"
    assert "ok    integrity" in out
    assert out.rstrip().endswith("No problems.")


@pytest.mark.parametrize("model", ["static", "local"])
def test_the_bundled_models_load(tmp_path: Path, model: str) -> None:
    with Palace(tmp_path / "p.db", settings=Settings(embedder=model)) as palace:
        palace.remember("a memory embedded by the bundled model")
        report = palace.doctor()
    assert report.ok, report.problems
    assert "loads from" in check(report, "model")["detail"]


def test_the_report_is_frozen_values(db: Path) -> None:
    with Palace(db, settings=HASHING) as palace:
        report = palace.doctor()
    assert isinstance(report, DoctorReport) and all(isinstance(c, Check) for c in report.checks)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.checks[0].ok = False  # type: ignore[misc]


# -- the embedding model -------------------------------------------------------------------


@pytest.mark.parametrize("removed", ["embeddings.npy", "tokenizer.json"])
def test_a_missing_model_file_is_found(tmp_path: Path, removed: str) -> None:
    folder = tmp_path / "static-model"
    shutil.copytree(STATIC_DIR, folder)
    (folder / removed).unlink()
    with Palace(tmp_path / "p.db", embedder=StaticEmbedder(folder)) as palace:
        report = palace.doctor()
    model = check(report, "model")
    assert not report.ok and model["ok"] is False
    assert removed in model["detail"] and str(folder) in model["detail"]
    assert model["fix"] == "pip install --force-reinstall mindpalace"


def test_another_model_than_the_palaces_is_found_and_reindex_fixes_it(
    db: Path, doctor: Doctor, cli: Callable[..., tuple[int, str]], env: pytest.MonkeyPatch
) -> None:
    env.setenv("MINDPALACE_EMBEDDER", "static")
    code, report = doctor(db)
    assert code == 1 and problems(report) == ["palace_model"]
    found = check(report, "palace_model")
    assert "hashing/hashing-v1" in found["detail"] and "static/" in found["detail"]
    assert found["fix"] == f"mindpalace --db {db} reindex"
    assert cli("--db", str(db), "reindex")[0] == 0
    assert doctor(db)[0] == 0


# -- vectors that wait -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["deferred", "failed"])
def test_pending_vectors_are_found_and_reindex_embeds_them(
    tmp_path: Path, doctor: Doctor, cli: Callable[..., tuple[int, str]], how: str
) -> None:
    path = tmp_path / "p.db"
    with Palace(path, embedder=Failing(fast=how == "failed"), settings=HASHING) as palace:
        palace.remember_many([{"content": f"bulk note {i} on otters"} for i in range(BULK_TEXTS)])
        upgrade = palace.semantic.upgrading
        if how == "deferred":  # stored at once; the upgrade that would embed them fails
            assert upgrade is not None and upgrade.wait(30) and upgrade.error is not None
        else:  # stored without a vector
            assert upgrade is None
        report = palace.doctor()
    found = check(report, "pending_vectors")
    assert found["ok"] is False
    if how == "deferred":
        assert f"{BULK_TEXTS} texts wait for their vectors" in found["detail"]
    else:
        assert f"{BULK_TEXTS} memories have none" in found["detail"]
    assert found["fix"] == f"mindpalace --db {path} reindex"
    code, report = doctor(path)  # the same model by name: hashing
    assert code == 1 and problems(report) == ["pending_vectors"]
    assert cli("--db", str(path), "reindex")[0] == 0
    assert doctor(path)[0] == 0


# -- the warm cache --------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_a_damaged_warm_cache_file_is_found(db: Path, doctor: Doctor, damage: str) -> None:
    with Palace(db, settings=HASHING) as palace:
        index = palace.semantic.wait_for_warm()
        assert index is not None and warm_cache.save_text(palace.store, index)
    code, report = doctor(db)
    assert code == 0 and "text.bin matches (2 rows)" in check(report, "warm_cache")["detail"]
    saved = Path(f"{db}-warm") / "text.bin"
    data = saved.read_bytes()
    if damage == "truncate":
        saved.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2
        saved.write_bytes(data[:middle] + b"\xff" * 64 + data[middle + 64 :])
    code, report = doctor(db)
    found = check(report, "warm_cache")
    assert code == 1 and problems(report) == ["warm_cache"]
    assert "text.bin is damaged" in found["detail"]
    assert found["fix"] == f"rm -r {db}-warm"
    shutil.rmtree(f"{db}-warm")  # the fix
    assert doctor(db)[0] == 0


# -- the schema, the file, the server ----------------------------------------------------------


@pytest.mark.parametrize("age", ["older", "newer"])
def test_a_wrong_schema_version_is_found_without_opening(
    db: Path, doctor: Doctor, age: str
) -> None:
    latest = latest_version()
    with sqlite3.connect(db) as conn:
        if age == "newer":
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'x', 0)",
                (latest + 1,),
            )
        else:
            conn.execute("DELETE FROM schema_migrations WHERE version > ?", (latest - 2,))
    conn.close()
    code, report = doctor(db)
    found = check(report, "schema")
    assert code == 1 and problems(report) == ["schema"]
    if age == "newer":
        assert f"schema version {latest + 1} is newer" in found["detail"]
        assert found["fix"] == "pip install --upgrade mindpalace"
    else:
        assert f"schema version {latest - 2}, this mindpalace writes {latest}" in found["detail"]
        assert found["fix"].endswith(f"mindpalace --db {db} stats")
    with sqlite3.connect(db) as conn:  # looked at, not migrated
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    conn.close()
    assert version == (latest + 1 if age == "newer" else latest - 2)


def test_an_open_palace_sees_its_schema_change(db: Path) -> None:
    with Palace(db, settings=HASHING) as palace:
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'x', 0)",
                (latest_version() + 1,),
            )
        conn.close()
        report = palace.doctor()
    assert [c.name for c in report.problems] == ["schema"]


def test_a_missing_palace_is_found_and_not_created(tmp_path: Path, doctor: Doctor) -> None:
    path = tmp_path / "nowhere.db"
    code, report = doctor(path)
    found = check(report, "palace")
    assert code == 1 and problems(report) == ["palace"]
    assert found["fix"] == f"mindpalace --db {path} stats"
    assert not path.exists()


def test_a_file_that_is_no_database_fails_integrity(tmp_path: Path, doctor: Doctor) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database, only text " * 200)
    code, report = doctor(path)
    found = check(report, "integrity")
    assert code == 1 and problems(report) == ["integrity"]
    assert "not a database" in found["detail"]
    assert found["fix"].startswith(f"sqlite3 {path} .recover")


def test_an_unreachable_postgres_server_is_found(doctor: Doctor) -> None:
    code, report = doctor("postgresql://nobody:secret@127.0.0.1:9/palace")
    found = check(report, "connection")
    assert code == 1 and problems(report) == ["connection"]
    assert report["palace"] == "postgresql://nobody:***@127.0.0.1:9/palace"
    assert "secret" not in json.dumps(report)
    assert "start the PostgreSQL server" in found["fix"]


def test_a_postgres_palace_is_checked(postgres_url: str, doctor: Doctor) -> None:
    with Palace.open(postgres_url, settings=HASHING) as palace:
        palace.remember("a memory kept in PostgreSQL")
    code, report = doctor(postgres_url)
    assert code == 0, report
    assert check(report, "connection")["ok"] is True
    assert check(report, "warm_cache")["detail"].startswith("none kept")


# -- extras ------------------------------------------------------------------------------------


def test_a_missing_extra_is_informational(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    with Palace(db, settings=HASHING) as palace:
        report = palace.doctor()
    found = check(report, "extra:server")
    assert report.ok
    assert found == {
        "name": "extra:server",
        "ok": True,
        "detail": "not installed (missing: mcp)",
        "fix": "pip install 'mindpalace[server]'",
    }


def test_an_untrusted_warm_cache_file_is_found(db: Path, doctor: Doctor) -> None:
    """A cache file other users may write is never loaded (it could be
    forged): doctor says so and names the command that removes it."""
    with Palace(db, settings=HASHING) as palace:
        index = palace.semantic.wait_for_warm()
        assert index is not None and warm_cache.save_text(palace.store, index)
    saved = Path(f"{db}-warm") / "text.bin"
    saved.chmod(0o666)
    code, report = doctor(db)
    found = check(report, "warm_cache")
    assert code == 1 and problems(report) == ["warm_cache"]
    assert "text.bin is untrusted" in found["detail"]
    assert found["fix"] == f"rm -r {db}-warm"
    shutil.rmtree(f"{db}-warm")
    assert doctor(db)[0] == 0


# -- telemetry and metrics -----------------------------------------------------------------


def test_telemetry_on_and_metrics_are_reported(db: Path, doctor: Doctor) -> None:
    code, report = doctor(db)
    assert code == 0
    spans = check(report, "telemetry")
    assert spans["ok"] is True and spans["fix"] is None
    assert spans["detail"].startswith("on: recall (a span per stage) and writes")
    metrics = check(report, "metrics")
    assert metrics["ok"] is True and "GET /metrics" in metrics["detail"]
    assert check(report, "extra:telemetry")["detail"] == "installed"


def test_telemetry_off_names_the_extra_that_turns_it_on(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    blocked = ("opentelemetry.trace", "starlette")
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in blocked else real(name, *a)
    )
    with Palace(db, settings=HASHING) as palace:
        report = palace.doctor()
    assert report.ok  # informational
    assert check(report, "telemetry") == {
        "name": "telemetry",
        "ok": True,
        "detail": "off: opentelemetry-api is not installed, so recall and writes make no spans",
        "fix": "pip install 'mindpalace[telemetry]'",
    }
    metrics = check(report, "metrics")
    assert "needs the server extra" in metrics["detail"]
    assert metrics["fix"] == "pip install 'mindpalace[server]'"


def test_a_report_before_opening_says_whether_telemetry_is_on(
    tmp_path: Path, doctor: Doctor
) -> None:
    code, report = doctor(tmp_path / "nowhere.db")
    assert code == 1
    assert check(report, "telemetry")["detail"].startswith("on:")
    assert [c["name"] for c in report["checks"]][:4] == ["model", "palace", "telemetry", "metrics"]


def test_memories_written_before_their_times_were_kept_are_named_until_reindex(
    tmp_path: Path, doctor: Doctor, cli: Callable[..., tuple[int, str]]
) -> None:
    path = tmp_path / "p.db"
    with Palace(path, settings=HASHING) as palace:
        palace.remember_many([{"content": f"note {i}, written on 3 May 2026"} for i in range(12)])
        assert check(palace.doctor(), "stated_times")["detail"] == "kept with every memory"
    db = sqlite3.connect(path)
    with db:  # as an earlier version wrote them
        db.execute("UPDATE memories SET stated_times = NULL WHERE content LIKE 'note 1%'")
    db.close()
    code, report = doctor(path)
    found = check(report, "stated_times")
    assert code == 0 and found["ok"] is True
    assert found["detail"].startswith("3 memories written by an earlier version")
    assert f"mindpalace --db {path} reindex" in found["detail"]
    assert cli("--db", str(path), "reindex")[0] == 0
    assert check(doctor(path)[1], "stated_times")["detail"] == "kept with every memory"


def test_vectors_an_earlier_version_kept_in_float32_are_named_until_reindex(
    tmp_path: Path, doctor: Doctor, cli: Callable[..., tuple[int, str]]
) -> None:
    path = tmp_path / "p.db"
    with Palace(path, settings=HASHING) as palace:
        palace.remember_many([{"content": f"note {i} on the boiler service"} for i in range(12)])
        found = check(palace.doctor(), "vector_form")
        assert found["detail"] == "every vector in half precision"
    db = sqlite3.connect(path)
    with db:  # as an earlier version wrote them: float32, four bytes a value
        rows = db.execute("SELECT text_hash, vector FROM embeddings").fetchall()
        db.executemany(
            "UPDATE embeddings SET vector = ? WHERE text_hash = ?",
            [(from_blob(blob).tobytes(), key) for key, blob in rows[:5]],
        )
    db.close()
    code, report = doctor(path)
    found = check(report, "vector_form")
    assert code == 0 and found["ok"] is True
    assert found["detail"].startswith("5 vectors written by an earlier version in float32")
    assert f"mindpalace --db {path} reindex" in found["detail"]
    assert cli("--db", str(path), "reindex")[0] == 0
    assert check(doctor(path)[1], "vector_form")["detail"] == "every vector in half precision"
