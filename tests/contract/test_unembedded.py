"""Contract: ``MessageRepository.unembedded`` and ``RecordRepository.unembedded``, the vector
backfill's work list (ARCHITECTURE.md D43): visible rows stored without a vector, oldest first,
bounded by ``limit``; a row gets off the list when a vector is stored for it."""

from __future__ import annotations

from datetime import timedelta

from palimpsest.domain.model import RecordType
from palimpsest.domain.ports import MemoryStore

from .builders import E1, E2, NOW, at, committing, ids, message, query, reading, record, seed, thread
from .conftest import StoreFactory


def _seeded(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        messages=[
            (message("m1", "t1", 1, "first", created_at=at(1)), None),
            (message("m2", "t1", 2, "second", created_at=at(2)), E1),
            (message("m3", "t2", 1, "third", created_at=at(0)), None),
            (message("m4", "t1", 3, "gone", created_at=at(3), expires_at=NOW - timedelta(seconds=1)), None),
            (message("m5", "t1", 4, "fourth", created_at=at(3)), None),
        ],
        records=[
            (record("r1", "likes tea", created_at=at(2)), None),
            (record("r2", "likes pizza", created_at=at(1)), E2),
            (record("r3", "a picture", record_type=RecordType.IMAGE, created_at=at(1)), None),
            (record("r4", "old", created_at=at(0), expires_at=NOW - timedelta(seconds=1)), None),
        ],
    )


def test_unembedded_lists_visible_rows_without_vectors_oldest_first(store: MemoryStore) -> None:
    _seeded(store)
    with reading(store) as uow:
        assert [m.id for m in uow.messages.unembedded(now=NOW)] == ["m3", "m1", "m5"]
        assert [r.id for r in uow.records.unembedded(now=NOW)] == ["r3", "r1"]
        assert [m.id for m in uow.messages.unembedded(now=NOW, limit=2)] == ["m3", "m1"]
        assert [r.id for r in uow.records.unembedded(now=NOW, limit=1)] == ["r3"]
        assert uow.messages.unembedded(now=NOW, limit=0) == [] and uow.records.unembedded(now=NOW, limit=0) == []
        first = uow.messages.unembedded(now=NOW, limit=1)[0]
        assert first == uow.messages.get("m3", now=NOW)  # whole messages, as stored


def test_a_stored_vector_takes_a_row_off_the_list_and_into_vector_search(store: MemoryStore) -> None:
    _seeded(store)
    with committing(store) as uow:
        uow.messages.update(uow.messages.get("m1", now=NOW), embedding=E2)
        uow.records.update(uow.records.get("r1"), embedding=E1)
    with reading(store) as uow:
        assert [m.id for m in uow.messages.unembedded(now=NOW)] == ["m3", "m5"]
        assert [r.id for r in uow.records.unembedded(now=NOW)] == ["r3"]
    assert "m1" in ids(store.search(query(vector=E2)))
    assert "r1" in ids(store.search(query(vector=E1)))
    # Dropping a vector puts the row back on the list.
    with committing(store) as uow:
        uow.messages.update(uow.messages.get("m2", now=NOW), embedding=None)
    with reading(store) as uow:
        assert [m.id for m in uow.messages.unembedded(now=NOW)] == ["m3", "m2", "m5"]


def test_unembedded_survives_a_reopen(stores: StoreFactory) -> None:
    store = stores.new()
    _seeded(store)
    again = stores.reopen(store)
    with reading(again) as uow:
        assert [m.id for m in uow.messages.unembedded(now=NOW)] == ["m3", "m1", "m5"]
        assert [r.id for r in uow.records.unembedded(now=NOW)] == ["r3", "r1"]
