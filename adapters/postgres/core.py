"""Adapters layer (PostgreSQL): a store's schema on a pool, its search reads and diagnostics.

:class:`PostgresStoreCore` is what is PostgreSQL's own in the Postgres store: it opens the pool
(:class:`.connection.PostgresDatabase`), makes sure of pgvector, creates or migrates the store's
schema (:mod:`.schema`), opens the read of one search (:meth:`searching`) and reports the
schema for ``palimpsest doctor`` (:class:`~palimpsest.domain.ports.StoreDiagnostics`). The
repositories and the unit of work of the full store are the shared SQL kit's, over the
connections of this pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from palimpsest.domain.ports import SchemaState, StoreDiagnostics

from .connection import DEFAULT_POOL_TIMEOUT, PostgresDatabase, describe_location
from .errors import translated_connect_error
from .schema import LATEST_VERSION, ensure_vector_extension, migrate, schema_name, schema_state, use_schema
from .search import HNSW_EF_SEARCH, PostgresSearchSession, begin_search

__all__ = ["PostgresStoreCore", "read_schema_state"]


class PostgresStoreCore(StoreDiagnostics):
    """One store (``memory_store_id``: its schema) on a PostgreSQL database at ``url``, or on a
    :class:`PostgresDatabase` pool its caller owns (and closes; several stores may share one)."""

    def __init__(
        self,
        url: str | PostgresDatabase,
        *,
        memory_store_id: str | None = None,
        dimension: int | None = None,
        min_connections: int = 1,
        max_connections: int = 8,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        schema_version: int = LATEST_VERSION,
    ) -> None:
        self.schema = schema_name(memory_store_id)
        self._owns_database = not isinstance(url, PostgresDatabase)
        self.database = (
            url
            if isinstance(url, PostgresDatabase)
            else PostgresDatabase(
                url, min_size=min_connections, max_size=max_connections, timeout=pool_timeout
            )
        )
        try:
            with self.database.connection() as conn:
                self.vector_schema = ensure_vector_extension(conn)
                self.dimension = migrate(
                    conn, self.schema, self.vector_schema, dimension=dimension, target=schema_version
                )
        except BaseException:
            if self._owns_database:
                self.database.close()
            raise

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a transaction at the store's schema; committed if the block
        ends normally, else rolled back."""
        with self.database.connection() as conn:
            use_schema(conn, self.schema, self.vector_schema)
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    @contextmanager
    def searching(
        self, *, exact: bool | None = None, ef_search: int = HNSW_EF_SEARCH
    ) -> Iterator[PostgresSearchSession]:
        """A :class:`PostgresSearchSession` over one read-only snapshot of the store."""
        with self.database.connection() as conn:
            # Autocommit (a local setting, no round trip): psycopg sends no ``BEGIN`` of its
            # own; begin_search's query opens the transaction, which the rollback ends. The
            # connection leaves autocommit before it goes back (here, else the pool's reset).
            conn.autocommit = True
            try:
                dimension = begin_search(conn, self.schema, self.vector_schema)
                try:
                    yield PostgresSearchSession(
                        conn, exact=exact, ef_search=ef_search, known_dimension=(dimension,)
                    )
                finally:
                    conn.rollback()
            finally:
                if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    conn.autocommit = False

    def schema_state(self) -> SchemaState:
        with self.database.connection() as conn:
            return schema_state(conn, self.schema)

    def close(self) -> None:
        """Close the pool, if this core opened it (a pool given to it stays its owner's)."""
        if self._owns_database:
            self.database.close()


def read_schema_state(url: str, *, memory_store_id: str | None = None) -> SchemaState:
    """The schema state of a store, read over one connection without creating or migrating
    anything (opening a :class:`PostgresStoreCore` would migrate an older schema)."""
    schema = schema_name(memory_store_id)
    try:
        conn = psycopg.connect(url)
    except psycopg.Error as exc:
        raise translated_connect_error(exc, describe_location(url)) from exc
    try:
        return schema_state(conn, schema)
    finally:
        conn.close()
