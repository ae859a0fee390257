"""Application layer: durable, versioned thread summaries with incremental refresh.

A refresh reads the newest valid revision and the newest revision of any status, folds the
messages the valid one does not cover into it, and stores the result as ``newest + 1``. The
store refuses a revision number that exists, so of two concurrent refreshes only one wins and
a refresh can never overwrite the fence an invalidation wrote (message edited or deleted).
Without a summariser, summaries are a transcript of the last few messages, never stored.

Reading a summary never waits for a writer: the reads are read-only units of work, and a refresh
that cannot store its revision because the store stays busy (another process holds the write
lock) returns the summary unsaved; the next read after the writer is done summarises and stores it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from palimpsest.domain.errors import ConflictError, StoreBusyError
from palimpsest.domain.model import Message, RecordStatus, Thread, ThreadSummary
from palimpsest.domain.ports import Clock, MemoryStore

from .budgets import shorten_for_prompt
from .config import ThreadSettings
from .event_log import log_failure
from .ports import Summariser, SummaryText
from .quotes import find_quotes, quoted, quotes_from_metadata, quotes_metadata
from .rendering import format_time

__all__ = ["SummaryService", "transcript"]

log = logging.getLogger("palimpsest")

MAX_RETAINED_REVISIONS: Final = 50
MAX_MESSAGE_TOKENS: Final = 15_000
"""Longer messages are shortened in summariser prompts (the stored text is untouched)."""
TRANSCRIPT_CHAR_CAP: Final = 4000
_ATTEMPTS: Final = 3


def transcript(messages: Sequence[Message]) -> str:
    """The no-model fallback: ``role (timestamp): content`` lines, capped at 4,000 characters."""
    text = "\n- ".join(f"{m.role} ({format_time(m.timestamp)}): {m.content}" for m in messages)
    return text[:TRANSCRIPT_CHAR_CAP]


def _transcript_summary(messages: Sequence[Message]) -> SummaryText:
    """:func:`transcript` as a summary whose sentences quote the messages of their lines."""
    text = transcript(messages)
    lines = [f"{m.role} ({format_time(m.timestamp)}): {m.content}" for m in messages]
    sources = [(line if i == 0 else f"- {line}", m.id) for i, (line, m) in enumerate(zip(lines, messages))]
    return SummaryText(text, (), find_quotes(text, sources))


def _quoted(draft: SummaryText, base: ThreadSummary | None, messages: Sequence[Message]) -> SummaryText:
    """``draft`` (at most 8 topics) with its quotes (:mod:`.quotes`): its sentences found in the
    quotes of the revision it was folded into, else in the messages folded in."""
    kept = quoted(base.text, quotes_from_metadata(base.metadata)) if base is not None else ()
    known = [(sentence, i) for sentence, i in kept if i is not None]
    found = find_quotes(draft.text, [(m.content, m.id) for m in messages], known)
    return SummaryText(draft.text, tuple(draft.topics)[:8], found)


def _stored(summary: ThreadSummary) -> SummaryText:
    return SummaryText(summary.text, summary.topics, quotes_from_metadata(summary.metadata))


class SummaryService:
    def __init__(self, store: MemoryStore, clock: Clock, summariser: Summariser | None) -> None:
        self._store = store
        self._clock = clock
        self._summariser = summariser

    @property
    def has_summariser(self) -> bool:
        return self._summariser is not None

    def after_append(self, thread: Thread, settings: ThreadSettings, last_seq: int) -> None:
        """Summary upkeep after an append: refresh the durable summary once the thread's
        ``context_summary_update_frequency`` messages are uncovered (every append when it is
        not positive). Nothing without a summariser or with context summaries off."""
        if self._summariser is None or not settings.extraction.enable_context_summary:
            return
        frequency = settings.extraction.context_summary_update_frequency
        with self._store.reading() as uow:
            valid = uow.summaries.latest(thread.id, valid_only=True)
        covered = valid.covered_through_seq if valid is not None else 0
        if isinstance(frequency, int) and frequency > 0 and last_seq - covered < frequency:
            return
        self.refresh(thread, token_limit=settings.context_card_token_limit)

    def current(
        self, thread: Thread, *, token_limit: int | None = None, fallback_message_count: int = 5
    ) -> SummaryText:
        """The summary of the whole visible thread, refreshing the durable one if it is stale."""
        now = self._clock.now()
        with self._store.reading() as uow:
            last = uow.messages.list_for_thread(thread.id, now=now, last_n=1)
            valid = uow.summaries.latest(thread.id, valid_only=True)
        if not last:
            return SummaryText("")
        if self._summariser is None:
            return self._fallback(thread, now, fallback_message_count)
        if valid is not None and valid.covered_through_seq >= last[-1].seq:
            return _stored(valid)
        try:
            for _ in range(_ATTEMPTS):
                refreshed = self.refresh(thread, token_limit=token_limit)
                if refreshed is not None:
                    return refreshed
            # Lost every race: summarise transiently rather than fail the caller.
            return self._summarise_prefix(thread, None, token_limit=token_limit)
        except Exception as exc:  # noqa: BLE001 - the model failed: a transcript keeps summaries and cards available
            log_failure(log, exc, "summary rebuild failed for thread %s; using a transcript", thread.id)
            return self._fallback(thread, now, fallback_message_count)

    def refresh(self, thread: Thread, *, token_limit: int | None = None) -> SummaryText | None:
        """Fold uncovered messages into the newest valid revision and store it (CAS).

        Returns the new summary, the existing one when nothing is uncovered, None when a
        concurrent writer won (the caller may retry), or the new summary unsaved when the
        store stayed busy (see the module docstring)."""
        assert self._summariser is not None
        now = self._clock.now()
        with self._store.reading() as uow:
            newest = uow.summaries.latest(thread.id)
            valid = uow.summaries.latest(thread.id, valid_only=True)
            covered = valid.covered_through_seq if valid is not None else 0
            uncovered = uow.messages.list_for_thread(thread.id, now=now, start_seq=covered + 1)
        if not uncovered:
            return _stored(valid) if valid is not None else SummaryText("")
        base = SummaryText(valid.text, valid.topics) if valid is not None else None
        draft = self._summariser.summarise(
            base, shorten_for_prompt(uncovered, MAX_MESSAGE_TOKENS), token_limit=token_limit
        )
        draft = _quoted(draft, valid, uncovered)
        if not draft.text.strip():
            return None
        summary = ThreadSummary(
            id=str(uuid.uuid4()),
            thread_id=thread.id,
            revision=(newest.revision if newest is not None else 0) + 1,
            text=draft.text,
            topics=draft.topics,
            covered_through_seq=uncovered[-1].seq,
            created_at=self._clock.now(),
            user_id=thread.user_id,
            agent_id=thread.agent_id,
            metadata=quotes_metadata(draft.quotes),
        )
        try:
            with self._store.unit_of_work() as uow:
                uow.summaries.add(summary)
                uow.summaries.prune(thread.id, keep=MAX_RETAINED_REVISIONS)
                uow.commit()
        except ConflictError:
            return None
        except StoreBusyError:
            log.info("summary of thread %s not stored: the store is busy; it is served unsaved", thread.id)
        return draft

    def prefix(
        self, thread: Thread, last_seq: int, *, token_limit: int | None = None, fallback_message_count: int = 5
    ) -> SummaryText:
        """A transient summary of the messages with ``seq <= last_seq`` (durable rows untouched)."""
        if self._summariser is None:
            return self._fallback(thread, self._clock.now(), fallback_message_count, end_seq=last_seq + 1)
        try:
            return self._summarise_prefix(thread, last_seq, token_limit=token_limit)
        except Exception as exc:  # noqa: BLE001 - the model failed: fall back to a transcript of the prefix
            log_failure(log, exc, "prefix summary failed for thread %s; using a transcript", thread.id)
            return self._fallback(thread, self._clock.now(), fallback_message_count, end_seq=last_seq + 1)

    def _summarise_prefix(self, thread: Thread, last_seq: int | None, *, token_limit: int | None) -> SummaryText:
        assert self._summariser is not None
        now = self._clock.now()
        with self._store.reading() as uow:
            bases = [
                s
                for s in uow.summaries.list_for_thread(thread.id)
                if s.is_valid and (last_seq is None or s.covered_through_seq <= last_seq)
            ]
            base = bases[-1] if bases else None
            start = (base.covered_through_seq if base is not None else 0) + 1
            end = None if last_seq is None else last_seq + 1
            messages = uow.messages.list_for_thread(thread.id, now=now, start_seq=start, end_seq=end)
        base_text = SummaryText(base.text, base.topics) if base is not None else None
        if not messages:
            return _stored(base) if base is not None else SummaryText("")
        draft = self._summariser.summarise(
            base_text, shorten_for_prompt(messages, MAX_MESSAGE_TOKENS), token_limit=token_limit
        )
        return _quoted(draft, base, messages)

    def _fallback(
        self, thread: Thread, now: datetime, count: int, *, end_seq: int | None = None
    ) -> SummaryText:
        with self._store.reading() as uow:
            messages = uow.messages.list_for_thread(thread.id, now=now, end_seq=end_seq, last_n=max(count, 0))
        return _transcript_summary(messages)

    def invalidate_from(self, thread: Thread, seq: int) -> None:
        """A message at ``seq`` changed or went away: retire covering revisions and fence.

        The fence is written even when no stored revision covers ``seq``: a refresh that read
        the old text before this change may still be running, and the fence's revision number
        is what makes its compare-and-set fail."""
        with self._store.unit_of_work() as uow:
            uow.summaries.invalidate_covering(thread.id, seq)
            newest = uow.summaries.latest(thread.id)
            uow.summaries.add(
                ThreadSummary(
                    id=str(uuid.uuid4()),
                    thread_id=thread.id,
                    revision=(newest.revision if newest is not None else 0) + 1,
                    text="",
                    status=RecordStatus.INVALID,
                    created_at=self._clock.now(),
                    user_id=thread.user_id,
                    agent_id=thread.agent_id,
                )
            )
            uow.summaries.prune(thread.id, keep=MAX_RETAINED_REVISIONS)
            uow.commit()
