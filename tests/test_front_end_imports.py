"""The command line's modules import downwards only, in one order.

``launch`` (the installed executable) sits on top and needs nothing but the
standard library and ``wire`` until no daemon answers; the command line
(``cli``) and the daemon (``daemon``) both run ``commands`` with the parser
from ``arguments``; ``daemonctl`` and ``wire`` are below them all. Every
import counts, those inside functions included: a cycle hidden in a
function is still a cycle to a reader.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mindpalace

# Lowest first: each may import only those before it.
ORDER = ["wire", "daemonctl", "arguments", "commands", "cli", "daemon", "launch"]
PACKAGE = Path(mindpalace.__file__).parent


def _imported(module: str) -> set[str]:
    """The modules of ORDER that ``module`` imports anywhere in its source."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name.removeprefix("mindpalace.") for name in names} & set(ORDER)


@pytest.mark.parametrize("module", ORDER)
def test_imports_only_modules_below(module: str) -> None:
    below = set(ORDER[: ORDER.index(module)])
    assert _imported(module) <= below, f"{module} imports {_imported(module) - below}"


def test_the_launcher_imports_no_command_line_until_it_must() -> None:
    code = (
        "import sys, mindpalace.launch; "
        "print(sorted(m for m in sys.modules if m.startswith(('mindpalace.', 'numpy'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['mindpalace.launch', 'mindpalace.paths', 'mindpalace.wire']"
