"""Fixtures of the embedded-adapter tests: a fresh store file per test, closed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore

from .helpers import DIMENSION


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def open_store(path: Path) -> Iterator[Callable[..., EmbeddedStore]]:
    """Opens stores on ``path`` (dimension 4 unless told otherwise); all closed at teardown."""
    opened: list[EmbeddedStore] = []

    def factory(**kwargs: object) -> EmbeddedStore:
        kwargs.setdefault("dimension", DIMENSION)
        store = EmbeddedStore(path, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield factory
    for store in reversed(opened):
        store.close()


@pytest.fixture
def store(open_store: Callable[..., EmbeddedStore]) -> EmbeddedStore:
    return open_store()
