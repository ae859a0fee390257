"""The one store fixture of the contract suite, parametrised over every backend.

Every contract test takes ``store`` (an empty store of dimension 4) and so runs once per row
of the backend registry (``palimpsest.adapters.backends.BACKENDS``, the table the composition
root opens stores with), each store opened by that row's own ``open_store``. A pooled backend
is marked with its name and runs on its session pool (``<name>_pool`` in ``tests/conftest.py``):
PostgreSQL on the session's server (``tests/postgres_server.py``: ``PALIMPSEST_POSTGRES_URL``,
else a private server, in the default run too), Oracle on ``ORACLE_DSN`` or a container on a
Docker engine, and otherwise skips at once with one reason (``tests/oracle_database.py``); each
of its stores is a fresh ``memory_store_id``, dropped afterwards by the row's own
``drop_stores`` hook.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters.backends import BACKENDS
from palimpsest.domain.ports import MemoryStore

from .builders import DIMENSION


class StoreFactory:
    """Opens stores of one adapter; closes all of them at teardown.

    ``persistent`` adapters can :meth:`reopen` a store (same location, new instance) and
    :meth:`open_again` a second live instance on the same location.
    """

    def __init__(self, adapter: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> None:
        self.adapter = adapter
        self._tmp_path = tmp_path
        self._opened: list[MemoryStore] = []
        self._locations: dict[int, Any] = {}
        self._count = 0
        backend = BACKENDS[adapter]
        self.persistent = backend.persistent
        self._open: Callable[[Any, int | None], MemoryStore]
        if backend.pooled:
            assert request is not None
            pool = request.getfixturevalue(f"{adapter}_pool")  # skips when no database answers
            self._pool = pool
            self._open = lambda store_id, dimension: backend.open_store(
                pool=pool, memory_store_id=store_id, dimension=dimension
            )
        elif backend.location == "path":
            self._open = lambda location, dimension: backend.open_store(path=location, dimension=dimension)
        else:
            self._open = lambda _location, dimension: backend.open_store(dimension=dimension)

    def _location(self) -> Any:
        self._count += 1
        if BACKENDS[self.adapter].location == "memory_store_id":
            return f"T{uuid.uuid4().hex[:12].upper()}"  # a fresh memory_store_id per store
        return self._tmp_path / f"store{self._count}.db"

    def _track(self, store: MemoryStore, location: Any) -> MemoryStore:
        self._opened.append(store)
        self._locations[id(store)] = location
        return store

    def new(self, dimension: int | None = DIMENSION) -> MemoryStore:
        """A new, empty store."""
        location = self._location()
        return self._track(self._open(location, dimension), location)

    def open_again(self, store: MemoryStore, dimension: int | None = DIMENSION) -> MemoryStore:
        """A second live instance on the same location as ``store`` (persistent adapters)."""
        if not self.persistent:
            pytest.skip(f"the {self.adapter} adapter keeps its data in one instance only")
        location = self._locations[id(store)]
        return self._track(self._open(location, dimension), location)

    def reopen(self, store: MemoryStore, dimension: int | None = DIMENSION) -> MemoryStore:
        """Close ``store`` and open its location again (persistent adapters)."""
        if not self.persistent:
            pytest.skip(f"the {self.adapter} adapter does not persist across instances")
        store.close()
        return self.open_again(store, dimension)

    def close_all(self) -> None:
        for store in reversed(self._opened):
            store.close()
        drop_stores = BACKENDS[self.adapter].drop_stores
        if drop_stores is not None:  # a backend whose stores outlive their instances drops its own
            drop_stores(self._pool, sorted(set(self._locations.values())))


ADAPTERS = [
    pytest.param(name, id=name, marks=getattr(pytest.mark, name) if backend.pooled else ())
    for name, backend in BACKENDS.items()
]
"""One parameter per registered backend; a pooled one carries its own marker (``-m oracle``)."""


@pytest.fixture(params=ADAPTERS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of stores of one adapter (new, reopen, open_again)."""
    factory = StoreFactory(request.param, tmp_path, request)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture
def store(stores: StoreFactory) -> MemoryStore:
    """An empty store of dimension 4, closed after the test."""
    return stores.new(DIMENSION)
