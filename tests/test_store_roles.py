"""The store's roles (store/roles.py, store/roles_palace.py): each member
of ``Store`` is declared by exactly one role, ``Store`` is their union and
nothing else, and every backend defines each of them itself (never falling
through to a protocol's empty body)."""

from __future__ import annotations

import itertools
from typing import Protocol

import pytest

from mindpalace.store import SQLiteStore, Store
from mindpalace.store.base import ROLES
from mindpalace.store.postgres import PostgresStore

BACKENDS = [SQLiteStore, PostgresStore]

#: public members of a backend that no role declares, and who uses them
BACKEND_ONLY = {
    SQLiteStore: {
        "dialect": "the SQL mixins",
        "integrity_check": "doctor, on a SQLite palace only",
    },
    PostgresStore: {
        "dialect": "the SQL mixins",
        "nearest_query": "the pgvector benchmarks and tests",
        "replicas": "the replica tests",
    },
}


def declared(protocol: type) -> set[str]:
    """The members ``protocol``'s own body declares: methods, properties
    and annotated attributes (not those it inherits)."""
    names = set(vars(protocol)) | _annotated(protocol)
    return {name for name in names if not name.startswith("_")}


def members(protocol: type) -> set[str]:
    """Every member ``protocol`` declares or inherits from other protocols."""
    bases = [c for c in protocol.__mro__ if c.__module__ not in ("typing", "builtins")]
    return set().union(*(declared(c) for c in bases))


def test_store_declares_nothing_of_its_own() -> None:
    assert declared(Store) == set()


def test_store_is_the_union_of_the_roles() -> None:
    assert members(Store) == set().union(*(declared(role) for role in ROLES))
    assert {c for c in Store.__mro__[1:] if c not in (Protocol, object)} >= set(ROLES)


@pytest.mark.parametrize(
    ("first", "second"),
    list(itertools.combinations(ROLES, 2)),
    ids=lambda role: role.__name__,
)
def test_no_member_is_in_two_roles(first: type, second: type) -> None:
    assert declared(first) & declared(second) == set()


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.__name__)
def test_each_role_declares_something(role: type) -> None:
    assert declared(role)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_every_public_member_of_a_backend_is_in_one_role(backend: type) -> None:
    public = {name for name in dir(backend) if not name.startswith("_")}
    assert public - members(Store) == set(BACKEND_ONLY[backend])
    for name in public - set(BACKEND_ONLY[backend]):
        assert sum(name in declared(role) for role in ROLES) == 1, name


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_backends_define_every_member_outside_the_protocols(backend: type) -> None:
    """A role named as a base (``RecallSql``, ``SqlCore``) sits after every
    mixin in the method order; a member that resolved to a role would run
    the protocol's empty body and return None."""
    for name in sorted(members(Store)):
        owner = next(c for c in backend.__mro__ if name in vars(c) or name in _annotated(c))
        assert not getattr(owner, "_is_protocol", False), (name, owner.__name__)


def _annotated(cls: type) -> set[str]:
    return set(vars(cls).get("__annotations__", {}))
