"""The HTTP API in uvicorn worker processes: each process opens its own client on the store.

``palimpsest serve http --workers K`` cannot hand one open client to K processes. It puts the
server's settings in the environment (:meth:`ServeSettings.to_environment`) and runs uvicorn
with the import string :data:`APP_FACTORY` (``factory=True``): every worker process calls
:func:`app_from_environment`, which opens a client of its own on the store, from the
composition root's ``"serve"`` profile, and closes it when the server shuts down (after the
requests under way are answered). The processes share nothing but the store: an embedded
file (its write lock; a write that stays busy past the store's retries is a 503 with
Retry-After) or a PostgreSQL server.

Extraction runs in extraction workers by default (``extraction="workers"``, ARCHITECTURE.md
D34): an append records its extraction job with its messages and returns; ``palimpsest worker``
beside the server runs the jobs. ``extraction="inline"`` runs them in the server process
itself, in the client's background threads, with the extractor named by ``extractor``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI
from palimpsest.adapters.backends import StoreLocation, parse_store_location
from palimpsest.adapters.bootstrap import EXTRACTORS, build_container, open_client
from palimpsest.adapters.embedder_choice import EmbedderChoice
from palimpsest.application import AgentMemory, ExtractionRunsIn
from palimpsest.domain.errors import ConfigurationError

from .app import MAX_BODY_BYTES, create_app

__all__ = ["APP_FACTORY", "EXTRACTION_MODES", "ServeSettings", "app_from_environment", "serving_app"]

APP_FACTORY: Final = "palimpsest.adapters.http.serve:app_from_environment"
"""What uvicorn imports in each worker process (with ``factory=True``)."""

EXTRACTION_MODES: Final = ("workers", "inline")
"""Where the server's extraction jobs run: extraction worker processes, or the server itself."""

_PREFIX: Final = "PALIMPSEST_SERVE_"
_FIELDS: Final = ("store", "memory_store_id", "embedder", "extraction", "extractor", "max_body_bytes")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """What every server process opens: ``store`` (a path or a URL, as ``--store``), an optional
    ``memory_store_id`` for a store in a database, the ``embedder`` choice that follows the
    store, where extraction runs and with which extractor, and the request body limit."""

    store: str
    memory_store_id: str | None = None
    embedder: str = EmbedderChoice.AUTO.value
    extraction: str = "workers"
    extractor: str = "heuristic"
    max_body_bytes: int = MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if not isinstance(self.store, str) or not self.store:
            raise ConfigurationError("the server needs a store (a path or a URL).")
        if self.extraction not in EXTRACTION_MODES:
            raise ConfigurationError(f"extraction must be one of {', '.join(EXTRACTION_MODES)}, got {self.extraction!r}.")
        if self.extractor not in EXTRACTORS:
            raise ConfigurationError(f"extractor must be one of {', '.join(EXTRACTORS)}, got {self.extractor!r}.")
        if isinstance(self.max_body_bytes, bool) or not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1:
            raise ConfigurationError("max_body_bytes must be a positive integer.")

    def to_environment(self) -> dict[str, str]:
        """The environment variables :meth:`from_environment` reads back (unset ones omitted)."""
        values = {name: getattr(self, name) for name in _FIELDS}
        return {_PREFIX + name.upper(): str(value) for name, value in values.items() if value is not None}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ServeSettings:
        """The settings a server process was started with; ``ConfigurationError`` when they are
        missing or do not parse."""
        env = os.environ if environ is None else environ
        given: dict[str, Any] = {name: env[_PREFIX + name.upper()] for name in _FIELDS if _PREFIX + name.upper() in env}
        if "store" not in given:
            raise ConfigurationError(f"no store for the server: set {_PREFIX}STORE (palimpsest serve http does).")
        if "max_body_bytes" in given:
            try:
                given["max_body_bytes"] = int(given["max_body_bytes"])
            except ValueError:
                raise ConfigurationError(f"{_PREFIX}MAX_BODY_BYTES must be an integer.") from None
        return cls(**given)

    def location(self) -> StoreLocation:
        """The store's location (which must exist: a server creates no store)."""
        location = parse_store_location(self.store)
        if location.path is None and location.connection is None:
            raise ConfigurationError("a server needs a store file or a database: in memory, each process would have its own.")
        if location.path is not None and not Path(location.path).is_file():
            raise ConfigurationError(f"no store file at {location.path} (a server creates no store).")
        if self.memory_store_id is not None:
            if location.connection is None:
                raise ConfigurationError("memory_store_id applies to stores in a database (a URL).")
            location = replace(location, connection=replace(location.connection, memory_store_id=self.memory_store_id))
        return location.requiring_existing()

    def open_client(self) -> AgentMemory:
        """A client of this process on the store: the ``"serve"`` profile, extraction left to
        workers (no extractor here) or run inline with the named extractor."""
        to_workers = self.extraction == "workers"
        container = build_container(
            self.location(),
            profile="serve",
            embedder_choice=self.embedder,
            extractor_choice=self.extractor,
            overrides={"extractor": None} if to_workers else None,
        )
        runs_in = ExtractionRunsIn.WORKERS if to_workers else ExtractionRunsIn.CLIENT
        return open_client(container, extraction_runs_in=runs_in)


def serving_app(memory: AgentMemory, *, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The HTTP API over ``memory``, which it owns: the client is closed when the server shuts
    down (uvicorn's lifespan, after the requests under way have been answered)."""
    app = create_app(memory, max_body_bytes=max_body_bytes)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            memory.close()

    app.router.lifespan_context = lifespan
    return app


def app_from_environment() -> FastAPI:
    """The factory every server process calls (:data:`APP_FACTORY`): its own client on the
    store named by the environment (:meth:`ServeSettings.from_environment`)."""
    settings = ServeSettings.from_environment()
    return serving_app(settings.open_client(), max_body_bytes=settings.max_body_bytes)
