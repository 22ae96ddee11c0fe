"""The package's import graph has no cycle, and its folders lean only
downwards, counting every import a reader sees: inside functions and under
``TYPE_CHECKING`` too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mindpalace

PACKAGE = Path(mindpalace.__file__).parent


def _module_of(path: Path) -> str:
    parts = ["mindpalace", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Each module and the package modules it imports (a name imported
    from a package counts as its submodule when there is one)."""
    files = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        wanted: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                wanted.add(base)
                wanted.update(f"{base}.{alias.name}" for alias in node.names)
        # A package re-exporting its own modules is not a cycle of design:
        # edges from a package down into itself are left out.
        graph[name] = {
            w for w in wanted if w in files and w != name and not w.startswith(f"{name}.")
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_imports_inside_functions_and_type_checking() -> None:
    graph = _graph()
    assert "mindpalace.view" in graph["mindpalace.family"]  # under TYPE_CHECKING
    assert "mindpalace.graph.llm" in graph["mindpalace.engine"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(_graph()) == []


# Folders and the folders (or top-level modules) they must never import: the
# web front ends stand side by side on ``web``, and the layers under the
# engine know nothing of any front end.
FRONT_ENDS = ("ui", "server", "web", "integrations", "cli", "commands", "daemon", "launch")
NEVER = {
    "ui": ("server",),
    "web": ("server", "ui"),
    "store": FRONT_ENDS,
    "retrieval": FRONT_ENDS,
    "embed": FRONT_ENDS,
    "graph": FRONT_ENDS,
}


def _upward(graph: dict[str, set[str]], folder: str, banned: tuple[str, ...]) -> list[str]:
    """``module -> import`` for each import of a module in ``folder`` that
    reaches into one of ``banned``."""
    prefixes = tuple(f"mindpalace.{name}" for name in banned)
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == f"mindpalace.{folder}" or module.startswith(f"mindpalace.{folder}.")
        for target in targets
        if target in prefixes or target.startswith(tuple(f"{p}." for p in prefixes))
    )


@pytest.mark.parametrize("folder", sorted(NEVER))
def test_a_folder_imports_no_layer_above_it(folder: str) -> None:
    assert _upward(_graph(), folder, NEVER[folder]) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    graph = {
        "mindpalace.ui.app": {"mindpalace.server.http", "mindpalace.web.hosts"},
        "mindpalace.web.hosts": set(),
        "mindpalace.web": {"mindpalace.ui"},
    }
    assert _upward(graph, "ui", ("server",)) == ["mindpalace.ui.app -> mindpalace.server.http"]
    assert _upward(graph, "web", ("server", "ui")) == ["mindpalace.web -> mindpalace.ui"]
