"""The operations both servers expose, once: the registry, the tool sets, the
one way to call an operation, and the one mapping of errors.

The tools themselves are plain functions over ``Palace`` in
``tools_memory``, ``tools_recall`` and ``tools_skills``. The MCP server and
the REST API are generated from ``OPERATIONS``: the function's signature
becomes the tool's JSON schema (``schema.input_schema``) and the REST body
or query, its docstring the description, ``shaping.OUTPUT`` the result
schema.

Adding a tool is three steps: write the function, list it in ``OPERATIONS``
with its REST method and path, and give it a result schema in
``shaping.OUTPUT`` (the tests ask for one sample call in
``tests/server/samples.py``). It is served over MCP when a tool set named
in ``mindpalace mcp --tools`` holds it (``TOOL_SETS``).

Every argument and result field is snake_case; a result never holds
``null`` (``call`` leaves such fields out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mindpalace.errors import (
    BusyError,
    EmbeddingMismatch,
    MindPalaceError,
    NotFoundError,
    PermissionDenied,
    ValidationError,
)
from mindpalace.palace import Palace
from mindpalace.server.schema import arguments_model, input_schema, parse_arguments
from mindpalace.server.shaping import OUTPUT
from mindpalace.server.tools_memory import (
    memory_erase,
    memory_feedback,
    memory_forget,
    memory_get,
    memory_list,
    memory_search,
    memory_stats,
    memory_store,
    memory_update,
)
from mindpalace.server.tools_recall import (
    depends_on,
    personal_search,
    preflight,
    recent,
    search_messages,
    what_do_i_know,
    who_owns,
    why_did_we,
)
from mindpalace.server.tools_skills import activate_skills, find_skills, get_skill, memory_recall

__all__ = [
    "DEFAULT_TOOLS",
    "OPERATIONS",
    "TOOL_SETS",
    "Operation",
    "Problem",
    "call",
    "describe_error",
    "parse",
    "select_tools",
    "without_nulls",
]


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool: its function, and where the REST API serves it.

    Attributes:
        run: the tool function (``Palace`` first, then keyword arguments).
        method: the REST method; GET and DELETE take arguments from the query
            string, POST and PATCH from a JSON body.
        path: the REST path; ``{name}`` segments are arguments too.
        status: the REST status of a success.
        read_only: the tool changes nothing (an MCP tool annotation).
    """

    run: Callable[..., Mapping[str, Any]]
    method: str
    path: str
    status: int = 200
    read_only: bool = True

    @property
    def name(self) -> str:
        """The MCP tool name: the function's name."""
        return self.run.__name__

    @property
    def description(self) -> str:
        """What the tool does, for a model deciding whether to call it."""
        return " ".join((self.run.__doc__ or "").split())

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of its arguments."""
        return input_schema(self.run)

    @property
    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of its result."""
        return OUTPUT[self.name]


OPERATIONS: tuple[Operation, ...] = (
    Operation(memory_store, "POST", "/v1/memories", status=201, read_only=False),
    Operation(memory_search, "POST", "/v1/recall"),
    Operation(memory_recall, "POST", "/v1/context"),
    Operation(activate_skills, "POST", "/v1/skills/activate"),
    Operation(get_skill, "GET", "/v1/skills/{name}"),
    Operation(find_skills, "GET", "/v1/skills"),
    Operation(search_messages, "POST", "/v1/messages/search"),
    Operation(recent, "GET", "/v1/recent"),
    Operation(what_do_i_know, "POST", "/v1/what-do-i-know"),
    Operation(why_did_we, "POST", "/v1/why-did-we"),
    Operation(who_owns, "GET", "/v1/owners"),
    Operation(depends_on, "GET", "/v1/dependencies"),
    Operation(preflight, "POST", "/v1/preflight"),
    Operation(personal_search, "POST", "/v1/personal/search"),
    Operation(memory_get, "GET", "/v1/memories/{memory_id}"),
    Operation(memory_update, "PATCH", "/v1/memories/{memory_id}", read_only=False),
    Operation(memory_forget, "DELETE", "/v1/memories/{memory_id}", read_only=False),
    Operation(memory_list, "GET", "/v1/memories"),
    Operation(memory_stats, "GET", "/v1/stats"),
    Operation(memory_feedback, "POST", "/v1/feedback", read_only=False),
    Operation(memory_erase, "POST", "/v1/erase", read_only=False),
)

