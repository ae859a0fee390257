"""Adapters layer (Oracle): ``OracleStore``, the server-grade MemoryStore on Oracle AI Database.

The store owns nothing but names and policies: connections come from the caller's python-oracledb
pool (or one connection, serialised), the schema from :class:`SchemaManager` (applied once, when
the store is opened), the search primitives from :class:`OracleSearchSession` (the pipeline
is the domain's ``run_search``), transactions from :class:`OracleUnitOfWork`. What every process
must agree on lives in the database: the data, and the embedding dimension in the store's
registry row (decision D17). This process keeps the dimension only as a cache, refreshed
whenever a unit of work (or a vector search) reads the registry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import oracledb
from palimpsest.adapters.sql import SqlUnitOfWork
from palimpsest.adapters.sql.store import SqlStore
from palimpsest.domain.errors import (
    AgentMemoryError,
    ConfigurationError,
    StorageError,
)
from palimpsest.domain.ports import SchemaState

from .connection import ConnectionSource
from .errors import is_connection_lost, translate
from .names import StoreNames
from .policy import SchemaPolicy
from .schema import SCHEMA_VERSION, SchemaManager
from .search import OracleSearchSession
from .sql import execute, fetch_one
from .statements import chunks_clear_vectors, read_only_transaction
from .unit_of_work import OracleUnitOfWork, StoreContext

__all__ = ["OracleStore"]

_log = logging.getLogger(__name__)


def _policy(value: SchemaPolicy | str) -> SchemaPolicy:
    if isinstance(value, SchemaPolicy):
        return value
    if isinstance(value, str):
        for policy in SchemaPolicy:
            if value.strip().lower() in (policy.value, policy.name.lower()):
                return policy
    allowed = ", ".join(p.name for p in SchemaPolicy)
    raise ConfigurationError(f"Invalid schema policy: {value!r} (expected one of {allowed}).")


class OracleStore(SqlStore):
    """A :class:`~palimpsest.domain.ports.MemoryStore` in an Oracle schema, shared by processes.

    * ``pool`` (an ``oracledb`` connection pool) or ``connection`` (one connection, whose units
      of work are serialised): exactly one. The caller owns it; :meth:`close` closes neither.
    * ``memory_store_id`` prefixes every object (``ACME_MEMORY``...); ``None`` is the default store.
    * ``dimension`` fixes the embedding size (an existing store must agree); ``None`` takes the
      stored one, or lets the first stored vector fix it.
    * ``schema_policy``: what to do with missing objects when opening (see :class:`SchemaPolicy`;
      ``NO_CHECK`` sends nothing at all when opening and builds no index later).
    * ``vector_index``: ``"hnsw"`` (default), ``"ivf"`` or ``"none"``; built once the dimension
      is known. ``approximate=True`` lets vector search use it (``FETCH APPROX FIRST``); by
      default search is exact.
    """

    def __init__(
        self,
        pool: Any = None,
        *,
        connection: Any = None,
        memory_store_id: str | None = None,
        dimension: int | None = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
        vector_index: str = "hnsw",
        approximate: bool = False,
    ) -> None:
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise ConfigurationError("dimension must be a positive integer or None.")
        if not isinstance(approximate, bool):
            raise ConfigurationError("approximate must be True or False.")
        policy = _policy(schema_policy)
        self._names = StoreNames(memory_store_id)
        self._schema = SchemaManager(self._names, vector_index=vector_index)
        self._approximate = approximate
        self._source = ConnectionSource(pool, connection=connection)
        self._lock = threading.Lock()
        self._dimension: int | None = dimension
        self._context = StoreContext(
            names=self._names,
            source=self._source,
            schema=self._schema,
            observed=self._learn_dimension,
            committed=self._after_commit,
        )
        self._builds_index = policy is not SchemaPolicy.NO_CHECK
        try:
            if policy is SchemaPolicy.NO_CHECK:  # no statement, so no connection lent
                config = self._schema.ensure(None, policy, dimension=dimension)
            else:
                with self._lease() as conn, translate(self._names):
                    config = self._schema.ensure(conn, policy, dimension=dimension)
                    conn.commit()
        except BaseException:
            self._source.close()
            raise
        self._dimension = config.dimension

    # --- public API --------------------------------------------------------------------------------

    @property
    def names(self) -> StoreNames:
        """The store's object names (its tables are ``names("MEMORY")``...)."""
        return self._names

    @property
    def memory_store_id(self) -> str | None:
        return self._names.store_id

    def _made(self, uow: SqlUnitOfWork) -> bool:
        return getattr(uow, "_context", None) is self._context

    def unit_of_work(self) -> OracleUnitOfWork:
        self._source.check_open()
        return OracleUnitOfWork(self._context)

    def reading(self) -> OracleUnitOfWork:
        """A read-only unit of work: one ``SET TRANSACTION READ ONLY`` transaction (Oracle's
        readers never wait for writers; this adds one snapshot for all its queries)."""
        self._source.check_open()
        return OracleUnitOfWork(self._context, read_only=True)

    @contextmanager
    def searching(self) -> Iterator[OracleSearchSession]:
        """See :class:`~palimpsest.domain.ports.RecordSearch`: a session on a lent connection in
        one ``SET TRANSACTION READ ONLY`` transaction (every primitive sees the data committed
        before the session's first statement, as the port asks; readers never wait for writers),
        rolled back and released afterwards. ``search`` is the domain's pipeline over it; a
        vector search first reads the dimension from the registry."""
        self._source.check_open()
        with self._lease() as conn, translate(self._names):
            execute(conn, read_only_transaction())
            yield OracleSearchSession(
                conn,
                self._names,
                dimension=lambda: self._read_dimension(conn),
                approximate=self._approximate,
            )

    def clear_vectors(self) -> None:
        """See :class:`~palimpsest.domain.ports.MemoryStore`: one transaction sets every chunk's
        embedding and the registry's dimension to NULL (the registry row locked first, so no
        writer fixes a dimension meanwhile); the vector index, built for the old dimension, is
        dropped afterwards on its own connection (DDL commits)."""
        self._source.check_open()
        with self.unit_of_work() as uow:
            uow.fetch_one(self._schema.select_config(for_update=True))
            uow.run(chunks_clear_vectors(self._names))
            uow.run(self._schema.set_dimension(None))
            uow.commit()
        self._learn_dimension(None)
        with self._lease() as conn, translate(self._names):
            self._schema.drop_vector_index(conn)

    def schema_state(self) -> SchemaState:
        """See :class:`~palimpsest.domain.ports.StoreDiagnostics`: the version in the store's
        registry row (``None`` once the row is gone) and this library's ``SCHEMA_VERSION``."""
        self._source.check_open()
        with self._lease() as conn, translate(self._names):
            row = fetch_one(conn, self._schema.select_config())
        return SchemaState(version=None if row is None else int(row[1]), latest=SCHEMA_VERSION)

    def close(self) -> None:
        """Stop using the pool or connection; idempotent. Later use raises ``StoreClosedError``."""
        self._source.close()

    # --- internals ---------------------------------------------------------------------------------

    def _location(self) -> str | None:  # the default store has no id
        return self._names.store_id

    def _is_closed(self) -> bool:
        return self._source.closed

    @contextmanager
    def _lease(self) -> Iterator[Any]:
        """A connection for one search or maintenance step, rolled back and released after it."""
        conn = self._source.acquire()
        lost = False
        try:
            yield conn
        except BaseException as exc:
            cause = exc.__cause__ if isinstance(exc, AgentMemoryError) else exc
            lost = cause is not None and is_connection_lost(cause)
            raise
        finally:
            if not lost:
                try:
                    conn.rollback()
                except oracledb.Error as exc:
                    lost = is_connection_lost(exc)
            self._source.release(conn, discard=lost)

    def _read_dimension(self, conn: Any) -> int | None:
        row = fetch_one(conn, self._schema.select_config())
        if row is None:
            raise StorageError(
                f"The memory store {self._names.registry_name!r} is not registered in this schema "
                "(it was dropped, or never created)."
            )
        dimension = self._schema.parse_config(row[0]).dimension
        self._learn_dimension(dimension)
        return dimension

    def _after_commit(self, fixed: int | None) -> None:
        """After a commit that fixed the dimension: learn it, then build the vector index on a
        fresh connection. A failure is logged, not raised (the data is committed; exact search
        needs no index, and the next fixing commit or ``ensure`` tries again)."""
        if fixed is None:
            return
        self._learn_dimension(fixed)
        if not self._builds_index:  # NO_CHECK: no DDL from this store
            return
        try:
            with self._lease() as conn, translate(self._names):
                self._schema.ensure_vector_index(conn, fixed)
        except (AgentMemoryError, oracledb.Error) as exc:
            _log.warning(
                "%r: the vector index could not be built (%s); searches run exact meanwhile.", self, exc
            )
