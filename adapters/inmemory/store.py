"""Adapters layer: the in-memory store, a complete fake of every storage port.

It is a real adapter, shipped for tests and prototypes, and verified by the same contract
suite as the embedded and Oracle stores. A unit of work edits shallow copies of the committed
dictionaries (entities are immutable) under the store lock and swaps them in on commit, so a
rollback is simply dropping the copies, and a search or a read-only unit of work always reads
one committed snapshot without waiting for the lock.
"""

from __future__ import annotations

import builtins
import math
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

from palimpsest.domain.checkpoints import (
    ChannelBlob,
    CheckpointWrite,
    StoredCheckpoint,
    check_checkpoint_filter,
    checkpoint_metadata_matches,
)
from palimpsest.domain.errors import (
    ConflictError,
    DuplicateIdError,
    LinkExistsError,
    LinkNotFoundError,
    MessageNotFoundError,
    ReadOnlyError,
    RecordNotFoundError,
    SelfLinkError,
    StorageError,
    StoreClosedError,
    ThreadNotFoundError,
    ValidationError,
    VectorDimensionError,
)
from palimpsest.domain.images import StoredImage
from palimpsest.domain.metadata_filter import matches, validate_filter
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
    ThreadSummary,
    check_failure_reason,
    check_metadata,
    check_time,
    keyword_text,
)
from palimpsest.domain.ports import (
    CheckpointRepository,
    CheckpointStorage,
    ImageRepository,
    JobRepository,
    LinkRepository,
    MemoryStore,
    MessageRepository,
    RecordRepository,
    SchemaState,
    SearchSession,
    SettingsRepository,
    SummaryRepository,
    ThreadRepository,
    UnitOfWork,
    restrict_to_reads,
)
from palimpsest.domain.search import (
    NO_KEYWORD_CANDIDATES,
    CandidateKey,
    KeywordCandidates,
    SearchQuery,
    check_vector,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType
from palimpsest.domain.text import BM25_B, BM25_K1, bm25_idf, keyword_terms, word_tokens

__all__ = ["InMemoryStore"]

T = TypeVar("T")
Key = tuple[str, str]  # ("message" | "record", id)

def _unit(vector: Sequence[float], dimension: int | None) -> tuple[float, ...]:
    values = check_vector(vector, dimension)
    norm = math.sqrt(sum(x * x for x in values))
    return tuple(x / norm for x in values)


def _scope_ok(value: str | None, wanted: str | None | NotSetType) -> bool:
    return wanted is NOTSET or value == wanted


def _first(items: list[T], limit: int | None) -> list[T]:
    if limit is None:
        return items
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError("limit must be a positive integer or None.")
    return items[:limit]


def _newest(items: list[T], limit: int | None) -> list[T]:
    if limit is None:
        return items
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError("limit must be a positive integer or None.")
    return items[-limit:]


def _list_filter(flt: Mapping[str, Any] | None | NotSetType) -> Mapping[str, Any] | None | NotSetType:
    """In list APIs ``None`` means "rows without metadata", so it must not be normalised away."""
    if flt is NOTSET or flt is None:
        return flt
    return validate_filter(flt)


def _metadata_ok(metadata: Mapping[str, Any] | None, flt: Mapping[str, Any] | None | NotSetType) -> bool:
    if flt is NOTSET:
        return True
    if flt is None:
        return metadata is None
    return matches(metadata, flt)


@dataclass
class _State:
    threads: dict[str, Thread] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    links: dict[str, RecordLink] = field(default_factory=dict)
    vectors: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    dimension: int | None = None
    summaries: dict[str, ThreadSummary] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    jobs: dict[str, ExtractionJob] = field(default_factory=dict)
    images: dict[str, StoredImage] = field(default_factory=dict)
    checkpoints: dict[tuple[str, str, str], StoredCheckpoint] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str, str], ChannelBlob] = field(default_factory=dict)
    writes: dict[tuple[str, str, str, str, int], CheckpointWrite] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(
            dict(self.threads),
            dict(self.messages),
            dict(self.records),
            dict(self.links),
            dict(self.vectors),
            self.dimension,
            dict(self.summaries),
            dict(self.settings),
            dict(self.jobs),
            dict(self.images),
            dict(self.checkpoints),
            dict(self.blobs),
            dict(self.writes),
        )


class _Repository:
    def __init__(self, uow: InMemoryUnitOfWork) -> None:
        self._uow = uow

    @property
    def _s(self) -> _State:
        return self._uow._state()

    def _vector(self, key: Key, embedding: Sequence[float] | None) -> None:
        state = self._s
        if embedding is None:
            state.vectors.pop(key, None)
            return
        unit = _unit(embedding, state.dimension)
        state.dimension = len(unit)
        state.vectors[key] = unit


