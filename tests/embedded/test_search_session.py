"""Embedded store: the search session (``searching()``), the primitives the domain's
pipeline runs on, over one read of the file and the caches kept beside it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import StoreClosedError
from palimpsest.domain.model import RecordStatus
from palimpsest.domain.search import run_search

from .helpers import E1, NEAR_E1, at, ids, link, query, record, seed

Opener = Callable[..., EmbeddedStore]


def test_the_rows_of_one_session_come_from_one_snapshot(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    seed(store, records=[(record("r1", "green tea"), E1), (record("r2", "black tea"), None)])
    with store.searching() as session:
        assert session.load([(False, "r1")])[(False, "r1")].content == "green tea"
        with other.unit_of_work() as uow:  # another instance commits meanwhile
            uow.records.update(record("r1", "strong coffee"))
            uow.records.delete("r2")
            uow.commit()
        again = session.load([(False, "r1"), (False, "r2")])
        assert {key[1]: row.content for key, row in again.items()} == {"r1": "green tea", "r2": "black tea"}
    assert ids(store.search(query(text="coffee"))) == ["r1"]  # the next session sees the commit
    assert store.search(query(text="black")) == []


def test_a_commit_of_the_same_thread_inside_a_session_reaches_the_next_search(store: EmbeddedStore) -> None:
    seed(store, records=[(record("r1", "green tea"), E1)])
    with store.searching() as session:
        assert [key for key, _ in session.dense_candidates(query(vector=E1), 10)] == [(False, "r1")]
        assert (False, "r1") in session.load([(False, "r1")])  # the first row read fixes the snapshot
        seed(store, records=[(record("r2", "jasmine tea"), NEAR_E1)])  # commits on this thread
        assert (False, "r2") not in session.load([(False, "r2")])  # the session's read stays
    assert ids(store.search(query(vector=E1))) == ["r1", "r2"]
    assert set(ids(store.search(query(text="tea")))) == {"r1", "r2"}


def test_a_session_opened_inside_another_on_the_same_thread_joins_its_read(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    seed(store, records=[(record("r1", "green tea"), E1)])
    with store.searching() as outer:
        # Committed after the caches were synced, before the first row read fixed the snapshot:
        # the read sees r2, the caches do not yet, and they cannot catch up inside the read.
        seed(other, records=[(record("r2", "jasmine tea"), NEAR_E1)])
        assert (False, "r2") in outer.load([(False, "r2")])
        with store.searching() as inner:
            assert ids(run_search(inner, query(vector=E1))) == ["r1"]
        seed(other, records=[(record("r3", "white tea"), NEAR_E1)])
        assert (False, "r3") not in outer.load([(False, "r3")])  # still the outer read
    assert ids(store.search(query(vector=E1))) == ["r1", "r2", "r3"]


def test_a_primitive_of_a_session_whose_store_closed_raises_store_closed(store: EmbeddedStore) -> None:
    seed(store, records=[(record("r1", "green tea"), E1)])
    with store.searching() as session:
        store.close()
        with pytest.raises(StoreClosedError):
            session.load([(False, "r1")])
        with pytest.raises(StoreClosedError):
            session.dense_candidates(query(vector=E1), 10)
    with pytest.raises(StoreClosedError):
        store.searching().__enter__()


def test_named_records_narrow_the_keyword_candidates_not_their_statistics(store: EmbeddedStore) -> None:
    seed(
        store,
        records=[
            (record("r1", "green tea"), None),
            (record("r2", "tea with lemon and honey"), None),
            (record("r3", "lemon cake"), None),
        ],
    )
    whole_query = query(text="tea lemon")
    with store.searching() as session:
        whole = session.keyword_candidates(whole_query, 10)
        named = session.keyword_candidates(replace(whole_query, record_ids=frozenset({"r2"})), 10)
    assert [key[1] for key, _raw in whole.ranked] == ["r2", "r1", "r3"]
    assert list(named.ranked) == [kv for kv in whole.ranked if kv[0] == (False, "r2")]
    assert named.ideal == whole.ideal == pytest.approx(store._keywords.idf_sum("tea lemon"))


def test_links_around_keeps_links_to_admitted_records_whatever_their_status(store: EmbeddedStore) -> None:
    retired = replace(
        record("retired", user_id="u1"),
        status=RecordStatus.INVALID,
        invalidation_reason="Superseded by another memory.",
        invalidated_at=at(0),
    )
    seed(
        store,
        records=[
            (record("hub", user_id="u1"), E1),
            (record("mine", user_id="u1"), None),
            (retired, None),
            (record("theirs", user_id="u2"), None),
            (record("gone", user_id="u1", expires_at=at(-1)), None),
        ],
        links=[link("l1", "hub", "mine"), link("l2", "retired", "hub"), link("l3", "hub", "theirs"), link("l4", "gone", "hub")],
    )
    with store.searching() as session:
        around = session.links_around(["hub", "theirs"], query(text="memory", user_id="u1"))
        everyone = session.links_around(["hub"], query(text="memory"))
    assert {lk.id for lk in around["hub"]} == {"l1", "l2"}  # status is not filtered; scope and expiry are
    # Only the other end is filtered: the pipeline asks about records it admitted already.
    assert [lk.id for lk in around["theirs"]] == ["l3"]
    assert {lk.id for lk in everyone["hub"]} == {"l1", "l2", "l3"}


def test_load_never_takes_a_row_under_another_records_id(store: EmbeddedStore) -> None:
    seed(store, records=[(record("r1", "first"), E1), (record("r2", "second"), None)])
    attrs = store._attrs
    with store._lock:  # a stale cached rowid: r1's entry now points at r2's row
        attrs["r1"] = (*attrs["r1"][:5], attrs["r2"][5])
    with store.searching() as session:
        loaded = session.load([(False, "r1")])
    assert {key: row.content for key, row in loaded.items()} == {(False, "r1"): "first"}
