"""Adapters layer (Oracle): where a store's connections come from (a pool, or one serialised connection).

A :class:`ConnectionSource` hands out python-oracledb connections for the length of one unit of
work, one search or one maintenance step:

* over a pool (``oracledb.create_pool(...)``), ``acquire()`` takes a pooled connection and
  ``release()`` gives it back (``pool.drop()`` instead when the session was lost);
* over a single connection, a lock serialises the users: a second unit of work waits until the
  first is finished. The same thread asking twice would wait for itself, so that is refused.

While a connection is lent out, CLOB columns are fetched as ``str`` rather than as LOB locators
(an output type handler, as in python-oracledb's "Fetching LOBs as Strings and Bytes"); the
connection's own handler is restored on release. The caller owns the pool or connection: ``close()``
only stops lending (later use raises :class:`StoreClosedError`), it closes neither.

Every lease starts with :data:`SESSION_SETUP`: the session time zone is UTC (datetimes are bound
as naive UTC values, and ``TIMESTAMP WITH TIME ZONE`` columns are compared with them in the
session zone, so any other zone would shift expiry checks) and string comparison and sorting are
binary (ties in search and list order are broken by id in code-point order, as in every store).
One statement per lease: a pooled session may have been changed by another user of the pool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import oracledb
from palimpsest.domain.errors import ConfigurationError, StorageError, StoreClosedError

from .errors import translate
from .sql import Statement, run

__all__ = ["SESSION_SETUP", "ConnectionSource", "lobs_as_text"]

SESSION_SETUP = Statement(
    "session.setup", "ALTER SESSION SET TIME_ZONE = 'UTC' NLS_SORT = BINARY NLS_COMP = BINARY"
)

_log = logging.getLogger(__name__)
_UNSET = object()


def lobs_as_text(handler: Any = None) -> Any:
    """An output type handler fetching CLOB/NCLOB as ``str`` and BLOB as ``bytes``.

    Other columns go to ``handler`` (the connection's previous handler), if there was one.
    """

    def output_type_handler(cursor: Any, metadata: Any) -> Any:
        type_code = getattr(metadata, "type_code", None)
        if type_code is oracledb.DB_TYPE_CLOB:
            return cursor.var(oracledb.DB_TYPE_LONG, arraysize=cursor.arraysize)
        if type_code is oracledb.DB_TYPE_NCLOB:
            return cursor.var(oracledb.DB_TYPE_LONG_NVARCHAR, arraysize=cursor.arraysize)
        if type_code is oracledb.DB_TYPE_BLOB:
            return cursor.var(oracledb.DB_TYPE_LONG_RAW, arraysize=cursor.arraysize)
        return handler(cursor, metadata) if handler is not None else None

    return output_type_handler


class ConnectionSource:
    """Lends connections from ``pool`` or serialises the use of one ``connection``.

    Exactly one of the two must be given.
    """

    def __init__(self, pool: Any = None, *, connection: Any = None) -> None:
        if (pool is None) == (connection is None):
            raise ConfigurationError("Give an Oracle store exactly one of a pool or a connection.")
        if pool is not None and not (
            callable(getattr(pool, "acquire", None)) and callable(getattr(pool, "release", None))
        ):
            raise ConfigurationError("The pool must be an oracledb connection pool (acquire/release).")
        if connection is not None and not callable(getattr(connection, "cursor", None)):
            raise ConfigurationError("The connection must be an oracledb connection.")
        self._pool = pool
        self._connection = connection
        self._closed = False
        self._lock = threading.Lock()  # single-connection mode: held while the connection is lent
        self._owner: int | None = None
        self._state_lock = threading.Lock()
        self._handlers: dict[int, Any] = {}

    @property
    def pooled(self) -> bool:
        return self._pool is not None

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("This store has been closed.")

    # --- lending ---------------------------------------------------------------------------------

    def acquire(self) -> Any:
        """A connection for the caller's exclusive use until :meth:`release`."""
        self.check_open()
        if self._pool is not None:
            with translate():
                connection = self._pool.acquire()
        else:
            me = threading.get_ident()
            if self._owner == me:
                raise StorageError(
                    "This thread is already using the store's single connection (an open unit of work); "
                    "finish it first."
                )
            self._lock.acquire()
            self._owner = me
            if self._closed:
                self._owner = None
                self._lock.release()
                raise StoreClosedError("This store has been closed.")
            connection = self._connection
        self._lend(connection)
        try:
            with translate():
                run(connection, SESSION_SETUP)
        except BaseException:
            self.release(connection, discard=True)
            raise
        return connection

    def release(self, connection: Any, *, discard: bool = False) -> None:
        """Give ``connection`` back; ``discard`` drops a pooled connection whose session was lost."""
        self._restore(connection)
        if self._pool is None:
            if self._owner is not None:
                self._owner = None
                self._lock.release()
            return
        try:
            drop = getattr(self._pool, "drop", None)
            if discard and callable(drop):
                drop(connection)
            else:
                self._pool.release(connection)
        except oracledb.Error as exc:  # the pool may be closed, or the session gone
            _log.warning("could not return an Oracle connection to its pool: %s", exc)

    @contextmanager
    def lease(self) -> Iterator[Any]:
        """``with source.lease() as connection:`` acquire and release around a block."""
        connection = self.acquire()
        try:
            yield connection
        finally:
            self.release(connection)

    def close(self) -> None:
        """Stop lending connections; idempotent. The pool or connection itself stays open."""
        self._closed = True

    # --- per-lease connection settings ------------------------------------------------------------

    def _lend(self, connection: Any) -> None:
        previous = getattr(connection, "outputtypehandler", None)
        with self._state_lock:
            self._handlers[id(connection)] = previous
        try:
            connection.outputtypehandler = lobs_as_text(previous)
        except (AttributeError, TypeError):  # pragma: no cover - a connection without the attribute
            with self._state_lock:
                self._handlers.pop(id(connection), None)

    def _restore(self, connection: Any) -> None:
        with self._state_lock:
            previous = self._handlers.pop(id(connection), _UNSET)
        if previous is _UNSET:
            return
        try:
            connection.outputtypehandler = previous
        except (AttributeError, TypeError, oracledb.Error):  # pragma: no cover - best effort
            pass
