"""The public surface: sorted __all__, every name importable, help everywhere."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import mindpalace

MODULES = sorted(m.name for m in pkgutil.walk_packages(mindpalace.__path__, prefix="mindpalace."))


def test_all_is_sorted_and_complete() -> None:
    assert mindpalace.__all__ == sorted(mindpalace.__all__)
    for name in mindpalace.__all__:
        assert hasattr(mindpalace, name), name


@pytest.mark.parametrize("module_name", MODULES)
def test_every_module_documents_itself(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__doc__ and module.__doc__.strip(), module_name
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{module_name}.{name}"


def test_palace_public_methods_have_docstrings() -> None:
    for name in dir(mindpalace.Palace):
        if not name.startswith("_"):
            assert getattr(mindpalace.Palace, name).__doc__, name
