"""Contract: ThreadRepository — add/get/update/delete (with its cascade) and list."""

from __future__ import annotations

from dataclasses import replace

import pytest
from palimpsest.domain.errors import DuplicateIdError, InvalidMetadataFilterError, ThreadNotFoundError
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.sentinel import NOTSET

from .builders import E1, NOW, at, committing, ids, link, message, query, reading, record, seed, thread


def test_an_added_thread_can_be_read_back_unchanged(store: MemoryStore) -> None:
    t = thread(
        "t1",
        user_id="u1",
        agent_id="a1",
        metadata={"topic": "tea", "tags": ["x"]},
        config={"ttl_days": 3, "extract": True},
        state={"turns": 4},
    )
    seed(store, threads=[t])
    with reading(store) as uow:
        assert uow.threads.get("t1") == t


def test_getting_an_unknown_thread_gives_none(store: MemoryStore) -> None:
    with reading(store) as uow:
        assert uow.threads.get("nope") is None


def test_adding_a_thread_with_a_taken_id_raises_and_keeps_the_original(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1", user_id="u1")])
    with store.unit_of_work() as uow, pytest.raises(DuplicateIdError):
        uow.threads.add(thread("t1", user_id="someone-else"))
    with reading(store) as uow:
        assert uow.threads.get("t1") == thread("t1", user_id="u1")


def test_updating_a_thread_replaces_it(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1", metadata={"v": 1})])
    changed = replace(thread("t1"), metadata={"v": 2}, state={"turns": 9}, updated_at=at(5))
    with committing(store) as uow:
        uow.threads.update(changed)
    with reading(store) as uow:
        assert uow.threads.get("t1") == changed


def test_updating_an_unknown_thread_raises_thread_not_found(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        with pytest.raises(ThreadNotFoundError):
            uow.threads.update(thread("ghost"))
        assert uow.threads.get("ghost") is None


def test_deleting_a_thread_reports_whether_it_existed(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        assert uow.threads.delete("t1") is True
        assert uow.threads.delete("t1") is False
        assert uow.threads.delete("never") is False
    with reading(store) as uow:
        assert uow.threads.get("t1") is None


def test_deleting_a_thread_deletes_its_messages_and_scoped_records_with_their_links(
    store: MemoryStore,
) -> None:
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        messages=[
            (message("m1", "t1", 1), E1),
            (message("m2", "t1", 2), E1),
            (message("n1", "t2", 1), E1),
        ],
        records=[
            (record("in-t1", thread_id="t1"), E1),
            (record("in-t2", thread_id="t2"), E1),
            (record("unscoped"), E1),
            (record("other-unscoped"), E1),
        ],
        links=[
            link("l-out", "in-t1", "unscoped"),
            link("l-in", "in-t2", "in-t1", created_at=at(1)),
            link("l-keep", "unscoped", "in-t2", created_at=at(2)),
            link("l-keep2", "other-unscoped", "unscoped", created_at=at(3)),
        ],
    )
    with committing(store) as uow:
        assert uow.threads.delete("t1") is True

    with reading(store) as uow:
        assert uow.threads.get("t1") is None
        assert uow.messages.get("m1", now=NOW) is None
        assert uow.messages.get("m2", now=NOW) is None
        assert uow.messages.list_for_thread("t1", now=NOW) == []
        assert uow.records.get("in-t1") is None
        assert uow.links.get("l-out") is None
        assert uow.links.get("l-in") is None
        # other threads' rows, unscoped records and unrelated links stay
        assert uow.threads.get("t2") == thread("t2")
        assert uow.messages.get("n1", now=NOW) == message("n1", "t2", 1)
        assert uow.records.get("in-t2") == record("in-t2", thread_id="t2")
        assert uow.records.get("unscoped") == record("unscoped")
        assert [lk.id for lk in uow.links.touching("unscoped")] == ["l-keep", "l-keep2"]
    assert sorted(ids(store.search(query(vector=E1)))) == ["in-t2", "n1", "other-unscoped", "unscoped"]


def test_a_rolled_back_thread_delete_keeps_everything(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[message("m1", "t1", 1)],
        records=[record("r", thread_id="t1")],
    )
    with store.unit_of_work() as uow:
        assert uow.threads.delete("t1") is True
    with reading(store) as uow:
        assert uow.threads.get("t1") == thread("t1")
        assert uow.messages.get("m1", now=NOW) is not None
        assert uow.records.get("r") is not None


@pytest.fixture
def five_threads(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[
            thread("t-a", user_id="alice", agent_id="bot", metadata={"topic": "tea"}, created_at=at(1)),
            thread("t-b", user_id="bob", agent_id="bot", metadata={"topic": "coffee"}, created_at=at(2)),
            thread("t-n", user_id=None, agent_id=None, created_at=at(3)),
            thread(
                "t-a2", user_id="alice", agent_id=None, metadata={"topic": "tea", "n": 2}, created_at=at(4)
            ),
            thread("t-x", user_id=None, agent_id="bot", created_at=at(5)),
        ],
    )
    return store


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["t-a", "t-b", "t-n", "t-a2", "t-x"]),
        ({"user_id": NOTSET}, ["t-a", "t-b", "t-n", "t-a2", "t-x"]),
        ({"user_id": "alice"}, ["t-a", "t-a2"]),
        ({"user_id": None}, ["t-n", "t-x"]),
        ({"agent_id": "bot"}, ["t-a", "t-b", "t-x"]),
        ({"agent_id": None}, ["t-n", "t-a2"]),
        ({"user_id": "alice", "agent_id": None}, ["t-a2"]),
        ({"user_id": None, "agent_id": None}, ["t-n"]),
        ({"user_id": "nobody"}, []),
        ({"metadata_filter": NOTSET}, ["t-a", "t-b", "t-n", "t-a2", "t-x"]),
        ({"metadata_filter": None}, ["t-n", "t-x"]),
        ({"metadata_filter": {"topic": "tea"}}, ["t-a", "t-a2"]),
        ({"metadata_filter": {"topic": {"$not": "tea"}}}, ["t-b", "t-n", "t-x"]),
        ({"user_id": "alice", "metadata_filter": {"n": 2}}, ["t-a2"]),
    ],
)
def test_listing_threads_filters_three_valued_and_orders_oldest_first(
    five_threads: MemoryStore, filters: dict, expected: list[str]
) -> None:
    with reading(five_threads) as uow:
        assert [t.id for t in uow.threads.list(**filters)] == expected


def test_listing_threads_with_a_limit_keeps_the_newest_oldest_first(five_threads: MemoryStore) -> None:
    with reading(five_threads) as uow:
        assert [t.id for t in uow.threads.list(limit=2)] == ["t-a2", "t-x"]
        assert [t.id for t in uow.threads.list(user_id="alice", limit=1)] == ["t-a2"]
        assert [t.id for t in uow.threads.list(limit=None)] == ["t-a", "t-b", "t-n", "t-a2", "t-x"]
        assert [t.id for t in uow.threads.list(limit=50)] == ["t-a", "t-b", "t-n", "t-a2", "t-x"]


def test_listing_threads_with_a_malformed_metadata_filter_raises(five_threads: MemoryStore) -> None:
    with reading(five_threads) as uow, pytest.raises(InvalidMetadataFilterError):
        uow.threads.list(metadata_filter={"topic": {"$regex": "t.*"}})
