"""Contract: SummaryRepository (revisions with compare-and-set) and SettingsRepository."""

from __future__ import annotations

import pytest
from palimpsest.domain.errors import ConflictError, DuplicateIdError, ThreadNotFoundError
from palimpsest.domain.model import RecordStatus, ThreadSummary
from palimpsest.domain.ports import MemoryStore

from .builders import NOW, at, committing, reading, seed, thread


def summary(sid: str, revision: int, *, thread_id: str = "t1", covered: int = 0, valid: bool = True) -> ThreadSummary:
    return ThreadSummary(
        id=sid,
        thread_id=thread_id,
        revision=revision,
        text=f"summary {revision}" if valid else "",
        topics=("pizza", "rome"),
        covered_through_seq=covered,
        status=RecordStatus.VALID if valid else RecordStatus.INVALID,
        created_at=at(revision),
    )


def test_revisions_are_kept_in_order_and_the_latest_valid_one_is_found(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.summaries.add(summary("s1", 1, covered=2))
        uow.summaries.add(summary("s2", 2, covered=4))
        uow.summaries.add(summary("s3", 3, valid=False))
    with reading(store) as uow:
        assert [s.id for s in uow.summaries.list_for_thread("t1")] == ["s1", "s2", "s3"]
        assert uow.summaries.latest("t1").id == "s3"
        assert uow.summaries.latest("t1", valid_only=True) == summary("s2", 2, covered=4)
        assert uow.summaries.latest("other") is None


def test_a_taken_revision_number_is_a_conflict_and_writes_nothing(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.summaries.add(summary("s1", 1))
    with store.unit_of_work() as uow:
        with pytest.raises(ConflictError):
            uow.summaries.add(summary("late", 1))
        with pytest.raises(DuplicateIdError):
            uow.summaries.add(summary("s1", 2))
        with pytest.raises(ThreadNotFoundError):
            uow.summaries.add(summary("s9", 1, thread_id="nope"))
        uow.commit()
    with reading(store) as uow:
        assert [s.id for s in uow.summaries.list_for_thread("t1")] == ["s1"]


def test_invalidating_from_a_seq_retires_the_revisions_that_cover_it(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        for revision, covered in ((1, 2), (2, 5), (3, 9)):
            uow.summaries.add(summary(f"s{revision}", revision, covered=covered))
        assert uow.summaries.invalidate_covering("t1", 5) == 2
    with reading(store) as uow:
        assert [s.status for s in uow.summaries.list_for_thread("t1")] == [
            RecordStatus.VALID,
            RecordStatus.INVALID,
            RecordStatus.INVALID,
        ]
        assert uow.summaries.latest("t1", valid_only=True).id == "s1"


def test_pruning_keeps_the_newest_revisions_and_deleting_the_thread_removes_them(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")])
    with committing(store) as uow:
        for revision in range(1, 6):
            uow.summaries.add(summary(f"s{revision}", revision))
        uow.summaries.add(summary("other", 1, thread_id="t2"))
        assert uow.summaries.prune("t1", keep=2) == 3
    with reading(store) as uow:
        assert [s.id for s in uow.summaries.list_for_thread("t1")] == ["s4", "s5"]
    with committing(store) as uow:
        assert uow.threads.delete("t1")
    with reading(store) as uow:
        assert uow.summaries.list_for_thread("t1") == []
        assert [s.id for s in uow.summaries.list_for_thread("t2")] == ["other"]


def test_settings_hold_json_values_until_removed_and_roll_back_with_their_unit_of_work(store: MemoryStore) -> None:
    with committing(store) as uow:
        uow.settings.set("retention", {"default_ttl_days": 30, "max_ttl_days": None})
        uow.settings.set("embedding_model", "hashing-v1-64")
    with store.unit_of_work() as uow:
        uow.settings.set("embedding_model", "other")  # not committed
    with reading(store) as uow:
        assert uow.settings.get("retention") == {"default_ttl_days": 30, "max_ttl_days": None}
        assert uow.settings.get("embedding_model") == "hashing-v1-64"
        assert uow.settings.get("missing") is None
    with committing(store) as uow:
        uow.settings.set("embedding_model", None)
    with reading(store) as uow:
        assert uow.settings.get("embedding_model") is None


def test_expired_messages_are_purged_and_expired_records_are_listed_for_the_purge(store: MemoryStore) -> None:
    from .builders import message, record

    seed(
        store,
        threads=[thread("t1")],
        messages=[message("old", "t1", 1, expires_at=at(-1)), message("live", "t1", 2)],
        records=[record("gone", expires_at=at(-2)), record("kept")],
    )
    with committing(store) as uow:
        assert uow.records.expired_ids(NOW) == ["gone"]
        assert uow.messages.purge_expired(NOW) == [("t1", 1)]
    with reading(store) as uow:
        assert uow.messages.get("old", now=at(-10)) is None
        assert [m.id for m in uow.messages.list_for_thread("t1", now=at(-10))] == ["live"]
