"""The pool's check of a connection it hands out (no round trip while the connection is healthy)
and the search's read in autocommit (its ``BEGIN`` sent with its first query): a connection the
server ended is replaced before use, and every connection goes back idle and out of autocommit."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import psycopg
import pytest
from palimpsest.adapters.postgres import PostgresDatabase
from palimpsest.adapters.postgres.connection import check_idle_connection
from psycopg_pool import ConnectionPool

from .conftest import StoreFactory


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as killer:
        row = killer.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()
    assert row == (True,)


def test_a_healthy_idle_connection_is_handed_out_without_a_round_trip(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[Any] = []
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(checked.append))
    database = PostgresDatabase(stores.url, min_size=1, max_size=1)
    try:
        for _ in range(3):
            with database.connection() as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        assert checked == []
    finally:
        database.close()


def test_a_connection_the_server_ended_while_idle_is_checked_and_replaced(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[Any] = []
    real = ConnectionPool.check_connection

    def spy(conn: Any) -> None:
        checked.append(conn)
        real(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(spy))
    database = PostgresDatabase(stores.url, min_size=1, max_size=1)
    try:
        with database.connection() as conn:
            ended = conn.info.backend_pid
        _terminate(stores.url, ended)
        with database.connection() as conn:  # no error: the dead connection was discarded
            assert conn.execute("SELECT pg_backend_pid()").fetchone() != (ended,)
        assert len(checked) == 1  # the readable socket sent it to the round-trip check
    finally:
        database.close()


def test_a_closed_connection_fails_the_check() -> None:
    class Closed:
        closed = True

    with pytest.raises(psycopg.OperationalError):
        check_idle_connection(Closed())  # type: ignore[arg-type]


@pytest.mark.parametrize("fails", [False, True])
def test_a_search_gives_its_connection_back_idle_and_out_of_autocommit(stores: StoreFactory, fails: bool) -> None:
    core = stores.open(min_connections=1, max_connections=1)
    with pytest.raises(RuntimeError) if fails else nullcontext(), core.searching() as session:
        conn = session._conn
        assert conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert conn.execute("SHOW transaction_isolation").fetchone() == ("repeatable read",)
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        if fails:
            raise RuntimeError("the search failed")
    with core.database.connection() as conn:  # the pool's only connection
        assert not conn.autocommit
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_the_pool_takes_a_connection_given_back_in_autocommit_out_of_it(stores: StoreFactory) -> None:
    database = PostgresDatabase(stores.url, min_size=1, max_size=1)
    try:
        conn = database.acquire()
        conn.autocommit = True
        database.release(conn)
        again = database.acquire()
        assert not again.autocommit
        database.release(again)
    finally:
        database.close()

