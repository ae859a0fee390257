"""Contract: JobRepository — durable extraction jobs with leases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from palimpsest.domain.errors import DuplicateIdError, ThreadNotFoundError, ValidationError
from palimpsest.domain.model import MAX_FAILURE_REASON_LENGTH, ExtractionJob
from palimpsest.domain.ports import MemoryStore

from .builders import NOW, at, committing, reading, seed, thread


def job(job_id: str, thread_id: str = "t1", *, minutes: float = 0) -> ExtractionJob:
    return ExtractionJob(id=job_id, thread_id=thread_id, first_seq=1, last_seq=3, created_at=at(minutes))


def test_jobs_wait_oldest_first_until_claimed_and_a_claim_is_exclusive_until_its_lease_ends(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.jobs.add(job("j2", minutes=2))
        uow.jobs.add(job("j1", minutes=1))
    with committing(store) as uow:
        assert [j.id for j in uow.jobs.pending(NOW)] == ["j1", "j2"]
        claimed = uow.jobs.claim("j1", owner="w1", until=at(10), now=at(3))
        assert claimed is not None and claimed.claimed_by == "w1" and claimed.attempts == 1
        assert uow.jobs.claim("j1", owner="w2", until=at(20), now=at(5)) is None
    with committing(store) as uow:
        assert [j.id for j in uow.jobs.pending(at(5))] == ["j2"]
        assert [j.id for j in uow.jobs.pending(at(10))] == ["j1", "j2"]  # lease expired
        again = uow.jobs.claim("j1", owner="w2", until=at(30), now=at(11))
        assert again is not None and again.attempts == 2 and again.claimed_by == "w2"
        assert uow.jobs.delete("j1") is True
        assert uow.jobs.delete("j1") is False
        assert uow.jobs.claim("j1", owner="w3", until=at(40), now=at(12)) is None


def test_a_job_needs_its_thread_and_a_fresh_id_and_goes_with_its_thread(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        with pytest.raises(ThreadNotFoundError):
            uow.jobs.add(job("j1", "nope"))
        uow.jobs.add(job("j1"))
        with pytest.raises(DuplicateIdError):
            uow.jobs.add(job("j1"))
        uow.commit()
    with committing(store) as uow:
        uow.threads.delete("t1")
    with reading(store) as uow:
        assert uow.jobs.pending(NOW + timedelta(days=1)) == []


def test_an_uncommitted_job_is_not_recorded(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        uow.jobs.add(job("j1"))
    with reading(store) as uow:
        assert uow.jobs.pending(NOW) == []


def test_a_failed_job_is_kept_with_its_reason_out_of_the_queue_until_retried(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")])
    with committing(store) as uow:
        uow.jobs.add(job("j1", minutes=1))
        uow.jobs.add(job("j2", minutes=2))
        uow.jobs.add(job("j3", "t2", minutes=3))
    with committing(store) as uow:
        assert uow.jobs.claim("j1", owner="w1", until=at(10), now=at(4)) is not None
        assert uow.jobs.fail("j1", reason="ModelOutputError: not JSON", at=at(6)) is True
        assert uow.jobs.fail("j3", reason="TimeoutError", at=at(5)) is True
        assert uow.jobs.fail("gone", reason="x", at=at(5)) is False
    with committing(store) as uow:
        # Failed jobs leave the queue and cannot be claimed, whatever the time.
        assert [j.id for j in uow.jobs.pending(at(60))] == ["j2"]
        assert uow.jobs.claim("j1", owner="w2", until=at(90), now=at(60)) is None
        failed = uow.jobs.failed()
        assert [j.id for j in failed] == ["j3", "j1"]  # oldest failure first
        first = failed[1]
        assert first.failed and first.failed_at == at(6)
        assert first.failure_reason == "ModelOutputError: not JSON"
        assert first.attempts == 1 and first.claimed_by is None and first.claimed_until is None
        assert [j.id for j in uow.jobs.failed(thread_id="t2")] == ["j3"]
        assert [j.id for j in uow.jobs.failed(limit=1)] == ["j3"]
        assert uow.jobs.retry("j2") is None  # not failed
        assert uow.jobs.retry("gone") is None
        again = uow.jobs.retry("j1")
        assert again is not None and not again.failed and again.failure_reason is None and again.attempts == 0
    with committing(store) as uow:
        assert [j.id for j in uow.jobs.pending(at(60))] == ["j1", "j2"]
        assert [j.id for j in uow.jobs.failed()] == ["j3"]
        claimed = uow.jobs.claim("j1", owner="w3", until=at(90), now=at(60))
        assert claimed is not None and claimed.attempts == 1
        uow.threads.delete("t2")
    with reading(store) as uow:
        assert uow.jobs.failed() == []  # a failed job goes with its thread


@pytest.mark.parametrize("reason", ["", "   ", "x" * (MAX_FAILURE_REASON_LENGTH + 1), "bad\x00nul", None, 42])
def test_a_bad_failure_reason_is_refused_and_writes_nothing(store: MemoryStore, reason: object) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.jobs.add(job("j1"))
    with store.unit_of_work() as uow:
        with pytest.raises(ValidationError):
            uow.jobs.fail("j1", reason=reason, at=at(1))  # type: ignore[arg-type]
        uow.commit()
    with reading(store) as uow:
        assert uow.jobs.failed() == []
        assert [j.id for j in uow.jobs.pending(at(1))] == ["j1"]


def test_the_longest_failure_reason_round_trips_exactly(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    reason = ("Ünïcode ✓ <tag> '; DROP TABLE x; -- " * 100)[:MAX_FAILURE_REASON_LENGTH]
    with committing(store) as uow:
        uow.jobs.add(job("j1"))
        assert uow.jobs.fail("j1", reason=reason, at=at(2))
    with reading(store) as uow:
        [failed] = uow.jobs.failed()
        assert failed.failure_reason == reason


def test_a_postponed_job_keeps_its_reason_and_waits_for_its_next_attempt(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")])
    with committing(store) as uow:
        uow.jobs.add(job("j1", minutes=1))
        uow.jobs.add(job("j2", "t2", minutes=2))
    with committing(store) as uow:
        assert uow.jobs.claim("j1", owner="w1", until=at(10), now=at(3)) is not None
        # Only the holder may postpone: another owner's postpone changes nothing.
        assert uow.jobs.postpone("j1", owner="w2", until=at(4), reason="x") is False
        assert uow.jobs.postpone("j1", owner="w1", until=at(5), reason="ModelError: 503") is True
        assert uow.jobs.postpone("gone", owner="w1", until=at(5), reason="x") is False
    with committing(store) as uow:
        (postponed,) = uow.jobs.list(thread_id="t1")
        assert postponed.failure_reason == postponed.last_error == "ModelError: 503"
        assert not postponed.failed and postponed.claimed_until == at(5) and postponed.attempts == 1
        assert postponed.state(at(4)).value == "retrying"
        # Until its next attempt is due, no other worker takes it; its holder may at once.
        assert [j.id for j in uow.jobs.pending(at(4))] == ["j2"]
        assert uow.jobs.claim("j1", owner="w2", until=at(20), now=at(4)) is None
        again = uow.jobs.claim("j1", owner="w1", until=at(20), now=at(4))
        assert again is not None and again.attempts == 2 and again.failure_reason == "ModelError: 503"
        # A transient fault takes back the attempt its claim counted.
        assert uow.jobs.postpone("j1", owner="w1", until=at(6), reason="StoreBusyError", refund_attempt=True)
    with committing(store) as uow:
        assert [j.attempts for j in uow.jobs.list(thread_id="t1")] == [1]
        assert [j.id for j in uow.jobs.pending(at(6))] == ["j1", "j2"]
        assert uow.jobs.claim("j1", owner="w2", until=at(30), now=at(6)) is not None  # due: anyone may
        assert uow.jobs.fail("j1", reason="ModelError: 503", at=at(7))
        assert uow.jobs.postpone("j1", owner="w2", until=at(9), reason="x") is False  # failed for good
    with reading(store) as uow:
        assert [j.id for j in uow.jobs.list()] == ["j2"]  # failed jobs are listed by failed()
        assert [j.id for j in uow.jobs.list(thread_id="t2", limit=5)] == ["j2"]
        (failed,) = uow.jobs.failed()
        assert failed.state(at(8)).value == "failed"
    with committing(store) as uow:
        retried = uow.jobs.retry("j1")
        assert retried is not None and retried.failure_reason is None and retried.state(at(8)).value == "pending"


def test_a_bad_postpone_reason_or_time_is_refused_and_writes_nothing(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.jobs.add(job("j1"))
        assert uow.jobs.claim("j1", owner="w1", until=at(10), now=at(1)) is not None
    with store.unit_of_work() as uow:
        with pytest.raises(ValidationError):
            uow.jobs.postpone("j1", owner="w1", until=at(5), reason="")
        with pytest.raises(ValidationError):
            uow.jobs.postpone("j1", owner="w1", until=at(5).replace(tzinfo=None), reason="x")
        uow.commit()
    with reading(store) as uow:
        (unchanged,) = uow.jobs.list()
        assert unchanged.failure_reason is None and unchanged.claimed_until == at(10)


def test_a_lease_is_renewed_by_its_holder_and_handed_back_unfinished(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    with committing(store) as uow:
        uow.jobs.add(job("j1", minutes=1))
        uow.jobs.add(job("j2", minutes=2))
    with committing(store) as uow:
        assert uow.jobs.claim("j1", owner="w1", until=at(3), now=at(2)) is not None
        # Only the holder renews: another owner's renewal changes nothing.
        assert uow.jobs.renew("j1", owner="w2", until=at(30)) is False
        assert uow.jobs.renew("j1", owner="w1", until=at(6)) is True
        assert uow.jobs.renew("gone", owner="w1", until=at(6)) is False
    with committing(store) as uow:
        assert [j.id for j in uow.jobs.pending(at(5))] == ["j2"]  # renewed past its first lease
        assert uow.jobs.claim("j1", owner="w2", until=at(20), now=at(5)) is None
        # Handed back at once: anyone may claim it; its attempts are kept.
        assert uow.jobs.release("j1", owner="w2") is False
        assert uow.jobs.release("j1", owner="w1") is True
        (released,) = [j for j in uow.jobs.list() if j.id == "j1"]
        assert released.claimed_by is None and released.claimed_until is None and released.attempts == 1
        assert [j.id for j in uow.jobs.pending(at(5))] == ["j1", "j2"]
        assert uow.jobs.renew("j1", owner="w1", until=at(9)) is False  # no longer its holder
        again = uow.jobs.claim("j1", owner="w2", until=at(20), now=at(5))
        assert again is not None and again.attempts == 2
        assert uow.jobs.postpone("j1", owner="w2", until=at(8), reason="ModelError: 503")
        # Handed back with its next attempt's time: nobody takes it before, anyone after.
        assert uow.jobs.release("j1", owner="w2", until=at(8)) is True
    with committing(store) as uow:
        assert [j.id for j in uow.jobs.pending(at(7))] == ["j2"]
        (held,) = [j for j in uow.jobs.list() if j.id == "j1"]
        assert held.claimed_by is None and held.claimed_until == at(8) and held.failure_reason == "ModelError: 503"
        assert uow.jobs.claim("j1", owner="w3", until=at(20), now=at(7)) is None
        assert uow.jobs.claim("j1", owner="w3", until=at(20), now=at(8)) is not None
        assert uow.jobs.fail("j1", reason="ModelError: 503", at=at(9))
        assert uow.jobs.renew("j1", owner="w3", until=at(30)) is False  # failed for good
        assert uow.jobs.release("j1", owner="w3") is False
