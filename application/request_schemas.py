"""Application layer: JSON schemas of the typed requests' JSON objects (ARCHITECTURE.md D45).

A server that documents its bodies (an OpenAPI schema, a tool's input schema) derives them here
from the request's own fields, the ones its ``from_json`` accepts, so the schema cannot name a
key the request refuses or miss one it takes. The schema documents names and types; the
request's constructor stays the one place that validates (a body the schema allows may still be
refused, with the request's ``ValidationError``).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Union

from palimpsest.domain.sentinel import NotSetType

from .requests import SearchScope

__all__ = ["json_fields", "request_schema"]

_SIMPLE: Final[Mapping[object, str]] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}
_SEQUENCES: Final = (list, tuple, frozenset, set, Sequence, Iterable)
_MAPPINGS: Final = (dict, Mapping)


def json_fields(request: type[Any]) -> list[str]:
    """The keys ``request.from_json`` accepts, in the order of its fields."""
    names: list[str] = request._json_fields()
    return names


def _union(members: list[dict[str, Any]]) -> dict[str, Any]:
    if any(m == {} for m in members):
        return {}
    if any(
        m.get("type") == "string" and len(m) > 1 for m in members
    ):  # an enum or a format says more than "string"
        members = [m for m in members if m != {"type": "string"}]
    unique: list[dict[str, Any]] = []
    for member in members:
        if member not in unique:
            unique.append(member)
    if len(unique) == 1:
        return unique[0]
    if all(set(m) == {"type"} and isinstance(m["type"], str) for m in unique):
        return {"type": [m["type"] for m in unique]}
    return {"anyOf": unique}


def _schema(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _union([_schema(a) for a in typing.get_args(annotation) if a is not NotSetType])
    if annotation is Any:
        return {}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation is datetime:
        return {"type": "string", "format": "date-time"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"type": "string", "enum": [member.value for member in annotation]}
    if annotation is SearchScope:
        return _object(SearchScope, [f.name for f in dataclasses.fields(SearchScope)])
    if dataclasses.is_dataclass(annotation):  # a configuration value, given as its JSON object
        return {"type": "object"}
    if origin in _MAPPINGS or annotation in _MAPPINGS:
        args = typing.get_args(annotation)
        values = _schema(args[1]) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if origin in _SEQUENCES or annotation in _SEQUENCES:
        args = typing.get_args(annotation)
        items = _schema(args[0]) if args else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    raise TypeError(f"no JSON schema for {annotation!r}")


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _object(
    request: type[Any], names: list[str], overrides: Mapping[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    hints = typing.get_type_hints(request)
    fields = {f.name: f for f in dataclasses.fields(request)}
    properties = {name: dict((overrides or {}).get(name) or _schema(hints[name])) for name in names}
    schema: dict[str, Any] = {
        "title": request.__name__,
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [name for name in names if _required(fields[name])]
    if required:
        schema["required"] = required
    return schema


def request_schema(
    request: type[Any],
    *,
    without: Iterable[str] = (),
    overrides: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON schema (draft 2020-12, as OpenAPI 3.1 takes it) of the object ``request.from_json``
    accepts: a property per key with its type, the keys without a default required, no other
    key. ``without`` leaves out keys a server fills itself (a path's id); ``overrides`` gives a
    property a more precise schema than its annotation says (a message's fields, say)."""
    left_out = set(without)
    names = [name for name in json_fields(request) if name not in left_out]
    schema = _object(request, names, overrides)
    if request.__doc__:
        schema["description"] = request.__doc__.strip().splitlines()[0]
    return schema
