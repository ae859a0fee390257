"""The Postgres store's schema on a real server: one schema per store, versioned migrations,
the vector column and its HNSW index, refusal of a newer schema, diagnostics."""

from __future__ import annotations

import threading

import psycopg
import pytest
from palimpsest.adapters.postgres import read_schema_state
from palimpsest.adapters.postgres.schema import LATEST_VERSION, MIGRATIONS, schema_name
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError
from palimpsest.domain.ports import StoreDiagnostics
from psycopg import sql

from .conftest import StoreFactory


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}


def _versions(url: str, schema: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [
            row[0]
            for row in conn.execute(
                sql.SQL("SELECT version FROM {}.schema_version ORDER BY version").format(sql.Identifier(schema))
            )
        ]


def test_a_new_store_gets_its_own_schema_at_the_newest_version(stores: StoreFactory) -> None:
    core = stores.open()
    assert core.schema.startswith("palimpsest_t")
    assert _versions(stores.url, core.schema) == [m.version for m in MIGRATIONS]
    assert {"threads", "messages", "records", "links", "summaries", "settings", "extraction_jobs",
            "keyword_documents", "keyword_postings", "keyword_terms", "keyword_totals", "schema_version",
            "meta"} <= _tables(stores.url, core.schema)
    state = core.schema_state()
    assert isinstance(core, StoreDiagnostics)
    assert (state.version, state.latest, state.is_current) == (LATEST_VERSION, LATEST_VERSION, True)


def test_two_stores_of_one_database_never_share_rows(stores: StoreFactory) -> None:
    first, second = stores.open(), stores.open()
    with first.transaction() as conn:
        conn.execute("INSERT INTO settings (key, value) VALUES ('k', '1')")
    with second.transaction() as conn:
        assert conn.execute("SELECT count(*) FROM settings").fetchone() == (0,)


def test_reopening_a_current_store_applies_nothing_again(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    stores.open(store_id).close()
    again = stores.open(store_id)
    assert _versions(stores.url, again.schema) == [m.version for m in MIGRATIONS]


def test_an_older_schema_is_migrated_one_version_at_a_time(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    old = stores.open(store_id, schema_version=1)
    assert old.schema_state().needs_migration
    assert "keyword_postings" not in _tables(stores.url, old.schema)
    with old.transaction() as conn:  # rows written at version 1 survive the migration
        conn.execute("INSERT INTO settings (key, value) VALUES ('kept', 'true')")
    old.close()
    new = stores.open(store_id)
    assert _versions(stores.url, new.schema) == [m.version for m in MIGRATIONS]
    assert {"keyword_postings", "images"} <= _tables(stores.url, new.schema)
    with new.transaction() as conn:
        assert conn.execute("SELECT value FROM settings WHERE key = 'kept'").fetchone() == (True,)
        assert conn.execute("SELECT documents, total_length FROM keyword_totals").fetchone() == (0, 0)


def test_a_version_3_schema_gains_the_checkpoint_tables_and_their_indexes(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    old = stores.open(store_id, schema_version=3)
    assert not {"checkpoints", "checkpoint_blobs", "checkpoint_writes"} & _tables(stores.url, old.schema)
    with old.transaction() as conn:
        conn.execute("INSERT INTO settings (key, value) VALUES ('kept', 'true')")
    old.close()
    new = stores.open(store_id)
    assert _versions(stores.url, new.schema) == [m.version for m in MIGRATIONS]
    assert {"checkpoints", "checkpoint_blobs", "checkpoint_writes"} <= _tables(stores.url, new.schema)
    with psycopg.connect(stores.url) as conn:
        indexes = {
            row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (new.schema,))
        }
    assert {"checkpoints_run", "checkpoints_metadata", "checkpoints_pkey"} <= indexes
    with new.transaction() as conn:
        assert conn.execute("SELECT value FROM settings WHERE key = 'kept'").fetchone() == (True,)


def test_a_schema_written_by_a_newer_palimpsest_is_refused(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    core = stores.open(store_id)
    with core.transaction() as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, 'from the future')", (LATEST_VERSION + 1,))
    assert core.schema_state().is_newer
    with pytest.raises(SchemaVersionError, match="upgrade palimpsest"):
        stores.open(store_id)


def test_concurrent_opens_of_a_new_store_migrate_it_once(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            stores.open(store_id)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=open_once) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert _versions(stores.url, schema_name(store_id)) == [m.version for m in MIGRATIONS]


def test_a_fixed_dimension_types_the_vector_columns_and_builds_hnsw_indexes(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    core = stores.open(store_id, dimension=8)
    assert core.dimension == 8
    with psycopg.connect(stores.url) as conn:
        types = dict(conn.execute(
            "SELECT c.relname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND a.attname = 'embedding' AND c.relkind = 'r'", (core.schema,)).fetchall())
        indexes = {row[0]: row[1] for row in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND indexname LIKE '%%hnsw'",
            (core.schema,))}
    assert types == {"records": "vector(8)", "messages": "vector(8)"}
    assert set(indexes) == {"records_embedding_hnsw", "messages_embedding_hnsw"}
    assert all("vector_cosine_ops" in definition for definition in indexes.values())
    core.close()
    assert stores.open(store_id).dimension == 8  # persisted
    with pytest.raises(ConfigurationError, match="8-dimensional"):
        stores.open(store_id, dimension=16)


def test_a_store_without_a_dimension_has_untyped_vector_columns_until_one_is_fixed(stores: StoreFactory) -> None:
    core = stores.open()
    assert core.dimension is None
    with core.transaction() as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone() is None


@pytest.mark.parametrize("bad", ["1abc", "has-dash", "x" * 41, ""])
def test_a_malformed_memory_store_id_is_a_configuration_error(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="memory_store_id"):
        schema_name(bad)


def test_the_schema_state_is_read_without_creating_or_migrating_anything(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    assert read_schema_state(stores.url, memory_store_id=store_id).version is None
    assert schema_name(store_id) not in _schemas(stores.url)  # reading created nothing
    stores.open(store_id, schema_version=1).close()
    state = read_schema_state(stores.url, memory_store_id=store_id)
    assert (state.version, state.needs_migration) == (1, True)
    assert _versions(stores.url, schema_name(store_id)) == [1]


def _schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace")}
