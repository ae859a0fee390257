"""Contract: StoreDiagnostics — every store reports its schema state, and an open store is current."""

from __future__ import annotations

import pytest
from palimpsest.domain.ports import MemoryStore, StoreDiagnostics

from .conftest import StoreFactory


def test_every_store_offers_diagnostics_and_an_open_store_is_at_the_newest_schema(store: MemoryStore) -> None:
    assert isinstance(store, StoreDiagnostics)
    state = store.schema_state()
    assert state.is_current and not state.needs_migration and not state.is_newer
    assert (state.version is None) == (state.latest is None)


def test_a_reopened_store_reports_the_same_schema(stores: StoreFactory) -> None:
    first = stores.new()
    state = first.schema_state()  # type: ignore[attr-defined]
    assert stores.reopen(first).schema_state() == state  # type: ignore[attr-defined]


def test_a_stored_schema_is_read_without_opening_its_store(
    stores: StoreFactory, request: pytest.FixtureRequest
) -> None:
    """``doctor`` reads a schema without opening (and so migrating) its store: the embedded
    store's file, the PostgreSQL store's schema by URL."""
    if stores.adapter not in ("embedded", "postgres"):
        pytest.skip(f"the {stores.adapter} store has no schema to read without opening it")
    store = stores.new()
    state = store.schema_state()  # type: ignore[attr-defined]
    assert state.version is not None and state.version >= 1
    if stores.adapter == "embedded":
        from palimpsest.adapters.embedded import read_schema_state

        assert read_schema_state(store.path) == state  # type: ignore[attr-defined]
        return
    from palimpsest.adapters.postgres import read_schema_state as read_postgres_schema

    url = request.getfixturevalue("postgres_target").url
    assert read_postgres_schema(url, memory_store_id=store.memory_store_id) == state  # type: ignore[attr-defined]
    assert read_postgres_schema(url, memory_store_id="NeverMade").version is None
