"""Adapters layer (PostgreSQL): ``PostgresStore``, the MemoryStore on PostgreSQL with pgvector.

The store is :class:`~.core.PostgresStoreCore` (pool, schema, search reads, diagnostics) plus the
SQL kit's repositories and unit of work (:mod:`palimpsest.adapters.sql`) over the pool's
connections, with this module's pieces: the driver-error map (:class:`PostgresStoreDialect`),
the statements (:mod:`.statements`), and the writer's obligations (decision D32): every write of
a message or record (re-)indexes its keyword document in the same transaction (a message's
document holds the turn before it, so the next message is re-indexed after an insert, edit or
delete), and the first vector of a store without a dimension types the vector columns and builds
their HNSW indexes (:func:`.schema.fix_dimension`), under a transaction-scoped advisory lock.

A unit of work is one transaction at ``READ COMMITTED`` whose lock waits are bounded by the
store's ``busy_timeout`` (``lock_timeout``; a write that waits longer is a ``StoreBusyError``);
a read-only one (:meth:`reading`) is a ``REPEATABLE READ, READ ONLY`` transaction: one
snapshot, never waiting for a writer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import psycopg
from palimpsest.adapters.sql import Sql, SqlUnitOfWork
from palimpsest.adapters.sql.codec import RowCodec
from palimpsest.adapters.sql.dialect import Key, Statement
from palimpsest.adapters.sql.dialects.postgres import PostgresDialect
from palimpsest.adapters.sql.repositories import (
    SqlMessageRepository,
    SqlRecordRepository,
)
from palimpsest.adapters.sql.store import SqlStore
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError, NotFoundError
from palimpsest.domain.model import MemoryRecord, Message
from palimpsest.domain.ports import SchemaState
from psycopg import sql

from . import keywords
from .connection import PostgresDatabase
from .core import PostgresStoreCore
from .errors import is_connection_lost, translate, translated
from .schema import LATEST_VERSION, fix_dimension, read_dimension, use_schema
from .search import PostgresSearchSession
from .statements import PostgresStatements

__all__ = ["PostgresStore", "PostgresStoreDialect"]

_KEYS: Final = {
    "threads_pkey": Key.THREAD_ID,
    "messages_pkey": Key.MESSAGE_ID,
    "messages_thread_id_seq_key": Key.MESSAGE_SEQ,
    "records_pkey": Key.RECORD_ID,
    "links_pkey": Key.LINK_ID,
    "links_unique_edge": Key.LINK_RELATION,
    "summaries_pkey": Key.SUMMARY_ID,
    "summaries_unique_revision": Key.SUMMARY_REVISION,
    "extraction_jobs_pkey": Key.JOB_ID,
}
"""The schema's constraint names, by the logical key they guard."""


class PostgresStoreDialect(PostgresDialect):
    """The PostgreSQL dialect with psycopg's errors mapped (:mod:`.errors`)."""

    driver_error: ClassVar[type[BaseException] | tuple[type[BaseException], ...]] = psycopg.Error

    def translate(
        self, exc: BaseException, missing: type[AgentMemoryError] | None = None
    ) -> AgentMemoryError:
        not_found = missing if missing is not None and issubclass(missing, NotFoundError) else None
        return translated(exc, missing=not_found)

    def violated(self, exc: BaseException | None) -> str | None:
        if not isinstance(exc, psycopg.Error) or exc.sqlstate != "23505":
            return None
        return _KEYS.get(exc.diag.constraint_name or "")

    def is_connection_lost(self, exc: BaseException) -> bool:
        return is_connection_lost(exc)


DIALECT: Final = PostgresStoreDialect()
CODEC: Final = RowCodec(DIALECT)
STATEMENTS: Final = PostgresStatements(CODEC)


_LOCK_THREAD: Final = "SELECT 1 FROM threads WHERE id = %s FOR NO KEY UPDATE"


def _uow(repository: Any) -> PostgresUnitOfWork:
    uow: PostgresUnitOfWork = repository._uow
    return uow


class _Messages(SqlMessageRepository):
    __slots__ = ()

    def last_seq(self, thread_id: str) -> int:
        """In a writing unit of work, first lock the thread's row against other appenders (to
        the end of the transaction; ``NO KEY``: the foreign-key checks of other writes to the
        thread do not wait): at ``READ COMMITTED`` two appenders would otherwise both read the
        same last seq and the second would fail on the (thread, seq) key."""
        uow = _uow(self)
        if not uow.read_only:
            uow.fetch_one(Sql("threads.lock_for_append", _LOCK_THREAD, (thread_id,)))
        return super().last_seq(thread_id)

    def _messages_added(self, messages: Sequence[Message], vectors: Sequence[Any], *, batch: bool) -> None:
        _uow(self)._pending.messages.extend(m.id for m in messages)

    def _message_updated(self, message: Message, vector: Any, place: tuple[Any, ...]) -> None:
        _uow(self)._pending.messages.append(message.id)

    def _message_deleted(self, message_id: str, place: tuple[Any, ...]) -> None:
        _uow(self)._pending.places.append((str(place[0]), int(place[1])))

    def _messages_purged(self, purged: Sequence[tuple[str, int]]) -> None:
        _uow(self)._pending.places.extend(purged)


