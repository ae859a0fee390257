"""Contract: MessageRepository — add/get/update/delete, last_seq and list_for_thread windows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from palimpsest.domain.errors import (
    DuplicateIdError,
    MessageNotFoundError,
    ThreadNotFoundError,
    VectorDimensionError,
)
from palimpsest.domain.model import RecordType
from palimpsest.domain.ports import MemoryStore

from .builders import DIAG_12, E1, E2, NOW, at, committing, ids, message, query, reading, seed, thread

MESSAGES_ONLY = frozenset({RecordType.MESSAGE})


def test_an_added_message_can_be_read_back_unchanged(store: MemoryStore) -> None:
    m = message(
        "m1",
        "t1",
        1,
        "Hi, I am Ann ✓",
        role="assistant",
        user_id="u1",
        agent_id="a1",
        metadata={"lang": "en", "tokens": [1, 2]},
        timestamp=at(-60),
        expires_at=at(days=30),
    )
    seed(store, threads=[thread("t1", user_id="u1", agent_id="a1")], messages=[m])
    with reading(store) as uow:
        assert uow.messages.get("m1", now=NOW) == m
        assert uow.messages.get("unknown", now=NOW) is None


def test_a_message_of_an_unknown_thread_raises_thread_not_found(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        with pytest.raises(ThreadNotFoundError):
            uow.messages.add(message("m1", "ghost", 1), embedding=E1)
        assert uow.messages.get("m1", now=NOW) is None


def test_a_message_with_a_taken_id_raises_duplicate_id(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")], messages=[message("m1", "t1", 1, "original")])
    with store.unit_of_work() as uow:
        with pytest.raises(DuplicateIdError):
            uow.messages.add(message("m1", "t2", 1, "impostor"))
        assert uow.messages.get("m1", now=NOW) == message("m1", "t1", 1, "original")


def test_a_message_with_a_taken_sequence_number_in_its_thread_raises_duplicate_id(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")], messages=[message("m1", "t1", 1)])
    with committing(store) as uow:
        with pytest.raises(DuplicateIdError):
            uow.messages.add(message("m2", "t1", 1))
        uow.messages.add(message("n1", "t2", 1))  # the same seq in another thread is fine
    with reading(store) as uow:
        assert uow.messages.get("m2", now=NOW) is None
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["m1"]
        assert [m.id for m in uow.messages.list_for_thread("t2", now=NOW)] == ["n1"]


def test_a_message_embedding_of_the_wrong_dimension_raises_and_writes_nothing(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        with pytest.raises(VectorDimensionError):
            uow.messages.add(message("m1", "t1", 1), embedding=(1.0, 0.0, 0.0))
        assert uow.messages.get("m1", now=NOW) is None
    with reading(store) as uow:
        assert uow.messages.get("m1", now=NOW) is None
        assert uow.messages.last_seq("t1") == 0
    assert store.search(query(text="hello")) == []


def test_last_seq_is_zero_for_a_thread_without_messages(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with reading(store) as uow:
        assert uow.messages.last_seq("t1") == 0


def test_last_seq_is_the_highest_stored_seq_including_expired_messages(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        messages=[
            message("m1", "t1", 1),
            message("m2", "t1", 2),
            message("m5", "t1", 5, expires_at=at(-1)),  # gaps are allowed; expired still counts
            message("n9", "t2", 9),
        ],
    )
    with reading(store) as uow:
        assert uow.messages.last_seq("t1") == 5
        assert uow.messages.last_seq("t2") == 9


@pytest.fixture
def ten_turns(store: MemoryStore) -> MemoryStore:
    """Thread t1 with seqs 1..10 (seq 4 expired), plus noise in thread t2."""
    msgs = [
        message(f"m{i}", "t1", i, f"turn {i}", expires_at=at(-1) if i == 4 else None) for i in range(1, 11)
    ]
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        messages=[*reversed(msgs), message("other", "t2", 3)],
    )
    return store


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        ({}, [1, 2, 3, 5, 6, 7, 8, 9, 10]),
        ({"start_seq": 3}, [3, 5, 6, 7, 8, 9, 10]),
        ({"end_seq": 3}, [1, 2]),
        ({"start_seq": 2, "end_seq": 6}, [2, 3, 5]),
        ({"last_n": 3}, [8, 9, 10]),
        ({"start_seq": 1, "end_seq": 7, "last_n": 3}, [3, 5, 6]),
        ({"last_n": 100}, [1, 2, 3, 5, 6, 7, 8, 9, 10]),
        ({"last_n": 2**63 + 1}, [1, 2, 3, 5, 6, 7, 8, 9, 10]),  # beyond any 64-bit bind: every row
        ({"start_seq": 11}, []),
        ({"start_seq": 5, "end_seq": 5}, []),
    ],
)
def test_list_for_thread_returns_the_visible_window_oldest_first(
    ten_turns: MemoryStore, window: dict, expected: list[int]
) -> None:
    with reading(ten_turns) as uow:
        got = uow.messages.list_for_thread("t1", now=NOW, **window)
    assert [m.seq for m in got] == expected
    assert all(m.thread_id == "t1" for m in got)


def test_a_message_is_visible_until_its_expiry(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[(message("m1", "t1", 1, expires_at=at(10)), E1)])
    with reading(store) as uow:
        assert uow.messages.get("m1", now=at(9)) is not None
        assert uow.messages.get("m1", now=at(10)) is None  # expiry is inclusive
        assert uow.messages.list_for_thread("t1", now=at(10)) == []
        assert [m.id for m in uow.messages.list_for_thread("t1", now=at(9))] == ["m1"]
    assert ids(store.search(query(vector=E1, now=at(9)))) == ["m1"]
    assert store.search(query(vector=E1, now=at(10))) == []
    assert store.search(query(text="hello", now=at(10))) == []


def test_an_expired_message_id_stays_taken(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[message("m1", "t1", 1, expires_at=at(-1))])
    with store.unit_of_work() as uow, pytest.raises(DuplicateIdError):
        uow.messages.add(message("m1", "t1", 2))


def test_updating_a_message_replaces_it(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[message("m1", "t1", 1, "draft")])
    changed = replace(message("m1", "t1", 1, "final answer"), metadata={"edited": True})
    with committing(store) as uow:
        uow.messages.update(changed)
    with reading(store) as uow:
        assert uow.messages.get("m1", now=NOW) == changed
    assert ids(store.search(query(text="final"))) == ["m1"]
    assert store.search(query(text="draft")) == []


def test_updating_an_unknown_message_raises_message_not_found(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        with pytest.raises(MessageNotFoundError):
            uow.messages.update(message("ghost", "t1", 1))
        assert uow.messages.get("ghost", now=NOW) is None


def test_updating_a_message_keeps_drops_or_replaces_its_embedding(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1")],
        messages=[
            (message("keep", "t1", 1), E1),
            (message("drop", "t1", 2), E1),
            (message("swap", "t1", 3), E1),
        ],
    )
    with committing(store) as uow:
        uow.messages.update(message("keep", "t1", 1, "kept vector"))
        uow.messages.update(message("drop", "t1", 2, "dropped vector"), embedding=None)
        uow.messages.update(message("swap", "t1", 3, "swapped vector"), embedding=E2)
    assert ids(store.search(query(vector=E1, k=1))) == ["keep"]
    assert ids(store.search(query(vector=E2, k=1))) == ["swap"]
    assert sorted(ids(store.search(query(vector=E1)))) == ["keep", "swap"]


def test_updating_a_message_with_a_wrong_dimension_vector_raises_and_keeps_it(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[(message("m1", "t1", 1, "original"), E1)])
    with committing(store) as uow, pytest.raises(VectorDimensionError):
        uow.messages.update(message("m1", "t1", 1, "changed"), embedding=(0.0, 1.0))
    with reading(store) as uow:
        assert uow.messages.get("m1", now=NOW) == message("m1", "t1", 1, "original")
    assert ids(store.search(query(vector=E1, record_types=MESSAGES_ONLY))) == ["m1"]


def test_deleting_a_message_removes_it_from_reads_and_search(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[(message("m1", "t1", 1), E1), (message("m2", "t1", 2), E1)])
    with committing(store) as uow:
        assert uow.messages.delete("m1") is True
        assert uow.messages.delete("m1") is False
        assert uow.messages.delete("never") is False
    with reading(store) as uow:
        assert uow.messages.get("m1", now=NOW) is None
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["m2"]
        assert uow.threads.get("t1") is not None
    assert ids(store.search(query(vector=E1))) == ["m2"]


def test_vectors_answers_the_stored_unit_vectors_of_the_messages_that_have_one(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1"), thread("t2")],
        messages=[
            (message("m1", "t1", 1), E1),
            (message("m2", "t1", 2), DIAG_12),
            (message("m3", "t1", 3), None),
            (message("n1", "t2", 1), E2),
        ],
    )
    with reading(store) as uow:
        found = uow.messages.vectors("t1", ["m2", "m1", "m3", "ghost", "n1"])
        assert set(found) == {"m1", "m2"}  # n1 is another thread's
        assert list(found["m1"]) == pytest.approx(E1)
        assert list(found["m2"]) == pytest.approx([2**-0.5, 2**-0.5, 0.0, 0.0], abs=1e-6)
        assert uow.messages.vectors("t1", []) == {}
        assert set(uow.messages.vectors("t2", ["m1", "n1"])) == {"n1"}


def test_vectors_follow_an_update_and_a_deletion(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")], messages=[(message("m1", "t1", 1), E1), (message("m2", "t1", 2), E2)])
    with committing(store) as uow:
        uow.messages.update(message("m1", "t1", 1, "edited"), embedding=E2)
        uow.messages.delete("m2")
    with reading(store) as uow:
        found = uow.messages.vectors("t1", ["m1", "m2"])
        assert set(found) == {"m1"}
        assert list(found["m1"]) == pytest.approx(E2)
