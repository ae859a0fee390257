"""Application layer: ``VectorBackfill``, which embeds the messages and memories stored without
their vectors (ARCHITECTURE.md D43).

A user's write never fails because the embedder is unavailable: the row is stored without its
vector (:meth:`~.embedding.EmbeddingHelper.messages_when_up`). What is left to do is the store's
own state, not the client's: the visible rows that have no vector
(``MessageRepository.unembedded``, ``RecordRepository.unembedded``), so a crash, an exit or
another process loses nothing. A pass reads the oldest of them (a bounded batch of each), embeds
them as an append would have (a message after the turn before it), and writes each vector only
if its row is unchanged. Passes run after a user's write whose own
vectors were made (the embedder answers) while rows may wait (:class:`~.embedding.EmbedderHealth`),
and on demand (``AgentMemory.embed_waiting()``); a pass that finds the embedder still down stops
quietly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from palimpsest.domain.errors import ModelUnavailableError
from palimpsest.domain.model import MemoryRecord, Message, speaker_of
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork

from .embedding import EmbeddingHelper, Vector
from .event_log import log_failure

__all__ = ["BACKFILL_BATCH", "VectorBackfill"]

log = logging.getLogger("palimpsest")

BACKFILL_BATCH: Final = 64
"""How many messages, and how many memories, one pass embeds at most."""


class VectorBackfill:
    """Embeds, a bounded batch per pass, the rows the store holds without vectors."""

    def __init__(self, *, store: MemoryStore, clock: Clock, embeddings: EmbeddingHelper, batch: int = BACKFILL_BATCH) -> None:
        self._store = store
        self._clock = clock
        self._embeddings = embeddings
        self._batch = batch
        self._running = threading.Lock()

    def after_write(self, vectors: Sequence[Vector | None]) -> None:
        """Called by a user's write after its commit, with the vectors it stored: rows without
        theirs are marked waiting; otherwise the embedder just answered, so one pass runs if
        rows may wait. Never raises: the write is already durable."""
        if self._embeddings.wrote(vectors) or not vectors or not self._embeddings.health.waiting:
            return
        try:
            self.run_pass()
        except Exception as exc:  # noqa: BLE001 - the rows stay without vectors; a later pass tries again
            log_failure(log, exc, "embedding the rows stored without vectors failed")

    def run_pass(self) -> int:
        """Embed the oldest rows stored without vectors (at most one batch of messages and one
        of memories); returns how many got their vector. 0 without an embedder, while another
        pass of this client runs, or when the embedder is still unavailable."""
        if self._embeddings.embedder is None or not self._running.acquire(blocking=False):
            return 0
        try:
            return self._pass()
        finally:
            self._running.release()

    def run_all(self) -> int:
        """Passes until no row waits or the embedder stops answering; returns how many rows got
        their vector."""
        done = 0
        while True:
            filled = self.run_pass()
            done += filled
            health = self._embeddings.health
            if filled == 0 or not health.waiting or health.down:
                return done

    def _pass(self) -> int:
        health = self._embeddings.health
        generation = health.generation
        now = self._clock.now()
        with self._store.reading() as uow:
            messages = uow.messages.unembedded(now=now, limit=self._batch)
            records = uow.records.unembedded(now=now, limit=self._batch)
            befores = [self._before(uow, m) for m in messages]
        if not messages and not records:
            health.caught_up(generation)
            return 0
        try:
            message_vectors = self._embeddings.messages(messages, befores) if messages else []
            record_vectors = self._embeddings.documents([r.content for r in records]) if records else []
        except ModelUnavailableError as exc:
            health.unavailable(exc)
            return 0
        health.answered()
        filled = 0
        with self._store.unit_of_work() as uow:
            for message, vector in zip(messages, message_vectors):
                filled += self._fill_message(uow, message, vector, now)
            for record, vector in zip(records, record_vectors):
                filled += self._fill_record(uow, record, vector)
            uow.commit()
        if len(messages) < self._batch and len(records) < self._batch:
            health.caught_up(generation)
        return filled

    @staticmethod
    def _before(uow: UnitOfWork, message: Message) -> Message | None:
        """The turn a named message's index text is read after (as an append embeds it)."""
        if speaker_of(message.metadata) is None:
            return None
        earlier = uow.messages.list_for_thread(message.thread_id, now=message.created_at, end_seq=message.seq, last_n=1)
        return earlier[0] if earlier else None

    @staticmethod
    def _fill_message(uow: UnitOfWork, message: Message, vector: Vector | None, now: datetime) -> int:
        current = uow.messages.get(message.id, now=now)
        if vector is None or current != message:
            return 0  # edited or deleted meanwhile: its own write saw to it (an unchanged row
            # embedded meanwhile by another client gets the same vector again)
        uow.messages.update(current, embedding=vector)
        return 1

    @staticmethod
    def _fill_record(uow: UnitOfWork, record: MemoryRecord, vector: Vector | None) -> int:
        current = uow.records.get(record.id)
        if vector is None or current != record:
            return 0
        uow.records.update(current, embedding=vector)
        return 1
