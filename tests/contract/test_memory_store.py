"""Contract: MemoryStore — dimension, close, and the store-level vector checks."""

from __future__ import annotations

import pytest
from palimpsest.domain.errors import StoreClosedError, VectorDimensionError
from palimpsest.domain.ports import MemoryStore

from .builders import E1, ids, query, reading, record, seed


def test_a_configured_dimension_is_reported(store: MemoryStore) -> None:
    assert store.dimension == 4


def test_without_configuration_the_first_stored_vector_fixes_the_dimension(stores) -> None:
    store = stores.new(dimension=None)
    assert store.dimension is None
    seed(store, records=[(record("r1"), (1.0, 0.0, 0.0))])
    assert store.dimension == 3
    with store.unit_of_work() as uow, pytest.raises(VectorDimensionError):
        uow.records.add(record("r2"), embedding=E1)
    assert ids(store.search(query(vector=(1.0, 0.0, 0.0)))) == ["r1"]
    with pytest.raises(VectorDimensionError):
        store.search(query(vector=E1))


def test_closing_twice_is_harmless(store: MemoryStore) -> None:
    store.close()
    store.close()


def test_a_closed_store_refuses_new_units_of_work(store: MemoryStore) -> None:
    store.close()
    with pytest.raises(StoreClosedError), store.unit_of_work() as uow:
        uow.records.get("r1")


def test_a_closed_store_refuses_searches(store: MemoryStore) -> None:
    seed(store, records=[(record("r1"), E1)])
    store.close()
    with pytest.raises(StoreClosedError):
        store.search(query(vector=E1))


def test_an_entity_round_trips_unchanged_through_the_store(store: MemoryStore) -> None:
    metadata = {
        "text": "ünïcode ✓",
        "int": -7,
        "float": 0.125,
        "bool": True,
        "none": None,
        "list": [1, "two", False, None, {"x": [3]}],
        "nested": {"deep": {"deeper": "yes"}},
    }
    original = record("r1", "a fact with ✓ unicode", user_id="u", agent_id="a", metadata=metadata)
    seed(store, records=[original])
    with reading(store) as uow:
        stored = uow.records.get("r1")
    assert stored == original
    assert stored is not None and stored.created_at.utcoffset() is not None
    assert stored.metadata == metadata
    assert isinstance(stored.metadata["bool"], bool)
    assert isinstance(stored.metadata["int"], int) and not isinstance(stored.metadata["int"], bool)
