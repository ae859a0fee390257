"""Fixtures of the LangGraph / LangChain integration tests (all offline).

Every test module here starts with ``pytest.importorskip`` on LangChain / LangGraph (the optional
``langgraph`` extra), so without them the folder is skipped with that reason; this file imports
nothing of them. The test doubles live in ``lg_doubles.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from contract.conftest import ADAPTERS, StoreFactory, postgres_stock  # noqa: F401 - the factory's fixture
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.domain.ports import CheckpointStorage


@pytest.fixture
def memory() -> Iterator[AgentMemory]:
    """The offline client on the in-memory store with the shipped hashing embedder (fast and
    deterministic; what these tests check does not depend on embedding quality), heuristic
    summaries and links, and no automatic extraction: background extraction would add memories
    at times of its own, and these tests pin what the integration itself writes."""
    client = open_memory(
        embedder=HashingEmbedder(), memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(params=ADAPTERS)
def checkpoint_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of stores of one backend of the registry (the contract suite's
    ``StoreFactory``: new, reopen, open_again) that keeps graph checkpoints: every shipped store
    offers ``CheckpointStorage`` (ARCHITECTURE.md D41)."""
    factory = StoreFactory(request.param, tmp_path, request)
    try:
        assert isinstance(factory.new(), CheckpointStorage), f"the {request.param} store keeps no checkpoints"
        yield factory
    finally:
        factory.close_all()
