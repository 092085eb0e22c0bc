"""A validator for the part of JSON Schema (2020-12) that docs/json-schema.json uses.

``jsonschema`` is not a dependency of the project; this covers exactly the
keywords the schema uses (type, const, enum, required, properties,
additionalProperties: false, items, minimum, pattern, oneOf, allOf,
if/then, local $ref) and fails loudly on any other keyword, so the schema
cannot silently grow past what the tests check.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
_KNOWN = _ANNOTATIONS | {
    "type", "const", "enum", "required", "properties", "additionalProperties", "items",
    "minimum", "pattern", "oneOf", "allOf", "if", "then", "$ref",
}  # fmt: skip


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1."""
    return type(a) is type(b) and a == b


def errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it is valid)."""
    return _check(schema, schema, value, "$")


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/"), f"only local refs: {ref}"
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return dict(node)


def _check(root: dict[str, Any], schema: dict[str, Any], value: Any, at: str) -> list[str]:
    unknown = set(schema) - _KNOWN
    assert not unknown, f"{at}: keyword(s) this validator does not know: {unknown}"
    out: list[str] = []
    if "$ref" in schema:
        out += _check(root, _resolve(root, schema["$ref"]), value, at)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [*out, f"{at}: {value!r:.60} is not of type {types}"]
    if "const" in schema and not _same(value, schema["const"]):
        out.append(f"{at}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        out.append(f"{at}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        out.append(f"{at}: {value} < {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{at}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        out += _object(root, schema, value, at)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += _check(root, schema["items"], item, f"{at}[{i}]")
    for sub in schema.get("allOf", []):
        out += _check(root, sub, value, at)
    if "oneOf" in schema:
        passing = sum(1 for sub in schema["oneOf"] if not _check(root, sub, value, at))
        if passing != 1:
            out.append(f"{at}: matches {passing} of oneOf, not exactly one")
    if "if" in schema and not _check(root, schema["if"], value, at) and "then" in schema:
        out += _check(root, schema["then"], value, at)
    return out


def _object(
    root: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], at: str
) -> list[str]:
    out = [f"{at}: missing {key!r}" for key in schema.get("required", []) if key not in value]
    props = schema.get("properties", {})
    for key, sub in props.items():
        if key in value:
            out += _check(root, sub, value[key], f"{at}.{key}")
    if schema.get("additionalProperties") is False:
        out += [f"{at}: unexpected {key!r}" for key in value if key not in props]
    return out
