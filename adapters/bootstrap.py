"""Adapters layer: the one composition root, wiring stores, clock and services.

The dependency-injector container never leaks inward: application and domain code receive
plain constructor arguments. Users call :func:`open_memory_service`; tests may build the
container themselves and ``override`` any provider with a fake.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from dependency_injector import containers, providers

from palimpsest.application import MemoryService
from palimpsest.domain.errors import ConfigurationError

from .clock import SystemClock
from .memory import InMemoryStore

__all__ = ["Container", "open_memory_service"]


def _embedded_store(path: str | os.PathLike[str], dimension: int | None) -> Any:
    # Imported lazily: choosing the in-memory backend must not load numpy/networkx/sqlite.
    from .embedded import EmbeddedStore

    return EmbeddedStore(path, dimension=dimension)


def _resource(store: Any) -> Any:
    try:
        yield store
    finally:
        store.close()


class Container(containers.DeclarativeContainer):
    """``config.backend`` selects ``"embedded"`` (default) or ``"memory"``."""

    config = providers.Configuration()

    clock = providers.Singleton(SystemClock)

    raw_store = providers.Selector(
        config.backend,
        embedded=providers.Singleton(_embedded_store, path=config.path, dimension=config.dimension),
        memory=providers.Singleton(InMemoryStore, dimension=config.dimension),
    )

    store = providers.Resource(_resource, raw_store)

    memory_service = providers.Singleton(MemoryService, store=store, clock=clock)


def open_memory_service(
    path: str | os.PathLike[str] | None = None,
    *,
    backend: Literal["embedded", "memory"] | None = None,
    dimension: int | None = None,
) -> tuple[MemoryService, Container]:
    """A ready service; call ``container.shutdown_resources()`` (or ``close`` the store) when done.

    ``backend`` defaults to ``"embedded"`` when a ``path`` is given, else ``"memory"``.
    """
    chosen = backend or ("embedded" if path is not None else "memory")
    if chosen not in ("embedded", "memory"):
        raise ConfigurationError(f"backend must be 'embedded' or 'memory', got {chosen!r}.")
    if chosen == "embedded" and path is None:
        raise ConfigurationError("the embedded backend needs a path for its store file.")
    container = Container()
    container.config.from_dict({"backend": chosen, "path": str(path) if path else None, "dimension": dimension})
    container.init_resources()
    return container.memory_service(), container
