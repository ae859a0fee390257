"""Embedded store: ``close()`` while other threads are using their connections.

Closing a SQLite connection under a statement another thread is running crashes the
process, so ``close()`` closes idle connections at once and leaves a connection in use to
its thread, which closes it when that use ends. Every later call raises StoreClosedError.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import StoreClosedError

from .helpers import E1, NOW, query, record, seed

WAIT = 10.0


def test_close_leaves_a_statement_in_progress_on_another_thread_to_finish(
    store: EmbeddedStore,
) -> None:
    started, released = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def pause() -> int:
        started.set()
        released.wait(WAIT)
        return 7

    def worker() -> None:
        try:
            with store.unit_of_work() as uow:
                conn = uow.connection()
                conn.create_function("pause", 0, pause)
                # The statement is running (inside SQLite) while the main thread closes.
                outcome["value"] = conn.execute("SELECT pause()").fetchone()[0]
                outcome["conn"] = conn
                try:
                    uow.connection()
                except StoreClosedError as exc:
                    outcome["after"] = exc
        except BaseException as exc:  # noqa: BLE001  # pragma: no cover - reported by the assertions
            outcome["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(WAIT)
    store.close()  # must not close the worker's connection under its statement
    released.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["value"] == 7
    assert isinstance(outcome["after"], StoreClosedError)
    # The worker closed its connection when its unit of work ended.
    conn = outcome["conn"]
    assert isinstance(conn, sqlite3.Connection)
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_close_closes_idle_connections_of_other_threads_at_once(store: EmbeddedStore) -> None:
    seed(store, records=[(record("r1"), E1)])
    conns: list[sqlite3.Connection] = []

    def worker() -> None:
        store.search(query(vector=E1))
        with store.unit_of_work() as uow:
            conns.append(uow.connection())
            uow.records.list(now=NOW, limit=None)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(WAIT)
    # The thread is gone but may not be collected yet; its connections are idle either way.
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conns[0].execute("SELECT 1")


def test_searches_racing_close_end_with_store_closed_and_nothing_else(
    store: EmbeddedStore,
) -> None:
    seed(store, records=[(record(f"r{i}"), E1) for i in range(50)])
    errors: list[BaseException] = []
    go = threading.Barrier(5)

    def searcher() -> None:
        go.wait(WAIT)
        try:
            while True:
                store.search(query(vector=E1))
                with store.unit_of_work() as uow:
                    uow.records.list(now=NOW, limit=5)
        except StoreClosedError:
            return
        except BaseException as exc:  # noqa: BLE001  # pragma: no cover - reported by the assertion
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for thread in threads:
        thread.start()
    go.wait(WAIT)
    store.close()
    for thread in threads:
        thread.join(WAIT)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    with pytest.raises(StoreClosedError):
        store.search(query(vector=E1))
