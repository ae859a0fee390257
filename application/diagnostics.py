"""Application layer: what a health check reads from a store (``palimpsest doctor``).

Read-only use cases on the :class:`~palimpsest.domain.ports.MemoryStore` port: how many
threads, records and links it holds, the messages and records that wait for their vectors (D43),
its extraction jobs still to run (by state) and those that failed for good, and whether the settings a client reads back (the retention policy, each
thread's config) still parse. The schema version is the store's own business: stores offer it
through the :class:`~palimpsest.domain.ports.StoreDiagnostics` capability, and
:func:`schema_state` asks for it. Nothing here writes or judges: the driver words the verdicts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.model import ExtractionJob, JobState
from palimpsest.domain.ports import Clock, MemoryStore, SchemaState, StoreDiagnostics

from .config import stored_thread_settings
from .store_settings import RETENTION_SETTING, stored_retention

__all__ = [
    "JobOverview",
    "StoreCounts",
    "WaitingVectors",
    "count_rows",
    "count_waiting",
    "failed_jobs",
    "job_overview",
    "schema_state",
    "settings_problems",
]


def schema_state(store: MemoryStore) -> SchemaState | None:
    """The store's schema state, or ``None`` when the store does not offer diagnostics."""
    return store.schema_state() if isinstance(store, StoreDiagnostics) else None


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """Threads, visible memory records and links in a store."""

    threads: int
    records: int
    links: int


def count_rows(store: MemoryStore, clock: Clock) -> StoreCounts:
    """How many threads, memory records (visible now) and links the store holds, from one
    read-only snapshot."""
    with store.reading() as uow:
        return StoreCounts(
            threads=len(uow.threads.list(limit=None)),
            records=len(uow.records.list(now=clock.now(), limit=None)),
            links=len(uow.links.list(limit=None)),
        )


@dataclass(frozen=True, slots=True)
class WaitingVectors:
    """How many visible messages and memory records a store holds without a vector: stored
    while the embedder was unavailable (or imported without vectors), waiting for the backfill."""

    messages: int
    records: int

    @property
    def total(self) -> int:
        return self.messages + self.records


def count_waiting(store: MemoryStore, clock: Clock) -> WaitingVectors:
    """How many visible messages and records wait for their vectors, from one read-only snapshot."""
    now = clock.now()
    with store.reading() as uow:
        return WaitingVectors(
            messages=len(uow.messages.unembedded(now=now, limit=None)),
            records=len(uow.records.unembedded(now=now, limit=None)),
        )


@dataclass(frozen=True, slots=True)
class JobOverview:
    """The extraction jobs still to run, each with its state at the instant ``at``.

    ``latest_retrying`` is the retrying job whose next attempt is due last (the most recent
    failed attempt), or ``None`` when none is retrying."""

    jobs: tuple[tuple[ExtractionJob, JobState], ...]
    at: datetime

    @property
    def counts(self) -> Counter[JobState]:
        return Counter(state for _, state in self.jobs)

    @property
    def latest_retrying(self) -> ExtractionJob | None:
        retrying = [job for job, state in self.jobs if state is JobState.RETRYING]
        if not retrying:
            return None
        return max(retrying, key=lambda job: (job.claimed_until or self.at, job.id))


def job_overview(store: MemoryStore, clock: Clock) -> JobOverview:
    """Every extraction job still to run, with its state now (each computed once)."""
    with store.reading() as uow:
        jobs = uow.jobs.list(limit=None)
    now = clock.now()
    return JobOverview(tuple((job, job.state(now)) for job in jobs), now)


def failed_jobs(store: MemoryStore) -> list[ExtractionJob]:
    """The extraction jobs that failed every attempt."""
    with store.reading() as uow:
        return uow.jobs.failed(limit=None)


def settings_problems(store: MemoryStore) -> tuple[int, list[str]]:
    """What a client would refuse when it opens the store (a retention policy that does not
    parse) or one of its threads (config and state): ``(threads checked, problems)``."""
    with store.reading() as uow:
        retention = uow.settings.get(RETENTION_SETTING)
        threads = uow.threads.list(limit=None)
    problems = []
    try:
        stored_retention(retention)
    except ConfigurationError as exc:
        problems.append(str(exc))
    for thread in threads:
        try:
            stored_thread_settings(thread)
        except ConfigurationError as exc:
            problems.append(f"thread {thread.id}: {exc}")
    return len(threads), problems
