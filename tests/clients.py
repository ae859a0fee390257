"""Clients for tests, built by the composition root with its providers overridden.

:func:`build_client` is how a test gets an ``AgentMemory``: the same container as
``open_memory`` and the command line, with every model port replaced by what the test
passes. A port the test leaves out is absent (``None``), exactly as with the
``AgentMemory`` constructor, so a test states each double it relies on (a hashing embedder,
a scripted extractor, a ``ManualClock``). The store is the one passed in (left open by
``close()``, unless ``close_store=True``), or one the root opens from ``path``/``backend``
and closes with the client.
"""

from __future__ import annotations

import os
from typing import Any

from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.domain.ports import Clock, MemoryStore

__all__ = ["build_client"]


def build_client(
    store: MemoryStore | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    backend: str | None = None,
    embedder: Any = None,
    summariser: Any = None,
    extractor: Any = None,
    link_resolver: Any = None,
    clock: Clock | None = None,
    memory_extraction_config: MemoryExtractionConfig | None = None,
    **client_options: Any,
) -> AgentMemory:
    """A client from the root: the given ports, ``None`` for the others (the clock defaults
    to the system clock); other keywords go to ``AgentMemory``."""
    overrides: dict[str, Any] = {
        "embedder": embedder,
        "summariser": summariser,
        "extractor": extractor,
        "link_resolver": link_resolver,
        "memory_extraction_config": memory_extraction_config,
    }
    if clock is not None:
        overrides["clock"] = clock
    if store is not None:
        overrides["store"] = store
    container = build_container(path, backend=backend, overrides=overrides)
    return open_client(container, **client_options)
