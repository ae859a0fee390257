"""The HTTP API's error answers: one JSON shape, the status each library error maps to, and
what each route documents it may answer (ARCHITECTURE.md D45)."""

from typing import Any, Final

from fastapi.responses import JSONResponse
from palimpsest.domain.errors import (
    AgentMemoryError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    StoreBusyError,
    ValidationError,
)
from pydantic import BaseModel

__all__ = ["RETRY_AFTER_SECONDS", "ErrorBody", "error_response", "message_of", "responses", "status_for"]

RETRY_AFTER_SECONDS: Final = "1"
"""What a 503 (the store stayed busy past its retries) asks the caller to wait, in seconds."""

_STATUSES: Final[tuple[tuple[type[AgentMemoryError], int], ...]] = (
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (ValidationError, 422),
    (StoreBusyError, 503),
)


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    """Every error's body: ``{"error": {"type": <the error's class>, "message": ...}}``."""

    error: ErrorDetail


_MEANINGS: Final = {
    401: "No, a malformed, unknown or revoked API key (WWW-Authenticate: Bearer).",
    403: "The key's scope does not allow this call.",
    404: "No such record for the caller (another user's is not found either).",
    409: "Conflicts with a stored record (an id in use).",
    413: "The request body is too large.",
    422: "The request is not valid.",
    503: "The store stayed busy; retry after Retry-After seconds.",
}

_HEADERS: Final[dict[int, dict[str, Any]]] = {
    401: {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
    503: {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "string"}}},
}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route that needs a key: 401, 413, 422 and 503, plus ``statuses``."""
    documented: dict[int | str, dict[str, Any]] = {}
    for status in sorted({401, 413, 422, 503, *statuses}):
        answer: dict[str, Any] = {"model": ErrorBody, "description": _MEANINGS[status]}
        if status in _HEADERS:
            answer["headers"] = _HEADERS[status]
        documented[status] = answer
    return documented


def status_for(error: AgentMemoryError) -> int:
    """The status a library error answers with (500 for one no caller can fix)."""
    for kind, status in _STATUSES:
        if isinstance(error, kind):
            return status
    return 500


def message_of(error: AgentMemoryError, status: int) -> str:
    """What an error answer says: the error's message, or nothing of it for a 500."""
    if status == 500:  # nothing the caller can fix; the message may name the store's internals
        return "internal error"
    return str(error)  # NotFoundError (a KeyError) gives its plain sentence, unquoted


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    """An error answer in the one shape, with the header its status needs."""
    headers: dict[str, str] | None = None
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    elif status == 503:
        headers = {"Retry-After": RETRY_AFTER_SECONDS}
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)
