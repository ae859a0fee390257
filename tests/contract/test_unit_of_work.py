"""Contract: UnitOfWork — atomic, rolled back unless committed, finished after commit/rollback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from palimpsest.domain.errors import DuplicateIdError, StorageError
from palimpsest.domain.ports import MemoryStore, UnitOfWork

from .builders import E1, NOW, committing, ids, link, message, query, reading, record, seed, thread


@dataclass(frozen=True)
class Write:
    """One kind of write: what must exist first, the write, and how to see its result."""

    name: str
    prepare: Callable[[MemoryStore], None]
    write: Callable[[UnitOfWork], None]
    stored: Callable[[UnitOfWork], bool]


def _nothing(store: MemoryStore) -> None:
    pass


def _thread_t1(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])


def _two_records(store: MemoryStore) -> None:
    seed(store, records=[record("a"), record("b")])


WRITES = [
    Write(
        "thread",
        _nothing,
        lambda uow: uow.threads.add(thread("t1")),
        lambda uow: uow.threads.get("t1") is not None,
    ),
    Write(
        "message",
        _thread_t1,
        lambda uow: uow.messages.add(message("m1", "t1", 1), embedding=E1),
        lambda uow: uow.messages.get("m1", now=NOW) is not None,
    ),
    Write(
        "record",
        _nothing,
        lambda uow: uow.records.add(record("r1"), embedding=E1),
        lambda uow: uow.records.get("r1") is not None,
    ),
    Write(
        "link",
        _two_records,
        lambda uow: uow.links.add(link("l1", "a", "b")),
        lambda uow: uow.links.get("l1") is not None,
    ),
]
WRITE_IDS = [w.name for w in WRITES]


@pytest.mark.parametrize("kind", WRITES, ids=WRITE_IDS)
def test_leaving_a_unit_of_work_without_commit_discards_its_writes(store: MemoryStore, kind: Write) -> None:
    kind.prepare(store)
    with store.unit_of_work() as uow:
        kind.write(uow)
    with reading(store) as uow:
        assert not kind.stored(uow)


@pytest.mark.parametrize("kind", WRITES, ids=WRITE_IDS)
def test_an_exception_inside_a_unit_of_work_discards_its_writes_and_propagates(
    store: MemoryStore, kind: Write
) -> None:
    class Boom(Exception):
        pass

    kind.prepare(store)
    with pytest.raises(Boom), store.unit_of_work() as uow:
        kind.write(uow)
        raise Boom
    with reading(store) as uow:
        assert not kind.stored(uow)


@pytest.mark.parametrize("kind", WRITES, ids=WRITE_IDS)
def test_explicit_rollback_discards_the_writes(store: MemoryStore, kind: Write) -> None:
    kind.prepare(store)
    with store.unit_of_work() as uow:
        kind.write(uow)
        uow.rollback()
    with reading(store) as uow:
        assert not kind.stored(uow)


@pytest.mark.parametrize("kind", WRITES, ids=WRITE_IDS)
def test_committed_writes_are_visible_to_later_units_of_work(store: MemoryStore, kind: Write) -> None:
    kind.prepare(store)
    with store.unit_of_work() as uow:
        kind.write(uow)
        uow.commit()
    with reading(store) as uow:
        assert kind.stored(uow)


def test_committed_writes_are_visible_to_search(store: MemoryStore) -> None:
    assert store.search(query(vector=E1)) == []
    seed(store, threads=[thread("t1")], messages=[(message("m1", "t1", 1), E1)], records=[(record("r1"), E1)])
    assert sorted(ids(store.search(query(vector=E1)))) == ["m1", "r1"]


def test_uncommitted_writes_of_a_finished_unit_of_work_never_reach_search(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.records.add(record("r1"), embedding=E1)
    assert store.search(query(vector=E1)) == []
    assert store.search(query(text="memory")) == []


def test_a_unit_of_work_sees_its_own_uncommitted_writes(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1"))
        uow.messages.add(message("m1", "t1", 1))
        uow.records.add(record("a"))
        uow.records.add(record("b", thread_id="t1"))
        uow.links.add(link("l1", "a", "b"))  # endpoints written in this same unit of work
        assert uow.threads.get("t1") == thread("t1")
        assert uow.messages.last_seq("t1") == 1
        assert uow.records.get("a") == record("a")
        assert uow.links.get("l1") == link("l1", "a", "b")
        uow.commit()
    with reading(store) as uow:
        assert uow.links.between("a", "b") == [link("l1", "a", "b")]


REPOSITORY_CALLS: list[tuple[str, Callable[[UnitOfWork], object]]] = [
    ("threads.get", lambda uow: uow.threads.get("t1")),
    ("threads.add", lambda uow: uow.threads.add(thread("t2"))),
    ("messages.get", lambda uow: uow.messages.get("m1", now=NOW)),
    ("messages.last_seq", lambda uow: uow.messages.last_seq("t1")),
    ("records.get", lambda uow: uow.records.get("r1")),
    ("records.add", lambda uow: uow.records.add(record("r2"))),
    ("records.list", lambda uow: uow.records.list(now=NOW)),
    ("links.get", lambda uow: uow.links.get("l1")),
    ("links.touching", lambda uow: uow.links.touching("r1")),
]
CALL_IDS = [name for name, _ in REPOSITORY_CALLS]


@pytest.mark.parametrize("call", [c for _, c in REPOSITORY_CALLS], ids=CALL_IDS)
def test_repositories_of_a_committed_unit_of_work_raise_storage_error(
    store: MemoryStore, call: Callable[[UnitOfWork], object]
) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1"))
        uow.commit()
        with pytest.raises(StorageError):
            call(uow)


@pytest.mark.parametrize("call", [c for _, c in REPOSITORY_CALLS], ids=CALL_IDS)
def test_repositories_of_a_rolled_back_unit_of_work_raise_storage_error(
    store: MemoryStore, call: Callable[[UnitOfWork], object]
) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1"))
        uow.rollback()
        with pytest.raises(StorageError):
            call(uow)


def test_repositories_raise_storage_error_after_the_block_is_left_without_commit(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        records = uow.records
    with pytest.raises(StorageError):
        records.get("r1")
    with pytest.raises(StorageError):
        uow.threads.add(thread("t1"))


def test_a_failed_write_raises_its_typed_error_and_its_unit_of_work_leaves_nothing(
    store: MemoryStore,
) -> None:
    seed(store, records=[record("taken", "the original")])
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t-new"))
        uow.records.add(record("fresh"), embedding=E1)
        with pytest.raises(DuplicateIdError):
            uow.records.add(record("taken", "an impostor"), embedding=E1)
        assert uow.records.get("taken") == record("taken", "the original")
    with reading(store) as uow:
        assert uow.threads.get("t-new") is None
        assert uow.records.get("fresh") is None
        assert uow.records.get("taken") == record("taken", "the original")
    assert store.search(query(vector=E1)) == []


def test_a_failed_write_propagating_out_of_the_block_leaves_nothing(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with pytest.raises(DuplicateIdError), store.unit_of_work() as uow:
        uow.records.add(record("r1", thread_id="t1"))
        uow.threads.add(thread("t1"))
        uow.commit()  # pragma: no cover - not reached
    with reading(store) as uow:
        assert uow.records.get("r1") is None
        assert uow.records.list(now=NOW) == []


def test_units_of_work_that_follow_a_failure_work_normally(store: MemoryStore) -> None:
    with pytest.raises(RuntimeError), store.unit_of_work() as uow:
        uow.records.add(record("r1"))
        raise RuntimeError("application failure")
    with committing(store) as uow:
        uow.records.add(record("r1"))
    with reading(store) as uow:
        assert uow.records.get("r1") == record("r1")


def test_committed_writes_survive_reopening_a_persistent_store(stores, store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1", user_id="u1", config={"ttl": 3}, state={"turns": 1})],
        messages=[(message("m1", "t1", 1, "green tea please", user_id="u1"), E1)],
        records=[(record("r1", "user drinks green tea", user_id="u1", metadata={"k": [1, 2.5]}), E1)],
    )
    with store.unit_of_work() as uow:
        uow.records.add(record("uncommitted"))
    again = stores.reopen(store)
    with reading(again) as uow:
        assert uow.threads.get("t1") == thread("t1", user_id="u1", config={"ttl": 3}, state={"turns": 1})
        assert uow.messages.get("m1", now=NOW) == message("m1", "t1", 1, "green tea please", user_id="u1")
        assert uow.records.get("r1") == record(
            "r1", "user drinks green tea", user_id="u1", metadata={"k": [1, 2.5]}
        )
        assert uow.records.get("uncommitted") is None
    assert sorted(ids(again.search(query(vector=E1)))) == ["m1", "r1"]
    assert ids(again.search(query(text="green", record_types=frozenset({"fact"})))) == ["r1"]


def test_a_second_instance_on_the_same_store_sees_committed_writes(stores, store: MemoryStore) -> None:
    other = stores.open_again(store)
    assert other.search(query(vector=E1)) == []  # the other instance has looked before the write
    seed(store, records=[(record("r1", "written by the first instance"), E1)])
    with reading(other) as uow:
        assert uow.records.get("r1") == record("r1", "written by the first instance")
    assert ids(other.search(query(vector=E1))) == ["r1"]
    assert ids(other.search(query(text="instance"))) == ["r1"]
