"""Adapters layer (MCP): a tool's input schema, derived from the application's typed request.

A request's JSON keys are its dataclass fields less its ``JSON_ONLY_FIELDS`` (what ``from_json``
accepts); a tool offers those less the ones the server decides itself (:data:`IDENTITY_FIELDS`:
who is calling is never a tool argument). Each key's JSON schema follows the field's annotation
(``NOTSET``, the "omitted" marker, is simply an optional key); a field without a default is
required.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from palimpsest.domain.sentinel import NotSetType

__all__ = ["IDENTITY_FIELDS", "json_keys", "request_schema"]

IDENTITY_FIELDS: Final = frozenset({"user_id", "agent_id", "scope", "exact_user_match", "exact_agent_match"})
"""Keys naming who a call is for (or widening a search past the caller): the server's to set,
from its configuration (stdio) or the bearer token (HTTP); a tool call naming one is refused."""


def json_keys(request: type[Any]) -> list[str]:
    """The keys ``request.from_json`` accepts, in field order."""
    hidden: frozenset[str] = getattr(request, "JSON_ONLY_FIELDS", frozenset())
    return [f.name for f in dataclasses.fields(request) if f.name not in hidden]


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _one(annotation: Any) -> dict[str, Any]:
    """The schema of one member of a field's union (``None`` and ``NOTSET`` aside)."""
    if annotation is Any:
        return {}
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type):
        if issubclass(origin, bool):
            return {"type": "boolean"}
        if issubclass(origin, enum.Enum):
            return {"type": "string", "enum": [m.value for m in origin]}
        if issubclass(origin, str):
            return {"type": "string"}
        if issubclass(origin, int):
            return {"type": "integer"}
        if issubclass(origin, float):
            return {"type": "number"}
        if issubclass(origin, datetime):
            return {"type": "string", "format": "date-time"}
        if issubclass(origin, (bytes, bytearray)):
            return {"type": "string", "contentEncoding": "base64"}
        if issubclass(origin, Mapping) or dataclasses.is_dataclass(origin):
            return {"type": "object"}
        if issubclass(origin, (Sequence, Iterable)):
            args = typing.get_args(annotation)
            return {"type": "array", "items": _one(args[0]) if args else {}}
    return {}


def _field_schema(annotation: Any) -> dict[str, Any]:
    members = [m for m in _members(annotation) if m is not NotSetType]
    nullable = type(None) in members
    schemas: list[dict[str, Any]] = []
    for member in members:
        if member is type(None):
            continue
        schema = _one(member)
        if not schema:  # anything goes
            return {}
        if schema not in schemas:
            schemas.append(schema)
    # ``RecordType | str``, ``Iterable[str] | frozenset[RecordType]``: one schema per JSON type,
    # the widest (a string rather than an enum of strings); the request refuses what it must.
    widest: dict[str, dict[str, Any]] = {}
    for schema in schemas:
        kind = str(schema.get("type"))
        if kind not in widest or len(json.dumps(schema)) < len(json.dumps(widest[kind])):
            widest[kind] = schema
    schemas = list(widest.values())
    if nullable:
        schemas.append({"type": "null"})
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}


def request_schema(
    request: type[Any],
    *,
    omit: Iterable[str] = (),
    extra: Mapping[str, dict[str, Any]] | None = None,
    required_extra: Iterable[str] = (),
    describe: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The input schema of a tool that takes ``request``'s JSON keys less :data:`IDENTITY_FIELDS`
    and ``omit``, plus ``extra`` keys (the thread a request is made in, say), first; ``describe``
    adds to a key's schema (a description, the shape of a list's items)."""
    left_out = IDENTITY_FIELDS | set(omit)
    hints = typing.get_type_hints(request)
    fields = {f.name: f for f in dataclasses.fields(request)}
    properties: dict[str, Any] = dict(extra or {})
    required = list(required_extra)
    for name in json_keys(request):
        if name in left_out:
            continue
        properties[name] = _field_schema(hints[name])
        field = fields[name]
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(name)
    for name, more in (describe or {}).items():
        if name not in properties:
            raise ValueError(f"{request.__name__} offers no key {name!r} to describe.")
        properties[name] = {**properties[name], **more}
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema
