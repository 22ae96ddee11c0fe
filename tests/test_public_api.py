"""The public surface: sorted __all__, every name importable, help everywhere."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing

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


def _mindpalace_types(hint: object) -> set[type]:
    """The mindpalace classes named anywhere in a type hint."""
    found = {hint} if isinstance(hint, type) and hint.__module__.startswith("mindpalace") else set()
    for arg in typing.get_args(hint):
        found |= _mindpalace_types(arg)
    return found


def test_every_type_a_public_method_returns_is_exported() -> None:
    """What the facade, its features and the engine hand back can be named
    with ``from mindpalace import ...``."""
    owners = [
        mindpalace.Palace,
        mindpalace.Engine,
        *(
            typing.get_type_hints(getattr(mindpalace.Palace, name).func)["return"]
            for name in (
                "signals",
                "graph",
                "skills",
                "family",
                "personal",
                "timeline",
                "retention",
            )
        ),
    ]
    returned: set[type] = set()
    for owner in owners:
        for name, member in inspect.getmembers(owner):
            if name.startswith("_"):
                continue
            function = member.fget if isinstance(member, property) else member
            function = getattr(function, "func", function)  # cached_property
            if callable(function):
                returned |= _mindpalace_types(typing.get_type_hints(function).get("return"))
    missing = sorted(t.__name__ for t in returned if getattr(mindpalace, t.__name__, None) is not t)
    assert missing == []
