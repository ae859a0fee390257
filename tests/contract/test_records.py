"""Contract: RecordRepository — add/get/get_many/update/delete, list filters, expiry."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from palimpsest.domain.errors import (
    DuplicateIdError,
    InvalidMetadataFilterError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
    VectorDimensionError,
)
from palimpsest.domain.model import RecordStatus, RecordType
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.sentinel import NOTSET

from .builders import (
    E1,
    E2,
    NOW,
    at,
    committing,
    ids,
    invalid_record,
    link,
    query,
    reading,
    record,
    seed,
    thread,
)


def test_an_added_record_can_be_read_back_unchanged(store: MemoryStore) -> None:
    r = replace(
        record(
            "r1",
            "Ann prefers oolong tea",
            record_type=RecordType.PREFERENCE,
            user_id="ann",
            agent_id="barista",
            thread_id="t1",
            metadata={"source": "chat", "confidence": 0.75, "tags": ["tea"]},
            timestamp=at(-90),
            expires_at=at(days=7),
        ),
        created_at=NOW + timedelta(microseconds=123_456),
        updated_at=NOW + timedelta(seconds=1, microseconds=7),
    )
    seed(store, threads=[thread("t1")], records=[(r, E1)])
    with reading(store) as uow:
        assert uow.records.get("r1") == r
        assert uow.records.get("r1", now=NOW) == r
        assert uow.records.get("nope") is None


def test_an_invalid_record_keeps_its_status_reason_and_time(store: MemoryStore) -> None:
    r = invalid_record(
        "old", "Ann drinks coffee", reason="Superseded by another memory.", invalidated_at=at(3)
    )
    seed(store, records=[r])
    with reading(store) as uow:
        stored = uow.records.get("old")
    assert stored == r
    assert stored is not None and stored.status is RecordStatus.INVALID
    assert stored.invalidation_reason == "Superseded by another memory."
    assert stored.invalidated_at == at(3)


def test_adding_a_record_with_a_taken_id_raises_and_keeps_the_original(store: MemoryStore) -> None:
    seed(store, records=[record("r1", "original")])
    with store.unit_of_work() as uow:
        with pytest.raises(DuplicateIdError):
            uow.records.add(record("r1", "impostor", record_type=RecordType.GUIDELINE))
        assert uow.records.get("r1") == record("r1", "original")


def test_an_expired_record_id_stays_taken(store: MemoryStore) -> None:
    seed(store, records=[record("r1", expires_at=at(-1))])
    with store.unit_of_work() as uow, pytest.raises(DuplicateIdError):
        uow.records.add(record("r1"))


def test_a_record_scoped_to_an_unknown_thread_raises_thread_not_found(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        with pytest.raises(ThreadNotFoundError):
            uow.records.add(record("r1", thread_id="ghost"), embedding=E1)
        assert uow.records.get("r1") is None


def test_a_record_embedding_of_the_wrong_dimension_raises_and_writes_nothing(store: MemoryStore) -> None:
    with committing(store) as uow:
        with pytest.raises(VectorDimensionError):
            uow.records.add(record("r1", "tea"), embedding=(1.0, 0.0, 0.0, 0.0, 0.0))
        assert uow.records.get("r1") is None
    with reading(store) as uow:
        assert uow.records.get("r1") is None
        assert uow.records.list(now=NOW) == []
    assert store.search(query(text="tea")) == []


@pytest.mark.parametrize(
    "bad_vector",
    [(float("nan"), 0.0, 0.0, 0.0), (float("inf"), 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0), ()],
    ids=["nan", "inf", "zero", "empty"],
)
def test_a_non_finite_or_degenerate_embedding_raises_vector_dimension_error(
    store: MemoryStore, bad_vector: tuple[float, ...]
) -> None:
    with store.unit_of_work() as uow:
        with pytest.raises(VectorDimensionError):
            uow.records.add(record("r1"), embedding=bad_vector)
        assert uow.records.get("r1") is None


def test_an_expired_record_is_hidden_from_get_with_now_but_not_from_get_without_it(
    store: MemoryStore,
) -> None:
    r = record("r1", expires_at=at(10))
    seed(store, records=[r])
    with reading(store) as uow:
        assert uow.records.get("r1", now=at(9)) == r
        assert uow.records.get("r1", now=at(10)) is None  # expiry is inclusive
        assert uow.records.get("r1") == r
        assert uow.records.list(now=at(9)) == [r]
        assert uow.records.list(now=at(10)) == []


def test_get_many_returns_the_stored_records_among_the_ids_expired_included(store: MemoryStore) -> None:
    seed(store, records=[record("a"), record("b", expires_at=at(-5)), record("c")])
    with reading(store) as uow:
        assert uow.records.get_many(["a", "b", "missing"]) == {
            "a": record("a"),
            "b": record("b", expires_at=at(-5)),
        }
        assert uow.records.get_many([]) == {}


def test_updating_a_record_replaces_it(store: MemoryStore) -> None:
    seed(store, records=[(record("r1", "Ann likes tea", user_id="ann"), E1)])
    changed = replace(
        invalid_record("r1", "Ann liked tea", user_id="ann", invalidated_at=at(2)),
        metadata={"edited": True},
        updated_at=at(2),
    )
    with committing(store) as uow:
        uow.records.update(changed)
    with reading(store) as uow:
        assert uow.records.get("r1") == changed
    assert ids(store.search(query(text="liked"))) == ["r1"]
    assert ids(store.search(query(vector=E1))) == ["r1"]


def test_a_record_can_become_valid_again_through_update(store: MemoryStore) -> None:
    seed(store, records=[invalid_record("r1", "Ann likes tea")])
    with committing(store) as uow:
        uow.records.update(record("r1", "Ann likes tea"))
    with reading(store) as uow:
        assert uow.records.get("r1") == record("r1", "Ann likes tea")


def test_updating_an_unknown_record_raises_record_not_found(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        with pytest.raises(RecordNotFoundError):
            uow.records.update(record("ghost"))
        assert uow.records.get("ghost") is None


@pytest.mark.parametrize(
    "change",
    [
        {"user_id": "mallory"},
        {"user_id": None},
        {"agent_id": "other-agent"},
        {"thread_id": "t2"},
        {"thread_id": None},
        {"record_type": RecordType.GUIDELINE},
    ],
    ids=["user", "user-cleared", "agent", "thread", "thread-cleared", "type"],
)
def test_updating_a_record_refuses_to_change_its_scope_or_type(store: MemoryStore, change: dict) -> None:
    original = record("r1", "content", user_id="ann", agent_id="bot", thread_id="t1")
    seed(store, threads=[thread("t1"), thread("t2")], records=[original])
    with committing(store) as uow, pytest.raises(ValidationError):
        uow.records.update(replace(original, content="changed", **change))
    with reading(store) as uow:
        assert uow.records.get("r1") == original


def test_updating_a_record_keeps_drops_or_replaces_its_embedding(store: MemoryStore) -> None:
    seed(store, records=[(record("keep"), E1), (record("drop"), E1), (record("swap"), E1)])
    with committing(store) as uow:
        uow.records.update(record("keep", "kept vector"))
        uow.records.update(record("drop", "dropped vector"), embedding=None)
        uow.records.update(record("swap", "swapped vector"), embedding=E2)
    assert ids(store.search(query(vector=E1, k=1))) == ["keep"]
    assert ids(store.search(query(vector=E2, k=1))) == ["swap"]
    assert sorted(ids(store.search(query(vector=E1)))) == ["keep", "swap"]
    assert ids(store.search(query(text="dropped"))) == ["drop"]  # still found by keyword


def test_updating_a_record_with_a_wrong_dimension_vector_raises_and_keeps_it(store: MemoryStore) -> None:
    seed(store, records=[(record("r1", "original"), E1)])
    with committing(store) as uow, pytest.raises(VectorDimensionError):
        uow.records.update(record("r1", "changed"), embedding=(1.0, 2.0, 3.0))
    with reading(store) as uow:
        assert uow.records.get("r1") == record("r1", "original")
    assert ids(store.search(query(vector=E1))) == ["r1"]


def test_deleting_a_record_deletes_every_link_touching_it(store: MemoryStore) -> None:
    seed(
        store,
        records=[record("a"), record("b"), record("c"), record("d")],
        links=[
            link("l-ab", "a", "b"),
            link("l-ca", "c", "a", created_at=at(1)),
            link("l-bc", "b", "c", created_at=at(2)),
            link("l-cd", "c", "d", created_at=at(3)),
        ],
    )
    with committing(store) as uow:
        assert uow.records.delete("a") is True
        assert uow.records.delete("a") is False
        assert uow.records.delete("never") is False
    with reading(store) as uow:
        assert uow.records.get("a") is None
        assert uow.links.get("l-ab") is None
        assert uow.links.get("l-ca") is None
        assert uow.links.touching("a") == []
        assert [lk.id for lk in uow.links.touching("c")] == ["l-bc", "l-cd"]
        assert [lk.id for lk in uow.links.list()] == ["l-bc", "l-cd"]


def test_deleting_a_record_does_not_re_derive_the_status_of_its_former_partners(store: MemoryStore) -> None:
    old = invalid_record("old", "Ann drinks coffee")
    seed(
        store, records=[record("new", "Ann drinks tea"), old], links=[link("l1", "new", "old", "supersedes")]
    )
    with committing(store) as uow:
        assert uow.records.delete("new") is True
    with reading(store) as uow:
        assert uow.records.get("old") == old  # still INVALID: re-deriving is the service's job


def test_a_deleted_record_leaves_search(store: MemoryStore) -> None:
    seed(store, records=[(record("a", "green tea"), E1), (record("b", "green tea"), E1)])
    with committing(store) as uow:
        uow.records.delete("a")
    assert ids(store.search(query(vector=E1))) == ["b"]
    assert ids(store.search(query(text="green"))) == ["b"]


@pytest.fixture
def catalogue(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        records=[
            record(
                "r1",
                user_id="ann",
                agent_id="bot",
                thread_id="t1",
                metadata={"topic": "tea"},
                created_at=at(1),
            ),
            record("r2", user_id="bob", agent_id="bot", record_type=RecordType.GUIDELINE, created_at=at(2)),
            record("r3", user_id=None, agent_id=None, record_type=RecordType.MEMORY, created_at=at(3)),
            record("r4", user_id="ann", thread_id="t2", metadata={"topic": "coffee"}, created_at=at(4)),
            record(
                "r5", user_id="ann", record_type=RecordType.PREFERENCE, created_at=at(5), expires_at=at(-1)
            ),
            invalid_record(
                "r6", user_id=None, agent_id="bot", metadata={"topic": "tea", "v": 2}, created_at=at(6)
            ),
        ],
    )
    return store


ALL_VISIBLE = ["r1", "r2", "r3", "r4", "r6"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ALL_VISIBLE),
        ({"user_id": NOTSET, "agent_id": NOTSET, "thread_id": NOTSET}, ALL_VISIBLE),
        ({"user_id": "ann"}, ["r1", "r4"]),
        ({"user_id": None}, ["r3", "r6"]),
        ({"agent_id": "bot"}, ["r1", "r2", "r6"]),
        ({"agent_id": None}, ["r3", "r4"]),
        ({"thread_id": "t1"}, ["r1"]),
        ({"thread_id": None}, ["r2", "r3", "r6"]),
        ({"user_id": "ann", "thread_id": None}, []),
        ({"user_id": None, "agent_id": "bot"}, ["r6"]),
        ({"record_types": frozenset({RecordType.GUIDELINE, RecordType.MEMORY})}, ["r2", "r3"]),
        ({"record_types": frozenset({RecordType.PREFERENCE})}, []),
        ({"metadata_filter": None}, ["r2", "r3"]),
        ({"metadata_filter": {"topic": "tea"}}, ["r1", "r6"]),
        ({"metadata_filter": {"topic": {"$not": "tea"}}}, ["r2", "r3", "r4"]),
        ({"user_id": None, "metadata_filter": {"topic": "tea"}}, ["r6"]),
        ({"metadata_filter": {"topic": {"$array_contains": "tea"}}}, []),  # a string is not an array
    ],
)
def test_listing_records_filters_three_valued_and_hides_expired_ones(
    catalogue: MemoryStore, filters: dict, expected: list[str]
) -> None:
    with reading(catalogue) as uow:
        assert [r.id for r in uow.records.list(now=NOW, **filters)] == expected


def test_listing_records_with_an_earlier_now_shows_records_not_yet_expired(catalogue: MemoryStore) -> None:
    with reading(catalogue) as uow:
        assert [r.id for r in uow.records.list(now=at(-2))] == ["r1", "r2", "r3", "r4", "r5", "r6"]


def test_listing_records_with_a_limit_keeps_the_newest_oldest_first(catalogue: MemoryStore) -> None:
    with reading(catalogue) as uow:
        assert [r.id for r in uow.records.list(now=NOW, limit=2)] == ["r4", "r6"]
        assert [r.id for r in uow.records.list(now=NOW, user_id="ann", limit=1)] == ["r4"]
        assert [r.id for r in uow.records.list(now=NOW, limit=None)] == ALL_VISIBLE
        assert [r.id for r in uow.records.list(now=NOW, limit=10**30)] == ALL_VISIBLE  # past 64 bits


def test_listing_records_without_a_limit_returns_every_match_past_ten_thousand(store: MemoryStore) -> None:
    count = 10_002
    seed(store, records=[record(f"r{n:05}", created_at=at(n / 1000)) for n in range(count)])
    with reading(store) as uow:
        listed = uow.records.list(now=NOW)
        filtered = uow.records.list(now=NOW, metadata_filter=None)
    assert len(listed) == count and (listed[0].id, listed[-1].id) == ("r00000", f"r{count - 1:05}")
    assert len(filtered) == count

def test_listing_records_orders_equal_creation_times_by_id(store: MemoryStore) -> None:
    seed(
        store,
        records=[record("c", created_at=at(1)), record("b"), record("a", created_at=at(1)), record("z")],
    )
    with reading(store) as uow:
        assert [r.id for r in uow.records.list(now=NOW)] == ["b", "z", "a", "c"]
        assert [r.id for r in uow.records.list(now=NOW, limit=3)] == ["z", "a", "c"]


def test_listing_records_with_a_malformed_metadata_filter_raises(catalogue: MemoryStore) -> None:
    with reading(catalogue) as uow, pytest.raises(InvalidMetadataFilterError):
        uow.records.list(now=NOW, metadata_filter={"topic": {"$in": ["tea"]}})
