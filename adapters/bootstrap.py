"""Adapters layer: the one composition root, wiring stores, models, clock and the client.

The dependency-injector container never leaks inward: application and domain code receive
plain constructor arguments. Users call :func:`open_memory` (or :func:`open_memory_service`
for the bare record/link service); tests may build the container themselves and
``override`` any provider with a fake.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from dependency_injector import containers, providers

from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryService
from palimpsest.domain.errors import ConfigurationError

from .clock import SystemClock
from .memory import InMemoryStore

__all__ = ["Container", "open_memory", "open_memory_service"]


def _embedded_store(path: str | os.PathLike[str], dimension: int | None) -> Any:
    # Imported lazily: choosing the in-memory backend must not load numpy/networkx/sqlite.
    from .embedded import EmbeddedStore

    return EmbeddedStore(path, dimension=dimension)


def _offline_embedder() -> Any:
    """MiniLM on numpy when its packages and weights are installed, else ``None``."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401

        from .minilm import MiniLMEmbedder, find_model_folder

        find_model_folder(None)
    except Exception:  # not installed: keyword search still works
        return None
    return MiniLMEmbedder()


def _heuristic(name: str) -> Any:
    from . import heuristic

    return getattr(heuristic, name)()


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

    # Model capabilities: the best offline defaults available. The local MiniLM embedder when
    # its weights are installed (else keyword search only), and the honest heuristics for
    # extraction, summaries and links; every one can be overridden with a model adapter.
    embedder = providers.Singleton(_offline_embedder)
    summariser = providers.Singleton(_heuristic, "TextRankSummariser")
    extractor = providers.Singleton(_heuristic, "HeuristicExtractor")
    link_resolver = providers.Singleton(_heuristic, "RuleLinkResolver")


def _chosen_backend(path: object, backend: str | None) -> str:
    chosen = backend or ("embedded" if path is not None else "memory")
    if chosen not in ("embedded", "memory"):
        raise ConfigurationError(f"backend must be 'embedded' or 'memory', got {chosen!r}.")
    if chosen == "embedded" and path is None:
        raise ConfigurationError("the embedded backend needs a path for its store file.")
    return chosen


def open_memory_service(
    path: str | os.PathLike[str] | None = None,
    *,
    backend: Literal["embedded", "memory"] | None = None,
    dimension: int | None = None,
) -> tuple[MemoryService, Container]:
    """A ready service; call ``container.shutdown_resources()`` (or ``close`` the store) when done.

    ``backend`` defaults to ``"embedded"`` when a ``path`` is given, else ``"memory"``.
    """
    chosen = _chosen_backend(path, backend)
    container = Container()
    container.config.from_dict({"backend": chosen, "path": str(path) if path else None, "dimension": dimension})
    container.init_resources()
    return container.memory_service(), container


def open_memory(
    path: str | os.PathLike[str] | None = None,
    *,
    backend: Literal["embedded", "memory"] | None = None,
    store: Any = None,
    embedder: Any = None,
    summariser: Any = None,
    extractor: Any = None,
    link_resolver: Any = None,
    clock: Any = None,
    memory_extraction_config: MemoryExtractionConfig | None = None,
    **client_options: Any,
) -> AgentMemory:
    """An ``AgentMemory`` on the embedded store at ``path`` (or in memory without a path).

    Defaults are offline: the MiniLM embedder when installed, and the heuristic extractor,
    summariser and link resolver. Every port can be overridden by keyword (``store``,
    ``embedder``, ``summariser``, ``extractor``, ``link_resolver``, ``clock``); other keywords
    go to ``AgentMemory``. Closing the client closes a store that ``open_memory`` created (not
    one passed in).
    """
    container = Container()
    owns_store = store is None
    if owns_store:
        chosen = _chosen_backend(path, backend)
        container.config.from_dict({"backend": chosen, "path": str(path) if path else None, "dimension": None})
        store = container.raw_store()
    elif path is not None or backend is not None:
        raise ConfigurationError("pass either a store or a path/backend, not both.")
    for name, override in (
        ("embedder", embedder),
        ("summariser", summariser),
        ("extractor", extractor),
        ("link_resolver", link_resolver),
        ("clock", clock),
    ):
        if override is not None:
            getattr(container, name).override(providers.Object(override))
    chosen_extractor = container.extractor()
    if memory_extraction_config is None and chosen_extractor is None:
        memory_extraction_config = MemoryExtractionConfig(extract_memories=False)
    try:
        return AgentMemory(
            store=store,
            embedder=container.embedder(),
            summariser=container.summariser(),
            extractor=chosen_extractor,
            link_resolver=container.link_resolver(),
            clock=container.clock(),
            memory_extraction_config=memory_extraction_config,
            close_store=owns_store,
            **client_options,
        )
    except BaseException:
        if owns_store:
            store.close()
        raise
