"""The durable job claim on a real server: ``FOR UPDATE SKIP LOCKED`` and a lease. Claims from
several connections at once never take one job twice, a claim in progress is passed over (not
waited for), and a job whose lease ended is taken over."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
from palimpsest.adapters.postgres.jobs import claim, claim_next, release, renew
from palimpsest.adapters.postgres.schema import use_schema

from .conftest import StoreFactory
from .helpers import NOW, at, thread, write

JOBS = 40


def _with_jobs(stores: StoreFactory, count: int = JOBS) -> Any:
    core = stores.open()
    with core.transaction() as conn:
        write(conn, threads=[thread("t1")])
        conn.execute(
            "INSERT INTO extraction_jobs (id, thread_id, first_seq, last_seq, created_at) "
            "SELECT 'j' || lpad(i::text, 3, '0'), 't1', i, i, %s::timestamptz + i * interval '1 second' "
            "FROM generate_series(1, %s) AS i",
            (NOW, count),
        )
    return core


def _connect(core: Any) -> psycopg.Connection[Any]:
    conn = psycopg.connect(core.database._url)
    use_schema(conn, core.schema, core.vector_schema)
    return conn


def test_a_claim_in_progress_is_skipped_not_waited_for(stores: StoreFactory) -> None:
    core = _with_jobs(stores, 5)
    first, second = _connect(core), _connect(core)
    try:
        taken = claim_next(first, owner="a", until=at(10), now=NOW, limit=2)  # not committed yet
        other = claim_next(second, owner="b", until=at(10), now=NOW, limit=2)
        assert [job.id for job in taken] == ["j001", "j002"]
        assert [job.id for job in other] == ["j003", "j004"]
        assert all(job.attempts == 1 and job.claimed_by == "b" for job in other)
        assert claim(second, "j001", owner="b", until=at(10), now=NOW) is None  # locked by a: skipped
        first.commit()
        second.commit()
    finally:
        first.close()
        second.close()


def test_workers_claiming_at_once_never_take_one_job_twice(stores: StoreFactory) -> None:
    core = _with_jobs(stores)
    claimed: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)

    def work(owner: str) -> None:
        conn = _connect(core)
        mine: list[str] = []
        try:
            barrier.wait()
            while True:
                jobs = claim_next(conn, owner=owner, until=at(10), now=NOW, limit=3)
                conn.commit()
                use_schema(conn, core.schema, core.vector_schema)
                if not jobs:
                    break
                mine.extend(job.id for job in jobs)
        finally:
            conn.close()
        claimed[owner] = mine

    workers = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    every = [job for jobs in claimed.values() for job in jobs]
    assert len(every) == len(set(every)) == JOBS
    with core.transaction() as conn:
        rows = conn.execute("SELECT claimed_by, attempts FROM extraction_jobs").fetchall()
    assert all(owner is not None and attempts == 1 for owner, attempts in rows)


def test_a_job_whose_lease_ended_is_taken_over_and_the_old_owner_can_no_longer_renew(stores: StoreFactory) -> None:
    core = _with_jobs(stores, 1)
    with core.transaction() as conn:
        (job,) = claim_next(conn, owner="dead", until=at(1), now=NOW)
        assert claim_next(conn, owner="late", until=at(2), now=at(0.5)) == []  # lease still running
        (again,) = claim_next(conn, owner="heir", until=at(11), now=at(1))  # lease ended at at(1)
        assert (again.id, again.claimed_by, again.attempts) == (job.id, "heir", 2)
        assert again.claimed_until == at(11)
        assert not renew(conn, job.id, owner="dead", until=at(20))
        assert renew(conn, job.id, owner="heir", until=at(20))
        assert not release(conn, job.id, owner="dead")
        assert release(conn, job.id, owner="heir", until=at(30))
        assert claim_next(conn, owner="x", until=at(40), now=at(29)) == []  # postponed until at(30)
        assert [j.id for j in claim_next(conn, owner="x", until=at(40), now=at(30))] == [job.id]


def test_failed_jobs_are_never_claimed(stores: StoreFactory) -> None:
    core = _with_jobs(stores, 2)
    with core.transaction() as conn:
        conn.execute("UPDATE extraction_jobs SET failed_at = %s, failure_reason = 'x' WHERE id = 'j001'", (NOW,))
        assert [job.id for job in claim_next(conn, owner="a", until=at(5), now=NOW, limit=5)] == ["j002"]
        assert claim(conn, "j001", owner="a", until=at(5), now=NOW + timedelta(days=1)) is None
