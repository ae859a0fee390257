"""Application layer: ``MessageService``, the message use cases of a thread (append, edit, delete,
read).

An append stores its messages, with their vectors, in one unit of work, and in that same unit of
work records the extraction job the append makes due (``ExtractionService.plan``), so no
acknowledged message is ever left unextracted. An embedder that is unavailable never fails it:
the messages are stored without vectors and the vector backfill embeds them later (D43). After
the commit the job is started (inline or queued, as the thread's settings say) and the durable
summary is kept up to date. An edit or a delete retires the summaries that covered the message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import MessageNotFoundError, ThreadNotFoundError, ValidationError
from palimpsest.domain.model import ExtractionJob, Message, Thread, speaker_of
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, resolve_expiry
from .config import MemoryExtractionMode, MemoryRetentionConfig, ThreadSettings
from .embedding import EmbeddingHelper, IndexedMessage, Vector
from .event_log import log_failure
from .extraction import ExtractionService
from .images import ImageParts, ImageService
from .jobs import ExtractionRunner
from .requests import AppendMessages, ImageInput, ListMessages, UpdateMessage
from .summaries import SummaryService
from .vector_backfill import VectorBackfill

__all__ = ["MessageService", "NewMessage"]

log = logging.getLogger("palimpsest")


NEXT_WINDOW = 64
"""How far in ``seq`` past an edited or deleted message its successor is looked for (whose index
text reads it); a successor further away (a gap left by deletes) keeps its vector."""


@dataclass(frozen=True, slots=True)
class NewMessage:
    """One message to append, its arguments parsed: ``ttl_days``/``ttl_anchor`` as given
    (``NOTSET`` when omitted)."""

    id: str
    role: str
    content: str
    timestamp: datetime | None
    metadata: dict[str, Any] | None
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET
    images: tuple[ImageInput, ...] = ()
    """Its image content parts."""


class MessageService:
    """Appends, edits, deletes and reads the messages of a thread."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        embeddings: EmbeddingHelper,
        retention: MemoryRetentionConfig,
        extraction: ExtractionService,
        runner: ExtractionRunner,
        summaries: SummaryService,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        images: ImageService | None = None,
        backfill: VectorBackfill | None = None,
    ) -> None:
        self._backfill = backfill if backfill is not None else VectorBackfill(
            store=store, clock=clock, embeddings=embeddings
        )
        self._new_id = new_id
        self._images = images
        self._store = store
        self._clock = clock
        self._embeddings = embeddings
        self._retention = retention
        self._extraction = extraction
        self._runner = runner
        self._summaries = summaries

    def _expiry(
        self,
        now: datetime,
        ttl_days: float | None | NotSetType,
        ttl_anchor: TimeToLiveAnchor | str | NotSetType,
        timestamp: datetime | None,
    ) -> datetime | None:
        return resolve_expiry(
            now=now, ttl_days=ttl_days, ttl_anchor=ttl_anchor, timestamp=timestamp, retention=self._retention
        )

    # -- append --------------------------------------------------------------------------------

    def add(self, thread: Thread, settings: ThreadSettings, request: AppendMessages) -> list[str]:
        """``add_messages``: the request's messages (ids generated for messages without one)
        appended as :meth:`append` does; returns their ids."""
        rows = [
            NewMessage(
                m.id if m.id is not None else self._new_id(),
                m.role,
                m.content,
                m.timestamp,
                m.metadata,
                m.ttl_days,
                m.ttl_anchor,
                m.images,
            )
            for m in request.inputs
        ]
        self.append(thread, settings, rows)
        return [row.id for row in rows]

    def append(
        self, thread: Thread, settings: ThreadSettings, messages: Sequence[NewMessage]
    ) -> list[Message]:
        """Store ``messages`` after the thread's last one (all committed together, with the
        extraction job they make due, before any model call), then run the extraction and the
        summary upkeep. ``ThreadNotFoundError`` when the thread is gone."""
        if not messages:
            return []
        now = self._clock.now()
        expiries = [self._expiry(now, m.ttl_days, m.ttl_anchor, m.timestamp) for m in messages]
        images = self._checked_images(settings, messages)
        vectors = self._embeddings.messages_when_up(messages, self._turns_before(thread, messages, now))
        stored: list[Message] = []
        with self._store.unit_of_work() as uow:
            seq = uow.messages.last_seq(thread.id)
            current = uow.threads.get(thread.id)
            # The thread as stored now must be the one the caller opened (and a server checked
            # was the caller's): one deleted and re-created under another owner is not found.
            if current is None or (current.user_id, current.agent_id) != (thread.user_id, thread.agent_id):
                raise ThreadNotFoundError(f"No thread found with id {thread.id!r}.")
            for new, expires in zip(messages, expiries):
                seq += 1
                stored.append(
                    Message(
                        id=new.id,
                        thread_id=thread.id,
                        role=new.role,
                        content=new.content,
                        seq=seq,
                        created_at=now,
                        timestamp=new.timestamp,
                        metadata=new.metadata,
                        user_id=thread.user_id,
                        agent_id=thread.agent_id,
                        expires_at=expires,
                    )
                )
            uow.messages.add_many(stored, vectors)
            if images and self._images is not None:
                for index, message in enumerate(stored):
                    own = [p for p in images if p.message == index]
                    if own:
                        self._images.attach_in(uow, message.id, thread, message.expires_at, own, now)
            job = self._extraction.plan(uow, thread, settings, stored, now)
            uow.commit()
        try:
            self._after_append(thread, settings, stored, job)
        finally:
            self._backfill.after_write(vectors)
        return stored

    def _checked_images(self, settings: ThreadSettings, messages: Sequence[NewMessage]) -> list[ImageParts]:
        """The image parts of an append, checked and captioned before anything is written."""
        parts = [(index, part) for index, m in enumerate(messages) for part in m.images]
        if not parts:
            return []
        if self._images is None:  # pragma: no cover - the composition root always wires images
            raise ValidationError("this client does not store images.")
        return self._images.message_parts(parts, settings.image_limits)

    def _after_append(
        self, thread: Thread, settings: ThreadSettings, stored: list[Message], job: ExtractionJob | None
    ) -> None:
        """Extraction and summary upkeep; runs after the raw messages (and the job) are durable."""
        config = settings.extraction
        try:
            if job is not None:
                timeout = config.background_extraction_queue_put_timeout_seconds
                self._runner.start(
                    job,
                    inline=config.extraction_mode is MemoryExtractionMode.INLINE,
                    when_full=config.background_extraction_queue_full_behavior,  # type: ignore[arg-type]
                    put_timeout=float(timeout) if isinstance(timeout, (int, float)) else 0.0,
                )
        finally:  # a full queue's WaitTimeoutError still leaves the summary up to date
            if config.enable_context_summary and self._summaries.has_summariser:
                try:
                    self._summaries.after_append(thread, settings, stored[-1].seq)
                except Exception as exc:  # noqa: BLE001 - the messages are stored; the next append refreshes it
                    log_failure(log, exc, "summary refresh failed for thread %s", thread.id)

    def _turns_before(
        self, thread: Thread, messages: Sequence[NewMessage], now: datetime
    ) -> list[IndexedMessage | None]:
        """The message before each new one (its index text's context, :func:`turn_before`): the
        thread's newest stored message for the first (read only when the first has a speaker),
        then the batch's own."""
        first: IndexedMessage | None = None
        if self._embeddings.embedder is not None and speaker_of(messages[0].metadata) is not None:
            with self._store.reading() as uow:
                newest = uow.messages.list_for_thread(thread.id, now=now, last_n=1)
            first = newest[0] if newest else None
        return [first, *messages[:-1]]

    def _before(self, uow: UnitOfWork, thread: Thread, seq: int) -> Message | None:
        """The thread's visible message just before ``seq``, if any."""
        earlier = uow.messages.list_for_thread(thread.id, now=self._clock.now(), end_seq=seq, last_n=1)
        return earlier[0] if earlier else None

    def _next_turn(self, thread: Thread, message: Message, before: Message | None) -> tuple[Message, Vector | None] | None:
        """The named message after ``message`` and its new vector (its index text reads the turn
        before it, which changes or leaves: ``before`` will precede it), embedded before any
        transaction opens: a model that fails then leaves nothing written."""
        if self._embeddings.embedder is None:
            return None
        with self._store.reading() as uow:
            following = self._following(uow, thread, message)
        if following is None:
            return None
        return following, self._embeddings.messages_when_up([following], [before])[0]

    def _following(self, uow: UnitOfWork, thread: Thread, message: Message) -> Message | None:
        later = uow.messages.list_for_thread(
            thread.id, now=self._clock.now(), start_seq=message.seq + 1, end_seq=message.seq + NEXT_WINDOW
        )
        return later[0] if later and later[0].speaker is not None else None

    def _reembed_next(
        self, uow: UnitOfWork, thread: Thread, message: Message, planned: tuple[Message, Vector | None] | None
    ) -> None:
        """Store the vector :meth:`_next_turn` computed, if that turn is still the one after
        ``message`` and unchanged (else its own write re-embedded it meanwhile)."""
        if planned is None:
            return
        following, vector = planned
        if self._following(uow, thread, message) == following:
            uow.messages.update(following, embedding=vector)

    # -- edit and delete -----------------------------------------------------------------------

    def update(self, thread: Thread, message: Message, request: UpdateMessage) -> None:
        """Edit a message's text, metadata or expiry (a new text or speaker is re-embedded); a
        new text retires the summaries that covered it. Omitted fields stay."""
        content, metadata, ttl_days, ttl_anchor = request.content, request.metadata, request.ttl_days, request.ttl_anchor
        changes: dict[str, Any] = {}
        embedding: Any = NOTSET
        if not isinstance(content, NotSetType):
            changes["content"] = content
        if not isinstance(metadata, NotSetType):
            changes["metadata"] = metadata
        speaker = speaker_of(metadata) if not isinstance(metadata, NotSetType) else message.speaker
        reindexed = "content" in changes or speaker != message.speaker
        if reindexed:
            before = None
            if speaker is not None:  # only a named turn's index text reads the turn before it
                with self._store.reading() as uow:
                    before = self._before(uow, thread, message.seq)
            embedding = self._embeddings.messages_when_up([replace(message, **changes)], [before])[0]
        if not (isinstance(ttl_days, NotSetType) and isinstance(ttl_anchor, NotSetType)):
            changes["expires_at"] = self._expiry(self._clock.now(), ttl_days, ttl_anchor, message.timestamp)
        if not changes:
            return
        planned = None
        if reindexed and (speaker is not None or message.speaker is not None):
            planned = self._next_turn(thread, message, replace(message, **changes))
        with self._store.unit_of_work() as uow:
            uow.messages.update(replace(message, **changes), embedding=embedding)
            if "expires_at" in changes and self._images is not None:  # attached images follow their message
                self._images.detach_in(uow, message.id, expires_at=changes["expires_at"])
            self._reembed_next(uow, thread, message, planned)
            uow.commit()
        written = [] if isinstance(embedding, NotSetType) else [embedding]
        self._embeddings.wrote(written + ([planned[1]] if planned is not None else []))
        if "content" in changes:
            self._summaries.invalidate_from(thread, message.seq)

    def delete(self, thread: Thread, message: Message) -> bool:
        """Delete one raw message (memories derived from it stay) and retire the summaries
        that covered it; ``False`` when it was gone already."""
        planned = None
        if message.speaker is not None:
            with self._store.reading() as uow:
                before = self._before(uow, thread, message.seq)
            planned = self._next_turn(thread, message, before)
        with self._store.unit_of_work() as uow:
            deleted = uow.messages.delete(message.id)
            if deleted:
                if self._images is not None:  # its attached images go with it
                    self._images.detach_in(uow, message.id)
                self._reembed_next(uow, thread, message, planned)
            uow.commit()
        if planned is not None:
            self._embeddings.wrote([planned[1]])
        if deleted:
            self._summaries.invalidate_from(thread, message.seq)
        return bool(deleted)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, thread: Thread, message_id: str, *, image_bytes: frozenset[str] = frozenset()) -> Message:
        """One visible message of the thread (with its content parts when it has images; bytes
        for the images named in ``image_bytes``); ``MessageNotFoundError`` otherwise."""
        with self._store.reading() as uow:
            message = uow.messages.get(message_id, now=self._clock.now())
            if message is None or message.thread_id != thread.id:
                raise MessageNotFoundError(f"No message with id {message_id!r} in this thread.")
            return ImageService.parts_of(uow, [message], image_bytes)[0]

    def with_parts(self, messages: Sequence[Message], *, image_bytes: bool) -> list[Message]:
        """``messages`` with the content parts of those that have images (bytes if asked)."""
        if not messages:
            return []
        with self._store.reading() as uow:
            return ImageService.parts_of(uow, messages, image_bytes)

    def visible(self, thread: Thread, *, last_n: int | None = None) -> list[Message]:
        """The thread's visible messages oldest first (``last_n``: only the newest ones)."""
        with self._store.reading() as uow:
            if last_n is None:
                return uow.messages.list_for_thread(thread.id, now=self._clock.now())
            return uow.messages.list_for_thread(thread.id, now=self._clock.now(), last_n=last_n)

    def list(self, request: ListMessages) -> list[Message]:
        """Visible messages of every thread matching the filters (omitted: no filter; ``None``:
        only messages unscoped on that dimension), oldest first; ``limit`` keeps the newest.
        Those with images have their content parts (bytes with ``include_image_bytes``)."""
        with self._store.reading() as uow:
            messages = uow.messages.list(
                now=self._clock.now(),
                user_id=request.user_id,
                agent_id=request.agent_id,
                thread_id=request.thread_id,
                metadata_filter=request.metadata_filter,
                limit=request.limit,  # type: ignore[arg-type]
            )
            return ImageService.parts_of(uow, messages, request.image_bytes) if messages else []
