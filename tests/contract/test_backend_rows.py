"""The contract suite's store fixture is generic: one parameter per row of the backend table, and
each pooled row's stores dropped by that row's own ``drop_stores`` hook (no backend named here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters.backends import BACKENDS
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.domain import StoreClosedError

from . import conftest
from .conftest import ADAPTERS, StoreFactory


def test_every_backend_row_is_a_parameter_and_a_pooled_one_carries_its_marker() -> None:
    assert [param.id for param in ADAPTERS] == list(BACKENDS)
    for param in ADAPTERS:
        assert param.id is not None
        marks = [mark.name for mark in param.marks]
        assert marks == ([param.id] if BACKENDS[param.id].pooled else [])


class _Request:
    """What the factory asks pytest for: the ``<row>_pool`` fixture."""

    def __init__(self, pool: object) -> None:
        self.pool = pool
        self.asked: list[str] = []

    def getfixturevalue(self, name: str) -> object:
        self.asked.append(name)
        return self.pool


def test_a_pooled_rows_stores_are_opened_on_its_pool_and_dropped_by_its_own_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[dict[str, Any]] = []
    dropped: list[tuple[object, list[str]]] = []

    def open_store(*, pool: object, memory_store_id: str, dimension: int | None) -> InMemoryStore:
        opened.append({"pool": pool, "memory_store_id": memory_store_id})
        return InMemoryStore(dimension=dimension)

    row = dataclasses.replace(
        BACKENDS["oracle"],
        name="elsewhere",
        open_store=open_store,
        drop_stores=lambda pool, ids: dropped.append((pool, list(ids))),
    )
    monkeypatch.setattr(conftest, "BACKENDS", {**BACKENDS, "elsewhere": row})
    request = _Request(pool="the pool")
    factory = StoreFactory("elsewhere", tmp_path, request)  # type: ignore[arg-type]
    first, second = factory.new(), factory.new()
    factory.open_again(first)
    factory.close_all()
    assert request.asked == ["elsewhere_pool"]
    assert [call["pool"] for call in opened] == ["the pool"] * 3
    ids = [call["memory_store_id"] for call in opened]
    assert ids[0] == ids[2] != ids[1]
    assert dropped == [("the pool", sorted({ids[0], ids[1]}))]
    for store in (first, second):
        with pytest.raises(StoreClosedError):
            store.reading().__enter__()
