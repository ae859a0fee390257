"""Contract: JobRepository — durable extraction jobs with leases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from palimpsest.domain.errors import DuplicateIdError, ThreadNotFoundError
from palimpsest.domain.model import ExtractionJob
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
