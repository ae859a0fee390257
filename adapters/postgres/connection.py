"""Adapters layer (PostgreSQL): the connection pool and how it fails.

:class:`PostgresDatabase` opens a ``psycopg_pool.ConnectionPool`` on a ``postgresql://`` URL
(or libpq ``key=value`` string). Before the pool, one direct connection is made: libpq then says
why a server cannot be used (down, wrong port, wrong password, unknown database), which a pool
that retries in the background would only report as a timeout, and the error is typed
(:func:`.errors.translated_connect_error`). Every connection the pool hands out is checked
first (a server restarted since is noticed before a statement is sent), without a round trip
unless its socket shows the server wrote to or closed it (:func:`check_idle_connection`), and
speaks UTC.

A statement that fails is translated (:mod:`.errors`); a connection lost during a call is a
:class:`StoreUnavailableError` and is discarded by the pool. A pool that has no connection to
give within ``timeout`` is probed with a direct connection: if the server cannot be reached the
error says so, else the pool was exhausted (:class:`StoreBusyError`). The pool's reconnection
attempts back off for at most half that ``timeout`` before it gives up and the next caller starts
a new attempt at once: after a server restart the first calls are served within ``timeout``
(psycopg_pool's default, five minutes of doubling delays, would answer "busy" long after a
long outage ended).

A forked child (``os.fork``, multiprocessing's fork start method) shares its parent's sockets:
there the pool is closed to the child (:class:`StoreClosedError`; the child opens its own) and
closing it abandons the parent's connections, neither used nor closed (a close would end the
parent's sessions).
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from palimpsest.domain.errors import ConfigurationError, StoreBusyError, StoreClosedError
from psycopg import conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from .errors import translated, translated_connect_error

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_POOL_TIMEOUT",
    "PostgresDatabase",
    "check_idle_connection",
    "describe_location",
]

DEFAULT_CONNECT_TIMEOUT: Final = 5
"""Seconds a connection attempt may take (libpq's ``connect_timeout``)."""
DEFAULT_POOL_TIMEOUT: Final = 10.0
"""Seconds a caller waits for a free pooled connection."""


def describe_location(url: str) -> str:
    """Where ``url`` points, without its password: ``host:port/dbname`` (a Unix socket's folder
    for the host). A string libpq cannot parse is a :class:`ConfigurationError`."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"not a PostgreSQL connection URL: {exc}") from None
    host = str(params.get("host") or "localhost")
    port = str(params.get("port") or "5432")
    dbname = str(params.get("dbname") or params.get("user") or "")
    return f"{host}:{port}/{dbname}"


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SET TIME ZONE 'UTC'")
    conn.commit()


def _readable(conn: psycopg.Connection[Any]) -> bool:
    """Whether the idle connection's socket has something to read (or cannot be polled)."""
    try:
        fd = conn.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def check_idle_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it is about to hand out, with no round trip when the
    connection is healthy: an idle connection's socket has nothing to read, so one that is
    readable was written to or closed by the server (a terminated backend, a stopped or restarted
    server sends a ``FATAL`` message and closes; a killed one leaves the socket at end of file):
    only then is the round-trip check run (``psycopg_pool``'s :meth:`ConnectionPool.check_connection`,
    an empty query), which raises on a broken connection so that the pool discards it and hands out
    another. (An asynchronous notice or notification makes the socket readable too; that check
    then reads it and passes.)

    What a local check does not see is a connection whose far end vanished without a word: a
    network partition, a server host powered off. The next statement on it then fails (or waits
    for the kernel's TCP timeouts) and is translated like any connection lost during a call,
    :class:`StoreUnavailableError`, the connection discarded; the round-trip check would have
    waited on the same socket all the same.
    """
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    if _readable(conn):
        ConnectionPool.check_connection(conn)


def _reset(conn: psycopg.Connection[Any]) -> None:
    """A connection goes back to the pool idle and out of autocommit (a search's read runs in
    autocommit, its ``BEGIN`` sent with its first query: :meth:`.core.PostgresStoreCore.searching`)."""
    if conn.autocommit:
        conn.autocommit = False


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database (``min_size``..``max_size``)."""

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = DEFAULT_POOL_TIMEOUT,
        connect_timeout: int = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        if not isinstance(url, str) or not url.strip():
            raise ConfigurationError("a PostgreSQL store needs a connection URL (postgresql://...).")
        self.location = describe_location(url)
        self._pid = os.getpid()  # the process whose connections the pool holds
        self._url = url
        self._connect_timeout = connect_timeout
        self.probe()
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            reconnect_timeout=timeout / 2,
            kwargs={"connect_timeout": connect_timeout},
            configure=_configure,
            check=check_idle_connection,
            reset=_reset,
            open=False,
            name=f"palimpsest {self.location}",
        )
        self._pool.open(wait=False)

    def probe(self) -> None:
        """Connect once, directly, and close: a typed error if the server cannot be used."""
        try:
            conn = psycopg.connect(self._url, connect_timeout=self._connect_timeout)
        except psycopg.Error as exc:
            raise translated_connect_error(exc, self.location) from exc
        conn.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for one piece of work. Errors are translated; the pool rolls
        back what the work left open (commit explicitly) and drops a broken connection."""
        pool = self._live_pool()
        try:
            with pool.connection() as conn:
                yield conn
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
        except PoolTimeout as exc:
            self.probe()  # raises when the server is down or refuses us
            raise StoreBusyError(
                f"No free connection to PostgreSQL at {self.location} within the pool's timeout."
            ) from exc
        except psycopg.Error as exc:
            raise translated(exc) from exc

    def acquire(self) -> psycopg.Connection[Any]:
        """A pooled connection, idle, for a caller that gives it back with :meth:`release`
        (a unit of work whose lifetime is not one ``with`` block)."""
        pool = self._live_pool()
        try:
            return pool.getconn()
        except PoolTimeout as exc:
            self.probe()
            raise StoreBusyError(
                f"No free connection to PostgreSQL at {self.location} within the pool's timeout."
            ) from exc
        except psycopg.Error as exc:
            raise translated(exc) from exc

    def release(self, conn: psycopg.Connection[Any], *, discard: bool = False) -> None:
        """Give back a connection from :meth:`acquire` (``discard``: it is broken; closed)."""
        if os.getpid() != self._pid:
            return  # a forked child: the connection is the parent's, left alone
        pool = self._pool
        try:
            if discard:
                conn.close()
            elif not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
        except psycopg.Error:
            conn.close()
        if pool is None:
            conn.close()
            return
        pool.putconn(conn)

    def _live_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        pool = self._pool
        if pool is None:
            raise StoreClosedError("The PostgreSQL store was used after close().")
        if os.getpid() != self._pid:
            raise StoreClosedError(
                "This PostgreSQL store was opened before the process forked; its connections are the "
                "parent's: open the store again in the child."
            )
        return pool

    @property
    def closed(self) -> bool:
        """Closed, or inherited by a forked child (closed to it)."""
        return self._pool is None or os.getpid() != self._pid

    def close(self) -> None:
        """Close every pooled connection (idempotent); in a forked child, abandon them."""
        pool, self._pool = self._pool, None
        if pool is not None and os.getpid() == self._pid:
            pool.close()
