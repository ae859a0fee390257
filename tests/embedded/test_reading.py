"""Embedded store: read-only units of work (``reading()``) never take or wait for the write lock.

They run on each thread's own snapshot connection in a deferred transaction, so they coexist with
the thread's open unit of work and searches, nest, and work while another connection holds the
file's write lock; opening a current store only reads it.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import StorageError, StoreBusyError, StoreClosedError

from .helpers import E1, NOW, ids, query, raw, record, seed

WAIT = 10.0


def test_reads_and_opening_work_while_another_connection_holds_the_write_lock(
    store: EmbeddedStore, path: Path
) -> None:
    seed(store, records=[(record("a"), E1)])
    with raw(path) as holder:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("DELETE FROM records")  # pending, never committed
        with store.reading() as uow:
            assert [r.id for r in uow.records.list(now=NOW)] == ["a"]
        with EmbeddedStore(path, dimension=4, busy_timeout=0.2) as again:  # opening only reads
            with again.reading() as uow:
                assert uow.records.get("a") == record("a")
            assert ids(again.search(query(vector=E1))) == ["a"]
            with pytest.raises(StoreBusyError), again.unit_of_work():
                pass  # the lock was held throughout
        holder.execute("ROLLBACK")


def test_a_read_only_unit_of_work_works_beside_the_threads_writer_and_nests(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    with store.unit_of_work() as writer:
        writer.records.add(record("pending"), embedding=E1)
        with store.reading() as outer:
            with store.reading() as inner:  # joins the outer snapshot
                assert inner.records.get("a") == record("a")
            assert outer.records.get("pending") is None  # uncommitted: not in any snapshot
            assert ids(store.search(query(vector=E1))) == ["a"]
        writer.commit()
    with store.reading() as uow:
        assert [r.id for r in uow.records.list(now=NOW)] == ["a", "pending"]


def test_sqlite_itself_refuses_a_write_on_the_snapshot_connection(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    with store.reading() as uow, pytest.raises(sqlite3.OperationalError, match="readonly"):
        uow.connection().execute("DELETE FROM records")
    with store.reading() as uow:
        assert uow.records.get("a") == record("a")


def test_close_leaves_an_open_read_only_unit_of_work_of_another_thread_to_finish(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    reading, closed = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def worker() -> None:
        try:
            with store.reading() as uow:
                outcome["before"] = uow.records.get("a")
                reading.set()
                closed.wait(WAIT)
                try:
                    uow.records.get("a")
                except StorageError as exc:
                    outcome["after"] = exc
        except BaseException as exc:  # noqa: BLE001  # pragma: no cover - reported by the assertions
            outcome["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    assert reading.wait(WAIT)
    store.close()
    closed.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["before"] == record("a")
    assert isinstance(outcome["after"], StoreClosedError)
    with pytest.raises(StoreClosedError):
        store.reading()
