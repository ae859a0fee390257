"""Application layer: the durable extraction jobs' runner, and the worker loop of ``palimpsest worker``.

An append records its ``ExtractionJob`` in the same transaction as the messages
(:meth:`~palimpsest.application.extraction.ExtractionService.plan`), so no acknowledged message
is ever left unextracted. :class:`ExtractionRunner` owns the lifecycle of the jobs: a runner
claims a job with a lease, runs the pass (the ``execute`` callable it is given: the use case,
``ExtractionService.run_job``), and deletes the job. A failed attempt is retried in this process
after a jittered, exponential backoff (:class:`~palimpsest.application.config.ExtractionRetryPolicy`),
and the job records the reason meanwhile; a job whose last allowed attempt fails is kept, marked
failed with the reason, until it is retried (:meth:`AgentMemory.retry_failed_extractions`) or its
thread is deleted. A store held by another writer, or a server store whose connection was lost,
only delays a job. After a crash the job is
still in the store, and the next client (or worker) to look resumes it once its lease has
expired. At interpreter exit, a client that was never closed finishes its queued jobs within a
bounded wait and leaves the rest, durable, to the next client. A claim is a short lease
(``JOB_LEASE``, or the policy's ``lease_seconds``) renewed while its attempt runs, so the jobs of
a process that died are free again soon; a closing client hands back the claims it holds for a
retry. A forked child leaves its parent's jobs to the parent (ARCHITECTURE.md D15, D28).

A client may leave its jobs to worker processes (``AgentMemory(extraction_runs_in="workers")``):
its runner then records nothing and runs nothing (:attr:`ExtractionRunner.runs_jobs` is
``False``), and :class:`ExtractionWorker`, in another process (``palimpsest worker``), serves the
store's backlog: it offers its runner the oldest job of each thread when that job is free, so
the jobs of one thread run in order even across workers, and a job is run by whoever claims it
first (ARCHITECTURE.md D34).
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from palimpsest.domain.errors import (
    StorageError,
    StoreBusyError,
    StoreClosedError,
    StoreUnavailableError,
    WaitTimeoutError,
)
from palimpsest.domain.model import ExtractionJob, failure_reason_of
from palimpsest.domain.ports import Clock, MemoryStore

from .config import BackgroundExtractionQueueFullBehavior, ExtractionRetryPolicy
from .observability import captured_event_listeners, restored_event_listeners

__all__ = [
    "HEARTBEAT_SECONDS",
    "JOB_LEASE",
    "MAX_ATTEMPTS",
    "QUEUE_LIMIT",
    "THREAD_QUEUE_LIMIT",
    "WORKERS",
    "ExtractionRunner",
    "ExtractionWorker",
    "JobOutcome",
]

log = logging.getLogger("palimpsest")

_STORE_PASSING: Final = (StoreBusyError, StoreUnavailableError)
"""Storage faults that pass (another writer held the store; a server store's connection was
lost): they delay a job, retried on the busy schedule without counting an attempt."""

JOB_LEASE: Final = timedelta(seconds=ExtractionRetryPolicy().lease_seconds)
"""A claim's default lease (``ExtractionRetryPolicy.lease_seconds``). Short: an attempt under
way renews it every ``HEARTBEAT_SECONDS`` (or a sixth of a shorter lease), so a job whose
process died (``os._exit``, SIGKILL, SIGTERM's default action) is free again this soon."""
HEARTBEAT_SECONDS: float = 5.0  # a running attempt's lease is renewed this often at most (real seconds)
MAX_ATTEMPTS: Final = ExtractionRetryPolicy().max_attempts
WORKERS: Final = 4  # attempts one runner runs at once (threads of different threads)
QUEUE_LIMIT: Final = 128  # jobs queued in one client (the reference's scheduler: 128 ...)
THREAD_QUEUE_LIMIT: Final = 16  # ... and 16 of one thread
WORKER_POLL_SECONDS: Final = 0.5  # how often a worker (or a client waiting for workers) looks for jobs
WORKER_STOP_GRACE_SECONDS: Final = 10.0  # a stopping worker's wait for its attempts under way
WORKER_BACKFILL_SECONDS: Final = 60.0  # how often a worker embeds the rows stored without vectors (D43)
STOP_JOIN_SECONDS: Final = 2.0  # how long a stopped runner waits for its threads to end
OFFER_WINDOW: Final = QUEUE_LIMIT * 2  # the oldest jobs a worker looks at for each thread's next one
OFFER_AHEAD: Final = 2  # jobs a worker queues per attempt it runs at once
OFFER_SPREAD: Final = 4  # ... drawn from this many times as many of the oldest free ones


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How one job ended in a runner: ``"done"`` (its memories stored and the job deleted) or
    ``"failed"`` (its last allowed attempt failed: kept as failed with ``reason``), after
    ``seconds`` of its last attempt."""

    job: ExtractionJob
    status: str
    seconds: float
    reason: str | None = None



class _Registry:
    """The runners of clients not closed, for the exit hook; made anew in a forked child."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runners: weakref.WeakSet[ExtractionRunner] = weakref.WeakSet()

    def reset(self) -> None:
        self.lock = threading.Lock()
        self.runners = weakref.WeakSet()


_RUNNERS: Final = _Registry()


def _finish_at_exit() -> None:
    """Interpreter exit: each runner of a client that was never closed finishes its queued
    jobs within its policy's bounded wait; what is left stays durable for the next client."""
    with _RUNNERS.lock:
        runners = list(_RUNNERS.runners)
    for runner in runners:
        try:
            runner.finish_at_exit()
        except Exception:  # never a traceback at exit; the jobs are durable either way
            log.debug("extraction shutdown at exit failed", exc_info=True)


def _register_exit_hook() -> None:
    """Run :func:`_finish_at_exit` while the interpreter is still whole: among the hooks that
    ``threading`` runs before it joins threads, and after concurrent.futures' (they run in
    reverse order), so thread pools (an embedder's) still work and no store has been closed
    by its own exit finaliser yet. Without that hook (another Python), a plain ``atexit``."""
    import concurrent.futures.thread  # noqa: F401  - registers its own hook first

    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - CPython 3.9+ has it
        atexit.register(_finish_at_exit)
    else:
        register(_finish_at_exit)


_register_exit_hook()


def _after_fork_in_child() -> None:
    """A forked child (``os.fork``, multiprocessing's fork start method) copies the parent's
    runners but none of their worker threads: each is made inert in the child, so the child
    neither runs, waits for nor hands back the parent's jobs (they stay the parent's), and its
    exit does not wait for them."""
    runners = list(_RUNNERS.runners)
    _RUNNERS.reset()  # a parent's thread may have held its lock at the fork
    for runner in runners:
        runner._inherited_by_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ExtractionRunner:
    """Claims and runs extraction jobs, retries failed attempts, and tracks the ones it started.

    Jobs of one thread run one after the other, in order (a later pass must see the memories
    of an earlier one); different threads run in parallel on at most ``WORKERS`` daemon
    threads (``workers``), which end when there is no work. With ``runs_jobs=False`` (a client
    that leaves its jobs to worker processes) it queues and runs nothing: the jobs stay in the
    store for the workers, and :meth:`wait` waits for them to leave the store.

    A claim's lease is short (the policy's ``lease_seconds``, ``JOB_LEASE`` by default) and renewed by a heartbeat thread while its
    attempt runs, so a job whose process died is free again within the lease. Closing (or the
    exit hook) hands back the claims held for a retry's backoff; an attempt still under way
    keeps its lease until it ends, then its job is finished or handed back: a job is never run
    by two clients at once while its holder lives.
    """

    def __init__(
        self,
        store: MemoryStore,
        clock: Clock,
        execute: Callable[[ExtractionJob], None],
        *,
        policy: ExtractionRetryPolicy | None = None,
        runs_jobs: bool = True,
        workers: int = WORKERS,
        on_outcome: Callable[[JobOutcome], None] | None = None,
        owner_prefix: str = "client",
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError("workers must be a positive integer.")
        self._store = store
        self._clock = clock
        self._execute = execute
        self._policy = policy or ExtractionRetryPolicy()
        self._lease = timedelta(seconds=self._policy.lease_seconds)
        self._runs_jobs = runs_jobs
        self._max_workers = workers
        self._on_outcome = on_outcome
        self._owner = f"{owner_prefix}-{uuid.uuid4()}"
        self._lock = threading.Condition()
        self._queues: dict[str, deque[str]] = {}  # thread id -> job ids, in append order
        self._ready: deque[str] = deque()  # thread ids whose queue waits for a worker
        self._queued = 0  # jobs in the queues
        self._deferred: set[str] = set()  # threads with jobs left in the store while the queue was full
        self._workers = 0
        self._stop = threading.Event()  # set: no new attempt starts (close, exit)
        self._closed = False
        self._random = random.Random()
        self._busy: dict[str, int] = {}  # job id -> storage faults met in a row
        self._not_before: dict[str, float] = {}  # job id -> monotonic time of its next attempt
        self._running: set[str] = set()  # jobs with an attempt under way (their leases beat)
        self._held: dict[str, datetime] = {}  # jobs claimed for a retry: its time (handed back at close)
        self._beating = False  # a heartbeat thread runs
        self._halted = threading.Event()  # set by stop(): the heartbeat ends now
        self._overflowing = False  # the queue was full: said once, until it drains
        self._inherited = False  # a forked child's copy of its parent's runner
        self._listeners: dict[str, Any] = {}  # job id -> event listeners of the context that queued it
        with _RUNNERS.lock:
            _RUNNERS.runners.add(self)

    @property
    def policy(self) -> ExtractionRetryPolicy:
        return self._policy

    @property
    def runs_jobs(self) -> bool:
        """``False`` for a client that leaves its jobs to worker processes: it runs none."""
        return self._runs_jobs

    @property
    def owner(self) -> str:
        """The owner name this runner's claims carry."""
        return self._owner

    @property
    def inherited(self) -> bool:
        """``True`` in a forked child: this runner (and its client) is the parent's copy."""
        return self._inherited

    # -- scheduling --------------------------------------------------------------------------

    def start(
        self,
        job: ExtractionJob,
        *,
        inline: bool,
        when_full: BackgroundExtractionQueueFullBehavior = BackgroundExtractionQueueFullBehavior.DROP,
        put_timeout: float = 0.0,
    ) -> None:
        """Run a recorded job now, in the caller's thread (INLINE), or queue it (BACKGROUND,
        with ``when_full`` and ``put_timeout`` as :meth:`submit` says).

        An inline attempt that fails is retried in the background, so the caller's append
        returns (its messages are stored) and the memories follow. A runner that leaves its
        jobs to workers (``runs_jobs=False``) does nothing: the job is in the store already."""
        if not self._runs_jobs:
            return
        if not inline:
            self.submit(job, when_full=when_full, put_timeout=put_timeout)
            return
        with self._lock:
            busy = job.thread_id in self._queues or job.thread_id in self._deferred  # earlier jobs go first
        if busy:
            self.submit(job)
            return
        delay = self._attempt(job.id)
        if delay is not None and not self.submit(job, delay=delay):
            self._hand_back(job.id)  # not queued here (closing, or a full queue): due to anyone at its retry

    def submit(
        self,
        job: ExtractionJob,
        *,
        delay: float = 0.0,
        when_full: BackgroundExtractionQueueFullBehavior = BackgroundExtractionQueueFullBehavior.DROP,
        put_timeout: float = 0.0,
    ) -> bool:
        """Queue a job behind the thread's earlier jobs, to run ``delay`` seconds from now at
        the earliest; ``True`` if it was queued.

        The queue holds ``QUEUE_LIMIT`` jobs, ``THREAD_QUEUE_LIMIT`` of one thread. When it is
        full, ``DROP`` does not queue the job now, ``WAIT_THEN_DROP`` first waits up to
        ``put_timeout`` seconds for room, and ``WAIT_THEN_RAISE`` waits, then raises
        ``WaitTimeoutError``. A job not queued is never lost: it stays in the store, and this
        client queues it (in order) once the queue has room again, or the next client does.
        A runner that leaves its jobs to workers queues nothing (``False``)."""
        with self._lock:
            if self._closed or not self._runs_jobs:
                return False  # the job stays in the store and is resumed by the next client
            queue = self._queues.get(job.thread_id)
            if queue is not None and job.id in queue:
                return True

            def room() -> bool:
                held = self._queues.get(job.thread_id)
                return self._closed or (
                    job.thread_id not in self._deferred
                    and self._queued < QUEUE_LIMIT
                    and (held is None or len(held) < THREAD_QUEUE_LIMIT)
                )

            if not room() and when_full is not BackgroundExtractionQueueFullBehavior.DROP and put_timeout > 0:
                self._lock.wait_for(room, put_timeout)
            if self._closed:
                return False
            if not room():
                self._deferred.add(job.thread_id)
                if when_full is BackgroundExtractionQueueFullBehavior.WAIT_THEN_RAISE:
                    raise WaitTimeoutError(
                        f"the extraction queue stayed full for {put_timeout} s; the messages and their "
                        f"extraction job {job.id} are stored and run once the queue has room"
                    )
                if not self._overflowing:  # one line when it fills, one when it drains (_refill)
                    self._overflowing = True
                    log.warning(
                        "extraction queue full (%d jobs): job %s (thread %s) and the jobs appended while it "
                        "stays full wait in the store and run once it has room",
                        self._queued,
                        job.id,
                        job.thread_id,
                    )
                return False
            self._enqueue(job.id, job.thread_id, delay)
            return True

    def _enqueue(self, job_id: str, thread_id: str, delay: float) -> None:
        """Add a job to its thread's queue and wake a worker (the caller holds the lock)."""
        if delay > 0:
            self._not_before[job_id] = time.monotonic() + delay
        listeners = captured_event_listeners()
        if listeners is not None:
            self._listeners.setdefault(job_id, listeners)  # its attempts emit to them (D39)
        self._queued += 1
        queue = self._queues.get(thread_id)
        if queue is not None:
            queue.append(job_id)  # a drain for this thread is queued or running
            return
        self._queues[thread_id] = deque([job_id])
        self._ready.append(thread_id)
        if self._workers < self._max_workers:
            self._workers += 1
            worker = threading.Thread(target=self._work, name="palimpsest-extract", daemon=True)
            worker.start()

    def _refill(self) -> None:
        """Queue, in order, the jobs left in the store while the queue was full."""
        with self._lock:
            if not self._deferred or self._closed or self._queued >= QUEUE_LIMIT // 2:
                return
            deferred = set(self._deferred)
        try:
            with self._store.reading() as uow:
                jobs = [j for j in uow.jobs.pending(self._clock.now()) if j.thread_id in deferred]
        except StorageError as exc:  # tried again after the next job
            log.warning("could not read the extraction jobs left in the store (%s)", exc)
            return
        with self._lock:
            full: set[str] = set()
            for job in jobs:
                queue = self._queues.get(job.thread_id)
                if queue is not None and job.id in queue:
                    continue
                if job.thread_id in full or self._queued >= QUEUE_LIMIT or (
                    queue is not None and len(queue) >= THREAD_QUEUE_LIMIT
                ):
                    full.add(job.thread_id)
                    continue
                self._enqueue(job.id, job.thread_id, 0.0)
            self._deferred.intersection_update(full)
            drained = self._overflowing and not self._deferred
            if drained:
                self._overflowing = False
        if drained:
            log.info("extraction queue has room again: the jobs left in the store are queued")

    def resume(self) -> int:
        """Queue every job that is unclaimed or whose lease expired (after a crash); none when
        this runner leaves its jobs to workers."""
        if not self._runs_jobs:
            return 0
        now = self._clock.now()
        with self._store.reading() as uow:
            jobs = uow.jobs.pending(now)
        for job in jobs:
            self.submit(job)
        return len(jobs)

    def wait(self, timeout: float | None, *, thread_id: str | None = None) -> None:
        """Wait until the jobs this client queued (of one thread, or all) are done or failed
        for good, retries included. ``WaitTimeoutError`` after ``timeout`` seconds.

        A runner that leaves its jobs to workers waits, for all threads, until every job that
        was to be run when the call began (whichever client recorded it) has left the store,
        done or failed for good, by the workers' hands: ``WaitTimeoutError`` if that takes
        longer than ``timeout`` (no worker running, say). For one thread (``delete_thread``)
        it returns at once: nothing runs in this process."""
        if not self._runs_jobs:
            if thread_id is None:
                self._wait_for_workers(timeout)
            return

        def settled() -> bool:
            if thread_id is None:
                return not self._queues and (not self._deferred or self._closed)
            return thread_id not in self._queues and (thread_id not in self._deferred or self._closed)

        with self._lock:
            done = self._lock.wait_for(settled, timeout)
            if not done:
                left = sum(len(q) for t, q in self._queues.items() if thread_id is None or t == thread_id)
                raise WaitTimeoutError(f"{left} extraction job(s) still queued or running after {timeout} s.")

    def _wait_for_workers(self, timeout: float | None) -> None:
        """Poll the store until the jobs pending now are done or failed (see :meth:`wait`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._store.reading() as uow:
            waiting = {job.id for job in uow.jobs.list()}
        delay = 0.01
        while waiting:
            with self._store.reading() as uow:
                waiting &= {job.id for job in uow.jobs.list()}
            if not waiting:
                return
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WaitTimeoutError(
                    f"{len(waiting)} extraction job(s) left to workers still to run after {timeout} s "
                    "(is a 'palimpsest worker' running for this store?)."
                )
            delay = min(delay * 2, WORKER_POLL_SECONDS)
            time.sleep(delay if left is None else min(delay, left))

    def close(self, timeout: float | None) -> None:
        """Finish the queued jobs (within ``timeout``), then stop; what is left stays durable,
        and the claims held for a retry are handed back to the next client. A runner that
        leaves its jobs to workers just stops (the workers run them)."""
        if self._inherited:
            return  # a forked child's copy: the parent's jobs are the parent's
        if not self._runs_jobs:
            self._shut()
            return
        try:
            self.wait(timeout)
        finally:
            self._shut()

    def finish_at_exit(self) -> None:
        """Interpreter exit without ``close()``: attempts under way and queued first attempts
        run within the policy's ``exit_wait_seconds``; no retry waits out its backoff. Jobs left
        (postponed or unstarted) stay durable for the next client, without a traceback."""
        with self._lock:
            if self._closed or self._inherited:
                return
        if not self._runs_jobs:
            self._shut()
            return
        self._stop.set()  # backoff waits end now; their jobs stay postponed in the store
        try:
            self.wait(self._policy.exit_wait_seconds)
        except WaitTimeoutError:
            log.info("extraction jobs left for the next client at exit")
        self._shut()

    def _shut(self) -> None:
        self._stop.set()
        with self._lock:
            self._closed = True
            self._ready.clear()
            self._lock.notify_all()
            held = [job_id for job_id in self._held if job_id not in self._running]
        with _RUNNERS.lock:
            _RUNNERS.runners.discard(self)
        for job_id in held:  # an attempt under way hands its job back when it ends (_drain)
            self._hand_back(job_id)

    def stop(self, grace: float) -> None:
        """Stop at once (a worker told to stop): no new attempt starts and nothing queued runs;
        attempts under way get ``grace`` seconds to end (finishing their jobs), then every claim
        this runner still holds, for a retry or for an attempt still under way, is handed back,
        due at once, so another worker takes the job without waiting for the lease to end. The
        process should exit soon after: an attempt cut short this way stores nothing more
        once the process is gone, and a pass is idempotent if it stored its memories already."""
        if self._inherited:
            return
        self._stop.set()
        with self._lock:
            self._closed = True
            self._ready.clear()
            self._lock.notify_all()
            self._lock.wait_for(lambda: not self._running, grace)
            running = sorted(self._running)
            held = [job_id for job_id in self._held if job_id not in self._running]
        with _RUNNERS.lock:
            _RUNNERS.runners.discard(self)
        for job_id in held:
            self._hand_back(job_id)
        if running:
            try:
                with self._store.unit_of_work() as uow:
                    for job_id in running:
                        uow.jobs.release(job_id, owner=self._owner)
                    uow.commit()
            except StorageError as exc:  # its lease ends soon all the same
                log.warning("could not hand back extraction job(s) %s (%s)", ", ".join(running), exc)
            else:
                log.info("handed back extraction job(s) %s, cut short", ", ".join(running))
        self._halted.set()  # nothing of ours is left to renew
        with self._lock:  # let the worker threads end before the caller closes the store
            self._lock.wait_for(lambda: self._workers == 0 and not self._beating, STOP_JOIN_SECONDS)

    def queued(self, thread_id: str) -> bool:
        """Whether a job of ``thread_id`` is queued or running here."""
        with self._lock:
            return thread_id in self._queues

    @property
    def slots(self) -> int:
        """Attempts this runner runs at once (its worker threads, at most)."""
        return self._max_workers

    @property
    def backlog(self) -> int:
        """Jobs queued (or running) here."""
        with self._lock:
            return self._queued

    @property
    def room(self) -> int:
        """How many more jobs the queue takes now."""
        with self._lock:
            return 0 if self._closed else max(0, QUEUE_LIMIT - self._queued)

    def idle(self) -> bool:
        """No job is queued, running or waiting for its retry here."""
        with self._lock:
            return not self._queues and not self._deferred

    def _hand_back(self, job_id: str) -> None:
        """Release a claim this runner holds for a retry (closing): the next client may run the
        job at the time its retry was due. Best effort: else its lease ends then anyway."""
        with self._lock:
            until = self._held.pop(job_id, None)
            self._listeners.pop(job_id, None)
        if until is None:
            return
        try:
            with self._store.unit_of_work() as uow:
                uow.jobs.release(job_id, owner=self._owner, until=until)
                uow.commit()
        except StorageError as exc:  # closed or busy: the lease ends at `until` all the same
            log.debug("could not hand back extraction job %s (%s)", job_id, exc)

    def _inherited_by_fork(self) -> None:
        """In a forked child: inert. No worker, heartbeat or exit wait; the parent's queued and
        claimed jobs are left to the parent (nothing is handed back from here); the store is
        never touched. Locks a parent's thread may have held are made anew."""
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._stop.set()
        self._halted = threading.Event()
        self._inherited = True
        self._closed = True
        self._queues.clear()
        self._ready.clear()
        self._deferred.clear()
        self._queued = 0
        self._workers = 0
        self._running.clear()
        self._held.clear()
        self._beating = False
        self._not_before.clear()
        self._busy.clear()
        self._listeners.clear()

    # -- workers -----------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                if self._closed or (not self._ready and not self._deferred):
                    self._workers -= 1
                    self._lock.notify_all()
                    return
                thread_id = self._ready.popleft() if self._ready else None
            if thread_id is not None:
                self._drain(thread_id)
                continue
            self._refill()  # only jobs left in the store while the queue was full remain
            with self._lock:
                if not self._ready:  # nothing could be queued: end; the next finished job refills
                    self._workers -= 1
                    self._lock.notify_all()
                    return

    def _drain(self, thread_id: str) -> None:
        """Run a thread's queued jobs in order; a job that must be retried holds the queue.

        The thread's queue is removed in the same critical section that finds it empty (or
        the runner stopping), so a job submitted meanwhile either lands in a queue this drain
        still runs or starts a new drain."""
        try:
            while True:
                with self._lock:
                    queue = self._queues.get(thread_id)
                    if not queue or self._closed:
                        self._forget(thread_id)
                        return
                    job_id = queue[0]
                    due = self._not_before.pop(job_id, None)
                delay: float | None = 0.0 if due is None else max(0.0, due - time.monotonic())
                if delay and self._stop.wait(delay):
                    self._hand_back(job_id)  # stopping: the job stays durable for the next client
                    break
                delay = self._attempt(job_id)
                while delay is not None and not self._stop.wait(delay):
                    delay = self._attempt(job_id)
                if delay is not None:
                    self._hand_back(job_id)  # stopping: as above
                    break
                with self._lock:
                    queue.popleft()
                    self._queued -= 1
                    self._lock.notify_all()  # room for a waiting submit
                self._refill()
        except BaseException:  # pragma: no cover - _attempt catches everything it expects
            log.exception("extraction worker for thread %s stopped; its jobs stay in the store", thread_id)
        with self._lock:
            self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        """Drop a thread's queue (the caller holds the lock): its jobs stay in the store."""
        left = self._queues.pop(thread_id, None)
        self._queued -= len(left or ())
        self._lock.notify_all()

    # -- one attempt -------------------------------------------------------------------------

    def _attempt(self, job_id: str) -> float | None:
        """Claim the job, run it, finish it. ``None`` when nothing is left to do with it (done,
        failed for good, gone, or held by another client); else the seconds to wait before
        the next attempt. Never raises."""
        with restored_event_listeners(self._listeners.get(job_id)):
            delay = self._try(job_id)
        if delay is None:
            self._busy.pop(job_id, None)  # its count of storage faults ends with it
            self._listeners.pop(job_id, None)
        return delay

    def _try(self, job_id: str) -> float | None:
        with self._lock:
            self._running.add(job_id)  # before the claim: its lease beats from the start
            self._held.pop(job_id, None)
            if not self._beating:
                self._beating = True
                threading.Thread(target=self._heartbeat, name="palimpsest-lease", daemon=True).start()
        try:
            return self._claim_and_run(job_id)
        finally:
            with self._lock:
                self._running.discard(job_id)
                self._lock.notify_all()

    def _heartbeat(self) -> None:
        """Renew the leases of the attempts under way every ``HEARTBEAT_SECONDS`` (or a sixth
        of a shorter lease) until none
        is left (also after ``close()``: an attempt still running keeps its job)."""
        while True:
            halted = self._halted.wait(min(HEARTBEAT_SECONDS, self._policy.lease_seconds / 6))
            with self._lock:
                running = sorted(self._running)
                if not running or self._inherited or halted:
                    self._beating = False
                    self._lock.notify_all()
                    return
            try:
                until = self._clock.now() + self._lease
                with self._store.unit_of_work() as uow:
                    for job_id in running:
                        uow.jobs.renew(job_id, owner=self._owner, until=until)
                    uow.commit()
            except StoreClosedError:
                continue  # the attempts end soon (their store is closed); so does this thread
            except StorageError as exc:  # renewed at the next beat, well within the lease
                log.warning("could not renew the lease of extraction job(s) %s (%s)", ", ".join(running), exc)

    def _claim_and_run(self, job_id: str) -> float | None:
        try:
            now = self._clock.now()
            with self._store.unit_of_work() as uow:
                job = uow.jobs.claim(job_id, owner=self._owner, until=now + self._lease, now=now)
                uow.commit()
        except _STORE_PASSING as exc:
            log.warning("could not claim extraction job %s (%s); trying again", job_id, exc)
            return self._busy_delay(job_id)
        except StorageError as exc:  # closed, or broken: the job stays in the store
            log.warning("could not claim extraction job %s (%s); it stays in the store", job_id, exc)
            return None
        if job is None:
            return None  # done already, failed, or another client holds it
        started = time.monotonic()
        try:
            self._execute(job)
        except StoreClosedError:
            return None  # the client's store was closed under it: the job stays in the store
        except Exception as exc:  # noqa: BLE001 - any failure of a pass is retried or recorded
            return self._after_failure(job, exc)
        try:
            with self._store.unit_of_work() as uow:
                uow.jobs.delete(job.id)
                uow.commit()
        except StoreClosedError:
            return None
        except StorageError as exc:
            # The pass is stored; the next attempt finds it and only finishes the job.
            log.warning("could not finish extraction job %s (%s); trying again", job.id, exc)
            return self._after_failure(job, exc)
        self._report(JobOutcome(job, "done", time.monotonic() - started))
        return None

    def _report(self, outcome: JobOutcome) -> None:
        if self._on_outcome is None:
            return
        try:
            self._on_outcome(outcome)
        except Exception:
            log.debug("extraction outcome hook failed", exc_info=True)

    def _busy_delay(self, job_id: str) -> float:
        count = self._busy[job_id] = self._busy.get(job_id, 0) + 1
        return self._policy.delay(count, self._random.random())

    def _after_failure(self, job: ExtractionJob, exc: Exception) -> float | None:
        transient = isinstance(exc, _STORE_PASSING)
        reason = failure_reason_of(exc)
        policy = self._policy
        if transient:
            delay = self._busy_delay(job.id)
            log.warning("extraction job %s met a busy store (%s); trying again in %.1f s", job.id, exc, delay)
        elif job.attempts < policy.max_attempts:
            delay = policy.delay(job.attempts, self._random.random())
            # One line per retried attempt; its traceback only at DEBUG (a retry that then
            # succeeds is no error), and at ERROR below when the job fails for good.
            log.warning(
                "memory extraction failed (thread %s, job %s, attempt %d of %d): %s; the messages are "
                "stored and the job will be retried in %.1f s",
                job.thread_id,
                job.id,
                job.attempts,
                policy.max_attempts,
                " ".join(reason.split()).rstrip("."),
                delay,
            )
            log.debug("extraction job %s, attempt %d failed with", job.id, job.attempts, exc_info=exc)
        else:
            # One line, as each retried attempt's: a model server that is down must not fill
            # stderr with tracebacks; the traceback is at DEBUG.
            log.error(
                "memory extraction of thread %s failed for good after %d attempts (job %s): %s; it is "
                "recorded as failed, its messages are stored: call retry_failed_extractions() once "
                "the cause is fixed (failed_extractions() lists such jobs)",
                job.thread_id,
                job.attempts,
                job.id,
                " ".join(reason.split()).rstrip("."),
            )
            log.debug("extraction job %s, attempt %d failed with", job.id, job.attempts, exc_info=exc)
            try:
                with self._store.unit_of_work() as uow:
                    uow.jobs.fail(job.id, reason=reason, at=self._clock.now())
                    uow.commit()
            except StoreClosedError:
                return None
            except StorageError as store_exc:
                log.warning("could not record job %s as failed (%s); trying again", job.id, store_exc)
                return self._busy_delay(job.id)
            self._report(JobOutcome(job, "failed", 0.0, reason))
            return None
        try:
            until = self._clock.now() + timedelta(seconds=delay)
            with self._store.unit_of_work() as uow:
                held = uow.jobs.postpone(
                    job.id, owner=self._owner, until=until, reason=reason, refund_attempt=transient
                )
                uow.commit()
        except StoreClosedError:
            return None
        except StorageError as store_exc:  # the claim's lease still holds the job for us
            log.warning("could not record the failed attempt of job %s (%s)", job.id, store_exc)
        else:
            if held:
                with self._lock:
                    self._held[job.id] = until
        return delay



class ExtractionWorker:
    """Serves a store's extraction backlog in a process of its own (``palimpsest worker``).

    It looks for work every ``poll_seconds`` and whenever one of its jobs ends: of the threads'
    oldest jobs (``jobs.list``) that are free (unclaimed, or their lease ended), a few near the
    front (``OFFER_AHEAD`` per attempt it runs at once) are offered to its
    :class:`ExtractionRunner`, which claims each (a job is run by whoever claims it first; a
    worker that loses the race skips it), runs it with the runner's retry policy and reports
    each job that ends. Only a thread's oldest job is ever offered, so the jobs of one
    thread run in order across workers too.

    :meth:`run` serves until ``stop`` is set, or, with ``drain``, until no job is left to run
    in the store (failed jobs aside); then it stops its runner (:meth:`ExtractionRunner.stop`:
    the claims it still holds are handed back). The store and models are its client's.

    With a ``backfill`` (one bounded pass embedding the rows stored without vectors, returning
    how many got theirs: ``VectorBackfill.run_pass``, ARCHITECTURE.md D43) it also runs a pass
    when it starts and every ``backfill_seconds``, at once again while a pass finds rows, so
    rows stored while the embedder was down get their vectors even when no client writes;
    ``drain`` then also waits until a pass finds none (or the embedder is still down).
    """

    def __init__(
        self,
        store: MemoryStore,
        clock: Clock,
        runner: ExtractionRunner,
        *,
        poll_seconds: float = WORKER_POLL_SECONDS,
        backfill: Callable[[], int] | None = None,
        backfill_seconds: float = WORKER_BACKFILL_SECONDS,
    ) -> None:
        if isinstance(poll_seconds, bool) or not isinstance(poll_seconds, (int, float)) or not 0 < poll_seconds < 3600:
            raise ValueError("poll_seconds must be a positive number of seconds (below an hour).")
        if isinstance(backfill_seconds, bool) or not isinstance(backfill_seconds, (int, float)) or not 0 < backfill_seconds <= 86_400:
            raise ValueError("backfill_seconds must be a positive number of seconds (at most a day).")
        self._backfill = backfill
        self._backfill_seconds = float(backfill_seconds)
        self._store = store
        self._clock = clock
        self._runner = runner
        self._poll = float(poll_seconds)
        self._wake = threading.Event()
        self._random = random.Random()  # the order of its offers: its own

    @property
    def runner(self) -> ExtractionRunner:
        return self._runner

    def wake(self) -> None:
        """Look for work now (a job ended here)."""
        self._wake.set()

    def run(
        self,
        stop: threading.Event,
        *,
        drain: bool = False,
        grace: float = WORKER_STOP_GRACE_SECONDS,
    ) -> None:
        """Serve the backlog until ``stop`` is set (or, with ``drain``, until it is empty),
        then stop the runner, handing back what it holds (after ``grace`` seconds for the
        attempts under way)."""
        backfill_due = time.monotonic()  # a first pass at once: rows may wait from before
        backfilling = False
        try:
            while not stop.is_set():
                self._wake.clear()  # a wake-up from here on is seen by the wait below
                try:
                    left = self._offer()
                except StoreClosedError:
                    raise
                except StorageError as exc:  # busy or unreachable: look again at the next poll
                    log.warning("could not read the extraction jobs (%s); trying again", exc)
                    left = True
                if self._backfill is not None and time.monotonic() >= backfill_due:
                    backfilling = self._backfill_pass()
                    backfill_due = time.monotonic() + (0.0 if backfilling else self._backfill_seconds)
                if drain and not left and not backfilling and self._runner.idle():
                    return
                if not backfilling:
                    self._wake.wait(self._poll)
        finally:
            self._runner.stop(grace)

    def _backfill_pass(self) -> bool:
        """One backfill pass; whether it found rows to embed (more may wait). A failure is
        logged: the rows keep waiting for the next pass."""
        assert self._backfill is not None
        try:
            return self._backfill() > 0
        except StoreClosedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the rows stay without vectors; the next pass tries again
            log.warning("could not embed the rows stored without vectors (%s); trying again later", exc)
            return False

    def _offer(self) -> bool:
        """Offer the runner free jobs, each the oldest of its thread; ``True`` while jobs are
        left to run in the store (offered here or not). The oldest ``OFFER_WINDOW`` jobs are
        looked at: a thread whose oldest job lies further back waits for the backlog to move.

        A worker queues only ``OFFER_AHEAD`` jobs per attempt it runs at once, drawn at random
        from the oldest ``OFFER_SPREAD`` times as many free ones: workers that all queued the
        whole backlog in one order would each try every job, and lose all but one claim of
        it (a transaction each, for nothing)."""
        with self._store.reading() as uow:
            jobs = uow.jobs.list(limit=OFFER_WINDOW)
        if not jobs:
            return False
        now = self._clock.now()
        room = min(self._runner.room, OFFER_AHEAD * self._runner.slots - self._runner.backlog)
        seen: set[str] = set()
        free: list[ExtractionJob] = []
        for job in jobs:
            if len(free) >= OFFER_SPREAD * room:
                break
            if job.thread_id in seen:
                continue
            seen.add(job.thread_id)
            if self._runner.queued(job.thread_id):
                continue
            if job.claimed_until is not None and job.claimed_until > now:
                continue  # running in another worker, or waiting there for its retry
            free.append(job)
        for job in self._random.sample(free, min(room, len(free))) if room > 0 else ():
            self._runner.submit(job)
        return True
