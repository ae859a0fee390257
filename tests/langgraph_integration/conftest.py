"""Fixtures of the LangGraph / LangChain integration tests (all offline).

Every test module here starts with ``pytest.importorskip`` on LangChain / LangGraph (the optional
``langgraph`` extra), so without them the folder is skipped with that reason; this file imports
nothing of them. The test doubles live in ``lg_doubles.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import AgentMemory, MemoryExtractionConfig


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
