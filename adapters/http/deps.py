"""What the HTTP API's routes share: the caller named by the bearer key, the JSON body read
raw (the typed request's ``from_json`` parses it) and the documented body schemas."""

import json
from collections.abc import Mapping
from typing import Annotated, Any, Final

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from palimpsest.application import AgentMemory, ScopedMemory
from palimpsest.application.request_schemas import request_schema
from palimpsest.domain.errors import AuthenticationError, ValidationError

__all__ = ["BODY_SCHEMAS", "Caller", "JsonBody", "body", "caller", "with_path_id"]

_bearer = HTTPBearer(auto_error=False, description="An API key (`palimpsest keys create`).")


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ScopedMemory:
    """The memory of the key's principal (read afresh per request: a revoked key fails at once)."""
    memory: AgentMemory = request.app.state.memory
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise AuthenticationError("an API key is required (Authorization: Bearer <key>).")
    return memory.acting_for(memory.admin.api_keys.verify(credentials.credentials))


Caller = Annotated[ScopedMemory, Depends(caller)]


async def _json_body(request: Request) -> Any:
    """The request's JSON body as decoded (``None`` when it has none); not JSON is a ``ValidationError``."""
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise ValidationError("the request body is not JSON.") from None


JsonBody = Annotated[Any, Depends(_json_body)]

BODY_SCHEMAS: Final[dict[str, dict[str, Any]]] = {}
"""The body schemas the routes name, by component name (the OpenAPI document's ``components``)."""


def body(
    request: type[Any],
    *,
    name: str | None = None,
    without: tuple[str, ...] = (),
    required: bool = True,
    overrides: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A route's ``openapi_extra`` documenting its JSON body as the schema of ``request``'s JSON
    object (``without`` the keys the path fills), registered under ``name`` (the request's)."""
    component = name or request.__name__
    BODY_SCHEMAS[component] = request_schema(request, without=without, overrides=overrides)
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
        }
    }


def with_path_id(given: Any, name: str, value: str) -> Any:
    """A body with the id its path names added (naming it in the body too is a ``ValidationError``)."""
    if not isinstance(given, Mapping):
        return given  # the request's from_json refuses it
    if name in given:
        raise ValidationError(f"{name} is the path's; leave it out of the body.")
    return {**given, name: value}
