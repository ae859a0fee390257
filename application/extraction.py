"""Application layer: extraction of memories from a thread's messages (the use case).

``ExtractionService`` runs one extraction pass: it gathers the context (history, summary,
related memories), asks the ``Extractor``, and stores the pass's memories, with the links
proposed during extraction, in one unit of work; post-extraction linking follows.

``ExtractionService.plan`` decides, inside an append's own unit of work, which extraction job
the append makes due: an append records its ``ExtractionJob`` in the same transaction as the
messages, so no acknowledged message is ever left unextracted. The durable jobs' lifecycle
(claims with a renewed lease, retries with backoff, hand-back at close and exit, fork
handling, and the worker loop of ``palimpsest worker``) is :mod:`palimpsest.application.jobs`'s
(ARCHITECTURE.md D15, D28, D34); its public names are importable from here too.

A pass is idempotent: its memories get ids derived from the job's id and are written together,
so a retried job whose memories were already stored (the attempt failed later, while linking or
finishing) does not extract them again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from palimpsest.domain.errors import AgentMemoryError
from palimpsest.domain.model import (
    MEMORY_RECORD_TYPES,
    ExtractionJob,
    MemoryRecord,
    Message,
    Thread,
    ThreadSummary,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.search import ScopeFilter
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import resolve_expiry
from .budgets import shorten_for_prompt
from .config import (
    MemoryExtractionImageContext,
    MemoryLinkExtractionMode,
    MemoryRetentionConfig,
    ThreadSettings,
    extraction_counter,
)
from .embedding import EmbeddingHelper, Vector
from .images import with_image_captions
from .jobs import HEARTBEAT_SECONDS, JOB_LEASE, MAX_ATTEMPTS, ExtractionRunner
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
        records_jobs: bool | None = None,
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
        # Jobs are recorded with an extractor here, or for workers (whose models run them).
        self._records_jobs = extractor is not None if records_jobs is None else records_jobs

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
        if not config.extract_memories or not self._records_jobs or not stored:
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
        with the message when that text is one message's index text; not at all when the
        extractor never reads them (``reads_past_memories=False``) and they are no link
        candidates."""
        assert self._extractor is not None
        config = settings.extraction
        history, summary = inputs.history, inputs.summary
        query = "\n".join(m.content for m in targets).strip()
        past: list[Any] = []
        linking = config.memory_link_extraction_mode is MemoryLinkExtractionMode.DURING_EXTRACTION
        # An extractor that never reads the past memories needs them only as link candidates.
        reads_past = linking or getattr(self._extractor, "reads_past_memories", True) is not False
        if query and reads_past:
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
        during = linking and bool(past)
        limit = settings.max_message_token_length
        custom = config.memory_extraction_custom_instructions
        token_limit = config.memory_extraction_token_limit
        if config.memory_extraction_image_context is not MemoryExtractionImageContext.DISABLED:
            with self._store.reading() as uow:  # images reach the model as their descriptions
                targets_text, history = with_image_captions(uow, targets), with_image_captions(uow, history)
        else:
            targets_text = targets
        request = ExtractionRequest(
            target_messages=shorten_for_prompt(targets_text, limit),
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
        if config.memory_link_extraction_mode is not MemoryLinkExtractionMode.DISABLED:
            links.extend(_corrections(records, memory_ids(pass_id, 0, len(extracted))))
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
        """The pass's memories as records; one the model got wrong is skipped with a warning.

        Each memory is drawn from its sources, the target messages the extractor attributes it
        to (all of them when it names none): it inherits the metadata they agree on (as the
        thread's settings say; :func:`inherited_metadata`) and expires with the first of them
        to expire (else as the store's retention policy says)."""
        by_id = {m.id: m for m in targets}
        out: list[tuple[MemoryRecord, ExtractedMemory]] = []
        ids = memory_ids(pass_id, 0, len(extracted))
        for record_id, memory in zip(ids, extracted):
            sources = [by_id[i] for i in dict.fromkeys(memory.source_message_ids) if i in by_id] or targets
            inherited = inherited_metadata(settings, sources)
            expiries = [m.expires_at for m in sources if m.expires_at is not None]
            managed: dict[str, Any] = {
                "scope": memory.scope,
                "importance": memory.importance,
                "entities": list(memory.entities),
                "source_message_ids": [m.id for m in sources],
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


def _corrections(
    records: Sequence[tuple[MemoryRecord, ExtractedMemory]], ids: Sequence[str]
) -> list[tuple[str, str, str]]:
    """The ``supersedes`` links from each memory of a pass to the earlier memories of the same
    pass it corrects (``ExtractedMemory.replaces``: their places in the extractor's answer, whose
    ids are ``ids``); a place that is not earlier, or whose memory was skipped, is ignored."""
    stored = {record.id for record, _ in records}
    place = {record_id: i for i, record_id in enumerate(ids)}
    return [
        (record.id, ids[j], "supersedes")
        for record, memory in records
        for j in dict.fromkeys(memory.replaces)
        if 0 <= j < place[record.id] and ids[j] in stored
    ]


def inherited_metadata(settings: ThreadSettings, sources: Sequence[Message]) -> dict[str, Any]:
    """The message metadata an extracted memory inherits from its source messages, as the
    thread's settings say (all of it, none, or some keys; the library's own ``$`` keys never):
    the keys every source carries with the same value. A key whose value differs across the
    sources, or that one of them lacks, is left out (ARCHITECTURE.md D48): a memory never
    claims what one of its sources does not say (a fact said in an email and confirmed in a
    chat is tagged as neither), and a fact drawn from two speakers' turns names no speaker."""
    rule = settings.extraction.memory_extraction_inherit_message_metadata
    if rule is False or isinstance(rule, NotSetType) or not sources:
        return {}
    inherited: list[dict[str, Any]] = [
        {
            key: value
            for key, value in (message.metadata or {}).items()
            if not key.startswith("$") and (rule is True or key in rule)
        }
        for message in sources
    ]
    first, others = inherited[0], inherited[1:]
    return {key: value for key, value in first.items() if all(key in o and o[key] == value for o in others)}