class _Records(SqlRecordRepository):
    __slots__ = ()

    def _record_added(self, record: MemoryRecord, vector: Any) -> None:
        _uow(self)._pending.records.append(record.id)

    def _record_updated(self, record: MemoryRecord, vector: Any) -> None:
        _uow(self)._pending.records.append(record.id)


@dataclass(slots=True)
class _KeywordWork:
    """What a unit of work must (re-)index before it commits: messages (with the turn after
    each), the places (thread, seq) of deleted messages (the turn after each lost its context)
    and records. Indexed once, at commit, from the rows as they are then: updating the one
    statistics row once per write would make a transaction of n writes cost n² (every version
    of a row a transaction updates stays until it ends)."""

    messages: list[str] = field(default_factory=list)
    places: list[tuple[str, int]] = field(default_factory=list)
    records: list[str] = field(default_factory=list)

    def mark(self) -> tuple[int, int, int]:
        return (len(self.messages), len(self.places), len(self.records))

    def undo(self, mark: tuple[int, int, int]) -> None:
        del self.messages[mark[0] :], self.places[mark[1] :], self.records[mark[2] :]

    def flush(self, conn: psycopg.Connection[Any]) -> None:
        if self.records:
            rows = conn.execute(
                "SELECT id, content FROM records WHERE id = ANY(%s)", (list(dict.fromkeys(self.records)),)
            ).fetchall()
            keywords.index_documents(conn, [(False, str(row[0]), str(row[1])) for row in rows])
        following: list[str] = []
        if self.places:
            rows = conn.execute(
                "SELECT n.id FROM unnest(%s::text[], %s::bigint[]) AS p(thread_id, seq) "
                "CROSS JOIN LATERAL (SELECT id FROM messages m WHERE m.thread_id = p.thread_id "
                "AND m.seq > p.seq ORDER BY m.seq LIMIT 1) n",
                ([p[0] for p in self.places], [p[1] for p in self.places]),
            ).fetchall()
            following = [str(row[0]) for row in rows]
        if self.messages:
            keywords.index_messages(conn, self.messages, with_next=True)
        if following:
            keywords.index_messages(conn, following, with_next=False)
        self.messages, self.places, self.records = [], [], []


class PostgresUnitOfWork(SqlUnitOfWork):
    """One transaction of a :class:`PostgresStore` (the lifecycle is the kit's)."""

    message_repository = _Messages
    record_repository = _Records

    def __init__(self, store: PostgresStore, *, read_only: bool = False) -> None:
        self._store = store
        self._pending = _KeywordWork()
        super().__init__(DIALECT, STATEMENTS, CODEC, read_only=read_only)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The kit's savepoint; a write rolled back takes its keyword work with it."""
        mark = self._pending.mark()
        try:
            with super().atomic():
                yield
        except BaseException:
            self._pending.undo(mark)
            raise

    def _commit_connection(self, connection: Any) -> None:
        if self._pending.messages or self._pending.places or self._pending.records:
            self._pending.flush(connection)
        connection.commit()

    def _begin(self) -> Any:
        self._store._check_open()
        return self._store._core.database.acquire()

    def _begun(self) -> None:
        conn = self.connection()
        core = self._store._core
        with self.translating():
            if self.read_only:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                use_schema(conn, core.schema, core.vector_schema)
            else:  # one simple query: the writer's lock wait bound and the schema
                conn.execute(
                    sql.SQL("SET LOCAL lock_timeout = {}; SET LOCAL search_path TO {}, {}").format(
                        sql.Literal(self._store._lock_timeout_ms),
                        sql.Identifier(core.schema),
                        sql.Identifier(core.vector_schema),
                    )
                )

    def _release(self, connection: Any) -> None:
        self._store._core.database.release(connection, discard=self._lost)

    def _check_open(self) -> None:
        self._store._check_open()

    # A failed statement aborts a PostgreSQL transaction, where the port lets the caller go on
    # after a refused write: a write outside a savepoint gets its own.
    def run(self, statement: Statement, *, missing: type[AgentMemoryError] | None = None) -> int:
        if self._depth:
            return super().run(statement, missing=missing)
        with self.atomic():
            return super().run(statement, missing=missing)

    def run_many(
        self, statements: Sequence[Statement], *, missing: type[AgentMemoryError] | None = None
    ) -> int:
        if self._depth or not statements:
            return super().run_many(statements, missing=missing)
        with self.atomic():
            return super().run_many(statements, missing=missing)

    def _committed(self) -> None:
        if self._fixed is not None:
            self._store._learn_dimension(self._fixed)

    def _observed(self, dimension: int | None) -> None:
        self._store._learn_dimension(dimension)

    def _read_dimension(self, *, for_update: bool) -> int | None:
        conn = self.connection()
        with self.translating():
            if for_update:  # the store's write lock for fixing the dimension
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"palimpsest:{self._store._core.schema}:dimension",),
                )
            return read_dimension(conn)

    def _write_dimension(self, dimension: int) -> None:
        with self.translating():
            fix_dimension(self.connection(), dimension)


