"""Contract: MessageRepository.add_many — a batch is stored whole, or not at all."""

from __future__ import annotations

import pytest
from palimpsest.domain.errors import DuplicateIdError, ThreadNotFoundError, VectorDimensionError
from palimpsest.domain.ports import MemoryStore

from .builders import E1, E2, NOW, committing, ids, message, query, reading, seed, thread


def test_a_batch_of_messages_is_stored_in_order_with_its_vectors(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    batch = [message("m1", "t1", 1, "pizza tonight"), message("m2", "t1", 2, "no vector"), message("m3", "t1", 3)]
    with committing(store) as uow:
        uow.messages.add_many(batch, [E1, None, E2])
    with reading(store) as uow:
        assert uow.messages.list_for_thread("t1", now=NOW) == batch
    assert ids(store.search(query(vector=E1))) == ["m1", "m3"]
    assert ids(store.search(query(text="pizza"))) == ["m1"]


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        ([message("n1", "t1", 5), message("n1", "t1", 6)], DuplicateIdError),
        ([message("n1", "t1", 5), message("n2", "t1", 5)], DuplicateIdError),
        ([message("n1", "t1", 5), message("old", "t1", 9)], DuplicateIdError),
        ([message("n1", "t1", 5), message("n2", "t1", 1)], DuplicateIdError),
        ([message("n1", "t1", 5), message("n2", "nope", 1)], ThreadNotFoundError),
    ],
)
def test_a_batch_with_one_bad_message_stores_nothing(store: MemoryStore, batch: list, error: type) -> None:
    seed(store, threads=[thread("t1")], messages=[message("old", "t1", 1)])
    with store.unit_of_work() as uow:
        with pytest.raises(error):
            uow.messages.add_many(batch)
        # The unit of work is still usable and holds nothing of the failed batch.
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["old"]
        uow.commit()
    with reading(store) as uow:
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["old"]


def test_a_batch_with_a_wrong_sized_vector_stores_nothing(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[(message("old", "t1", 1), E1)])
    with store.unit_of_work() as uow:
        with pytest.raises(VectorDimensionError):
            uow.messages.add_many([message("n1", "t1", 2), message("n2", "t1", 3)], [E1, (1.0, 0.0)])
        uow.commit()
    with reading(store) as uow:
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["old"]


def test_a_first_batch_of_vectors_of_two_lengths_stores_nothing(stores) -> None:
    """In a store without a dimension, a batch's vectors must agree with its first one: the
    first vector cannot fix the dimension for its neighbours to break it."""
    store = stores.new(dimension=None)
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        with pytest.raises(VectorDimensionError):
            uow.messages.add_many([message("n1", "t1", 1), message("n2", "t1", 2)], [(1.0, 0.0, 0.0), E1])
        uow.commit()
    assert store.dimension is None
    with reading(store) as uow:
        assert uow.messages.list_for_thread("t1", now=NOW) == []
