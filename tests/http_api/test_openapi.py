"""The served OpenAPI document: each body's schema names exactly the keys its typed request's
``from_json`` accepts (less the id its path gives), with their types; each route documents the
statuses it can answer."""

from __future__ import annotations

from typing import Any

import pytest
from palimpsest.adapters.http import create_app
from palimpsest.application.requests import (
    AddMemory,
    AppendMessages,
    CardRequest,
    CreateThread,
    LinkRecords,
    SearchRequest,
    UpdateMemory,
    UpdateRecordLink,
)
from palimpsest.domain.errors import ValidationError

# (path, method) -> the typed request its body is, and the key its path fills.
BODIES: dict[tuple[str, str], tuple[type[Any], str | None]] = {
    ("/v1/memories", "post"): (AddMemory, None),
    ("/v1/memories/{memory_id}", "patch"): (UpdateMemory, "memory_id"),
    ("/v1/search", "post"): (SearchRequest, None),
    ("/v1/threads", "post"): (CreateThread, None),
    ("/v1/threads/{thread_id}/messages", "post"): (AppendMessages, None),
    ("/v1/threads/{thread_id}/card", "post"): (CardRequest, None),
    ("/v1/links", "post"): (LinkRecords, None),
    ("/v1/links/{link_id}", "patch"): (UpdateRecordLink, "relation_id"),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(None).openapi()  # type: ignore[arg-type]  # the document reads no store


def _body_schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    ref = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema


def _accepts(request: type[Any], key: str) -> bool:
    """Whether ``request.from_json`` takes ``key`` (whatever it then says of its value)."""
    try:
        request.from_json({key: None})
    except ValidationError as exc:
        return "does not take" not in str(exc)
    except Exception:  # noqa: BLE001 - any other refusal is about the value, not the key
        return True
    return True


@pytest.mark.parametrize(("path", "method"), sorted(BODIES))
def test_each_body_schema_names_exactly_the_keys_its_request_accepts(
    document: dict[str, Any], path: str, method: str
) -> None:
    request, from_path = BODIES[(path, method)]
    schema = _body_schema(document, path, method)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    properties = set(schema["properties"])
    assert all(_accepts(request, key) for key in properties), [
        k for k in properties if not _accepts(request, k)
    ]
    assert not _accepts(request, "no_such_key")
    candidates = set(getattr(request, "__dataclass_fields__", {})) | {"owner_thread", "scope_filter", "llm"}
    accepted = {key for key in candidates if _accepts(request, key)}
    assert properties == accepted - {from_path}
    for name in schema.get("required", []):
        assert name in properties


def test_the_body_schemas_give_the_fields_types(document: dict[str, Any]) -> None:
    add = _body_schema(document, "/v1/memories", "post")
    assert add["required"] == ["content"]
    assert add["properties"]["content"] == {"type": "string"}
    assert add["properties"]["metadata"] == {"type": ["object", "null"]}
    assert add["properties"]["ttl_days"] == {"type": ["number", "null"]}
    assert "memory" in add["properties"]["memory_type"]["enum"]
    search = _body_schema(document, "/v1/search", "post")
    assert search["properties"]["max_results"] == {"type": "integer"}
    assert search["properties"]["search_strategy"]["enum"] == ["vector", "hybrid", "keyword"]
    assert set(search["properties"]["scope"]["properties"]) >= {"user_id", "agent_id", "thread_id"}
    messages = _body_schema(document, "/v1/threads/{thread_id}/messages", "post")
    assert messages["properties"]["messages"]["items"]["required"] == ["role", "content"]
    card = document["paths"]["/v1/threads/{thread_id}/card"]["post"]["requestBody"]
    assert card["required"] is False  # no body: the defaults


def test_every_route_documents_the_statuses_it_can_answer(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            documented = set(operation["responses"])
            if path == "/health":
                continue
            assert documented >= {"401", "413", "422", "503"}, (path, method)
            if method in ("post", "patch", "delete") and path != "/v1/search":
                assert "403" in documented, (path, method)
            if "{" in path:
                assert "404" in documented, (path, method)
            assert documented & {"200", "201", "204"}, (path, method)
            assert operation.get("security") or path == "/health", (path, method)
    assert document["paths"]["/v1/memories"]["post"]["responses"]["503"]["headers"]["Retry-After"]