class PostgresStore(SqlStore):
    """A :class:`~palimpsest.domain.ports.MemoryStore` in one PostgreSQL schema.

    ``database``: a ``postgresql://`` URL (the store opens and closes its own pool) or a
    :class:`PostgresDatabase` (a pool its caller owns and closes; several stores may share it).
    ``memory_store_id`` names the schema (``palimpsest_<id>``); ``dimension`` fixes the vector
    size (an existing store must agree). ``exact``/``ef_search``: see
    :class:`~.search.PostgresSearchSession`. ``busy_timeout``: seconds a write of a unit of work
    waits for a row or table lock another transaction holds (``SET LOCAL lock_timeout``, set with
    the schema in one query at its start) before :class:`~palimpsest.domain.errors.StoreBusyError`
    (SQLSTATE ``55P03``), as the embedded store's writer waits for the file's lock; the bound is
    per lock wait, not the transaction's total. Reads never wait for writers (snapshots).
    """

    def __init__(
        self,
        database: str | PostgresDatabase,
        *,
        memory_store_id: str | None = None,
        dimension: int | None = None,
        min_connections: int = 1,
        max_connections: int = 8,
        exact: bool | None = None,
        schema_version: int = LATEST_VERSION,
        busy_timeout: float = 30.0,
    ) -> None:
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise ConfigurationError("dimension must be a positive integer or None.")
        if (
            isinstance(busy_timeout, bool)
            or not isinstance(busy_timeout, (int, float))
            or not busy_timeout >= 0
        ):
            raise ConfigurationError("busy_timeout must be a non-negative number of seconds.")
        # PostgreSQL's lock_timeout 0 means "wait forever": no wait at all is one millisecond.
        self._lock_timeout_ms = max(1, round(float(busy_timeout) * 1000))
        self._core = PostgresStoreCore(
            database,
            memory_store_id=memory_store_id,
            dimension=dimension,
            min_connections=min_connections,
            max_connections=max_connections,
            schema_version=schema_version,
        )
        self._memory_store_id = memory_store_id
        self._exact = exact
        self._lock = threading.Lock()
        self._dimension: int | None = self._core.dimension
        self._closed = False

    # --- MemoryStore ---------------------------------------------------------------------------

    @property
    def memory_store_id(self) -> str | None:
        return self._memory_store_id

    @property
    def schema(self) -> str:
        """The PostgreSQL schema the store lives in."""
        return self._core.schema

    def unit_of_work(self) -> PostgresUnitOfWork:
        self._check_open()
        return PostgresUnitOfWork(self)

    def reading(self) -> PostgresUnitOfWork:
        """A read-only unit of work: one ``REPEATABLE READ, READ ONLY`` snapshot."""
        self._check_open()
        return PostgresUnitOfWork(self, read_only=True)

    @contextmanager
    def searching(self) -> Iterator[PostgresSearchSession]:
        self._check_open()
        with self._core.searching(exact=self._exact) as session:
            yield session

    def clear_vectors(self) -> None:
        """One transaction: every vector set to NULL, the HNSW indexes dropped, the columns
        untyped again and the dimension forgotten (under the dimension's advisory lock)."""
        self._check_open()
        with self._core.transaction() as conn, translate():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"palimpsest:{self._core.schema}:dimension",),
            )
            for table in ("records", "messages"):
                conn.execute(f"DROP INDEX IF EXISTS {table}_embedding_hnsw")
                conn.execute(f"UPDATE {table} SET embedding = NULL WHERE embedding IS NOT NULL")
                conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector")
            conn.execute("DELETE FROM meta WHERE key = 'dimension'")
        self._learn_dimension(None)

    # --- StoreDiagnostics ----------------------------------------------------------------------

    def schema_state(self) -> SchemaState:
        self._check_open()
        return self._core.schema_state()

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store (and its pool, if it opened it); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._core.close()

    # --- internals -----------------------------------------------------------------------------

    def _location(self) -> str:
        return self._core.schema

    def _is_closed(self) -> bool:
        return self._closed or self._core.database.closed

    def _closed_message(self) -> str:
        return "The PostgreSQL store was used after close()."
