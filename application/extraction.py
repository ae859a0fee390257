"""Application layer: durable extraction jobs, run inline or by a bounded background pool.

``add_messages`` records an ``ExtractionJob`` in the same transaction as the messages, so
no acknowledged message is ever left unextracted: a worker claims the job with a lease,
extracts, and deletes it; after a crash the job is still in the store, and the next client
to open it resumes the job once its lease has expired. A job whose last allowed attempt
fails is kept, marked failed with the reason, until it is retried
(:meth:`AgentMemory.retry_failed_extractions`) or its thread is deleted.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from palimpsest.domain.errors import WaitTimeoutError
from palimpsest.domain.model import ExtractionJob, failure_reason_of

if TYPE_CHECKING:
    from .client import MemoryCore

__all__ = ["ExtractionRunner", "JOB_LEASE", "MAX_ATTEMPTS"]

log = logging.getLogger("palimpsest")

JOB_LEASE: Final = timedelta(minutes=10)
MAX_ATTEMPTS: Final = 5
WORKERS: Final = 4


class ExtractionRunner:
    """Claims and runs extraction jobs; tracks the ones this client started."""

    def __init__(self, core: MemoryCore) -> None:
        self._core = core
        self._owner = f"client-{uuid.uuid4()}"
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[Future[None], str] = {}
        self._queues: dict[str, deque[str]] = {}  # thread id -> job ids, in append order
        self._closed = False

    # -- scheduling --------------------------------------------------------------------------

    def submit(self, job: ExtractionJob) -> None:
        """Queue a job. Jobs of one thread run one after the other, in order (a later pass
        must see the memories of an earlier one); different threads run in parallel."""
        with self._lock:
            if self._closed:
                return  # the job stays in the store and is resumed by the next client
            queue = self._queues.get(job.thread_id)
            if queue is not None:
                queue.append(job.id)  # a drain for this thread is running and will take it
                return
            self._queues[job.thread_id] = deque([job.id])
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="palimpsest-extract")
            future = self._pool.submit(self._drain, job.thread_id)
            self._futures[future] = job.thread_id
        future.add_done_callback(self._forget)

    def start(self, job: ExtractionJob, *, inline: bool) -> None:
        """Run a recorded job now, in the caller's thread (INLINE), or queue it (BACKGROUND)."""
        if inline:
            self.run(job.id)
        else:
            self.submit(job)

    def _drain(self, thread_id: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[thread_id]
                if not queue:
                    del self._queues[thread_id]
                    return
                job_id = queue.popleft()
            self.run(job_id)

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.pop(future, None)

    def resume(self) -> int:
        """Queue every job that is unclaimed or whose lease expired (after a crash)."""
        now = self._core.clock.now()
        with self._core.store.reading() as uow:
            jobs = uow.jobs.pending(now)
        for job in jobs:
            self.submit(job)
        return len(jobs)

    def wait(self, timeout: float | None, *, thread_id: str | None = None) -> None:
        """Wait for the jobs this client started (of one thread, or all)."""
        with self._lock:
            futures = [f for f, tid in self._futures.items() if thread_id is None or tid == thread_id]
        done, not_done = wait(futures, timeout=timeout)
        if not_done:
            raise WaitTimeoutError(f"{len(not_done)} extraction job(s) still running after {timeout} s.")

    def close(self, timeout: float | None) -> None:
        try:
            self.wait(timeout)
        finally:
            with self._lock:
                self._closed = True
                pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    # -- one job -----------------------------------------------------------------------------

    def run(self, job_id: str) -> None:
        """Claim, extract, delete. Failures are logged; the job is retried after its lease
        expires, and after ``MAX_ATTEMPTS`` failed attempts it is marked failed with the
        reason (and an error log) instead of being deleted."""
        from .thread import MemoryThread, ThreadSettings

        core = self._core
        now = core.clock.now()
        with core.store.unit_of_work() as uow:
            job = uow.jobs.claim(job_id, owner=self._owner, until=now + JOB_LEASE, now=now)
            uow.commit()
        if job is None:
            return  # done already, or another worker holds it
        try:
            with core.store.reading() as uow:
                thread = uow.threads.get(job.thread_id)
                targets = (
                    uow.messages.list_for_thread(
                        job.thread_id, now=core.clock.now(), start_seq=job.first_seq, end_seq=job.last_seq + 1
                    )
                    if thread is not None
                    else []
                )
            if thread is not None and targets and core.extractor is not None:
                settings = ThreadSettings.from_json(thread.config)
                if settings.extraction.extract_memories:
                    MemoryThread(core, thread, settings).extract_now(targets)
        except Exception as exc:
            if job.attempts < MAX_ATTEMPTS:
                log.exception(
                    "memory extraction failed (job %s, attempt %d); the messages are stored and the "
                    "job will be retried",
                    job.id,
                    job.attempts,
                )
                return
            log.exception(
                "memory extraction failed %d times for job %s; it is recorded as failed (see "
                "failed_extractions(), retry_failed_extractions())",
                job.attempts,
                job.id,
            )
            self._fail(job.id, failure_reason_of(exc))
            return
        self._finish(job.id)

    def _fail(self, job_id: str, reason: str) -> None:
        with self._core.store.unit_of_work() as uow:
            uow.jobs.fail(job_id, reason=reason, at=self._core.clock.now())
            uow.commit()

    def _finish(self, job_id: str) -> None:
        with self._core.store.unit_of_work() as uow:
            uow.jobs.delete(job_id)
            uow.commit()
