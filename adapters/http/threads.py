"""The HTTP API's thread routes: create, list (cursor pages), get, delete, messages (append and
cursor pages), the context card and the summary."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from palimpsest.application.codec import encode
from palimpsest.application.requests import AppendMessages, CardRequest, CreateThread, ListThreads

from . import shapes
from .answers import CardAnswer, IdsAnswer, MessagePage, SummaryAnswer, Thread, ThreadPage
from .deps import Caller, JsonBody, body
from .errors import responses
from .memories import Cursor, Limit, given, query_filter

__all__ = ["MESSAGE_SCHEMA", "router"]

router = APIRouter()

MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"type": "string"},
        "content": {
            "description": "Text, or a list of content parts (text and images, as the library takes them).",
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}],
        },
        "name": {"type": ["string", "null"], "description": "The speaker's name."},
        "timestamp": {"type": ["string", "null"], "format": "date-time"},
        "metadata": {"type": ["object", "null"]},
        "id": {"type": ["string", "null"], "description": "Given for all messages of the call or for none."},
    },
}
"""One message of an append (the fields ``AppendMessages`` reads of each)."""


@router.post(
    "/v1/threads",
    response_model=Thread,
    status_code=201,
    tags=["threads"],
    responses=responses(403, 409),
    openapi_extra=body(CreateThread),
)
def create_thread(scoped: Caller, data: JsonBody) -> dict[str, Any]:
    """A new thread of the caller's (``CreateThread``'s fields; ``{}`` for the defaults)."""
    return encode(scoped.create_thread(CreateThread.from_json({} if data is None else data)))


@router.get("/v1/threads", response_model=ThreadPage, tags=["threads"], responses=responses(403))
def list_threads(
    scoped: Caller,
    limit: Limit = None,
    cursor: Cursor = None,
    agent_id: Annotated[str | None, Query(description="Only this agent's threads.")] = None,
    user_id: Annotated[str | None, Query(description="The caller's own user (any other is 422).")] = None,
    metadata_filter: Annotated[str | None, Query(description="A metadata filter, as a JSON object.")] = None,
) -> dict[str, Any]:
    """The caller's threads, oldest first, a page at a time: ``{"items", "next_cursor"}``."""
    request = ListThreads.from_json(
        {
            "user_id": scoped.principal.user_id,
            **given(user_id=user_id, agent_id=agent_id, metadata_filter=query_filter(metadata_filter)),
        }
    )
    return shapes.page(scoped.threads_page(request, limit=limit, cursor=cursor))


@router.get("/v1/threads/{thread_id}", response_model=Thread, tags=["threads"], responses=responses(403, 404))
def get_thread(scoped: Caller, thread_id: str) -> dict[str, Any]:
    """One of the caller's threads (404 for anyone else's, as for an absent one)."""
    return encode(scoped.get_thread(thread_id))


@router.delete("/v1/threads/{thread_id}", status_code=204, tags=["threads"], responses=responses(403, 404))
def delete_thread(scoped: Caller, thread_id: str) -> Response:
    """Delete one of the caller's threads with its messages and the memories scoped to it."""
    scoped.delete_thread(thread_id)
    return Response(status_code=204)


@router.post(
    "/v1/threads/{thread_id}/messages",
    response_model=IdsAnswer,
    status_code=201,
    tags=["threads"],
    responses=responses(403, 404, 409),
    openapi_extra=body(AppendMessages, overrides={"messages": {"type": "array", "items": MESSAGE_SCHEMA}}),
)
def add_messages(scoped: Caller, thread_id: str, data: JsonBody) -> dict[str, list[str]]:
    """Append messages to one of the caller's threads (``AppendMessages``'s fields): their ids."""
    return {"ids": scoped.add_messages(thread_id, AppendMessages.from_json(data))}


@router.get(
    "/v1/threads/{thread_id}/messages",
    response_model=MessagePage,
    tags=["threads"],
    responses=responses(403, 404),
)
def get_messages(
    scoped: Caller, thread_id: str, limit: Limit = None, cursor: Cursor = None
) -> dict[str, Any]:
    """A thread's visible messages in order (by ``seq``), a page at a time: ``{"items", "next_cursor"}``."""
    return shapes.page(scoped.messages_page(thread_id, limit=limit, cursor=cursor))


@router.post(
    "/v1/threads/{thread_id}/card",
    response_model=CardAnswer,
    tags=["threads"],
    responses=responses(403, 404),
    openapi_extra=body(CardRequest, required=False),
)
def context_card(scoped: Caller, thread_id: str, data: JsonBody) -> dict[str, Any]:
    """The context card of one of the caller's threads (``CardRequest``'s fields; no body or ``{}``: the defaults)."""
    return shapes.card(scoped.context_card(thread_id, CardRequest.from_json({} if data is None else data)))


@router.get(
    "/v1/threads/{thread_id}/summary",
    response_model=SummaryAnswer,
    tags=["threads"],
    responses=responses(403, 404),
)
def thread_summary(scoped: Caller, thread_id: str) -> dict[str, Any]:
    """The summary of one of the caller's threads: ``{"content", "topics"}``."""
    return shapes.summary(scoped.thread_summary(thread_id))