#: The MCP tool sets ``mindpalace mcp --tools`` and ``serve --tools`` take.
#: ``core`` (the default) is what an agent needs on every task and fits in
#: a small share of its context; the others add to it.
TOOL_SETS: dict[str, tuple[str, ...]] = {
    "core": (
        "memory_store",
        "memory_search",
        "memory_recall",
        "activate_skills",
        "get_skill",
        "find_skills",
        "search_messages",
        "recent",
    ),
    "family": (
        "what_do_i_know",
        "why_did_we",
        "who_owns",
        "depends_on",
        "preflight",
        "personal_search",
    ),
    "manage": (
        "memory_get",
        "memory_update",
        "memory_forget",
        "memory_list",
        "memory_stats",
        "memory_feedback",
        "memory_erase",
    ),
    "all": tuple(op.name for op in OPERATIONS),
}
DEFAULT_TOOLS = "core"
_BY_NAME = {op.name: op for op in OPERATIONS}


def select_tools(spec: str | Iterable[str] = DEFAULT_TOOLS) -> tuple[Operation, ...]:
    """The operations a tool-set spec names, in ``OPERATIONS`` order: a
    comma-separated list of set names (``core``, ``family``, ``manage``,
    ``all``) and tool names, e.g. ``"core,manage"`` or ``"core,who_owns"``.

    Raises:
        ValidationError: an empty spec or a name that is neither, naming
            the valid ones.
    """
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [n for n in names if n]
    valid = [*TOOL_SETS, *_BY_NAME]
    if not names:
        raise ValidationError("tools", spec, valid=valid, reason="name at least one tool set")
    chosen: set[str] = set()
    for name in names:
        if name in TOOL_SETS:
            chosen.update(TOOL_SETS[name])
        elif name in _BY_NAME:
            chosen.add(name)
        else:
            raise ValidationError("tools", name, valid=valid)
    return tuple(op for op in OPERATIONS if op.name in chosen)


def without_nulls(value: Any) -> Any:
    """``value`` with every ``None`` field of every object left out."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


# Library argument names the tools take under another name.
_ARGUMENT_FOR = {
    "id": "memory_id",
    "type": "types",
    "store": "stores",
    "category": "categories",
    "kind": "kinds",
    "sessions": "session",
}


def call(op: Operation, palace: Palace, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``op`` as ``palace`` with already parsed ``arguments``
    (``schema.parse_arguments``); its result without null fields.

    Raises:
        ValidationError: naming the argument as the tool spells it
            (``memory_id``, not the library's ``id``).
    """
    try:
        result: dict[str, Any] = without_nulls(op.run(palace, **arguments))
    except ValidationError as exc:
        taken = arguments_model(op.run).model_fields
        spelled = _ARGUMENT_FOR.get(exc.field)
        if exc.field in taken or spelled not in taken:
            raise
        raise exc.renamed(spelled) from None
    return result


def parse(op: Operation, raw: Mapping[str, Any]) -> dict[str, Any]:
    """``op``'s keyword arguments from what a caller sent
    (``schema.parse_arguments``)."""
    return parse_arguments(op.run, raw)


# -- errors -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """An error as both transports report it.

    Attributes:
        status: the HTTP status.
        code: a stable machine-readable name.
        message: a sentence for the caller; for invalid input it names the
            valid options.
        field: the offending argument, for invalid input.
        valid: the accepted values, when the set is finite.
    """

    status: int
    code: str
    message: str
    field: str | None = None
    valid: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON error body."""
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.valid:
            out["valid"] = list(self.valid)
        return out


def describe_error(exc: MindPalaceError) -> Problem:
    """The one mapping of library errors to what a client sees."""
    if isinstance(exc, ValidationError):
        return Problem(400, "invalid_argument", str(exc), field=exc.field, valid=exc.valid)
    if isinstance(exc, NotFoundError):
        return Problem(404, "not_found", str(exc))
    if isinstance(exc, PermissionDenied):
        return Problem(403, "forbidden", str(exc))
    if isinstance(exc, EmbeddingMismatch):
        return Problem(409, "reindex_needed", str(exc))
    if isinstance(exc, BusyError):
        return Problem(503, "busy", str(exc))
    return Problem(500, "internal", str(exc))
