"""The HTTP API's memory routes: add, list (cursor pages), get, update, delete, history, search."""

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from palimpsest.application.codec import encode
from palimpsest.application.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from palimpsest.application.requests import AddMemory, ListRecords, SearchRequest, UpdateMemory
from palimpsest.domain.errors import RecordNotFoundError, ValidationError

from . import shapes
from .answers import HistoryAnswer, IdAnswer, Memory, MemoryPage, SearchAnswer
from .deps import Caller, JsonBody, body, with_path_id
from .errors import responses

__all__ = ["LIMIT_DOC", "router"]

router = APIRouter()

LIMIT_DOC = f"Items per page (default {DEFAULT_PAGE_SIZE}, at most {MAX_PAGE_SIZE})."
CURSOR_DOC = "The previous page's next_cursor (omitted: the first page)."

Limit = Annotated[int | None, Query(ge=1, le=MAX_PAGE_SIZE, description=LIMIT_DOC)]
Cursor = Annotated[str | None, Query(description=CURSOR_DOC)]


def query_filter(metadata_filter: str | None) -> Any:
    """A listing's ``metadata_filter`` query parameter (a JSON object) decoded."""
    if metadata_filter is None:
        return None
    try:
        return json.loads(metadata_filter)
    except ValueError:
        raise ValidationError("metadata_filter must be a JSON object.") from None


def given(**values: Any) -> dict[str, Any]:
    """The query parameters the caller gave (an omitted one stays omitted for the request)."""
    return {name: value for name, value in values.items() if value is not None}


@router.post(
    "/v1/memories",
    status_code=201,
    response_model=IdAnswer,
    tags=["memories"],
    responses=responses(403, 404, 409),
    openapi_extra=body(AddMemory),
)
def add_memory(scoped: Caller, data: JsonBody) -> dict[str, str]:
    """Store a memory as the caller's (``AddMemory``'s fields; the user is the key's)."""
    return {"id": scoped.add_memory(AddMemory.from_json(data))}


@router.get("/v1/memories", response_model=MemoryPage, tags=["memories"], responses=responses(403))
def list_memories(
    scoped: Caller,
    limit: Limit = None,
    cursor: Cursor = None,
    thread_id: Annotated[str | None, Query(description="Only this thread's memories.")] = None,
    agent_id: Annotated[str | None, Query(description="Only this agent's memories.")] = None,
    user_id: Annotated[str | None, Query(description="The caller's own user (any other is 422).")] = None,
    metadata_filter: Annotated[str | None, Query(description="A metadata filter, as a JSON object.")] = None,
) -> dict[str, Any]:
    """The caller's memories, oldest first, a page at a time: ``{"items", "next_cursor"}``."""
    request = ListRecords.from_json(
        given(
            thread_id=thread_id,
            agent_id=agent_id,
            user_id=user_id,
            metadata_filter=query_filter(metadata_filter),
        )
    )
    return shapes.page(scoped.memories_page(request, limit=limit, cursor=cursor))


@router.get(
    "/v1/memories/{memory_id}", response_model=Memory, tags=["memories"], responses=responses(403, 404)
)
def get_memory(scoped: Caller, memory_id: str) -> dict[str, Any]:
    """One of the caller's memories (404 for anyone else's, as for an absent one)."""
    return encode(scoped.get_memory(memory_id))


@router.patch(
    "/v1/memories/{memory_id}",
    response_model=Memory,
    tags=["memories"],
    responses=responses(403, 404),
    openapi_extra=body(UpdateMemory, without=("memory_id",)),
)
def update_memory(scoped: Caller, memory_id: str, data: JsonBody) -> dict[str, Any]:
    """Change one of the caller's memories (``UpdateMemory``'s fields); answers the memory as stored."""
    updated = scoped.update_memory(UpdateMemory.from_json(with_path_id(data, "memory_id", memory_id)))
    return encode(scoped.get_memory(updated))


@router.delete("/v1/memories/{memory_id}", status_code=204, tags=["memories"], responses=responses(403, 404))
def delete_memory(scoped: Caller, memory_id: str) -> Response:
    """Forget one of the caller's memories."""
    if not scoped.delete_memory(memory_id):
        raise RecordNotFoundError(f"No memory found with id {memory_id!r}.")
    return Response(status_code=204)


@router.get(
    "/v1/memories/{memory_id}/history",
    response_model=HistoryAnswer,
    tags=["memories"],
    responses=responses(403, 404),
)
def memory_history(scoped: Caller, memory_id: str) -> dict[str, Any]:
    """A memory with its links to the caller's other memories: ``{"memory", "links", "related"}``."""
    return shapes.history(scoped.memory_history(memory_id))


@router.post(
    "/v1/search",
    response_model=SearchAnswer,
    tags=["search"],
    responses=responses(403),
    openapi_extra=body(SearchRequest),
)
def search(scoped: Caller, data: JsonBody) -> dict[str, Any]:
    """Search the caller's memory (``SearchRequest``'s fields; the user is the key's)."""
    results = scoped.search(scoped.search_request(data))
    return {"results": [shapes.result(r) for r in results]}
