"""Embedded adapter: the unit of work, one SQLite write transaction (BEGIN IMMEDIATE … COMMIT), or
one read transaction on a snapshot connection for a read-only unit of work.

The lifecycle is the SQL kit's (:class:`palimpsest.adapters.sql.SqlUnitOfWork`); this class says
where the connection comes from, how the transaction begins and commits, and where the dimension
lives (the ``meta`` table)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Final

from palimpsest.adapters.sql import SqlUnitOfWork
from palimpsest.domain.sentinel import NotSetType

from . import schema
from .codec import CODEC, DIALECT
from .repositories import SqliteMessageRepository
from .statements import SqliteStatements

if TYPE_CHECKING:
    from .store import EmbeddedStore, _Connections

__all__ = ["SqliteUnitOfWork"]

_STATEMENTS: Final = SqliteStatements(CODEC)


class SqliteUnitOfWork(SqlUnitOfWork):
    """One write transaction on the calling thread's writer connection.

    ``BEGIN IMMEDIATE`` takes SQLite's single write lock on enter, so two units of work never
    interleave and a transaction never fails half-way for want of a lock. Caches are not
    touched while the transaction is open: after ``commit`` the store replays the change log,
    so a rollback has nothing to undo outside SQLite.

    ``read_only=True`` (``EmbeddedStore.reading()``): a read transaction on the thread's
    snapshot connection instead, which never takes the write lock; its repositories refuse
    writes and ``commit`` only ends it.
    """

    message_repository = SqliteMessageRepository  # the other repositories are the kit's

    def __init__(self, store: EmbeddedStore, *, read_only: bool = False) -> None:
        self._store = store
        self._holder: _Connections | None = None  # the entering thread's, released at the end
        super().__init__(DIALECT, _STATEMENTS, CODEC, read_only=read_only)

    def _begin(self) -> sqlite3.Connection:
        store = self._store
        if self.read_only:
            self._holder, conn = store._acquire_snapshot()
            return conn
        holder, conn = store._acquire_writer()
        try:
            schema.begin_immediate(conn, store._busy_timeout)
        except BaseException:
            store._release_writer(holder)
            raise
        self._holder = holder
        return conn

    def _commit_connection(self, connection: Any) -> None:
        self._store._before_commit(connection)
        schema.commit(connection, self._store._busy_timeout)

    def _rollback_connection(self, connection: Any) -> None:
        # A closed store or a failed COMMIT may have ended the transaction already; a read-only
        # one's snapshot belongs to the store.
        if not self.read_only and connection.in_transaction:
            connection.execute("ROLLBACK")

    def _release(self, connection: Any) -> None:
        holder, self._holder = self._holder, None
        if holder is None:
            return
        if self.read_only:
            self._store._release_snapshot(holder)
        else:
            self._store._release_writer(holder)

    def _committed(self) -> None:
        dimension = self._dimension
        self._store._after_commit(None if isinstance(dimension, NotSetType) else dimension)

    def _check_open(self) -> None:
        self._store._check_open()

    # --- vectors -----------------------------------------------------------------------------

    def _read_dimension(self, *, for_update: bool) -> int | None:
        """The store's dimension as of this transaction (the write lock, or the read snapshot,
        makes ``meta`` final)."""
        if not for_update and self._store._dimension is not None:
            return self._store._dimension
        with self.translating():
            raw = schema.read_meta(self.connection(), "dimension")
        return None if raw is None else int(raw)

    def _write_dimension(self, dimension: int) -> None:
        with self.translating():
            schema.write_meta(self.connection(), "dimension", str(dimension))
