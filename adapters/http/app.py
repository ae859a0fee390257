"""The HTTP API's application: routes, the bearer-key dependency and the error mapping.

No ``from __future__ import annotations`` here: FastAPI reads the routes' annotations, which name
the dependency defined inside :func:`create_app`, at definition time.
"""

from collections.abc import MutableMapping
from typing import Annotated, Any, Final

from fastapi import Body, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from palimpsest.application import AgentMemory, ScopedMemory
from palimpsest.application.codec import encode
from palimpsest.application.requests import AddMemory
from palimpsest.application.results import SearchResult
from palimpsest.domain.errors import (
    AgentMemoryError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RecordNotFoundError,
    StoreBusyError,
    ValidationError,
)
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MAX_BODY_BYTES", "create_app", "status_for"]

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


MAX_BODY_BYTES: Final = 1_048_576
"""The largest request body :func:`create_app` accepts by default (a larger one is 413)."""


_DRAIN_BYTES: Final = 8 * 1_048_576
"""How much of a refused body is read and dropped before the 413 (beyond it the connection is cut)."""


class _BodyLimit:
    """Refuses a request body over ``limit`` bytes with 413 before the application sees it: at
    once when its ``Content-Length`` says so, else (a chunked body) once the bytes read exceed
    it; a body within the limit is read here and handed on whole."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, more: bool) -> None:
        """Answer 413. The rest of the body is read and dropped first (up to a bound), so that
        the connection closes cleanly and the client reads the answer instead of a reset."""
        dropped = 0
        while more and dropped <= _DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            dropped += len(message.get("body", b""))
            more = bool(message.get("more_body", False))
        response = _error(413, "RequestTooLarge", f"a request body may hold at most {self._limit} bytes.")
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._limit):
            fits = declared.isdigit() and int(declared) <= self._limit + _DRAIN_BYTES
            await self._refuse(scope, receive, send, more=fits)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self._app(scope, _replay([message], receive), send)
                return
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                await self._refuse(scope, receive, send, more=bool(message.get("more_body", False)))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self._app(scope, _replay([whole], receive), send)


def _replay(messages: list[MutableMapping[str, Any]], receive: Receive) -> Receive:
    """A ``receive`` that answers ``messages`` first, then the server's own."""
    pending = list(messages)

    async def replayed() -> MutableMapping[str, Any]:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


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


def _responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route that needs a key (plus ``statuses``)."""
    return {
        s: {"model": ErrorBody, "description": _MEANINGS[s]} for s in sorted({401, 413, 422, 503, *statuses})
    }


def status_for(error: AgentMemoryError) -> int:
    """The status a library error answers with (500 for one no caller can fix)."""
    for kind, status in _STATUSES:
        if isinstance(error, kind):
            return status
    return 500


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def _headers(status: int) -> dict[str, str] | None:
    if status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if status == 503:
        return {"Retry-After": RETRY_AFTER_SECONDS}
    return None


def _result(result: SearchResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "record_type": result.record_type.value,
        "content": result.content,
        "relevance": result.relevance,
        "distance": result.distance,
        "record": encode(result.record),
    }


def create_app(memory: AgentMemory, *, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The HTTP API over ``memory`` (the caller keeps it open while the app serves, and closes
    it); bodies over ``max_body_bytes`` (declared or, chunked, counted) are refused with 413."""
    app = FastAPI(title="palimpsest", summary="Durable memory for LLM agents, over HTTP.")
    app.add_middleware(_BodyLimit, limit=max_body_bytes)
    bearer = HTTPBearer(auto_error=False, description="An API key (`palimpsest keys create`).")

    def caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> ScopedMemory:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise AuthenticationError("an API key is required (Authorization: Bearer <key>).")
        return memory.acting_for(memory.admin.api_keys.verify(credentials.credentials))

    Caller = Annotated[ScopedMemory, Depends(caller)]

    @app.exception_handler(AgentMemoryError)
    def _library_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AgentMemoryError)
        status = status_for(exc)
        if status == 500:  # nothing the caller can fix; the message may name the store's internals
            message = "internal error"
        elif isinstance(exc, KeyError) and exc.args:  # KeyError's str() quotes its message
            message = str(exc.args[0])
        else:
            message = str(exc)
        return _error(status, type(exc).__name__, message, _headers(status))

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers with this, then re-raises for the server to log the traceback.
        return _error(500, "InternalError", "internal error")

    @app.exception_handler(RequestValidationError)
    def _request_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _error(
            422,
            "ValidationError",
            "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in exc.errors()),
        )

    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """Liveness: no key needed, nothing read."""
        return {"status": "ok"}

    @app.post("/v1/memories", status_code=201, tags=["memories"], responses=_responses(403, 404, 409))
    def add_memory(scoped: Caller, body: Annotated[dict[str, Any], Body()]) -> dict[str, str]:
        """Store a memory as the caller's (``AddMemory``'s fields; the user is the key's)."""
        return {"id": scoped.add_memory(AddMemory.from_json(body))}

    @app.get("/v1/memories/{memory_id}", tags=["memories"], responses=_responses(403, 404))
    def get_memory(scoped: Caller, memory_id: str) -> dict[str, Any]:
        """One of the caller's memories (404 for anyone else's, as for an absent one)."""
        return encode(scoped.get_memory(memory_id))

    @app.delete(
        "/v1/memories/{memory_id}", status_code=204, tags=["memories"], responses=_responses(403, 404)
    )
    def delete_memory(scoped: Caller, memory_id: str) -> Response:
        """Forget one of the caller's memories."""
        if not scoped.delete_memory(memory_id):
            raise RecordNotFoundError(f"No memory found with id {memory_id!r}.")
        return Response(status_code=204)

    @app.post("/v1/search", tags=["search"], responses=_responses(403))
    def search(scoped: Caller, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        """Search the caller's memory (``SearchRequest``'s fields; the user is the key's)."""
        results = scoped.search(scoped.search_request(body))
        return {"results": [_result(r) for r in results]}

    return app
