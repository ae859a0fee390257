"""Fixtures of the LangGraph / LangChain integration tests (all offline).

Every test module here starts with ``pytest.importorskip`` on LangChain / LangGraph (the optional
``langgraph`` extra), so without them the folder is skipped with that reason; this file imports
nothing of them. The test doubles live in ``lg_doubles.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from palimpsest.adapters import open_memory
from palimpsest.application import AgentMemory


@pytest.fixture
def memory() -> Iterator[AgentMemory]:
    """The offline client (MiniLM when installed, heuristics) on the in-memory store."""
    client = open_memory()
    try:
        yield client
    finally:
        client.close()
