"""Application layer: ``MaintenanceService``, the store-wide upkeep use cases: deleting a thread
with what it owns, purging expired rows, re-embedding everything, and listing or retrying the
durable extraction jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.events import DomainEvent
from palimpsest.domain.model import ExtractionJob
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork

from .checkpoints import delete_thread_checkpoints_in
from .config import MemoryExtractionMode, ThreadSettings
from .embedding import EmbeddingHelper
from .indexing import INDEX_CONTEXT_SETTING
from .jobs import ExtractionRunner
from .record_service import RecordService
from .store_settings import EMBEDDING_MODEL_SETTING
from .summaries import SummaryService

__all__ = ["DELETE_THREAD_WAIT", "MaintenanceService"]

DELETE_THREAD_WAIT = 300.0
"""Seconds ``delete_thread`` waits for the thread's running extraction before deleting."""


class MaintenanceService:
    """Thread deletion, expiry purge, re-embedding and extraction-job upkeep."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        memory: RecordService,
        summaries: SummaryService,
        embeddings: EmbeddingHelper,
        runner: ExtractionRunner,
        has_extractor: bool,
    ) -> None:
        self._store = store
        self._clock = clock
        self._memory = memory
        self._summaries = summaries
        self._embeddings = embeddings
        self._runner = runner
        self._has_extractor = has_extractor

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, summaries, graph checkpoints and the memories
        scoped to it, after its running extraction finished; records linked to its memories are
        re-derived. Returns 1, or 0 when there was no such thread (its checkpoints, if a graph
        wrote some under that id, are deleted all the same)."""
        self._runner.wait(DELETE_THREAD_WAIT, thread_id=thread_id)  # let its extraction finish first
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            existed = uow.threads.get(thread_id) is not None
            self.delete_thread_in(uow, thread_id, now)
            uow.commit()
        return int(existed)

    def delete_thread_in(self, uow: UnitOfWork, thread_id: str, now: datetime) -> list[DomainEvent]:
        """Delete a thread with what it owns inside a caller's unit of work, its graph
        checkpoints first (D41), re-deriving the records linked to its memories; the caller
        commits (and publishes the events)."""
        delete_thread_checkpoints_in(self._store, uow, [thread_id])
        owned = uow.records.list(now=now, thread_id=thread_id, limit=None)
        partners: set[str] = set()
        owned_ids = {r.id for r in owned}
        for record in owned:
            partners.update(l.other_end(record.id) for l in uow.links.touching(record.id))
        if not uow.threads.delete(thread_id):
            return []
        return self._memory.rederive_in(uow, partners - owned_ids, now)

    def purge_expired(self) -> int:
        """Physically remove expired messages and memories; returns how many rows went.

        Summaries that covered a purged message are retired (a fence revision), so purged
        text does not live on in them; memories a purged memory had retired become valid."""
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            purged = uow.messages.purge_expired(now)
            lowest: dict[str, int] = {}
            for thread_id, seq in purged:
                lowest[thread_id] = min(seq, lowest.get(thread_id, seq))
            threads = {tid: uow.threads.get(tid) for tid in lowest}
            expired = uow.records.expired_ids(now)
            self._memory.delete_records_in(uow, expired, now)
            uow.commit()
        for thread_id, seq in lowest.items():
            thread = threads[thread_id]
            if thread is not None:
                self._summaries.invalidate_from(thread, seq)
        return len(purged) + len(expired)

    def reembed(self, *, batch_size: int, progress: Callable[[int, int], None] | None) -> int:
        """Recompute every vector from the stored text, then record the embedder's model (and
        the index-text recipe) as the store's. Returns how many records and messages were
        embedded; ``progress(done, total)`` is called after each batch.

        A model of another dimension first clears the old vectors."""
        embedder = self._embeddings.embedder
        if embedder is None:
            raise ConfigurationError("reembed() needs a client with an embedder.")
        store = self._store
        if store.dimension is not None and store.dimension != embedder.dimension:
            store.clear_vectors()
        now = self._clock.now()
        with store.reading() as uow:
            record_ids = [r.id for r in uow.records.list(now=now, limit=None)]
            message_keys = []  # (thread id, message id, id of the message before it in its thread)
            for t in uow.threads.list(limit=None):
                previous: str | None = None
                for m in uow.messages.list_for_thread(t.id, now=now):
                    message_keys.append((t.id, m.id, previous))
                    previous = m.id
        total = len(record_ids) + len(message_keys)
        done = 0
        for start in range(0, len(record_ids), batch_size):
            with store.reading() as uow:
                batch = [r for r in (uow.records.get(i) for i in record_ids[start : start + batch_size]) if r]
            vectors = self._embeddings.documents([r.content for r in batch])
            with store.unit_of_work() as uow:
                for record, vector in zip(batch, vectors):
                    current = uow.records.get(record.id)
                    if current is not None:  # deleted meanwhile: nothing to do
                        uow.records.update(current, embedding=vector)
                uow.commit()
            done += len(batch)
            if progress is not None:
                progress(done, total)
        for start in range(0, len(message_keys), batch_size):
            with store.reading() as uow:
                keys = message_keys[start : start + batch_size]
                found = [(uow.messages.get(mid, now=now), before) for _, mid, before in keys]
                batch_m = [m for m, _ in found if m is not None]
                befores = [uow.messages.get(b, now=now) if b is not None else None for m, b in found if m is not None]
            vectors = self._embeddings.messages(batch_m, befores)
            with store.unit_of_work() as uow:
                for message, vector in zip(batch_m, vectors):
                    stored_message = uow.messages.get(message.id, now=now)
                    if stored_message is not None:
                        uow.messages.update(stored_message, embedding=vector)
                uow.commit()
            done += len(batch_m)
            if progress is not None:
                progress(done, total)
        with store.unit_of_work() as uow:
            uow.settings.set(EMBEDDING_MODEL_SETTING, embedder.model_id)
            uow.settings.set(INDEX_CONTEXT_SETTING, list(self._embeddings.index_context))
            uow.commit()
        return done

    def pending_extractions(self, thread_id: str | None, *, limit: int | None) -> list[ExtractionJob]:
        """Extraction jobs still to run (of one thread, or all), oldest first."""
        with self._store.reading() as uow:
            return uow.jobs.list(thread_id=thread_id, limit=limit)

    def failed_extractions(self, thread_id: str | None, *, limit: int | None) -> list[ExtractionJob]:
        """Extraction jobs that failed their last allowed attempt, oldest failure first."""
        with self._store.reading() as uow:
            return uow.jobs.failed(thread_id=thread_id, limit=limit)

    def retry_failed_extractions(self, thread_id: str | None) -> int:
        """Queue the failed extraction jobs (of one thread, or all) again with a fresh budget of
        attempts and start them as their thread's mode says; returns how many.
        ``ConfigurationError`` without an extractor."""
        if not self._has_extractor:
            raise ConfigurationError("retry_failed_extractions() needs a client with an extractor.")
        queued: list[tuple[ExtractionJob, bool]] = []  # (job, run inline)
        with self._store.unit_of_work() as uow:
            for failed in uow.jobs.failed(thread_id=thread_id, limit=None):
                again = uow.jobs.retry(failed.id)
                thread = uow.threads.get(failed.thread_id)
                if again is not None and thread is not None:
                    mode = ThreadSettings.from_json(thread.config).extraction.extraction_mode
                    queued.append((again, mode is MemoryExtractionMode.INLINE))
            uow.commit()
        for job, inline in queued:
            self._runner.start(job, inline=inline)
        return len(queued)
