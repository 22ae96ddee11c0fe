"""Without its framework an integration fails on import with a message
naming the extra that installs it; the shared helpers need no framework."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = [
    ("langchain", "langchain_core", "mindpalace[langchain]"),
    ("pydantic_ai", "pydantic_ai", "mindpalace[pydantic-ai]"),
    ("openai_agents", "agents", "mindpalace[openai-agents]"),
    ("llama_index", "llama_index", "mindpalace[llama-index]"),
]


@pytest.mark.parametrize(("module", "package", "extra"), FRAMEWORKS)
def test_a_missing_framework_names_its_extra(module: str, package: str, extra: str) -> None:
    code = f"import sys; sys.modules[{package!r}] = None\nimport mindpalace.integrations.{module}"
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert out.returncode == 1
    assert f"pip install '{extra}'" in out.stderr
    clone = extra.replace("mindpalace[", ".[")  # what a clone of the repository runs
    assert f"from a clone of the repository: pip install '{clone}'" in out.stderr


def test_the_shared_helpers_import_no_framework() -> None:
    code = (
        "import sys, mindpalace.integrations.common\n"
        "names = {'langchain_core', 'pydantic_ai', 'agents', 'llama_index'}\n"
        "print(sorted(names & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
