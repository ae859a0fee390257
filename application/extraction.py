"""Application layer: extraction of memories from a thread's messages, and its durable jobs.

``ExtractionService`` runs one extraction pass (the use case): it gathers the context (history,
summary, related memories), asks the ``Extractor``, and stores the pass's memories, with the
links proposed during extraction, in one unit of work; post-extraction linking follows.

``ExtractionService.plan`` decides, inside an append's own unit of work, which extraction job
the append makes due. ``ExtractionRunner`` owns the lifecycle of the jobs. An append records
its ``ExtractionJob`` in the same transaction as the messages, so no acknowledged message is ever
left unextracted: a worker claims the job with a lease, runs the pass, and deletes the job. A
failed attempt is retried in this process after a jittered, exponential backoff
(:class:`~palimpsest.application.config.ExtractionRetryPolicy`), and the job records the reason
meanwhile; a job whose last allowed attempt fails is kept, marked failed with the reason, until
it is retried (:meth:`AgentMemory.retry_failed_extractions`) or its thread is deleted. A store
held by another writer only delays a job. After a crash the job is still in the store, and the
next client to open it resumes the job once its lease has expired. At interpreter exit, a
client that was never closed finishes its queued jobs within a bounded wait and leaves the
rest, durable, to the next client. A claim is a short lease (``JOB_LEASE``) renewed while its
attempt runs, so the jobs of a process that died are free again soon; a closing client hands
back the claims it holds for a retry. A forked child leaves its parent's jobs to the parent
(ARCHITECTURE.md D15, D28).

A pass is idempotent: its memories get ids derived from the job's id and are written together,
so a retried job whose memories were already stored (the attempt failed later, while linking or
finishing) does not extract them again.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from palimpsest.domain.errors import (
    AgentMemoryError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
    WaitTimeoutError,
)
from palimpsest.domain.model import (
    MEMORY_RECORD_TYPES,
    ExtractionJob,
    MemoryRecord,
    Message,
    Thread,
    ThreadSummary,
    failure_reason_of,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.search import ScopeFilter
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import resolve_expiry
from .budgets import shorten_for_prompt
from .config import (
    BackgroundExtractionQueueFullBehavior,
    ExtractionRetryPolicy,
    MemoryLinkExtractionMode,
    MemoryRetentionConfig,
    ThreadSettings,
    extraction_counter,
)
from .embedding import EmbeddingHelper, Vector
from .linking import Linker
from .ports import ExtractedMemory, ExtractionRequest, Extractor, SummaryText
from .record_service import RecordService
from .searching import Searcher

__all__ = [
    "HEARTBEAT_SECONDS",
    "JOB_LEASE",
    "MAX_ATTEMPTS",
    "PAST_MEMORY_LIMIT",
    "ExtractionRunner",
    "ExtractionService",
    "inherited_metadata",
    "memory_ids",
]

log = logging.getLogger("palimpsest")

JOB_LEASE: Final = timedelta(seconds=30)
"""A claim's lease. Short: an attempt under way renews it every ``HEARTBEAT_SECONDS``, so a job
whose process died (``os._exit``, SIGKILL, SIGTERM's default action) is free again this soon."""
HEARTBEAT_SECONDS: float = 5.0  # a running attempt's lease is renewed this often (real seconds)
MAX_ATTEMPTS: Final = ExtractionRetryPolicy().max_attempts
WORKERS: Final = 4
QUEUE_LIMIT: Final = 128  # jobs queued in one client (the reference's scheduler: 128 ...)
THREAD_QUEUE_LIMIT: Final = 16  # ... and 16 of one thread
PAST_MEMORY_LIMIT: Final = 7
_PROBE: Final = 64  # ids looked up per batch when checking whether a pass was stored already
_PASS_IDS: Final = uuid.UUID("5d1f0c3e-8a47-4b8e-9a55-6a3c1b7e2f90")  # namespace of memory ids


def memory_ids(pass_id: str, start: int, stop: int) -> list[str]:
    """The ids of memories ``start..stop-1`` of one extraction pass (the same on every run)."""
    return [str(uuid.uuid5(_PASS_IDS, f"{pass_id}/{i}")) for i in range(start, stop)]


@dataclass(frozen=True)
class _PassInputs:
    """What one pass read before calling the model: an earlier attempt's memories (``None``
    when it stored none), the history window and the thread's valid summary."""

    stored: list[MemoryRecord] | None
    history: list[Message]
    summary: ThreadSummary | None


class ExtractionService:
    """One extraction pass over a thread's messages: the use case behind every job."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        extractor: Extractor | None,
        searcher: Searcher,
        memory: RecordService,
        linker: Linker,
        embeddings: EmbeddingHelper,
        retention: MemoryRetentionConfig,
        new_id: Callable[[], str],
    ) -> None:
        self._store = store
        self._clock = clock
        self._extractor = extractor
        self._searcher = searcher
        self._memory = memory
        self._linker = linker
        self._embeddings = embeddings
        self._retention = retention
        self._new_id = new_id

    @property
    def has_extractor(self) -> bool:
        return self._extractor is not None

    def plan(
        self, uow: UnitOfWork, thread: Thread, settings: ThreadSettings, stored: Sequence[Message], now: datetime
    ) -> ExtractionJob | None:
        """The extraction job an append of ``stored`` makes due, recorded in the append's own
        unit of work ``uow`` (the caller commits), or ``None``.

        A negative (or zero) ``memory_extraction_frequency`` extracts every append. Otherwise
        the thread's counter (the seq of the last message handed to extraction) advances once
        ``frequency`` messages have accumulated, and the job covers all of them."""
        config = settings.extraction
        if not config.extract_memories or self._extractor is None or not stored:
            return None
        last = stored[-1].seq
        first = stored[0].seq
        frequency = config.memory_extraction_frequency
        if isinstance(frequency, int) and frequency > 0:
            current = uow.threads.get(thread.id)
            if current is None:
                return None
            state = dict(current.state)
            done = extraction_counter(state)
            counters = dict(state.get("memory_extraction_state") or {})
            if last - done < frequency:
                return None
            first = done + 1
            counters["last_memory_extraction_counter"] = last
            state["memory_extraction_state"] = counters
            uow.threads.update(replace(current, state=state, updated_at=now))
        job = ExtractionJob(id=self._new_id(), thread_id=thread.id, first_seq=first, last_seq=last, created_at=now)
        uow.jobs.add(job)
        return job

    def run_job(self, job: ExtractionJob) -> None:
        """Extract the messages a job covers, if the thread still wants extraction. What the
        pass reads first (the thread, its messages, an earlier attempt's memories, the history
        window and the summary) is read in one read-only unit of work."""
        now = self._clock.now()
        with self._store.reading() as uow:
            thread = uow.threads.get(job.thread_id)
            if thread is None or self._extractor is None:
                return
            settings = ThreadSettings.from_json(thread.config)
            if not settings.extraction.extract_memories:
                return
            targets = uow.messages.list_for_thread(
                job.thread_id, now=now, start_seq=job.first_seq, end_seq=job.last_seq + 1
            )
            if not targets:
                return
            inputs = self._inputs(uow, thread, settings, targets, job.id, now)
        self._run(thread, settings, targets, job.id, inputs, now)

    def extract(
        self, thread: Thread, settings: ThreadSettings, targets: Sequence[Message], *, pass_id: str
    ) -> list[MemoryRecord]:
        """Run the pass ``pass_id`` over ``targets``; returns its memories. A pass already
        stored (by an earlier attempt) is not extracted again: only its post-extraction
        linking runs again."""
        if self._extractor is None or not targets:
            return []
        now = self._clock.now()
        with self._store.reading() as uow:
            inputs = self._inputs(uow, thread, settings, targets, pass_id, now)
        return self._run(thread, settings, list(targets), pass_id, inputs, now)

    def _inputs(
        self,
        uow: UnitOfWork,
        thread: Thread,
        settings: ThreadSettings,
        targets: Sequence[Message],
        pass_id: str,
        now: datetime,
    ) -> _PassInputs:
        """What a pass reads before calling the model, inside the caller's read."""
        stored = self._stored_pass(uow, pass_id)
        if stored is not None:  # an earlier attempt stored the pass: nothing more to read
            return _PassInputs(stored, [], None)
        window = settings.extraction.memory_extraction_window
        history: list[Message] = []
        if isinstance(window, int) and window > len(targets):
            history = uow.messages.list_for_thread(
                thread.id, now=now, end_seq=targets[0].seq, last_n=window - len(targets)
            )
        return _PassInputs(None, history, uow.summaries.latest(thread.id, valid_only=True))

    def _run(
        self,
        thread: Thread,
        settings: ThreadSettings,
        targets: Sequence[Message],
        pass_id: str,
        inputs: _PassInputs,
        now: datetime,
    ) -> list[MemoryRecord]:
        config = settings.extraction
        stored = inputs.stored
        vectors: list[Vector | None] | None = None  # a pass stored by an earlier attempt: not at hand
        if stored is None:
            stored, vectors = self._extract_and_store(thread, settings, list(targets), pass_id, inputs, now)
        if (
            stored
            and config.memory_link_extraction_mode is MemoryLinkExtractionMode.POST_EXTRACTION
            and self._linker.resolver is not None
        ):
            custom = config.memory_link_extraction_custom_instructions
            budget = config.memory_link_extraction_token_limit
            self._linker.resolve_after_extraction(
                stored,
                vectors=vectors,
                custom_instructions=custom if isinstance(custom, str) else None,
                token_limit=budget if isinstance(budget, int) else None,
            )
        return stored

    @staticmethod
    def _stored_pass(uow: UnitOfWork, pass_id: str) -> list[MemoryRecord] | None:
        """The memories an earlier attempt of this pass stored, or ``None`` if it stored none."""
        found: list[MemoryRecord] = []
        start = 0
        while True:
            ids = memory_ids(pass_id, start, start + _PROBE)
            batch = uow.records.get_many(ids)
            found.extend(batch[i] for i in ids if i in batch)
            if not batch:
                break
            start += _PROBE
        return found or None

    def _extract_and_store(
        self,
        thread: Thread,
        settings: ThreadSettings,
        targets: list[Message],
        pass_id: str,
        inputs: _PassInputs,
        now: datetime,
    ) -> tuple[list[MemoryRecord], list[Vector | None]]:
        """The pass's memories, stored, with their vectors (embedded together, in one call).
        The past memories are looked up by the target messages' text, with the vector stored
        with the message when that text is one message's index text."""
        assert self._extractor is not None
        config = settings.extraction
        history, summary = inputs.history, inputs.summary
        query = "\n".join(m.content for m in targets).strip()
        past: list[Any] = []
        if query:
            known = self._embeddings.message_vector(query)  # a one-message pass: its stored vector
            past = [
                r.record
                for r in self._searcher.run(
                    query,
                    vector=NOTSET if known is None else known,
                    now=now,
                    scope=ScopeFilter(user_id=thread.user_id, agent_id=thread.agent_id),
                    max_results=PAST_MEMORY_LIMIT,
                    record_types=[t.value for t in MEMORY_RECORD_TYPES],
                    include_invalid_results=False,
                    is_question=False,
                )
            ]
        during = config.memory_link_extraction_mode is MemoryLinkExtractionMode.DURING_EXTRACTION and bool(past)
        limit = settings.max_message_token_length
        custom = config.memory_extraction_custom_instructions
        token_limit = config.memory_extraction_token_limit
        request = ExtractionRequest(
            target_messages=shorten_for_prompt(targets, limit),
            history_messages=shorten_for_prompt(history, limit),
            summary=SummaryText(summary.text, summary.topics) if summary is not None else None,
            past_memories=past,
            link_candidates=past if during else (),
            custom_instructions=custom if isinstance(custom, str) else None,
            token_limit=token_limit if isinstance(token_limit, int) else None,
        )
        extracted = list(self._extractor.extract(request))
        records = self._records(thread, settings, targets, extracted, pass_id, now)
        if not records:
            return [], []
        vectors = self._embeddings.documents([r.content for r, _ in records])
        allowed = {r.id for r in past} if during else set()
        links = [
            (record.id, proposal.target_id, proposal.link_type)
            for record, memory in records
            for proposal in memory.links
            if proposal.target_id in allowed and proposal.target_id != record.id
        ]
        return self._memory.add_extracted([(r, v) for (r, _), v in zip(records, vectors)], links), vectors

    def _records(
        self,
        thread: Thread,
        settings: ThreadSettings,
        targets: list[Message],
        extracted: list[ExtractedMemory],
        pass_id: str,
        now: datetime,
    ) -> list[tuple[MemoryRecord, ExtractedMemory]]:
        """The pass's memories as records; one the model got wrong is skipped with a warning."""
        inherited = inherited_metadata(settings, targets)
        # A memory must not outlive what it was drawn from: it expires with the first of its
        # source messages to expire (else as the store's retention policy says).
        expiries = [m.expires_at for m in targets if m.expires_at is not None]
        out: list[tuple[MemoryRecord, ExtractedMemory]] = []
        ids = memory_ids(pass_id, 0, len(extracted))
        for record_id, memory in zip(ids, extracted):
            managed: dict[str, Any] = {
                "scope": memory.scope,
                "importance": memory.importance,
                "entities": list(memory.entities),
                "source_message_ids": [m.id for m in targets],
            }
            if memory.valid_to is not None:
                managed["valid_to"] = memory.valid_to.isoformat()
            try:
                expires = (
                    min(expiries)
                    if expiries
                    else resolve_expiry(
                        now=now,
                        ttl_days=NOTSET,
                        ttl_anchor=NOTSET,
                        timestamp=memory.timestamp,
                        retention=self._retention,
                    )
                )
                record = MemoryRecord(
                    id=record_id,
                    record_type=memory.record_type,
                    content=memory.text,
                    user_id=thread.user_id,
                    agent_id=thread.agent_id,
                    thread_id=thread.id,
                    created_at=now,
                    updated_at=now,
                    metadata={**inherited, "$agent_memory": managed},
                    timestamp=memory.timestamp,
                    expires_at=expires,
                )
            except AgentMemoryError as exc:
                log.warning("skipped an extracted memory of thread %s that is not valid: %s", thread.id, exc)
                continue
            out.append((record, memory))
        return out


def inherited_metadata(settings: ThreadSettings, targets: Sequence[Message]) -> dict[str, Any]:
    """The message metadata an extracted memory inherits, as the thread's settings say."""
    rule = settings.extraction.memory_extraction_inherit_message_metadata
    if rule is False or isinstance(rule, NotSetType):
        return {}
    merged: dict[str, Any] = {}
    for message in targets:
        for key, value in (message.metadata or {}).items():
            if key.startswith("$") or (rule is not True and key not in rule):
                continue
            merged.setdefault(key, value)
    return merged


# -- the job runner ------------------------------------------------------------------------------


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
    threads, which end when there is no work.

    A claim's lease is short (``JOB_LEASE``) and renewed by a heartbeat thread while its
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
    ) -> None:
        self._store = store
        self._clock = clock
        self._execute = execute
        self._policy = policy or ExtractionRetryPolicy()
        self._owner = f"client-{uuid.uuid4()}"
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
        self._overflowing = False  # the queue was full: said once, until it drains
        self._inherited = False  # a forked child's copy of its parent's runner
        with _RUNNERS.lock:
            _RUNNERS.runners.add(self)

    @property
    def policy(self) -> ExtractionRetryPolicy:
        return self._policy

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
        returns (its messages are stored) and the memories follow."""
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
        client queues it (in order) once the queue has room again, or the next client does."""
        with self._lock:
            if self._closed:
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
        self._queued += 1
        queue = self._queues.get(thread_id)
        if queue is not None:
            queue.append(job_id)  # a drain for this thread is queued or running
            return
        self._queues[thread_id] = deque([job_id])
        self._ready.append(thread_id)
        if self._workers < WORKERS:
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
        """Queue every job that is unclaimed or whose lease expired (after a crash)."""
        now = self._clock.now()
        with self._store.reading() as uow:
            jobs = uow.jobs.pending(now)
        for job in jobs:
            self.submit(job)
        return len(jobs)

    def wait(self, timeout: float | None, *, thread_id: str | None = None) -> None:
        """Wait until the jobs this client queued (of one thread, or all) are done or failed
        for good, retries included. ``WaitTimeoutError`` after ``timeout`` seconds."""
        def settled() -> bool:
            if thread_id is None:
                return not self._queues and (not self._deferred or self._closed)
            return thread_id not in self._queues and (thread_id not in self._deferred or self._closed)

        with self._lock:
            done = self._lock.wait_for(settled, timeout)
            if not done:
                left = sum(len(q) for t, q in self._queues.items() if thread_id is None or t == thread_id)
                raise WaitTimeoutError(f"{left} extraction job(s) still queued or running after {timeout} s.")

    def close(self, timeout: float | None) -> None:
        """Finish the queued jobs (within ``timeout``), then stop; what is left stays durable,
        and the claims held for a retry are handed back to the next client."""
        if self._inherited:
            return  # a forked child's copy: the parent's jobs are the parent's
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

    def _hand_back(self, job_id: str) -> None:
        """Release a claim this runner holds for a retry (closing): the next client may run the
        job at the time its retry was due. Best effort: else its lease ends then anyway."""
        with self._lock:
            until = self._held.pop(job_id, None)
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

    # -- workers -----------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                if self._closed or (not self._ready and not self._deferred):
                    self._workers -= 1
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
        delay = self._try(job_id)
        if delay is None:
            self._busy.pop(job_id, None)  # its count of storage faults ends with it
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

    def _heartbeat(self) -> None:
        """Renew the leases of the attempts under way every ``HEARTBEAT_SECONDS`` until none
        is left (also after ``close()``: an attempt still running keeps its job)."""
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            with self._lock:
                running = sorted(self._running)
                if not running or self._inherited:
                    self._beating = False
                    return
            try:
                until = self._clock.now() + JOB_LEASE
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
                job = uow.jobs.claim(job_id, owner=self._owner, until=now + JOB_LEASE, now=now)
                uow.commit()
        except StoreBusyError as exc:
            log.warning("could not claim extraction job %s (%s); trying again", job_id, exc)
            return self._busy_delay(job_id)
        except StorageError as exc:  # closed, or broken: the job stays in the store
            log.warning("could not claim extraction job %s (%s); it stays in the store", job_id, exc)
            return None
        if job is None:
            return None  # done already, failed, or another client holds it
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
        return None

    def _busy_delay(self, job_id: str) -> float:
        count = self._busy[job_id] = self._busy.get(job_id, 0) + 1
        return self._policy.delay(count, self._random.random())

    def _after_failure(self, job: ExtractionJob, exc: Exception) -> float | None:
        transient = isinstance(exc, StoreBusyError)
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
                "memory extraction failed (job %s, attempt %d of %d): %s; the messages are stored and "
                "the job will be retried in %.1f s",
                job.id,
                job.attempts,
                policy.max_attempts,
                " ".join(reason.split()),
                delay,
            )
            log.debug("extraction job %s, attempt %d failed with", job.id, job.attempts, exc_info=exc)
        else:
            log.error(
                "memory extraction failed %d times for job %s; it is recorded as failed (see "
                "failed_extractions(), retry_failed_extractions()): %s",
                job.attempts,
                job.id,
                reason,
                exc_info=exc,
            )
            try:
                with self._store.unit_of_work() as uow:
                    uow.jobs.fail(job.id, reason=reason, at=self._clock.now())
                    uow.commit()
            except StoreClosedError:
                return None
            except StorageError as store_exc:
                log.warning("could not record job %s as failed (%s); trying again", job.id, store_exc)
                return self._busy_delay(job.id)
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

