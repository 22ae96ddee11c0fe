"""Tool arguments: their types, their published JSON schema, and one check.

A tool's arguments are the keyword-only parameters of its function, typed
with the aliases below. From them come, once:

- the **JSON schema** MCP lists and OpenAPI publishes (``input_schema``):
  snake_case names, every enum as ``enum``, every range as
  ``minimum``/``maximum``, a description on every argument, and nothing a
  model does not need (no titles, no ``null`` alternatives);
- the **check** both transports run before a call (``parse_arguments``):
  an unknown argument or a value of the wrong JSON type is an
  ``ArgumentsError`` (HTTP 422) that names the valid arguments or the type
  expected; a value outside its set or range is a ``ValidationError``
  (HTTP 400) naming the valid options or the range. Neither carries a
  validation library's text or links.

A list argument also takes one value (``types="skill"`` is ``["skill"]``).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, GetCoreSchemaHandler
from pydantic import GetJsonSchemaHandler as JsonHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from mindpalace.errors import ValidationError, shown
from mindpalace.family import DIRECTIONS
from mindpalace.models import Category, MemoryKind, MemoryType, Source, StoreKind, Visibility
from mindpalace.retrieval.modes import MODES
from mindpalace.vocabulary import meanings

__all__ = [
    "ArgumentsError",
    "Choice",
    "Range",
    "arguments_model",
    "choice",
    "described",
    "input_schema",
    "listed",
    "parse_arguments",
]


class _OutOfRange(ValueError):
    def __init__(self, low: float, high: float) -> None:
        super().__init__(f"from {low} to {high}")
        self.low, self.high = low, high


class _NotOneOf(ValueError):
    def __init__(self, valid: tuple[str, ...]) -> None:
        super().__init__("not a valid option")
        self.valid = valid


@dataclass(frozen=True, slots=True)
class Range:
    """An inclusive numeric range: ``minimum``/``maximum`` in the schema,
    checked before the call."""

    low: float
    high: float

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def check(value: float) -> float:
            if not self.low <= value <= self.high:
                raise _OutOfRange(self.low, self.high)
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: JsonHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out.update(minimum=_number(self.low), maximum=_number(self.high))
        return out


@dataclass(frozen=True, slots=True)
class Choice:
    """A string from a fixed set: ``enum`` in the schema, checked before the call."""

    valid: tuple[str, ...]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            if value not in self.valid:
                raise _NotOneOf(self.valid)
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: JsonHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["enum"] = list(self.valid)
        return out


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def choice(values: type[enum.Enum] | Iterable[str]) -> Choice:
    """A ``Choice`` of an enum's values or of the given strings."""
    if isinstance(values, type) and issubclass(values, enum.Enum):
        return Choice(tuple(str(m.value) for m in values))
    return Choice(tuple(values))


def _listify(value: object) -> object:
    """One value where a list is expected is a list of that value; a JSON
    list sent as a string (as some MCP clients send lists) is that list."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        with contextlib.suppress(ValueError, RecursionError):
            decoded = json.loads(value)
            if isinstance(decoded, list):
                return decoded
    if isinstance(value, str | int | float | bool):
        return [value]
    return value


#: Marks a list argument as also taking a single value.
listed = BeforeValidator(_listify)


class ArgumentsError(Exception):
    """The arguments do not fit the tool: an unknown name or a value of the
    wrong JSON type (HTTP 422).

    Attributes:
        details: one ``{"field", "message"}`` per problem.
    """

    def __init__(self, message: str, details: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.details = details


# -- the arguments of one tool ---------------------------------------------------------


def _parameters(run: Callable[..., Any]) -> list[inspect.Parameter]:
    return list(inspect.signature(run, eval_str=True).parameters.values())[1:]


@functools.cache
def arguments_model(run: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of a tool function's arguments (after the palace)."""
    fields: dict[str, Any] = {
        p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
        for p in _parameters(run)
    }
    model: type[BaseModel] = pydantic.create_model(
        f"{run.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a JSON object",
    "missing": "given (it is required)",
}


