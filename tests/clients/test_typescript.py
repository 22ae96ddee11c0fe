"""The TypeScript client (``clients/typescript``): its generated types match
the OpenAPI document the server builds, its version is the library's, and
``npm test`` passes against a real ``mindpalace serve`` (skipped without
node and npm)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mindpalace import __version__
from mindpalace.server.http import openapi_document

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
SOURCE = Path(__file__).resolve().parents[2] / "src"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_types", PACKAGE / "scripts" / "generate_types.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_types_are_generated_from_the_served_document() -> None:
    committed = (PACKAGE / "src" / "types.ts").read_text("utf-8")
    assert committed == generator().render(openapi_document()), (
        "clients/typescript/src/types.ts is out of date:"
        " run PYTHONPATH=src python clients/typescript/scripts/generate_types.py"
    )


def test_every_schema_and_operation_is_typed() -> None:
    document = openapi_document()
    text = generator().render(document)
    for name in document["components"]["schemas"]:
        assert f"export interface {name} {{" in text or f"export type {name} =" in text
    for methods in document["paths"].values():
        for operation in methods.values():
            assert f"\n  {operation['operationId']}: {{ params: " in text


def test_descriptions_cannot_end_the_comment() -> None:
    schema = {"type": "object", "description": "evil */ export const x = 1; /*", "properties": {}}
    text = generator().render(
        {"info": {"version": "0"}, "paths": {}, "components": {"schemas": {"Evil": schema}}}
    )
    assert "*/ export const x" not in text
    assert "evil *\\/ export const x = 1; /*" in text


def test_package_version_is_the_library_version() -> None:
    manifest = json.loads((PACKAGE / "package.json").read_text("utf-8"))
    assert manifest["version"] == __version__
    assert manifest["name"] == "mindpalace"
    assert list(manifest["devDependencies"]) == ["typescript"]
    assert "dependencies" not in manifest


def test_npm_test_against_a_real_server() -> None:
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("node and npm are needed for the TypeScript client's tests (Node 18 or later)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDPALACE_")}
    # The test starts its own server with this interpreter and this checkout.
    env["MINDPALACE_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE), env.get("PYTHONPATH")]))
    if not (PACKAGE / "node_modules" / ".bin" / "tsc").exists():
        installed = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=PACKAGE,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
    result = subprocess.run(
        [npm, "test"],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert re.search(r"^# pass [1-9]", result.stdout, re.MULTILINE), result.stdout[-4000:]
    assert re.search(r"^# fail 0$", result.stdout, re.MULTILINE), result.stdout[-4000:]
