"""A write blocked by another transaction's lock waits at most the store's ``busy_timeout``,
then fails with :class:`StoreBusyError` (SQLSTATE 55P03), writing nothing, as the embedded
store's writer does when the file's write lock stays taken."""

from __future__ import annotations

import threading

import psycopg
import pytest
from palimpsest.adapters.postgres.store import PostgresStore
from palimpsest.domain.errors import ConfigurationError, StoreBusyError
from psycopg import sql

from .conftest import StoreFactory
from .helpers import NOW, message, thread


def test_a_write_blocked_by_another_transactions_lock_is_busy_after_the_busy_timeout(stores: StoreFactory) -> None:
    store_id = stores.new_id()
    schema = f"palimpsest_{store_id}"
    stores._schemas.add(schema)
    store = PostgresStore(stores.url, memory_store_id=store_id, busy_timeout=0.2, max_connections=2)
    holder = psycopg.connect(stores.url)
    try:
        with store.unit_of_work() as uow:
            uow.threads.add(thread("t1"))
            uow.commit()
        holder.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        holder.execute("SELECT 1 FROM threads WHERE id = 't1' FOR UPDATE")  # held until rollback
        # Without a bound the write would wait for this release, 10 s later, and succeed.
        release = threading.Timer(10.0, holder.rollback)
        release.start()
        try:
            with pytest.raises(StoreBusyError), store.unit_of_work() as uow:
                uow.messages.add(message("m1", "t1", 1, "blocked"))
                uow.commit()
        finally:
            release.cancel()
            holder.rollback()
        with store.reading() as uow:
            assert uow.messages.list_for_thread("t1", now=NOW) == []  # nothing was written
        with store.unit_of_work() as uow:  # the lock released, the same write goes through
            uow.messages.add(message("m1", "t1", 1, "blocked"))
            uow.commit()
        with store.reading() as uow:
            assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["m1"]
    finally:
        holder.close()
        store.close()


@pytest.mark.parametrize("bad", [-1, "5", True, float("nan")])
def test_a_busy_timeout_that_is_not_a_non_negative_number_is_refused(stores: StoreFactory, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="busy_timeout"):
        PostgresStore(stores.url, memory_store_id=stores.new_id(), busy_timeout=bad)  # type: ignore[arg-type]