class InMemoryThreadRepository(_Repository, ThreadRepository):
    def add(self, thread: Thread) -> None:
        if thread.id in self._s.threads:
            raise DuplicateIdError(f"A thread with id {thread.id!r} already exists.")
        self._s.threads[thread.id] = thread

    def get(self, thread_id: str) -> Thread | None:
        return self._s.threads.get(thread_id)

    def update(self, thread: Thread) -> None:
        if thread.id not in self._s.threads:
            raise ThreadNotFoundError(f"No thread with id {thread.id!r}.")
        self._s.threads[thread.id] = thread

    def delete(self, thread_id: str) -> bool:
        s = self._s
        if s.threads.pop(thread_id, None) is None:
            return False
        for message in [m for m in s.messages.values() if m.thread_id == thread_id]:
            del s.messages[message.id]
            s.vectors.pop(("message", message.id), None)
        owned = {r.id for r in s.records.values() if r.thread_id == thread_id}
        for record_id in owned:
            del s.records[record_id]
            s.vectors.pop(("record", record_id), None)
            s.images.pop(record_id, None)
        for link in [l for l in s.links.values() if l.source_id in owned or l.target_id in owned]:
            del s.links[link.id]
        for summary in [x for x in s.summaries.values() if x.thread_id == thread_id]:
            del s.summaries[summary.id]
        for job in [j for j in s.jobs.values() if j.thread_id == thread_id]:
            del s.jobs[job.id]
        return True

    def list(
        self,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[Thread]:
        flt = _list_filter(metadata_filter)
        found = [
            t
            for t in self._s.threads.values()
            if _scope_ok(t.user_id, user_id) and _scope_ok(t.agent_id, agent_id) and _metadata_ok(t.metadata, flt)
        ]
        found.sort(key=lambda t: (t.created_at, t.id))
        return _newest(found, limit)


class InMemoryMessageRepository(_Repository, MessageRepository):
    def add(self, message: Message, *, embedding: Sequence[float] | None = None) -> None:
        s = self._s
        if message.thread_id not in s.threads:
            raise ThreadNotFoundError(f"No thread with id {message.thread_id!r}.")
        if message.id in s.messages:
            raise DuplicateIdError(f"A message with id {message.id!r} already exists.")
        if any(m.thread_id == message.thread_id and m.seq == message.seq for m in s.messages.values()):
            raise DuplicateIdError(f"Thread {message.thread_id!r} already has a message with seq {message.seq}.")
        self._vector(("message", message.id), embedding)
        s.messages[message.id] = message

    def add_many(
        self, messages: Sequence[Message], embeddings: Sequence[Sequence[float] | None] | None = None
    ) -> None:
        vectors = list(embeddings) if embeddings is not None else [None] * len(messages)
        if len(vectors) != len(messages):
            raise ValidationError("add_many needs one embedding (or None) per message.")
        before = self._s.copy()
        try:
            for message, vector in zip(messages, vectors):
                self.add(message, embedding=vector)
        except BaseException:
            self._uow._work = before  # all or nothing, as the port promises
            raise

    def get(self, message_id: str, *, now: datetime) -> Message | None:
        message = self._s.messages.get(message_id)
        return None if message is None or message.is_expired(now) else message

    def last_seq(self, thread_id: str) -> int:
        return max((m.seq for m in self._s.messages.values() if m.thread_id == thread_id), default=0)

    def vectors(self, thread_id: str, message_ids: Sequence[str]) -> dict[str, Sequence[float]]:
        s = self._s
        return {
            i: s.vectors[("message", i)]
            for i in message_ids
            if ("message", i) in s.vectors and s.messages[i].thread_id == thread_id
        }

    def list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> list[Message]:
        found = sorted(
            (
                m
                for m in self._s.messages.values()
                if m.thread_id == thread_id
                and not m.is_expired(now)
                and (start_seq is None or m.seq >= start_seq)
                and (end_seq is None or m.seq < end_seq)
            ),
            key=lambda m: m.seq,
        )
        if last_n is not None:
            if last_n < 0:
                raise ValidationError("last_n must be non-negative.")
            found = found[max(0, len(found) - last_n) :] if last_n else []
        return found

    def list(
        self,
        *,
        now: datetime,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> builtins.list[Message]:
        flt = _list_filter(metadata_filter)
        found = [
            m
            for m in self._s.messages.values()
            if not m.is_expired(now)
            and _scope_ok(m.user_id, user_id)
            and _scope_ok(m.agent_id, agent_id)
            and _scope_ok(m.thread_id, thread_id)
            and _metadata_ok(m.metadata, flt)
        ]
        found.sort(key=lambda m: (m.created_at, m.thread_id, m.seq))
        return _newest(found, limit)

    def update(self, message: Message, *, embedding: Sequence[float] | None | NotSetType = NOTSET) -> None:
        s = self._s
        old = s.messages.get(message.id)
        if old is None:
            raise MessageNotFoundError(f"No message with id {message.id!r}.")
        if (old.thread_id, old.seq) != (message.thread_id, message.seq):
            raise ValidationError("a message's thread and seq cannot change.")
        if not isinstance(embedding, NotSetType):
            self._vector(("message", message.id), embedding)
        s.messages[message.id] = message

    def delete(self, message_id: str) -> bool:
        s = self._s
        if s.messages.pop(message_id, None) is None:
            return False
        s.vectors.pop(("message", message_id), None)
        return True

    def purge_expired(self, now: datetime) -> builtins.list[tuple[str, int]]:
        expired = [m for m in self._s.messages.values() if m.is_expired(now)]
        for message in expired:
            self.delete(message.id)
        return sorted((m.thread_id, m.seq) for m in expired)

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[Message]:
        s = self._s
        found = sorted(
            (m for m in s.messages.values() if ("message", m.id) not in s.vectors and not m.is_expired(now)),
            key=lambda m: (m.created_at, m.thread_id, m.seq),
        )
        return found if limit is None else found[: max(0, limit)]


class InMemoryRecordRepository(_Repository, RecordRepository):
    def add(self, record: MemoryRecord, *, embedding: Sequence[float] | None = None) -> None:
        s = self._s
        if record.id in s.records:
            raise DuplicateIdError(f"A memory record with id {record.id!r} already exists.")
        if record.thread_id is not None and record.thread_id not in s.threads:
            raise ThreadNotFoundError(f"No thread with id {record.thread_id!r}.")
        self._vector(("record", record.id), embedding)
        s.records[record.id] = record

    def get(self, record_id: str, *, now: datetime | None = None) -> MemoryRecord | None:
        record = self._s.records.get(record_id)
        if record is None or (now is not None and record.is_expired(now)):
            return None
        return record

    def get_many(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        records = self._s.records
        return {i: records[i] for i in record_ids if i in records}

    def update(self, record: MemoryRecord, *, embedding: Sequence[float] | None | NotSetType = NOTSET) -> None:
        s = self._s
        old = s.records.get(record.id)
        if old is None:
            raise RecordNotFoundError(f"No memory record with id {record.id!r}.")
        if old.scope != record.scope or old.record_type is not record.record_type:
            raise ValidationError("a memory record's scope and record type cannot change.")
        if not isinstance(embedding, NotSetType):
            self._vector(("record", record.id), embedding)
        s.records[record.id] = record

    def delete(self, record_id: str) -> bool:
        s = self._s
        if s.records.pop(record_id, None) is None:
            return False
        s.vectors.pop(("record", record_id), None)
        s.images.pop(record_id, None)
        for link in [l for l in s.links.values() if record_id in (l.source_id, l.target_id)]:
            del s.links[link.id]
        return True

    def expired_ids(self, now: datetime, *, limit: int | None = None) -> list[str]:
        expired = sorted(
            (r for r in self._s.records.values() if r.is_expired(now)),
            key=lambda r: (r.expires_at, r.id),
        )
        ids = [r.id for r in expired]
        return ids if limit is None else ids[:limit]

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[MemoryRecord]:
        s = self._s
        found = sorted(
            (r for r in s.records.values() if ("record", r.id) not in s.vectors and not r.is_expired(now)),
            key=lambda r: (r.created_at, r.id),
        )
        return found if limit is None else found[: max(0, limit)]

    def list(
        self,
        *,
        now: datetime,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        record_types: frozenset[RecordType] | None = None,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        flt = _list_filter(metadata_filter)
        found = [
            r
            for r in self._s.records.values()
            if not r.is_expired(now)
            and _scope_ok(r.user_id, user_id)
            and _scope_ok(r.agent_id, agent_id)
            and _scope_ok(r.thread_id, thread_id)
            and (record_types is None or r.record_type in record_types)
            and _metadata_ok(r.metadata, flt)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return _newest(found, limit)


def _link_order(link: RecordLink) -> tuple[datetime, str]:
    return (link.created_at, link.id)


class InMemoryLinkRepository(_Repository, LinkRepository):
    def _check_unique(self, link: RecordLink) -> None:
        for other in self._s.links.values():
            if (
                other.id != link.id
                and other.source_id == link.source_id
                and other.target_id == link.target_id
                and other.relation_type == link.relation_type
            ):
                raise LinkExistsError(
                    f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} already exists."
                )

    def add(self, link: RecordLink) -> None:
        s = self._s
        if link.source_id == link.target_id:
            raise SelfLinkError("A memory cannot be linked to itself.")
        for end in (link.source_id, link.target_id):
            if end not in s.records:
                raise RecordNotFoundError(f"Link endpoint {end!r} does not exist.")
        if link.id in s.links:
            raise DuplicateIdError(f"A link with id {link.id!r} already exists.")
        self._check_unique(link)
        s.links[link.id] = link

    def get(self, link_id: str) -> RecordLink | None:
        return self._s.links.get(link_id)

    def find(self, source_id: str, target_id: str, relation_type: str) -> RecordLink | None:
        for link in self._s.links.values():
            if (link.source_id, link.target_id, link.relation_type) == (source_id, target_id, relation_type):
                return link
        return None

    def between(self, a: str, b: str) -> list[RecordLink]:
        pair = {a, b}
        return sorted((l for l in self._s.links.values() if {l.source_id, l.target_id} == pair), key=_link_order)

    def touching(self, record_id: str) -> list[RecordLink]:
        return sorted(
            (l for l in self._s.links.values() if record_id in (l.source_id, l.target_id)), key=_link_order
        )

    def update(self, link: RecordLink) -> None:
        old = self._s.links.get(link.id)
        if old is None:
            raise LinkNotFoundError(f"No link with id {link.id!r}.")
        if (old.source_id, old.target_id) != (link.source_id, link.target_id):
            raise ValidationError("a link's endpoints cannot change; delete it and link again.")
        self._check_unique(link)
        self._s.links[link.id] = link

    def delete(self, link_id: str) -> bool:
        return self._s.links.pop(link_id, None) is not None

    def list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[RecordLink]:
        found = sorted(
            (
                l
                for l in self._s.links.values()
                if _scope_ok(l.source_id, source_id)
                and _scope_ok(l.target_id, target_id)
                and _scope_ok(l.relation_type, relation_type)
            ),
            key=_link_order,
        )
        return _first(found, limit)


class InMemorySummaryRepository(_Repository, SummaryRepository):
    def add(self, summary: ThreadSummary) -> None:
        s = self._s
        if summary.thread_id not in s.threads:
            raise ThreadNotFoundError(f"No thread with id {summary.thread_id!r}.")
        if summary.id in s.summaries:
            raise DuplicateIdError(f"A summary with id {summary.id!r} already exists.")
        if any(x.thread_id == summary.thread_id and x.revision == summary.revision for x in s.summaries.values()):
            raise ConflictError(
                f"Thread {summary.thread_id!r} already has summary revision {summary.revision}; "
                "it was refreshed or invalidated concurrently."
            )
        s.summaries[summary.id] = summary

    def _of(self, thread_id: str) -> list[ThreadSummary]:
        return sorted((x for x in self._s.summaries.values() if x.thread_id == thread_id), key=lambda x: x.revision)

    def latest(self, thread_id: str, *, valid_only: bool = False) -> ThreadSummary | None:
        found = [x for x in self._of(thread_id) if x.is_valid or not valid_only]
        return found[-1] if found else None

    def list_for_thread(self, thread_id: str) -> list[ThreadSummary]:
        return self._of(thread_id)

    def invalidate_covering(self, thread_id: str, seq: int) -> int:
        hit = [x for x in self._of(thread_id) if x.is_valid and x.covered_through_seq >= seq]
        for summary in hit:
            self._s.summaries[summary.id] = replace(summary, status=RecordStatus.INVALID)
        return len(hit)

    def prune(self, thread_id: str, *, keep: int) -> int:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValidationError("keep must be a non-negative integer.")
        revisions = self._of(thread_id)
        doomed = revisions[: max(0, len(revisions) - keep)]
        for summary in doomed:
            del self._s.summaries[summary.id]
        return len(doomed)


class InMemoryJobRepository(_Repository, JobRepository):
    def add(self, job: ExtractionJob) -> None:
        s = self._s
        if job.thread_id not in s.threads:
            raise ThreadNotFoundError(f"No thread with id {job.thread_id!r}.")
        if job.id in s.jobs:
            raise DuplicateIdError(f"A job with id {job.id!r} already exists.")
        s.jobs[job.id] = job

    def pending(self, now: datetime, *, limit: int | None = None) -> list[ExtractionJob]:
        free = sorted(
            (
                j
                for j in self._s.jobs.values()
                if not j.failed and (j.claimed_until is None or j.claimed_until <= now)
            ),
            key=lambda j: (j.created_at, j.id),
        )
        return _first(free, limit)

    def list(self, *, thread_id: str | None = None, limit: int | None = None) -> list[ExtractionJob]:
        return self._listing(failed=False, thread_id=thread_id, limit=limit)

    # builtins.list: in this class body, `list` names the list() method.
    def _listing(self, *, failed: bool, thread_id: str | None, limit: int | None) -> builtins.list[ExtractionJob]:
        """The jobs not failed (by creation) or the failed ones (by failure time), then by id."""
        found = sorted(
            (j for j in self._s.jobs.values() if j.failed is failed and (thread_id is None or j.thread_id == thread_id)),
            key=lambda j: (j.failed_at if failed else j.created_at, j.id),
        )
        return _first(found, limit)

    def claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> ExtractionJob | None:
        check_time(until, "until")
        check_time(now, "now")
        job = self._s.jobs.get(job_id)
        if job is None or job.failed:
            return None
        if job.claimed_until is not None and job.claimed_until > now and job.claimed_by != owner:
            return None
        claimed = replace(job, claimed_by=owner, claimed_until=until, attempts=job.attempts + 1)
        self._s.jobs[job_id] = claimed
        return claimed

    def postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool = False
    ) -> bool:
        check_failure_reason(reason)
        check_time(until, "until")
        job = self._s.jobs.get(job_id)
        if job is None or job.failed or job.claimed_by != owner:
            return False
        attempts = max(0, job.attempts - 1) if refund_attempt else job.attempts
        self._s.jobs[job_id] = replace(job, claimed_until=until, failure_reason=reason, attempts=attempts)
        return True

    def renew(self, job_id: str, *, owner: str, until: datetime) -> bool:
        check_time(until, "until")
        job = self._s.jobs.get(job_id)
        if job is None or job.failed or job.claimed_by != owner:
            return False
        self._s.jobs[job_id] = replace(job, claimed_until=until)
        return True

    def release(self, job_id: str, *, owner: str, until: datetime | None = None) -> bool:
        if until is not None:
            check_time(until, "until")
        job = self._s.jobs.get(job_id)
        if job is None or job.failed or job.claimed_by != owner:
            return False
        self._s.jobs[job_id] = replace(job, claimed_by=None, claimed_until=until)
        return True

    def fail(self, job_id: str, *, reason: str, at: datetime) -> bool:
        check_failure_reason(reason)
        check_time(at, "at")
        job = self._s.jobs.get(job_id)
        if job is None:
            return False
        self._s.jobs[job_id] = replace(
            job, claimed_by=None, claimed_until=None, failed_at=at, failure_reason=reason
        )
        return True

    # builtins.list: in this class body, `list` names the list() method.
    def failed(self, *, thread_id: str | None = None, limit: int | None = None) -> builtins.list[ExtractionJob]:
        return self._listing(failed=True, thread_id=thread_id, limit=limit)

    def retry(self, job_id: str) -> ExtractionJob | None:
        job = self._s.jobs.get(job_id)
        if job is None or not job.failed:
            return None
        again = replace(job, attempts=0, claimed_by=None, claimed_until=None, failed_at=None, failure_reason=None)
        self._s.jobs[job_id] = again
        return again

    def delete(self, job_id: str) -> bool:
        return self._s.jobs.pop(job_id, None) is not None


class InMemoryImageRepository(_Repository, ImageRepository):
    def add(self, image: StoredImage) -> None:
        if image.data is None:
            raise ValidationError("image must be raw bytes.")
        s = self._s
        record = s.records.get(image.record_id)
        if record is None or record.record_type is not RecordType.IMAGE:
            raise RecordNotFoundError(f"No image record with id {image.record_id!r}.")
        if image.record_id in s.images:
            raise DuplicateIdError(f"The image {image.record_id!r} already has its bytes.")
        s.images[image.record_id] = image

    def replace(self, image: StoredImage) -> None:
        if image.data is None:
            raise ValidationError("image must be raw bytes.")
        s = self._s
        current = s.images.get(image.record_id)
        if current is None:
            raise RecordNotFoundError(f"No image with id {image.record_id!r}.")
        s.images[image.record_id] = replace(current, mime_type=image.mime_type, data=image.data)

    def get_many(self, record_ids: Sequence[str], *, include_bytes: bool = False) -> dict[str, StoredImage]:
        if isinstance(record_ids, str):
            raise ValidationError("record_ids must be a sequence of ids, not a string.")
        images = self._s.images
        return {
            rid: images[rid] if include_bytes else replace(images[rid], data=None)
            for rid in dict.fromkeys(record_ids)
            if rid in images
        }

    def of_messages(self, message_ids: Sequence[str]) -> dict[str, builtins.list[StoredImage]]:
        if isinstance(message_ids, str):
            raise ValidationError("message_ids must be a sequence of ids, not a string.")
        wanted = set(message_ids)
        found: dict[str, list[StoredImage]] = {}
        for image in self._s.images.values():
            if image.message_id in wanted:
                found.setdefault(image.message_id, []).append(replace(image, data=None))
        ordered = [m for m in dict.fromkeys(message_ids) if m in found]
        return {m: sorted(found[m], key=lambda i: i.position or 0) for m in ordered}


class InMemorySettingsRepository(_Repository, SettingsRepository):
    def get(self, key: str) -> Any:
        return self._s.settings.get(key)

    def set(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise ValidationError("a setting key must be a non-empty string.")
        if value is None:
            self._s.settings.pop(key, None)
        else:
            self._s.settings[key] = check_metadata({"value": value})["value"]  # type: ignore[index]


def _strings(values: Sequence[str], name: str) -> builtins.list[str]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise ValidationError(f"{name} must be a sequence of strings, not a string.")
    return list(values)


class InMemoryCheckpointRepository(_Repository, CheckpointRepository):
    """Checkpoints in the unit of work's state (see :class:`CheckpointRepository`)."""

    def _writing(self) -> _State:
        if self._uow._read_only:
            raise ReadOnlyError("checkpoints: this unit of work is read-only (store.reading()).")
        return self._s

    def put(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        s = self._writing()
        key = (checkpoint.thread_id, checkpoint.checkpoint_ns, checkpoint.checkpoint_id)
        s.checkpoints[key] = checkpoint
        for blob in blobs:
            s.blobs.setdefault((*key[:2], blob.channel, blob.version), blob)

    def put_writes(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[CheckpointWrite],
    ) -> None:
        s = self._writing()
        for write in writes:
            key = (thread_id, checkpoint_ns, checkpoint_id, write.task_id, write.idx)
            if write.idx < 0 or key not in s.writes:
                s.writes[key] = write

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None = None) -> StoredCheckpoint | None:
        if checkpoint_id is not None:
            return self._s.checkpoints.get((thread_id, checkpoint_ns, checkpoint_id))
        found = self.list(thread_id=thread_id, checkpoint_ns=checkpoint_ns, limit=1)
        return found[0] if found else None

    def list(
        self,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> builtins.list[StoredCheckpoint]:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValidationError("limit must be a non-negative integer or None.")
        flt = check_checkpoint_filter(metadata)
        rows = [
            cp
            for (tid, ns, cid), cp in self._s.checkpoints.items()
            if (thread_id is None or tid == thread_id)
            and (checkpoint_ns is None or ns == checkpoint_ns)
            and (checkpoint_id is None or cid == checkpoint_id)
            and (before is None or cid < before)
            and checkpoint_metadata_matches(cp.metadata, flt)
        ]
        rows.sort(key=lambda cp: (cp.checkpoint_id, cp.thread_id, cp.checkpoint_ns), reverse=True)
        return rows if limit is None else rows[:limit]

    def blobs(self, thread_id: str, checkpoint_ns: str, versions: Mapping[str, str]) -> dict[str, ChannelBlob]:
        stored = self._s.blobs
        return {
            channel: stored[(thread_id, checkpoint_ns, channel, version)]
            for channel, version in versions.items()
            if (thread_id, checkpoint_ns, channel, version) in stored
        }

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> builtins.list[CheckpointWrite]:
        found = [
            w for (tid, ns, cid, _task, _idx), w in self._s.writes.items()
            if (tid, ns, cid) == (thread_id, checkpoint_ns, checkpoint_id)
        ]
        return sorted(found, key=lambda w: (w.task_path, w.task_id, w.idx))

    def delete_threads(self, thread_ids: Sequence[str]) -> int:
        s = self._writing()
        gone = set(_strings(thread_ids, "thread_ids"))
        count = sum(1 for key in s.checkpoints if key[0] in gone)
        s.checkpoints = {k: v for k, v in s.checkpoints.items() if k[0] not in gone}
        s.blobs = {k: v for k, v in s.blobs.items() if k[0] not in gone}
        s.writes = {k: v for k, v in s.writes.items() if k[0] not in gone}
        return count

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        s = self._writing()
        runs = set(_strings(run_ids, "run_ids"))
        doomed = {k for k, cp in s.checkpoints.items() if cp.run_id is not None and cp.run_id in runs}
        return self._drop(s, doomed)

    def delete_checkpoints(self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> int:
        s = self._writing()
        wanted = {(thread_id, checkpoint_ns, cid) for cid in _strings(checkpoint_ids, "checkpoint_ids")}
        return self._drop(s, wanted & s.checkpoints.keys())

    @staticmethod
    def _drop(s: _State, keys: set[tuple[str, str, str]]) -> int:
        for key in keys:
            del s.checkpoints[key]
        s.writes = {k: v for k, v in s.writes.items() if k[:3] not in keys}
        return len(keys)

    def delete_blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> int:
        s = self._writing()
        count = 0
        for channel, version in versions:
            if s.blobs.pop((thread_id, checkpoint_ns, channel, version), None) is not None:
                count += 1
        return count

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> int:
        s = self._writing()
        count = 0
        for (tid, ns, cid), cp in list(s.checkpoints.items()):
            if tid == source_thread_id and (target_thread_id, ns, cid) not in s.checkpoints:
                s.checkpoints[(target_thread_id, ns, cid)] = replace(cp, thread_id=target_thread_id)
                count += 1
        for (tid, ns, ch, ver), blob in list(s.blobs.items()):
            if tid == source_thread_id:
                s.blobs.setdefault((target_thread_id, ns, ch, ver), blob)
        for (tid, ns, cid, task, idx), write in list(s.writes.items()):
            if tid == source_thread_id:
                s.writes.setdefault((target_thread_id, ns, cid, task, idx), write)
        return count


class InMemoryUnitOfWork(UnitOfWork):
    """A transaction over copies of the committed state; see the module docstring.

    A read-only one (``read_only=True``) reads the committed state itself, without the store
    lock: committed state is never changed in place, so it is a snapshot that no writer waits
    for or disturbs.
    """

    def __init__(self, store: InMemoryStore, *, read_only: bool = False) -> None:
        self._store = store
        self._read_only = read_only
        self._locked = False
        self._work: _State | None = None
        self._done = False
        self.threads = InMemoryThreadRepository(self)
        self.messages = InMemoryMessageRepository(self)
        self.records = InMemoryRecordRepository(self)
        self.links = InMemoryLinkRepository(self)
        self.summaries = InMemorySummaryRepository(self)
        self.settings = InMemorySettingsRepository(self)
        self.jobs = InMemoryJobRepository(self)
        self.images = InMemoryImageRepository(self)
        if read_only:
            restrict_to_reads(self)

    def _state(self) -> _State:
        if self._work is None or self._done:
            raise StorageError("This unit of work is not active (use it inside `with`, before commit/rollback).")
        return self._work

    def __enter__(self) -> Self:
        if self._work is not None or self._done:
            raise StorageError("A unit of work can be entered only once.")
        self._store._check_open()
        if self._read_only:
            self._work = self._store._committed
            return self
        self._store._lock.acquire()
        self._locked = True
        self._work = self._store._committed.copy()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if not self._done:
                self.rollback()
        finally:
            if self._locked:
                self._locked = False
                self._store._lock.release()

    def commit(self) -> None:
        state = self._state()
        if not self._read_only:
            self._store._committed = state
        self._done = True

    def rollback(self) -> None:
        self._work = None
        self._done = True


class InMemoryStore(MemoryStore, CheckpointStorage):
    """Every storage port in process memory. ``dimension`` may be fixed up front or by the first vector."""

    def __init__(self, dimension: int | None = None) -> None:
        if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
            raise ValidationError("dimension must be a positive integer or None.")
        self._committed = _State(dimension=dimension)
        self._lock = threading.RLock()
        self._closed = False

    @property
    def dimension(self) -> int | None:
        return self._committed.dimension

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("This store has been closed.")

    def unit_of_work(self) -> InMemoryUnitOfWork:
        self._check_open()
        return InMemoryUnitOfWork(self)

    def reading(self) -> InMemoryUnitOfWork:
        self._check_open()
        return InMemoryUnitOfWork(self, read_only=True)

    def clear_vectors(self) -> None:
        self._check_open()
        with self._lock:
            state = self._committed.copy()
            state.vectors = {}
            state.dimension = None
            self._committed = state

    def checkpoints(self, uow: UnitOfWork) -> InMemoryCheckpointRepository:
        """See :class:`~palimpsest.domain.ports.CheckpointStorage`."""
        if not isinstance(uow, InMemoryUnitOfWork) or uow._store is not self:
            raise StorageError("checkpoints(uow) takes a unit of work of this store.")
        return InMemoryCheckpointRepository(uow)

    def schema_state(self) -> SchemaState:
        """See :class:`~palimpsest.domain.ports.StoreDiagnostics`: process memory keeps no schema."""
        return SchemaState(version=None, latest=None)

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- search ---------------------------------------------------------------------------

    @contextmanager
    def searching(self) -> Iterator[_Search]:
        """A :class:`~palimpsest.domain.ports.SearchSession` over one committed snapshot."""
        self._check_open()
        yield _Search(self._committed)


class _Search(SearchSession):
    """The search primitives over one committed state (never mutated in place)."""

    def __init__(self, state: _State) -> None:
        self._state = state

    def _admitted(self, query: SearchQuery) -> dict[CandidateKey, MemoryRecord | Message]:
        """Every direct candidate the query admits, ``record_ids`` aside (the collection)."""
        state = self._state
        collection = query if query.record_ids is None else replace(query, record_ids=None)
        found: dict[CandidateKey, MemoryRecord | Message] = {}
        for message in state.messages.values():
            if collection.admits_record(message, direct=True):
                found[(True, message.id)] = message
        for record in state.records.values():
            if collection.admits_record(record, direct=True):
                found[(False, record.id)] = record
        return found

    @staticmethod
    def _named(query: SearchQuery, key: CandidateKey) -> bool:
        return query.record_ids is None or (not key[0] and key[1] in query.record_ids)

    @staticmethod
    def _ranked(
        scores: list[tuple[CandidateKey, float]], candidates: Mapping[CandidateKey, MemoryRecord | Message]
    ) -> list[tuple[CandidateKey, float]]:
        scores.sort(key=lambda kv: (-kv[1], candidates[kv[0]].record_type.value, kv[0][1]))
        return scores

    def dense_candidates(self, query: SearchQuery, depth: int) -> list[tuple[CandidateKey, float]]:
        state = self._state
        if query.vector is None:
            return []
        if state.dimension is not None and len(query.vector) != state.dimension:
            raise VectorDimensionError(
                f"query vector has {len(query.vector)} dimensions but this store holds "
                f"{state.dimension}-dimensional vectors."
            )
        q = _unit(query.vector, None)
        candidates = self._admitted(query)
        scores: list[tuple[CandidateKey, float]] = []
        for key in candidates:
            if not self._named(query, key):
                continue
            v = state.vectors.get(("message" if key[0] else "record", key[1]))
            if v is not None:
                scores.append((key, sum(a * b for a, b in zip(q, v))))
        return self._ranked(scores, candidates)[:depth]

    def keyword_candidates(self, query: SearchQuery, depth: int) -> KeywordCandidates:
        if query.text is None:
            return NO_KEYWORD_CANDIDATES
        state = self._state
        collection: dict[CandidateKey, str] = {(True, m.id): text for m, text in _keyword_texts(state.messages.values())}
        collection.update(((False, r.id), r.content) for r in state.records.values())
        ranked, ideal = _bm25(query.text, collection)  # statistics of the whole collection
        candidates = self._admitted(query)
        named = [kv for kv in ranked if kv[0] in candidates and self._named(query, kv[0])]
        return KeywordCandidates(self._ranked(named, candidates)[:depth], ideal)

    def links_around(self, frontier: Sequence[str], query: SearchQuery) -> dict[str, list[RecordLink]]:
        state = self._state
        wanted = set(frontier)
        out: dict[str, list[RecordLink]] = {}

        def admitted(record_id: str) -> bool:
            record = state.records.get(record_id)
            return record is not None and query.admits_record(record, direct=False)

        for link in state.links.values():
            for end, other in ((link.source_id, link.target_id), (link.target_id, link.source_id)):
                if end in wanted and admitted(other):
                    out.setdefault(end, []).append(link)
        return out

    def load(self, keys: Sequence[CandidateKey]) -> dict[CandidateKey, MemoryRecord | Message]:
        state = self._state
        out: dict[CandidateKey, MemoryRecord | Message] = {}
        for key in keys:
            item = state.messages.get(key[1]) if key[0] else state.records.get(key[1])
            if item is not None:
                out[key] = item
        return out

    def message_neighbours(self, message_ids: Sequence[str], radius: int) -> dict[str, list[str]]:
        messages = self._state.messages
        wanted = {
            mid: found
            for mid in message_ids
            if (found := messages.get(mid)) is not None and found.speaker is not None
        }
        if radius <= 0 or not wanted:
            return {}
        threads: dict[str, list[Message]] = {m.thread_id: [] for m in wanted.values()}
        for m in messages.values():
            if m.thread_id in threads and m.speaker is not None:
                threads[m.thread_id].append(m)
        places: dict[str, int] = {}
        for thread in threads.values():
            thread.sort(key=lambda m: m.seq)
            places.update((m.id, place) for place, m in enumerate(thread))
        out: dict[str, list[str]] = {}
        for mid, found in wanted.items():
            thread, place = threads[found.thread_id], places[mid]
            out[mid] = [m.id for m in thread[max(place - radius, 0) : place + radius + 1] if m.id != mid]
        return out


def _keyword_texts(messages: Iterable[Message]) -> Iterator[tuple[Message, str]]:
    """Each message with its :func:`keyword_text` (after the message just before it in its thread)."""
    threads: dict[str, list[Message]] = {}
    for m in messages:
        threads.setdefault(m.thread_id, []).append(m)
    for thread in threads.values():
        thread.sort(key=lambda m: m.seq)
        before: Message | None = None
        for m in thread:
            yield m, keyword_text(
                m.content, m.speaker, before.content if before else None, before.speaker if before else None
            )
            before = m


def _bm25(
    text: str, documents: Mapping[CandidateKey, str], k1: float = BM25_K1, b: float = BM25_B
) -> tuple[list[tuple[CandidateKey, float]], float]:
    """Okapi BM25 over the candidate documents; only documents sharing a term are returned.

    Also the query's ideal score (the sum of its terms' idf, :func:`bm25_idf`), the scale of
    ``Fusion.ABSOLUTE``."""
    terms = set(keyword_terms(text))
    if not terms or not documents:
        return [], 1.0
    tokenised = {key: Counter(word_tokens(body)) for key, body in documents.items()}
    n = len(tokenised)
    avg_len = sum(sum(c.values()) for c in tokenised.values()) / n or 1.0
    df = {t: sum(1 for c in tokenised.values() if t in c) for t in terms}
    idf = {t: bm25_idf(n, df[t]) for t in terms}
    scores: list[tuple[CandidateKey, float]] = []
    for key, counts in tokenised.items():
        length = sum(counts.values())
        score = 0.0
        for t in terms:
            tf = counts.get(t, 0)
            if tf:
                score += idf[t] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))
        if score > 0:
            scores.append((key, score))
    return scores, sum(idf.values())
