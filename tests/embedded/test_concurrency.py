"""Embedded store: several threads and processes sharing one file; busy handling."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import StoreBusyError

from .helpers import (
    E1,
    E2,
    NEAR_E1,
    NOW,
    concurrent_writer_process,
    ids,
    query,
    raw,
    record,
    seed,
    write_checkpoints_worker,
    write_records_threads,
    write_records_worker,
)

Opener = Callable[..., EmbeddedStore]
SPAWN = multiprocessing.get_context("spawn")


def _stored_ids(store: EmbeddedStore) -> set[str]:
    with store.unit_of_work() as uow:
        return {r.id for r in uow.records.list(now=NOW, limit=None)}


def test_a_second_process_writing_is_seen_by_this_process_while_it_searches(
    store: EmbeddedStore, path: Path
) -> None:
    seed(store, records=[(record("mine"), E1)])
    child = SPAWN.Process(target=write_records_worker, args=(str(path), "theirs", 20, 0.01))
    child.start()
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 20 and time.monotonic() < deadline:
            seen = {i for i in ids(store.search(query(vector=NEAR_E1))) if i.startswith("theirs")}
            # Every answer is a consistent snapshot: the other process commits in order.
            assert seen == {f"theirs{i:04d}" for i in range(len(seen))}
            time.sleep(0.01)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert len(seen) == 20
    assert ids(store.search(query(vector=E1, k=1))) == ["mine"]


def test_threads_of_one_process_write_concurrently_without_errors_or_lost_writes(
    store: EmbeddedStore,
) -> None:
    errors, written = write_records_threads(store, "t", threads=4, count=15)
    assert errors == [] and written == 15
    assert _stored_ids(store) == {f"t-{n}-{i:04d}" for n in range(4) for i in range(15)}
    assert len(store.search(query(vector=E2))) == 60


def _two_writing_processes(store: EmbeddedStore, path: Path, count: int, seconds: float | None) -> None:
    """This process and a spawned one, three writer threads each, on one file."""
    results = SPAWN.Queue()
    child = SPAWN.Process(
        target=concurrent_writer_process, args=(str(path), "child", 3, count, seconds, results)
    )
    child.start()
    try:
        parent_errors, _ = write_records_threads(store, "parent", 3, count, seconds)
        child_errors, _ = results.get(timeout=120)
    finally:
        child.join(timeout=120)
    assert child.exitcode == 0
    assert parent_errors == [] and child_errors == []  # no "database is locked" surfaced
    # Every thread writes consecutive numbers until it stops: all of them must be stored.
    with store.unit_of_work() as uow:
        stored = {r.id for r in uow.records.list(now=NOW, limit=None)}
    for who in ("parent", "child"):
        for n in range(3):
            mine = sorted(i for i in stored if i.startswith(f"{who}-{n}-"))
            assert mine == [f"{who}-{n}-{i:04d}" for i in range(len(mine))]
            assert mine, f"{who} thread {n} wrote nothing"
    found = {hit.id for hit in store.search(query(vector=E2, k=1000))}  # k is capped at 1000
    assert found <= stored and len(found) == min(1000, len(stored))


def test_two_processes_with_several_threads_each_write_concurrently_without_lock_errors(
    store: EmbeddedStore, path: Path
) -> None:
    _two_writing_processes(store, path, count=25, seconds=None)


def test_four_processes_write_checkpoints_to_one_file_without_lock_errors_or_lost_writes(
    store: EmbeddedStore, path: Path
) -> None:
    """Several processes of a graph server on one embedded file (D41): each commits checkpoints
    in units of work, to a thread of its own and to one they share; none meets "database is
    locked", and every checkpoint whose commit returned is there, with its blob and write."""
    results = SPAWN.Queue()
    writers = [f"p{n}" for n in range(4)]
    children = [SPAWN.Process(target=write_checkpoints_worker, args=(str(path), w, 20, results)) for w in writers]
    for child in children:
        child.start()
    try:
        reports = [results.get(timeout=120) for _ in children]
    finally:
        for child in children:
            child.join(timeout=120)
    assert [child.exitcode for child in children] == [0, 0, 0, 0]
    assert [errors for _, errors in reports] == [[]] * 4
    acknowledged = sorted(cid for done, _ in reports for cid in done)
    assert len(acknowledged) == 80
    with store.reading() as uow:
        checkpoints = store.checkpoints(uow)
        shared = checkpoints.list(thread_id="shared")
        assert sorted(cp.checkpoint_id for cp in shared) == acknowledged
        # Each put named the newest checkpoint its transaction saw: one that is stored.
        assert {cp.parent_checkpoint_id for cp in shared} - {None} <= set(acknowledged)
        for writer in writers:
            own = [cp.checkpoint_id for cp in checkpoints.list(thread_id=writer)]
            assert own == sorted((cid for cid in acknowledged if cid.endswith(writer)), reverse=True)
            for cid in own:
                assert checkpoints.blobs(writer, "", {"c": cid})["c"].version == cid
                assert [w.task_id for w in checkpoints.writes(writer, "", cid)] == [writer]
                assert [w.task_id for w in checkpoints.writes("shared", "", cid)] == [writer]


@pytest.mark.slow
def test_two_processes_with_several_threads_each_write_for_seconds_without_lock_errors(
    store: EmbeddedStore, path: Path
) -> None:
    _two_writing_processes(store, path, count=900, seconds=5.0)


def test_a_writer_blocked_past_the_busy_timeout_gets_store_busy_error(open_store: Opener, path: Path) -> None:
    store = open_store(busy_timeout=0.3)
    with raw(path) as blocker:
        blocker.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(StoreBusyError) as caught, store.unit_of_work():
            pass
        waited = time.monotonic() - started
        blocker.execute("ROLLBACK")
    assert 0.2 <= waited < 5
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert isinstance(caught.value, TimeoutError)
    seed(store, records=[(record("after"), E1)])  # the store works once the lock is gone
    assert ids(store.search(query(vector=E1))) == ["after"]


def test_readers_are_not_blocked_by_an_open_write_transaction(store: EmbeddedStore, path: Path) -> None:
    seed(store, records=[(record("a"), E1)])
    with raw(path) as blocker:
        blocker.execute("BEGIN IMMEDIATE")
        blocker.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
        started = time.monotonic()
        assert ids(store.search(query(vector=E1))) == ["a"]
        assert time.monotonic() - started < 1
        blocker.execute("ROLLBACK")
