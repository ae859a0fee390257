"""Domain layer: the storage-side ports. Docstrings are the specification the contract suite tests.

A store adapter provides a :class:`MemoryStore`: units of work (transactions) whose
repositories read and write entities, plus a :class:`RecordSearch` capability. Repositories
store what they are given and enforce only storage invariants (unique ids, foreign keys,
vector dimension); lifecycle decisions are made by the domain functions in
:mod:`palimpsest.domain.links` and persisted by the application service.

Conventions for every method:

* "visible" means not expired at ``now`` (expired rows are hidden from get/list/search but
  are not a write conflict: their id stays taken until they are purged);
* list filters use three values: ``NOTSET`` = no filter, ``None`` = only rows unscoped on
  that dimension, a string = exactly that id;
* bad input raises a :class:`~palimpsest.domain.errors.ValidationError` subclass, and a
  failed unit of work leaves nothing behind.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType, TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from .checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint
from .errors import ReadOnlyError
from .images import StoredImage
from .model import ExtractionJob, MemoryRecord, Message, RecordLink, RecordType, Thread, ThreadSummary
from .search import CandidateKey, KeywordCandidates, SearchHit, SearchQuery, run_search
from .sentinel import NOTSET, NotSetType

__all__ = [
    "READ_METHODS",
    "UNBOUNDED_LIMIT",
    "CheckpointRepository",
    "CheckpointStorage",
    "Clock",
    "ImageRepository",
    "JobRepository",
    "LinkRepository",
    "MemoryStore",
    "MessageRepository",
    "RecordRepository",
    "RecordSearch",
    "SchemaState",
    "SearchSession",
    "SettingsRepository",
    "StoreDiagnostics",
    "SummaryRepository",
    "ThreadRepository",
    "UnitOfWork",
    "restrict_to_reads",
]

UNBOUNDED_LIMIT = 2**62
"""A ``limit`` or ``last_n`` at least this large means every row, as ``None`` does (stores whose
integer binds are 64-bit would otherwise overflow)."""

ScopeArg = str | None | NotSetType
Vector = Sequence[float]


@runtime_checkable
class Clock(Protocol):
    """Where "now" comes from. Domain rules take time as an argument; services ask a clock."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class ThreadRepository(Protocol):
    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, thread: Thread) -> None:
        """Store a new thread. Raises ``DuplicateIdError`` if the id exists."""
        ...

    def get(self, thread_id: str) -> Thread | None:
        """The thread, or ``None``."""
        ...

    def update(self, thread: Thread) -> None:
        """Replace a stored thread (same id). Raises ``ThreadNotFoundError`` if absent."""
        ...

    def delete(self, thread_id: str) -> bool:
        """Delete a thread with its messages and the records scoped to it (and their links).

        Returns False when there was no such thread.
        """
        ...

    def list(
        self,
        *,
        user_id: ScopeArg = NOTSET,
        agent_id: ScopeArg = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads matching the filters, oldest first; ``limit`` keeps the newest ``limit``.

        ``metadata_filter=None`` means "only threads without metadata"; ``limit=None`` (the
        default) returns every match.
        """
        ...


class MessageRepository(Protocol):
    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, message: Message, *, embedding: Vector | None = None) -> None:
        """Store a message of an existing thread, optionally with its embedding.

        Raises ``ThreadNotFoundError``, ``DuplicateIdError`` (id or (thread, seq) taken) or
        ``VectorDimensionError``.
        """
        ...

    def add_many(self, messages: Sequence[Message], embeddings: Sequence[Vector | None] | None = None) -> None:
        """Store several messages at once (same checks and errors as :meth:`add`, one vector
        or ``None`` per message). On an error nothing of the batch is stored."""
        ...

    def get(self, message_id: str, *, now: datetime) -> Message | None:
        """The message if it exists and is visible at ``now``."""
        ...

    def last_seq(self, thread_id: str) -> int:
        """The highest ``seq`` stored for the thread (expired rows included), 0 if none."""
        ...

    def vectors(self, thread_id: str, message_ids: Sequence[str]) -> dict[str, Vector]:
        """The stored (unit) embeddings of those of ``message_ids`` that are messages of
        ``thread_id`` stored with one, by id; any other id is left out (expired messages are not
        told apart: a caller reads ids it got from the thread)."""
        ...

    def list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> list[Message]:
        """Visible messages with ``start_seq <= seq < end_seq``, oldest first.

        ``last_n`` keeps only the newest ``last_n`` of that range.
        """
        ...

    def list(
        self,
        *,
        now: datetime,
        user_id: ScopeArg = NOTSET,
        agent_id: ScopeArg = NOTSET,
        thread_id: ScopeArg = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> builtins.list[Message]:
        """Visible messages of every thread matching the filters, oldest first (creation time,
        then thread id, then ``seq``: a thread's messages in their order).

        ``limit`` keeps the newest ``limit`` (``None``, the default: every match);
        ``metadata_filter=None`` means "no metadata"."""
        ...

    def update(self, message: Message, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        """Replace a stored message; ``embedding`` NOTSET keeps, None drops, a vector replaces.

        Raises ``MessageNotFoundError``.
        """
        ...

    def delete(self, message_id: str) -> bool:
        """Delete one message; False when absent."""
        ...

    def purge_expired(self, now: datetime) -> builtins.list[tuple[str, int]]:
        """Physically delete every message expired at ``now``; returns the (thread id, seq) of
        each purged message, so summaries that covered them can be retired."""
        ...

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[Message]:
        """Visible messages stored without a vector, oldest first (creation time, then thread
        id, then ``seq``); ``limit`` keeps the oldest ``limit`` (``None``: every one). The
        vector backfill's work list (ARCHITECTURE.md D43)."""
        ...


class RecordRepository(Protocol):
    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, record: MemoryRecord, *, embedding: Vector | None = None) -> None:
        """Store a new memory record, optionally with its embedding.

        Raises ``DuplicateIdError``, ``ThreadNotFoundError`` (record scoped to an unknown
        thread) or ``VectorDimensionError``.
        """
        ...

    def get(self, record_id: str, *, now: datetime | None = None) -> MemoryRecord | None:
        """The record, or ``None``. With ``now``, expired records are ``None`` as well."""
        ...

    def get_many(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The stored records among ``record_ids`` (expired included), keyed by id."""
        ...

    def update(self, record: MemoryRecord, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        """Replace a stored record (same id; scope and type must not change).

        ``embedding`` NOTSET keeps the vector, None drops it, a vector replaces it.
        Raises ``RecordNotFoundError`` or ``ValidationError`` when scope/type would change.
        """
        ...

    def delete(self, record_id: str) -> bool:
        """Delete a record and every link touching it; False when absent.

        The store does not re-derive the status of former link partners: the service does.
        """
        ...

    def expired_ids(self, now: datetime, *, limit: int | None = None) -> list[str]:
        """Ids of records expired at ``now`` (oldest expiry first), for the purge use case,
        which deletes them one by one so that link partners are re-derived."""
        ...

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[MemoryRecord]:
        """Visible records stored without a vector, oldest first (creation time, then id);
        ``limit`` keeps the oldest ``limit`` (``None``: every one). The vector backfill's work
        list (ARCHITECTURE.md D43)."""
        ...

    def list(
        self,
        *,
        now: datetime,
        user_id: ScopeArg = NOTSET,
        agent_id: ScopeArg = NOTSET,
        thread_id: ScopeArg = NOTSET,
        record_types: frozenset[RecordType] | None = None,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        """Visible records matching the filters, oldest first (creation order, then id).

        ``limit`` keeps the newest ``limit`` (``None``, the default: every match);
        ``metadata_filter=None`` means "no metadata".
        """
        ...


class LinkRepository(Protocol):
    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, link: RecordLink) -> None:
        """Store a link whose endpoints exist.

        Raises ``RecordNotFoundError`` for a missing endpoint, ``DuplicateIdError`` for a taken
        id, ``LinkExistsError`` for a repeated (source, target, type), ``SelfLinkError``.
        """
        ...

    def get(self, link_id: str) -> RecordLink | None:
        ...

    def find(self, source_id: str, target_id: str, relation_type: str) -> RecordLink | None:
        """The link with exactly this stored orientation and type."""
        ...

    def between(self, a: str, b: str) -> list[RecordLink]:
        """Every link joining ``a`` and ``b``, in either direction, oldest first."""
        ...

    def touching(self, record_id: str) -> list[RecordLink]:
        """Every link with ``record_id`` as source or target, oldest first (created_at, id)."""
        ...

    def update(self, link: RecordLink) -> None:
        """Replace a stored link (same id and endpoints). Raises ``LinkNotFoundError``,
        ``LinkExistsError``."""
        ...

    def delete(self, link_id: str) -> bool:
        ...

    def list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[RecordLink]:
        """Links matching the filters, earliest created first (created_at, id); ``limit``
        keeps the first ``limit`` (``None``, the default: every match)."""
        ...


class SummaryRepository(Protocol):
    """Versioned thread summaries (deleted with their thread)."""

    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, summary: ThreadSummary) -> None:
        """Store a new revision. Raises ``ThreadNotFoundError``, ``DuplicateIdError`` for a
        taken id, and ``ConflictError`` when the thread already has this revision number
        (the compare-and-set that keeps concurrent refreshes from overwriting each other)."""
        ...

    def latest(self, thread_id: str, *, valid_only: bool = False) -> ThreadSummary | None:
        """The highest revision of the thread (only among VALID ones with ``valid_only``)."""
        ...

    def list_for_thread(self, thread_id: str) -> list[ThreadSummary]:
        """Every stored revision, oldest first."""
        ...

    def invalidate_covering(self, thread_id: str, seq: int) -> int:
        """Mark INVALID every valid revision whose ``covered_through_seq >= seq`` (it includes
        a message that changed); returns how many were marked."""
        ...

    def prune(self, thread_id: str, *, keep: int) -> int:
        """Delete all but the ``keep`` highest revisions; returns how many were deleted."""
        ...


class JobRepository(Protocol):
    """Durable pending-extraction jobs (deleted with their thread)."""

    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, job: ExtractionJob) -> None:
        """Record a job. Raises ``ThreadNotFoundError`` or ``DuplicateIdError``."""
        ...

    def pending(self, now: datetime, *, limit: int | None = None) -> list[ExtractionJob]:
        """Jobs not failed and not claimed, or whose lease expired by ``now``, oldest first
        (creation time, then id)."""
        ...

    def list(self, *, thread_id: str | None = None, limit: int | None = None) -> list[ExtractionJob]:
        """Every job not failed, whatever its lease (of one thread, or all), oldest first
        (creation time, then id): what is still to be extracted."""
        ...

    def claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> ExtractionJob | None:
        """Lease the job to ``owner`` until ``until`` (counting an attempt) if it is free, its
        lease expired by ``now``, or ``owner`` holds the lease already (a worker taking up its
        own postponed job); returns the claimed job, or ``None`` if someone else holds it, it is
        marked failed, or it is gone."""
        ...

    def postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool = False
    ) -> bool:
        """Record a failed attempt of a job that ``owner`` holds: keep ``reason`` (see
        :func:`~palimpsest.domain.model.check_failure_reason`) and hold the lease until
        ``until``, the time of the next attempt, so no other worker takes the job before then.
        ``refund_attempt`` takes back the attempt the claim counted (a transient storage
        fault is not the job's failure). ``False`` if the job is gone, failed, or held by
        another owner. Raises ``ValidationError`` for a bad reason or time (and writes nothing)."""
        ...

    def renew(self, job_id: str, *, owner: str, until: datetime) -> bool:
        """Extend the lease ``owner`` holds to ``until`` (the heartbeat of an attempt under way,
        so that a lease can be short and end soon after its holder's process does). ``False`` if
        the job is gone, failed, or held by another owner."""
        ...

    def release(self, job_id: str, *, owner: str, until: datetime | None = None) -> bool:
        """Hand back a job ``owner`` holds and has not finished (a closing client): it has no
        owner, and anyone may claim it from ``until`` on (``None``: at once); its attempts and
        reason are kept. ``False`` if the job is gone, failed, or held by another owner."""
        ...

    def fail(self, job_id: str, *, reason: str, at: datetime) -> bool:
        """Mark the job failed for good at ``at`` with ``reason`` (see
        :func:`~palimpsest.domain.model.check_failure_reason`) and release its lease: it leaves
        :meth:`pending` and cannot be claimed until :meth:`retry`. ``False`` if it is gone.
        Raises ``ValidationError`` for a bad reason or time (and writes nothing)."""
        ...

    # builtins.list: in this class body, `list` names the list() method.
    def failed(self, *, thread_id: str | None = None, limit: int | None = None) -> builtins.list[ExtractionJob]:
        """Jobs marked failed (of one thread, or all), oldest failure first, then by id."""
        ...

    def retry(self, job_id: str) -> ExtractionJob | None:
        """Make a failed job pending again, with its failure (and reason) cleared and no attempt counted;
        returns it, or ``None`` if it is gone or not failed."""
        ...

    def delete(self, job_id: str) -> bool:
        """Remove a finished (or abandoned) job."""
        ...


class ImageRepository(Protocol):
    """The bytes of image records (a record of type ``image`` holds the description, scope and
    expiry; this holds the MIME type, the bytes, and the message an attached image belongs to).
    A row is deleted with its record (and so with a thread that deletes the record)."""

    __slots__ = ()  # adapters declaring the port keep their slots

    def add(self, image: StoredImage) -> None:
        """Store the bytes of an existing image record (``image.data`` must be set).

        Raises ``RecordNotFoundError`` when no image record has that id, ``DuplicateIdError``
        when it has bytes already, ``ValidationError`` without bytes."""
        ...

    def replace(self, image: StoredImage) -> None:
        """Replace the MIME type and bytes of a stored image (its message and position stay).
        Raises ``RecordNotFoundError`` when the record has no stored image."""
        ...

    def get_many(self, record_ids: Sequence[str], *, include_bytes: bool = False) -> dict[str, StoredImage]:
        """The stored images among ``record_ids``, by id; ``data`` is ``None`` unless
        ``include_bytes`` (expiry is the record's: a caller reads ids of visible records)."""
        ...

    def of_messages(self, message_ids: Sequence[str]) -> dict[str, builtins.list[StoredImage]]:
        """The images attached to each of ``message_ids`` that has any, in their position order,
        without their bytes."""
        ...


class SettingsRepository(Protocol):
    """Store-wide settings (JSON values) that every client of the store must share, such as
    the retention policy or the embedding model the vectors were made with."""

    __slots__ = ()  # adapters declaring the port keep their slots

    def get(self, key: str) -> Any:
        """The stored JSON value, or ``None`` when unset."""
        ...

    def set(self, key: str, value: Any) -> None:
        """Store a JSON-compatible value (``None`` removes the key)."""
        ...


class UnitOfWork(Protocol):
    """One atomic transaction. Rolls back unless :meth:`commit` is called.

    Leaving the ``with`` block without commit, or by an exception, discards every write.
    Writes of a committed unit of work are visible to every later unit of work and search,
    in this process and in others sharing the store. After ``commit`` or ``rollback`` the
    unit of work is finished; using its repositories raises ``StorageError``.

    A read-only unit of work (:meth:`MemoryStore.reading`) answers only the methods named in
    :data:`READ_METHODS`; any other repository method raises ``ReadOnlyError`` and sends
    nothing to storage. Its ``commit`` and ``rollback`` just finish it.
    """

    threads: ThreadRepository
    messages: MessageRepository
    records: RecordRepository
    links: LinkRepository
    summaries: SummaryRepository
    settings: SettingsRepository
    jobs: JobRepository
    images: ImageRepository

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


class SearchSession(Protocol):
    """One read of a store for one search: the five things only a store can answer.

    Everything else a search does (fusion, the score convention, the linked-record trees,
    hydration and the final filter check) is :func:`palimpsest.domain.search.run_search`,
    written once. A session reads the committed state (open units of work are never seen) and
    never waits for a writer; a store whose indexes are caches may answer the candidate and link
    primitives from a cache slightly newer than the rows ``load`` returns, which is why the
    pipeline re-checks every loaded row with the query's filters.

    Keys are :data:`~palimpsest.domain.search.CandidateKey`: (is a message, id).
    """

    def dense_candidates(self, query: SearchQuery, depth: int) -> Sequence[tuple[CandidateKey, float]]:
        """Up to ``depth`` direct candidates with a vector, by cosine similarity of their vector to
        ``query.vector``, best first (ties: record type name, then id), as (key, cosine).

        Direct candidates are the messages and memory records ``query.admits_record(direct=True)``
        admits: scope per dimension, record types, expiry at ``query.now``, metadata filter,
        status unless ``include_invalid``, and only the named memory records when
        ``query.record_ids`` is given. Raises ``VectorDimensionError`` if the query vector does
        not fit the store."""
        ...

    def keyword_candidates(self, query: SearchQuery, depth: int) -> KeywordCandidates:
        """Up to ``depth`` direct candidates (as for :meth:`dense_candidates`) sharing a term with
        ``query.text``, by raw keyword relevance (Unicode word tokens compared case-insensitively;
        a store may also fold diacritics), best first (ties: record type name, then id), and the
        query's ideal relevance (see :class:`~palimpsest.domain.search.KeywordCandidates`).

        Term statistics (document count and frequencies, average length) come from the store's
        whole collection of stored messages and memory records (every scope, status and expiry,
        until purged; Oracle Text: its whole index): the query's filters and ``record_ids``
        narrow the candidates returned, never a candidate's raw relevance, so a text scores the
        same in every search that finds it with the same words."""
        ...

    def links_around(self, frontier: Sequence[str], query: SearchQuery) -> Mapping[str, Sequence[RecordLink]]:
        """For each memory record id of ``frontier``, the links touching it (either direction)
        whose other end is a memory record ``query.admits_record(direct=False)`` admits (scope,
        types, expiry and metadata; status is not filtered). Ids with no such link may be left
        out; the order of the links does not matter."""
        ...

    def load(self, keys: Sequence[CandidateKey]) -> Mapping[CandidateKey, MemoryRecord | Message]:
        """The messages and memory records stored under ``keys``, as this read sees them (a key
        with no visible row is left out; expired rows may be returned: the pipeline filters)."""
        ...

    def message_neighbours(self, message_ids: Sequence[str], radius: int) -> Mapping[str, Sequence[str]]:
        """Conversation turns around messages: for each id of ``message_ids`` naming a message
        this read sees that has a speaker (:func:`~palimpsest.domain.model.speaker_of` its
        metadata: a string, not empty once its spaces are trimmed), the ids of the messages of
        the same thread that have a speaker within ``radius`` places before and after it, in
        thread order (``seq``), itself excluded. Places count the thread's messages with a
        speaker this read sees (gaps in ``seq`` and unnamed messages do not count). No other
        filter applies: the pipeline re-checks every row it loads. An id with no visible named
        message is left out; ``radius <= 0`` or no ids gives ``{}``."""
        ...


class RecordSearch(Protocol):
    def searching(self) -> AbstractContextManager[SearchSession]:
        """A :class:`SearchSession` over one read of the store, as a context manager."""
        ...

    def search(self, query: SearchQuery) -> list[SearchHit]:
        """Up to ``query.k`` direct hits, best first, each with its linked-record tree: what
        :func:`~palimpsest.domain.search.run_search` answers from one :meth:`searching` session
        (candidates, the one score convention, trees, hydration: see there).

        A store may answer faster in its own way only if it returns exactly what this does (the
        contract suite compares the two). Raises ``VectorDimensionError`` if the query vector
        does not fit the store.
        """
        with self.searching() as session:
            return run_search(session, query)


class MemoryStore(RecordSearch, Protocol):
    """A complete storage backend: transactions plus search."""

    @property
    def dimension(self) -> int | None:
        """The embedding dimension, fixed by configuration or by the first stored vector."""
        ...

    def unit_of_work(self) -> UnitOfWork:
        """A new unit of work, to be used as a context manager."""
        ...

    def reading(self) -> UnitOfWork:
        """A new read-only unit of work, to be used as a context manager.

        It reads one consistent snapshot of the committed state (taken when it is entered or at
        its first read, depending on the store; open units of work are never seen) and never
        waits for a writer: a unit of work or another process holding the store's write lock
        does not block it. Writes through it raise ``ReadOnlyError``.
        """
        ...

    def clear_vectors(self) -> None:
        """Drop every stored vector and forget the dimension (texts, links and everything else
        stay), so that a different embedding model can re-embed the store. Keyword search keeps
        working meanwhile; vector search finds nothing until vectors are stored again."""
        ...

    def close(self) -> None:
        """Release resources; idempotent. Later use raises ``StoreClosedError``."""
        ...


@dataclass(frozen=True, slots=True)
class SchemaState:
    """The schema a store runs on, for diagnostics.

    ``version`` is the schema version the store records (``None``: none is recorded, or the
    store keeps no schema, as the in-memory fake); ``latest`` is the newest version this
    library knows for that kind of store (``None`` when it has no versioned schema). A store
    that opened has been brought to ``latest`` or refused, so an open store reports them
    equal; an unopened file may be older (a client migrates it) or newer (no client opens it).
    """

    version: int | None
    latest: int | None

    @property
    def is_current(self) -> bool:
        """True when the store is at this library's newest version (or keeps no schema)."""
        return self.version == self.latest

    @property
    def needs_migration(self) -> bool:
        """True when a client opening the store would migrate it first."""
        return self.version is not None and self.latest is not None and self.version < self.latest

    @property
    def is_newer(self) -> bool:
        """True when the store was written by a newer palimpsest (no client here opens it)."""
        return self.version is not None and self.latest is not None and self.version > self.latest


@runtime_checkable
class StoreDiagnostics(Protocol):
    """What a store says about itself to a health check (``palimpsest doctor``), beyond its data.

    A capability next to :class:`MemoryStore`: every shipped store offers it; a driver asks
    ``isinstance(store, StoreDiagnostics)`` before using it. Counts of rows and jobs are not
    here: the application reads them through the repositories like any other data.
    """

    def schema_state(self) -> SchemaState:
        """The store's schema version and this library's newest (read, never migrated)."""
        ...


class CheckpointRepository(Protocol):
    """Graph checkpoints, their channel blobs and pending writes (ARCHITECTURE.md D41), inside
    one unit of work: what it writes commits or rolls back with the unit of work's other writes.

    Rows are keyed by ``(thread_id, checkpoint_ns, checkpoint_id)``; ``checkpoint_ns`` may be
    ``""`` (the root graph). The store interprets no serialized value. Expiry does not apply.
    A repository of a read-only unit of work answers :meth:`get`, :meth:`list`, :meth:`blobs`
    and :meth:`writes` and raises ``ReadOnlyError`` for the rest.
    """

    __slots__ = ()  # adapters declaring the port keep their slots

    def put(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        """Store a checkpoint (replacing one with the same key) and its new channel blobs (a
        blob already stored for the same thread, namespace, channel and version is kept)."""
        ...

    def put_writes(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[CheckpointWrite],
    ) -> None:
        """Store pending writes against a checkpoint. A write whose ``(task_id, idx)`` is
        already stored for that checkpoint replaces it when ``idx`` is negative and is ignored
        otherwise (a retried task re-sends its writes)."""
        ...

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None = None) -> StoredCheckpoint | None:
        """The checkpoint with that id, or the newest of the thread and namespace when
        ``checkpoint_id`` is ``None``; ``None`` when there is none."""
        ...

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
        """Checkpoints newest first (by ``checkpoint_id``, descending). Each argument given
        narrows: ``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` match exactly; ``before``
        keeps ids strictly smaller; ``metadata`` keeps rows whose metadata has every given
        top-level key with an equal JSON value (``True`` is not ``1``, ``1`` is ``1.0``, a nested
        value is compared whole, a missing key is not ``None``: see
        :func:`~palimpsest.domain.checkpoints.checkpoint_metadata_matches`); ``limit`` applies
        after every filter. Rows of several threads with one id come by thread, then namespace,
        descending."""
        ...

    def blobs(self, thread_id: str, checkpoint_ns: str, versions: Mapping[str, str]) -> dict[str, ChannelBlob]:
        """The stored blobs for ``{channel: version}``, by channel (missing ones are absent)."""
        ...

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> builtins.list[CheckpointWrite]:
        """The pending writes of a checkpoint, ordered by ``(task_path, task_id, idx)``."""
        ...

    def delete_threads(self, thread_ids: Sequence[str]) -> int:
        """Delete every checkpoint, blob and write of these threads (every namespace); returns
        the number of checkpoints deleted."""
        ...

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints written by these runs and their writes; returns the number
        of checkpoints deleted. Blobs no remaining checkpoint references may stay until
        :meth:`delete_blobs` is asked for them."""
        ...

    def delete_checkpoints(self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> int:
        """Delete these checkpoints and their writes; returns how many existed."""
        ...

    def delete_blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> int:
        """Delete the blobs ``(channel, version)`` of a thread and namespace; returns how many."""
        ...

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> int:
        """Copy every checkpoint, blob and write of one thread to another (every namespace,
        ids kept, parent chain whole); rows the target already has are kept. Returns the
        number of checkpoints copied."""
        ...


@runtime_checkable
class CheckpointStorage(Protocol):
    """A store that keeps graph checkpoints beside its memory (ARCHITECTURE.md D41).

    A capability next to :class:`MemoryStore`, like :class:`StoreDiagnostics`: every shipped
    store offers it; the application asks ``isinstance(store, CheckpointStorage)``."""

    def checkpoints(self, uow: UnitOfWork) -> CheckpointRepository:
        """The checkpoint repository of ``uow`` (a unit of work this store made): its writes
        are part of that unit of work's transaction."""
        ...


READ_METHODS: Mapping[str, frozenset[str]] = MappingProxyType({
    "threads": frozenset({"get", "list"}),
    "messages": frozenset({"get", "last_seq", "list", "list_for_thread", "vectors", "unembedded"}),
    "records": frozenset({"get", "get_many", "expired_ids", "list", "unembedded"}),
    "links": frozenset({"get", "find", "between", "touching", "list"}),
    "summaries": frozenset({"latest", "list_for_thread"}),
    "settings": frozenset({"get"}),
    "jobs": frozenset({"pending", "list", "failed"}),
    "images": frozenset({"get_many", "of_messages"}),
})
"""The repository methods a read-only unit of work answers, by repository attribute."""


class _ReadOnlyRepository:
    """A repository with its read methods only; every other public method refuses the call."""

    __slots__ = ("_inner", "_name", "_reads")

    def __init__(self, name: str, inner: Any, reads: frozenset[str]) -> None:
        self._name = name
        self._inner = inner
        self._reads = reads

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # private names, and the slots before they are set
            raise AttributeError(attribute)
        if attribute in self._reads:
            return getattr(self._inner, attribute)
        if not hasattr(self._inner, attribute):
            raise AttributeError(attribute)
        name = self._name

        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise ReadOnlyError(
                f"{name}.{attribute}() writes, but this unit of work is read-only "
                "(store.reading()); use store.unit_of_work() to write."
            )

        return refuse


def restrict_to_reads(uow: Any) -> None:
    """Replace ``uow``'s repositories by read-only views (:data:`READ_METHODS`).

    Every store makes its read-only unit of work with this, so all of them refuse the same calls
    the same way, before anything reaches storage (an allow-list: a new write method is refused
    until it is named here)."""
    for name, reads in READ_METHODS.items():
        setattr(uow, name, _ReadOnlyRepository(name, getattr(uow, name), reads))
