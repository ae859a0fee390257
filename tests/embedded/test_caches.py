"""Embedded store: the in-process caches (vectors, graph) follow committed state, and only that."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.codec import NO_EXPIRY_US, TYPE_CODES
from palimpsest.adapters.embedded.vector_index import IndexBatch, NumpyVectorIndex, VectorFilter
from palimpsest.domain.errors import StorageError
from palimpsest.domain.model import RecordType
from palimpsest.domain.sentinel import ANY

from .helpers import E1, E2, ids, link, linked_ids, message, query, raw, record, seed, thread

Opener = Callable[..., EmbeddedStore]


def test_a_rolled_back_unit_of_work_leaves_no_trace_in_search(store: EmbeddedStore) -> None:
    seed(store, records=[(record("kept", "old note"), E2)])
    with store.unit_of_work() as uow:
        uow.records.add(record("ghost", "phantom note"), embedding=E1)
        uow.records.update(record("kept", "rewritten note"), embedding=E1)
    assert ids(store.search(query(vector=E1))) == ["kept"]
    assert store.search(query(vector=E1, k=1))[0].score == pytest.approx(0.0)  # still E2
    assert store.search(query(text="phantom")) == []
    assert store.search(query(text="rewritten")) == []
    assert ids(store.search(query(text="old"))) == ["kept"]


def test_a_rolled_back_unit_of_work_leaves_no_trace_in_graph_expansion(store: EmbeddedStore) -> None:
    seed(
        store,
        records=[(record("a"), E1), (record("b"), E2), (record("c"), E2)],
        links=[link("l-ac", "a", "c")],
    )
    with store.unit_of_work() as uow:
        uow.links.add(link("l-ab", "a", "b", minutes=1))
        uow.links.delete("l-ac")
        uow.records.delete("c")
        uow.rollback()
    hits = store.search(query(vector=E1, k=1, num_hops=2))
    assert ids(hits) == ["a"]
    assert linked_ids(hits) == {"c"}


def test_an_exception_inside_a_unit_of_work_leaves_the_caches_untouched(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    with pytest.raises(RuntimeError), store.unit_of_work() as uow:
        uow.records.delete("a")
        raise RuntimeError("application failure")
    assert ids(store.search(query(vector=E1))) == ["a"]


def test_a_second_instance_sees_committed_writes_in_search_without_reopening(open_store: Opener) -> None:
    writer, reader = open_store(), open_store()
    assert reader.search(query(vector=E1)) == []
    seed(writer, records=[(record("a", "tea note"), E1), (record("b"), E2)], links=[link("l1", "a", "b")])
    assert ids(reader.search(query(vector=E1, k=1))) == ["a"]
    assert linked_ids(reader.search(query(vector=E1, k=1, num_hops=1))) == {"b"}
    with writer.unit_of_work() as uow:
        uow.records.update(record("a", "coffee note"), embedding=E2)
        uow.links.delete("l1")
        uow.commit()
    hits = reader.search(query(vector=E2, k=2, num_hops=1))
    assert set(ids(hits)) == {"a", "b"} and linked_ids(hits) == set()
    assert ids(reader.search(query(text="coffee"))) == ["a"]
    with writer.unit_of_work() as uow:
        uow.records.delete("a")
        uow.commit()
    assert ids(reader.search(query(vector=E2))) == ["b"]


def test_cascaded_deletes_reach_the_caches_of_every_instance(open_store: Opener) -> None:
    writer, reader = open_store(), open_store()
    seed(
        writer,
        threads=[thread("t1")],
        messages=[(message("m1", "t1", 1), E1)],
        records=[(record("in-thread", thread_id="t1"), E1), (record("outside"), E1)],
        links=[link("l1", "outside", "in-thread")],
    )
    assert set(ids(reader.search(query(vector=E1)))) == {"m1", "in-thread", "outside"}
    assert set(ids(reader.search(query(text="hello memory")))) == {"m1", "in-thread", "outside"}
    with writer.unit_of_work() as uow:
        assert uow.threads.delete("t1")
        uow.commit()
    for store in (writer, reader):
        hits = store.search(query(vector=E1, num_hops=2))
        assert ids(hits) == ["outside"] and linked_ids(hits) == set()
        # The keyword index followed the cascade as well.
        assert ids(store.search(query(text="hello memory"))) == ["outside"]
        assert store.search(query(text="hello")) == []


def test_an_instance_that_fell_behind_a_pruned_change_log_rebuilds(open_store: Opener, path: Path) -> None:
    writer, reader = open_store(), open_store()
    writer.CHANGES_KEEP = 3
    writer._PRUNE_EVERY = 1
    assert reader.search(query(vector=E1)) == []
    for i in range(12):
        seed(writer, records=[(record(f"r{i:02d}"), E1)])
    with raw(path) as conn:
        floor = int(conn.execute("SELECT value FROM meta WHERE key = 'changes_floor'").fetchone()[0])
        assert floor > 0
        assert conn.execute("SELECT count(*) FROM changes").fetchone()[0] < 12
    assert ids(reader.search(query(vector=E1))) == [f"r{i:02d}" for i in range(12)]


def test_a_search_inside_an_open_unit_of_work_sees_committed_state_only(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    with store.unit_of_work() as uow:
        uow.records.add(record("pending"), embedding=E1)
        assert ids(store.search(query(vector=E1))) == ["a"]
        uow.commit()
    assert ids(store.search(query(vector=E1))) == ["a", "pending"]


def test_a_second_unit_of_work_on_the_same_thread_raises_storage_error(store: EmbeddedStore) -> None:
    with store.unit_of_work(), pytest.raises(StorageError), store.unit_of_work():
        pass
    with store.unit_of_work() as uow:  # the thread can write again once the first one ended
        uow.records.add(record("r1"))
        uow.commit()


def test_the_connections_of_a_finished_thread_are_closed(store: EmbeddedStore) -> None:
    seed(store, records=[(record("a"), E1)])
    before = len(store._registry)

    def use() -> None:
        store.search(query(vector=E1))
        seed(store, records=[(record("b"), E1)])

    worker = threading.Thread(target=use)
    worker.start()
    worker.join()
    gc.collect()
    assert len(store._registry) == before


def _batch(keys: list[str], users: list[str | None], vectors: np.ndarray) -> IndexBatch:
    batch = IndexBatch()
    for key, user, vector in zip(keys, users, vectors):
        normalised = (vector / np.linalg.norm(vector)).astype("<f4")
        batch.append(
            (False, key),
            user,
            None,
            None,
            TYPE_CODES[RecordType.FACT],
            True,
            int(NO_EXPIRY_US),
            normalised.tobytes(),
        )
    return batch


def _everything(index: NumpyVectorIndex, q: np.ndarray, k: int, user: object = ANY) -> list[str]:
    flt = VectorFilter(
        type_codes=frozenset(TYPE_CODES.values()),
        now_us=0,
        include_invalid=True,
        user_id=user,
        agent_code=None,
        thread_code=None,
    )
    return [c[2] for c in index.search((q / np.linalg.norm(q)).astype(np.float32), flt, k)]


def test_the_vector_index_compacts_partitions_and_keeps_answering_exactly() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 8))
    keys = [f"r{i:03d}" for i in range(200)]
    users = ["u1" if i % 2 else "u2" for i in range(200)]
    index = NumpyVectorIndex(int(NO_EXPIRY_US))
    index.upsert(_batch(keys, users, vectors))
    removed = set(keys[:150])
    index.remove([(False, key) for key in removed])
    assert sum(index.partition_sizes().values()) == 50
    index.upsert(_batch(keys[150:160], ["u3"] * 10, vectors[150:160]))  # ten rows change scope
    q = rng.standard_normal(8)
    expected = sorted(
        (i for i in range(150, 200)), key=lambda i: -float(vectors[i] @ q / np.linalg.norm(vectors[i]))
    )
    assert _everything(index, q, 50) == [keys[i] for i in expected]
    assert index.partition_sizes()["u3"] == 10
    assert set(_everything(index, q, 50, user="u3")) == set(keys[150:160])