def parse_arguments(run: Callable[..., Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's keyword arguments from what a caller sent.

    Raises:
        ArgumentsError: an argument the tool does not take, a required one
            missing, or a value of the wrong JSON type; the message names
            the valid arguments.
        ValidationError: a value outside its set (naming the valid options)
            or its range.
    """
    model = arguments_model(run)
    names = list(model.model_fields)
    unknown = [key for key in raw if key not in model.model_fields]
    if unknown:
        listed_names = ", ".join(repr(name) for name in unknown)
        plural = "s" if len(unknown) > 1 else ""
        message = f"unknown argument{plural} {listed_names} for {run.__name__}"
        close = ValidationError("arguments", unknown[0], valid=names, reason=message)
        raise ArgumentsError(
            str(close),
            [{"field": _name(name), "message": "not an argument of this tool"} for name in unknown],
        )
    try:
        parsed = model.model_validate(dict(raw))
    except pydantic.ValidationError as exc:
        raise _translate(exc, run.__name__, names) from None
    return {name: getattr(parsed, name) for name in names}


def _name(name: object) -> str:
    """An argument name as sent, made safe to print and to encode (a name
    holding a lone surrogate or a control character is escaped)."""
    text = str(name)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return ascii(text)[1:-1]
    return text if text.isprintable() else ascii(text)[1:-1]


def _translate(exc: pydantic.ValidationError, tool: str, names: list[str]) -> Exception:
    """Our error for a failed validation: the first out-of-set or
    out-of-range value as a ``ValidationError``, else an ``ArgumentsError``."""
    details: list[dict[str, str]] = []
    for error in exc.errors(include_url=False):
        field = _name(error["loc"][0]) if error["loc"] else "arguments"
        cause = (error.get("ctx") or {}).get("error")
        value = error.get("input")
        if isinstance(cause, _NotOneOf):
            return ValidationError(field, value, valid=cause.valid)
        if isinstance(cause, _OutOfRange):
            low, high = _number(cause.low), _number(cause.high)
            return ValidationError(
                field, value, reason=f"{field} must be from {low} to {high}, got {shown(value)}"
            )
        if isinstance(cause, ValidationError):  # raised by a field's own validator
            return cause
        expected = _EXPECTED.get(error["type"])
        text = f"must be {expected}" if expected else str(error["msg"])
        if error["type"] != "missing":
            text += f", got {shown(value)}"
        details.append({"field": field, "message": text})
    summary = "; ".join(f"{d['field']} {d['message']}" for d in details)
    return ArgumentsError(
        f"invalid arguments for {tool}: {summary}; valid arguments: {', '.join(names)}", details
    )


# -- the published schema -------------------------------------------------------------


def _compact(node: Any) -> Any:
    """A pydantic JSON schema without what a model reading it does not need:
    titles, ``null`` alternatives of optional arguments, ``default: null``."""
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: {name: _compact(p) for name, p in v.items()} if k == "properties" else _compact(v)
        for k, v in node.items()
        if k != "title"
    }
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            del out["anyOf"]
            out = {**kept[0], **out}
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


def input_schema(run: Callable[..., Any]) -> dict[str, Any]:
    """The compact JSON schema of a tool's arguments (MCP ``inputSchema``,
    the REST body or query). Other arguments are refused when called
    (``parse_arguments``), as ``additionalProperties: false`` says."""
    schema = arguments_model(run).model_json_schema()
    properties = schema.get("properties", {})
    out: dict[str, Any] = {
        "type": "object",
        "properties": {name: _compact(p) for name, p in properties.items()},
    }
    if schema.get("required"):
        out["required"] = list(schema["required"])
    out["additionalProperties"] = False
    return out


# -- argument types shared by the tools ------------------------------------------------

TypeName = Annotated[str, choice(MemoryType)]
StoreName = Annotated[str, choice(StoreKind)]
CategoryName = Annotated[str, choice(Category)]
SourceName = Annotated[str, choice(Source)]
VisibilityName = Annotated[str, choice(Visibility)]
KindName = Annotated[str, choice(MemoryKind)]
ModeName = Annotated[str, choice(MODES)]
DirectionName = Annotated[str, choice(DIRECTIONS)]

Query = Annotated[str, Field(description="What to look for, in plain words.")]
MemoryId = Annotated[
    str, Field(description="The memory's memory_id, as an earlier result gave it (mem_...).")
]
Tags = Annotated[
    list[str] | None, listed, Field(description="Only memories with any of these tags.")
]


def described(text: str, values: type[enum.Enum] | str) -> str:
    """``text`` followed by what each value of the set means
    (``vocabulary.MEANINGS``): the one description MCP and OpenAPI publish."""
    return f"{text} {meanings(values)}."
