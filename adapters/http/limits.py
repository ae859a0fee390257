"""The HTTP API's request-size limit: an ASGI wrapper answering 413 for a body over it."""

from collections.abc import MutableMapping
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import error_response

__all__ = ["MAX_BODY_BYTES", "BodyLimit"]

MAX_BODY_BYTES: Final = 1_048_576
"""The largest request body the API accepts by default (a larger one is 413)."""


_DRAIN_BYTES: Final = 8 * 1_048_576
"""How much of a refused body is read and dropped before the 413 (beyond it the connection is cut)."""


class BodyLimit:
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
        response = error_response(
            413, "RequestTooLarge", f"a request body may hold at most {self._limit} bytes."
        )
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
