"""Fixtures of the HTTP API tests: a client over an embedded file and a live server over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from palimpsest.application import AgentMemory

from .live import serving


@pytest.fixture
def memory(root_client: Callable[..., AgentMemory], tmp_path: Path) -> AgentMemory:
    return root_client(path=str(tmp_path / "memory.db"))


@pytest.fixture
def base_url(memory: AgentMemory) -> Iterator[str]:
    with serving(memory) as base:
        yield base
