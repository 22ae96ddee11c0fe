"""Each framework's example runs offline (no API key: the framework's test
model plays the model) on every backend, and the later session recalls what
the earlier one stored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# (script, the framework package it needs, what the recall shows)
CASES = [
    ("langchain_memory.py", "langchain_core", "│ The user's dog is called Biscuit"),
    ("llama_index_memory.py", "llama_index.core", "│ The Porto office's spare keys are in"),
    ("pydantic_ai_memory.py", "pydantic_ai", "│ Ann is allergic to peanuts"),
    ("openai_agents_memory.py", "agents", "│ Priya's flight lands 18:40 Friday"),
]


@pytest.mark.parametrize(("script", "package", "recalled"), CASES)
def test_the_example_runs_offline(
    store_target: str, script: str, package: str, recalled: str
) -> None:
    pytest.importorskip(package, reason=f"{script} needs {package}")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script), store_target],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert recalled in out.stdout
