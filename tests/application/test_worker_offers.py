"""How an extraction worker (``ExtractionWorker``, ARCHITECTURE.md D34) offers jobs to its runner:
a few per attempt it runs at once, not the whole backlog, so that workers serving one store do
not all try every job (each job's claim lost by all but one of them)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application.jobs import ExtractionRunner, ExtractionWorker
from palimpsest.domain.model import ExtractionJob


def backlog(store: InMemoryStore, threads: int) -> list[str]:
    """One job in each of ``threads`` threads, recorded by a client that leaves them to workers."""
    client = build_client(store, embedder=HashingEmbedder(), extraction_runs_in="workers")
    for t in range(threads):
        client.create_thread(thread_id=f"t{t}", user_id="u").add_messages([{"role": "user", "content": f"note {t}"}])
    client.close()
    with store.reading() as uow:
        return [job.id for job in uow.jobs.list()]


def test_a_worker_queues_a_few_jobs_per_attempt_and_leaves_the_rest_to_other_workers() -> None:
    store = InMemoryStore()
    ids = backlog(store, threads=12)
    clock = ManualClock(datetime.now(UTC))
    ran: list[str] = []
    running = threading.Event()
    release = threading.Event()

    def execute(job: ExtractionJob) -> None:
        ran.append(job.id)
        running.set()
        assert release.wait(30)

    runner = ExtractionRunner(store, clock, execute, workers=1, owner_prefix="worker")
    worker = ExtractionWorker(store, clock, runner, poll_seconds=0.05)
    try:
        assert worker._offer()  # one look at the backlog, as the worker's loop takes it
        assert running.wait(30)
        assert runner.backlog == 2  # one running, one ahead (OFFER_AHEAD per attempt): not all twelve
        with store.reading() as uow:
            free = [job.id for job in uow.jobs.pending(clock.now())]
        assert len(free) == 11  # the others are free for other workers (one is claimed)
    finally:
        release.set()
    worker.run(threading.Event(), drain=True)  # and it drains the rest, each job once
    assert sorted(ran) == sorted(ids)
    with store.reading() as uow:
        assert uow.jobs.list() == []
    store.close()
