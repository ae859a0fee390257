"""Fixtures of the public-API suite: a store per adapter, a manual clock, and client builders.

Most tests take ``store`` and so run once on ``InMemoryStore()`` and once on
``EmbeddedStore(tmp_path / "m.db")``. ``helpers.snapshot(store)`` captures everything a client can have
written (threads, messages, records, links, summaries, store settings), expired rows
included, so "nothing was written" is a plain equality of two snapshots.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory
from palimpsest.domain.ports import MemoryStore

from .helpers import NO_EXTRACTION, START


@pytest.fixture(params=["memory", "embedded"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    opened: MemoryStore = InMemoryStore() if request.param == "memory" else EmbeddedStore(tmp_path / "m.db")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def memory_store() -> Iterator[InMemoryStore]:
    """Only the in-memory store, for tests about arguments rather than storage."""
    opened = InMemoryStore()
    yield opened
    opened.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


ClientFactory = Callable[..., AgentMemory]


@pytest.fixture
def make_client(store: MemoryStore, clock: ManualClock) -> ClientFactory:
    """``make_client(**overrides)``: a client from the composition root on ``store`` with a
    hashing embedder, the manual clock and extraction disabled, unless overridden."""

    def build(**overrides: Any) -> AgentMemory:
        options: dict[str, Any] = {
            "store": store,
            "embedder": HashingEmbedder(),
            "clock": clock,
            "memory_extraction_config": NO_EXTRACTION,
        }
        options.update(overrides)
        return build_client(**options)

    return build


@pytest.fixture
def memory(make_client: ClientFactory) -> AgentMemory:
    return make_client()


@pytest.fixture(scope="package", autouse=True)
def _long_lived_objects_frozen() -> Iterator[None]:
    """Freeze what is alive before this package runs (pytest, imported modules) for its duration.

    ``EmbeddedStore`` ends every cache rebuild — each open, even of an empty file — with a
    full ``gc.collect()`` (deliberately: see ``_collector_paused`` in the adapter). In a test
    process that pass rescans every pytest object, ~60 ms per store, which doubled this
    package's run time. Frozen objects are skipped by the collector; nothing tested changes.
    """
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
