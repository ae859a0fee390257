"""Driving adapter: the HTTP API (FastAPI on uvicorn; the ``server`` extra).

:func:`create_app` builds the application over one client: a bearer API key
(``memory.admin.api_keys``) names the caller, every call goes through
``memory.acting_for(principal)`` (ARCHITECTURE.md D44), and the library's typed errors become
statuses with one JSON shape, ``{"error": {"type", "message"}}``.
"""

from __future__ import annotations

from .app import MAX_BODY_BYTES, create_app, status_for

__all__ = ["MAX_BODY_BYTES", "create_app", "status_for"]
