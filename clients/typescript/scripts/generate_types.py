"""Writes ``src/types.ts`` from the REST API's OpenAPI document, as the
server builds it (``mindpalace.server.http.openapi_document``), and sets
the version in ``package.json`` and ``package-lock.json`` to the library's.

    PYTHONPATH=src python clients/typescript/scripts/generate_types.py [--check]

``--check`` writes nothing and exits 1 when either file is out of date (the
test suite runs the same comparison, so the client cannot drift from the
server). The output is a pure function of the document: the same document
gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent
TYPES = PACKAGE / "src" / "types.ts"
PACKAGE_JSON = PACKAGE / "package.json"
PACKAGE_LOCK = PACKAGE / "package-lock.json"

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PATH_ARG = re.compile(r"{(\w+)}")
_SCALARS = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}


def pascal(name: str) -> str:
    """``memory_store`` -> ``MemoryStore``."""
    return "".join(part.capitalize() for part in name.split("_"))


def _key(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else json.dumps(name)


def _doc(schema: dict[str, Any], indent: str) -> list[str]:
    """A JSDoc comment from the description and default; text from the
    document never closes the comment early."""
    lines = str(schema.get("description", "")).strip().splitlines()
    if "default" in schema:
        lines.append(f"@defaultValue {json.dumps(schema['default'])}")
    if not lines:
        return []
    lines = [line.replace("*/", "*\\/").rstrip() for line in lines]
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique) if unique else "never"


def ts_type(schema: dict[str, Any] | bool, indent: str = "") -> str:
    """The TypeScript type of a JSON schema (the subset OpenAPI 3.1 documents
    use: $ref, enum, const, type (or a list of them), anyOf/oneOf, arrays,
    objects with properties and additionalProperties)."""
    if schema is True or schema == {}:
        return "unknown"
    if schema is False:
        return "never"
    assert isinstance(schema, dict)
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return _union([json.dumps(value) for value in schema["enum"]])
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            return _union([ts_type(part, indent) for part in schema[combinator]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([ts_type({**schema, "type": one}, indent) for one in kind])
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        item = ts_type(schema.get("items", True), indent)
        return f"Array<{item}>" if "|" in item or "{" in item else f"{item}[]"
    if kind == "object" or "properties" in schema:
        return _object(schema, indent)
    return "unknown"


def _members(schema: dict[str, Any], indent: str) -> list[str]:
    required = set(schema.get("required", []))
    lines: list[str] = []
    for name, prop in schema.get("properties", {}).items():
        lines += _doc(prop, indent)
        optional = "" if name in required else "?"
        lines.append(f"{indent}{_key(name)}{optional}: {ts_type(prop, indent)};")
    extra = schema.get("additionalProperties", "properties" not in schema)
    if extra is not False:
        lines.append(f"{indent}[key: string]: {ts_type(extra, indent)};")
    return lines


def _object(schema: dict[str, Any], indent: str) -> str:
    inner = indent + "  "
    members = _members(schema, inner)
    if not members:
        return "Record<string, never>"
    if "properties" not in schema and len(members) == 1:
        return "{ " + members[0].strip().rstrip(";") + " }"
    return "{\n" + "\n".join(members) + f"\n{indent}}}"


def _declaration(name: str, schema: dict[str, Any]) -> list[str]:
    lines = _doc(schema, "")
    if schema.get("type") == "object" and "properties" in schema:
        lines += [f"export interface {name} {{", *_members(schema, "  "), "}"]
    else:
        lines.append(f"export type {name} = {ts_type(schema)};")
    return lines


def _operations(document: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """Per operation: a ``...Params`` interface for its path and query
    arguments, its entry in ``Operations`` (params, body, result) and in
    ``OPERATIONS`` (method and path, for the client to send)."""
    params: list[str] = []
    table: list[str] = []
    routes: list[str] = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            op_id = operation["operationId"]
            arguments = operation.get("parameters", [])
            params_type = "NoParams"
            if arguments:
                params_type = f"{pascal(op_id)}Params"
                schema = {
                    "type": "object",
                    "description": f"The path and query arguments of {op_id}.",
                    "properties": {
                        arg["name"]: {"description": arg.get("description", ""), **arg["schema"]}
                        for arg in arguments
                    },
                    "required": [arg["name"] for arg in arguments if arg.get("required")],
                }
                params += [*_declaration(params_type, schema), ""]
            body = "undefined"
            if "requestBody" in operation:
                body = ts_type(operation["requestBody"]["content"]["application/json"]["schema"])
            success = next(code for code in operation["responses"] if code.startswith("2"))
            result = ts_type(
                operation["responses"][success]["content"]["application/json"]["schema"]
            )
            table += [
                *_doc({"description": operation.get("summary", "")}, "  "),
                f"  {op_id}: {{ params: {params_type}; body: {body}; result: {result} }};",
            ]
            in_path = json.dumps(_PATH_ARG.findall(path))
            routes.append(
                f"  {op_id}: {{ method: {json.dumps(method.upper())},"
                f" path: {json.dumps(path)}, path_args: {in_path} }},"
            )
    return params, table, routes


def render(document: dict[str, Any]) -> str:
    """The text of ``src/types.ts`` for ``document``."""
    version = document["info"]["version"]
    lines = [
        f"// Generated from the OpenAPI document of mindpalace {version} by",
        "// scripts/generate_types.py: do not edit (run the script instead).",
        "",
        "/** The version of mindpalace whose REST API these types describe. */",
        f"export const API_VERSION = {json.dumps(version)};",
        "",
    ]
    for name, schema in document["components"]["schemas"].items():
        lines += [*_declaration(name, schema), ""]
    params, table, routes = _operations(document)
    lines += [
        "/** The arguments of an operation that takes none in its path or query. */",
        "export type NoParams = Record<string, never>;",
        "",
        *params,
        "/** Each REST operation (by its operationId): its path and query arguments,",
        " * its JSON body (undefined: none) and its result. */",
        "export interface Operations {",
        *table,
        "}",
        "",
        "/** An operationId of the REST API. */",
        "export type OperationId = keyof Operations;",
        "",
        "/** Where each operation is served: its method, path and the path's arguments. */",
        "export const OPERATIONS = {",
        *routes,
        "} as const satisfies Record<",
        "  OperationId,",
        "  { method: string; path: string; path_args: readonly string[] }",
        ">;",
    ]
    return "\n".join(lines) + "\n"


def with_version(text: str, version: str) -> str:
    """``package.json`` or ``package-lock.json`` with the package's own
    version set to ``version`` (else unchanged)."""
    manifest = json.loads(text)
    manifest["version"] = version
    if "" in manifest.get("packages", {}):  # the lock file's entry for the package itself
        manifest["packages"][""]["version"] = version
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    args = parser.parse_args(argv)
    from mindpalace.server.http import openapi_document  # noqa: PLC0415 - after --help

    document = openapi_document()
    version = document["info"]["version"]
    wanted = {
        TYPES: render(document),
        **{
            path: with_version(path.read_text("utf-8"), version)
            for path in (PACKAGE_JSON, PACKAGE_LOCK)
        },
    }
    stale = [
        path
        for path, text in wanted.items()
        if not path.exists() or path.read_text("utf-8") != text
    ]
    if args.check:
        for path in stale:
            print(f"{path} is out of date: run {Path(__file__).name}", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path], "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
