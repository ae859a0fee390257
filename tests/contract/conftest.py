"""The one store fixture of the contract suite, parametrised over every adapter.

Every contract test takes ``store`` (an empty store of dimension 4) and so runs once per
adapter. An adapter whose module is not written yet is skipped with a reason; once the module
exists, any import error is a real error. The Oracle parameter runs against ``ORACLE_DSN`` or
a container on a Docker engine, and otherwise skips at once with one reason
(``tests/oracle_database.py``, fixtures in ``tests/conftest.py``); each Oracle store is a fresh ``memory_store_id``, dropped afterwards.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from palimpsest.domain.ports import MemoryStore

from .builders import DIMENSION


def _adapter_class(module_name: str, class_name: str) -> Any:
    """The adapter class, or a skip when its module has not been written yet."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            pytest.skip(f"{module_name} does not exist yet (adapter not written)")
        raise
    if getattr(module, "__file__", None) is None and not hasattr(module, class_name):
        # An empty directory imports as a namespace package: the adapter is not written yet.
        pytest.skip(f"{module_name} is still an empty package (adapter not written)")
    return getattr(module, class_name)  # AttributeError here is a real defect of the adapter


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
        self._open: Callable[[Any, int | None], MemoryStore]
        if adapter == "memory":
            cls = _adapter_class("palimpsest.adapters.memory", "InMemoryStore")
            self._open = lambda _location, dimension: cls(dimension=dimension)
            self.persistent = False
        elif adapter == "embedded":
            cls = _adapter_class("palimpsest.adapters.embedded", "EmbeddedStore")
            self._open = lambda location, dimension: cls(location, dimension=dimension)
            self.persistent = True
        elif adapter == "oracle":
            assert request is not None
            pool = request.getfixturevalue("oracle_pool")  # skips when no database answers
            cls = _adapter_class("palimpsest.adapters.oracle", "OracleStore")
            self._open = lambda store_id, dimension: cls(pool, memory_store_id=store_id, dimension=dimension)
            self._oracle_pool = pool
            self.persistent = True
        else:  # pragma: no cover - a typo in the parameter list
            raise AssertionError(f"unknown adapter {adapter!r}")

    def _location(self) -> Any:
        self._count += 1
        if self.adapter == "oracle":
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
        if self.adapter == "oracle":
            from palimpsest.adapters.oracle.names import StoreNames
            from palimpsest.adapters.oracle.schema import SchemaManager

            connection = self._oracle_pool.acquire()
            try:
                for store_id in sorted(set(self._locations.values())):
                    SchemaManager(StoreNames(store_id)).drop(connection)
            finally:
                self._oracle_pool.release(connection)


ADAPTERS = [
    pytest.param("memory", id="memory"),
    pytest.param("embedded", id="embedded"),
    pytest.param("oracle", id="oracle", marks=pytest.mark.oracle),
]


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
