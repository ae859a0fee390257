"""The HTTP API's application: the routers, the bearer-key caller, the error mapping, the body
limit and the OpenAPI document with the typed bodies (ARCHITECTURE.md D44, D45).

No ``from __future__ import annotations`` in this package's route modules: FastAPI reads the
routes' annotations at definition time.
"""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import AgentMemoryError

from . import links, memories, threads
from .deps import BODY_SCHEMAS
from .errors import error_response, message_of, status_for
from .limits import MAX_BODY_BYTES, BodyLimit

__all__ = ["MAX_BODY_BYTES", "create_app", "status_for"]


def create_app(memory: AgentMemory, *, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The HTTP API over ``memory`` (the caller keeps it open while the app serves, and closes
    it); bodies over ``max_body_bytes`` (declared or, chunked, counted) are refused with 413."""
    app = FastAPI(title="palimpsest", summary="Durable memory for LLM agents, over HTTP.", version="1")
    app.state.memory = memory
    app.add_middleware(BodyLimit, limit=max_body_bytes)

    @app.exception_handler(AgentMemoryError)
    def _library_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AgentMemoryError)
        status = status_for(exc)
        return error_response(status, type(exc).__name__, message_of(exc, status))

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers with this, then re-raises for the server to log the traceback.
        return error_response(500, "InternalError", "internal error")

    @app.exception_handler(RequestValidationError)
    def _request_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(
            422,
            "ValidationError",
            "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in exc.errors()),
        )

    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """Liveness: no key needed, nothing read."""
        return {"status": "ok"}

    for module in (memories, threads, links):
        app.include_router(module.router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            document.setdefault("components", {}).setdefault("schemas", {}).update(BODY_SCHEMAS)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
