"""Contract: MemoryStore.clear_vectors — vectors and dimension go, everything else stays."""

from __future__ import annotations

from palimpsest.domain.ports import MemoryStore

from .builders import E1, E2, NOW, committing, ids, message, query, reading, record, seed, thread


def test_clearing_vectors_keeps_texts_and_links_and_frees_the_dimension(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("m1", "t1", 1, "pizza tonight"), E1)],
        records=[(record("r1", "likes pizza"), E2), (record("r2", "likes tea"), E1)],
    )
    store.clear_vectors()
    assert store.dimension is None
    assert store.search(query(vector=E1)) == []
    assert sorted(ids(store.search(query(text="pizza")))) == ["m1", "r1"]
    with reading(store) as uow:
        assert uow.records.get("r1") is not None and uow.messages.get("m1", now=NOW) is not None
    # A new model may have another dimension.
    with committing(store) as uow:
        uow.records.update(uow.records.get("r1"), embedding=(1.0, 0.0))
    assert store.dimension == 2
    assert ids(store.search(query(vector=(1.0, 0.0)))) == ["r1"]
