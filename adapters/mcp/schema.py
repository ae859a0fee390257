"""Adapters layer (MCP): a tool's input schema, derived from the application's typed request.

The schema is the one the HTTP API documents the request's body with
(:func:`palimpsest.application.request_schemas.request_schema`: the keys ``from_json`` accepts,
typed from the request's fields), less the keys the server decides itself
(:data:`IDENTITY_FIELDS`: who is calling is never a tool argument), plus the keys a tool adds (the
thread a request is made in, say).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from palimpsest.application.request_schemas import json_fields
from palimpsest.application.request_schemas import request_schema as body_schema

__all__ = ["IDENTITY_FIELDS", "json_keys", "request_schema"]

IDENTITY_FIELDS: Final = frozenset({"user_id", "agent_id", "scope", "exact_user_match", "exact_agent_match"})
"""Keys naming who a call is for (or widening a search past the caller): the server's to set,
from its configuration (stdio) or the bearer token (HTTP); a tool call naming one is refused."""

json_keys = json_fields
"""The keys ``request.from_json`` accepts, in field order."""


def request_schema(
    request: type[Any],
    *,
    omit: Iterable[str] = (),
    extra: Mapping[str, dict[str, Any]] | None = None,
    required_extra: Iterable[str] = (),
    describe: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The input schema of a tool that takes ``request``'s JSON keys less :data:`IDENTITY_FIELDS`
    and ``omit``, plus ``extra`` keys first; ``describe`` adds to a key's schema (a description,
    the shape of a list's items)."""
    base = body_schema(request, without=IDENTITY_FIELDS | set(omit))
    properties: dict[str, Any] = {**dict(extra or {}), **base["properties"]}
    for name, more in (describe or {}).items():
        if name not in properties:
            raise ValueError(f"{request.__name__} offers no key {name!r} to describe.")
        properties[name] = {**properties[name], **more}
    required = [*required_extra, *base.get("required", [])]
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema
