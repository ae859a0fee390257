"""Oracle adapter: administer_schema and registered_version, the public entry point of the
``palimpsest oracle install|check|upgrade`` commands, on the fake dictionary of test_schema."""

from __future__ import annotations

import pytest
from palimpsest.adapters.oracle import administer_schema, registered_version, store_label
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.oracle.schema import SCHEMA_VERSION, SchemaManager
from palimpsest.domain.errors import SchemaVersionError

from .test_schema import FakeOracle


def test_install_creates_every_object_once_and_reports_it() -> None:
    oracle = FakeOracle()
    assert registered_version(oracle.connection(), memory_store_id="acme") is None
    first = administer_schema(oracle.connection(), "install", memory_store_id="acme", dimension=8)
    assert first.created == len(SchemaManager(StoreNames("acme")).objects) + 1  # and the vector index
    assert (first.schema_version, first.dimension, first.has_vector_index) == (SCHEMA_VERSION, 8, True)
    again = administer_schema(oracle.connection(), "install", memory_store_id="acme")
    assert again.created == 0
    assert registered_version(oracle.connection(), memory_store_id="acme") == SCHEMA_VERSION


def test_check_validates_only_and_refuses_a_missing_store() -> None:
    oracle = FakeOracle()
    with pytest.raises(SchemaVersionError):
        administer_schema(oracle.connection(), "check", memory_store_id="acme")
    assert registered_version(oracle.connection(), memory_store_id="acme") is None
    administer_schema(oracle.connection(), "install", memory_store_id="acme")
    report = administer_schema(oracle.connection(), "check", memory_store_id="acme")
    assert (report.action, report.schema_version, report.created) == ("check", SCHEMA_VERSION, None)


def test_upgrade_moves_an_old_store_to_the_current_version_and_refuses_a_missing_one() -> None:
    oracle = FakeOracle()
    with pytest.raises(SchemaVersionError, match="is not installed"):
        administer_schema(oracle.connection(), "upgrade", memory_store_id="acme")
    manager = SchemaManager(StoreNames("acme"))
    oracle.install(manager, version=1, vector_index=True)
    oracle.register(manager.names, version=1)
    report = administer_schema(oracle.connection(), "upgrade", memory_store_id="acme")
    assert (report.previous_version, report.schema_version, report.upgraded) == (1, SCHEMA_VERSION, True)
    current = administer_schema(oracle.connection(), "upgrade", memory_store_id="acme")
    assert not current.upgraded


def test_the_store_label_names_the_store() -> None:
    assert store_label(None) == "the default Oracle memory store"
    assert store_label("acme") == "the Oracle memory store 'ACME'"
