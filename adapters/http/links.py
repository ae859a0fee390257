"""The HTTP API's link routes: link two of the caller's memories, change a link, delete one."""

from typing import Any

from fastapi import APIRouter, Response
from palimpsest.application.requests import DeleteRecordLink, LinkRecords, UpdateRecordLink
from palimpsest.domain.errors import LinkNotFoundError

from .answers import IdAnswer
from .deps import Caller, JsonBody, body, with_path_id
from .errors import responses

__all__ = ["router"]

router = APIRouter()


@router.post(
    "/v1/links",
    response_model=IdAnswer,
    status_code=201,
    tags=["links"],
    responses=responses(403, 404, 409),
    openapi_extra=body(LinkRecords),
)
def link_records(scoped: Caller, data: JsonBody) -> dict[str, str]:
    """Link two of the caller's memories (``LinkRecords``'s fields): the link's id."""
    return {"id": scoped.link_records(LinkRecords.from_json(data))}


@router.patch(
    "/v1/links/{link_id}",
    response_model=IdAnswer,
    tags=["links"],
    responses=responses(403, 404, 409),
    openapi_extra=body(UpdateRecordLink, without=("relation_id",)),
)
def update_record_link(scoped: Caller, link_id: str, data: JsonBody) -> dict[str, Any]:
    """Change one of the caller's links (``UpdateRecordLink``'s fields): its id."""
    if not scoped.update_record_link(UpdateRecordLink.from_json(with_path_id(data, "relation_id", link_id))):
        raise LinkNotFoundError(f"No link found with id {link_id!r}.")
    return {"id": link_id}


@router.delete("/v1/links/{link_id}", status_code=204, tags=["links"], responses=responses(403, 404))
def delete_record_link(scoped: Caller, link_id: str) -> Response:
    """Delete one of the caller's links."""
    if not scoped.delete_record_link(DeleteRecordLink(relation_id=link_id)):
        raise LinkNotFoundError(f"No link found with id {link_id!r}.")
    return Response(status_code=204)
