"""Adapters layer (SQL kit): the repositories behind a SQL unit of work, written once.

Every method runs its store's statements (:mod:`.statements`) on the unit of work's connection,
inside its transaction. Behaviour follows the port docstrings in ``domain/ports.py`` exactly; the
contract suite is the judge. Arguments are validated before anything is sent. Where the contract
names an error that a database reports ambiguously (a link's id or its (source, target, type); a
summary's id or its revision), one query checks first; elsewhere the keys report it (a taken id,
an unknown thread), translated by the dialect and named here by the logical key violated. Writes
of more than one statement run inside :meth:`SqlUnitOfWork.atomic`, so a failure leaves nothing.

A store that keeps an index beside a table (a keyword or vector index, a change log) subclasses
a repository and fills in its hooks (``_messages_added``, ``_record_updated``...), which run in
the same write.

Listing with a metadata filter: a store whose statements filter in SQL gets the validated filter;
otherwise the listing reads pages newest first without it and keeps the rows
:func:`palimpsest.domain.metadata_filter.metadata_matches` accepts, until ``limit`` of them are
found or the rows run out: one filter semantics, defined once (D7).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from palimpsest.domain.errors import (
    ConflictError,
    DuplicateIdError,
    InvalidLinkError,
    LinkExistsError,
    LinkNotFoundError,
    MessageNotFoundError,
    RecordNotFoundError,
    SelfLinkError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.images import ImageMimeType, StoredImage
from palimpsest.domain.metadata_filter import metadata_matches, validate_metadata_filter
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordType,
    Thread,
    ThreadSummary,
    check_failure_reason,
    check_id,
    check_metadata,
    check_optional_id,
    check_time,
    parse_record_type,
)
from palimpsest.domain.ports import (
    UNBOUNDED_LIMIT,
    ImageRepository,
    JobRepository,
    LinkRepository,
    MessageRepository,
    RecordRepository,
    SettingsRepository,
    SummaryRepository,
    ThreadRepository,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .dialect import Key, Statement
from .statements import Keyset

if TYPE_CHECKING:
    from .unit_of_work import SqlUnitOfWork

__all__ = [
    "SqlImageRepository",
    "SqlJobRepository",
    "SqlLinkRepository",
    "SqlMessageRepository",
    "SqlRecordRepository",
    "SqlRepository",
    "SqlSettingsRepository",
    "SqlSummaryRepository",
    "SqlThreadRepository",
    "check_limit",
    "id_batches",
]

ScopeArg = str | None | NotSetType
Vector = Sequence[float]
T = TypeVar("T", Thread, MemoryRecord)

MIN_PAGE: Final = 100
MAX_PAGE: Final = 1_000


def check_limit(limit: int | None, what: str = "limit", *, minimum: int = 1) -> int | None:
    """A validated row count; one of at least :data:`UNBOUNDED_LIMIT` means every row (``None``),
    since no database integer bind holds a number near 2**63."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < minimum:
        raise ValidationError(f"{what} must be an integer of at least {minimum}, or None.")
    return None if limit >= UNBOUNDED_LIMIT else limit


def _scope_arg(value: ScopeArg, what: str) -> ScopeArg:
    return value if isinstance(value, NotSetType) else check_optional_id(value, what)


def id_batches(ids: Sequence[str], batch_bytes: int | None) -> list[list[str]]:
    """``ids`` cut into lists whose JSON text stays under ``batch_bytes`` (one list: no bound)."""
    if batch_bytes is None:
        return [list(ids)] if ids else []
    batches: list[list[str]] = []
    current: list[str] = []
    size = 2
    for item in ids:
        cost = len(json.dumps(item, ensure_ascii=False).encode("utf-8")) + 1
        if current and size + cost > batch_bytes:
            batches.append(current)
            current, size = [], 2
        current.append(item)
        size += cost
    if current:
        batches.append(current)
    return batches


def _count(row: tuple[Any, ...] | None, index: int) -> int:
    return int(row[index] or 0) if row is not None else 0


class SqlRepository:
    __slots__ = ("_uow",)

    def __init__(self, uow: SqlUnitOfWork) -> None:
        self._uow = uow

    def _violated(self, exc: BaseException) -> str | None:
        """The logical key behind a translated error, if the driver named one."""
        return self._uow.dialect.violated(exc.__cause__)

    def _filtered(
        self,
        build: Callable[..., Statement],
        decode: Callable[[Sequence[Any]], T],
        metadata_filter: Mapping[str, Any] | None | NotSetType,
        limit: int | None,
    ) -> list[T]:
        """A listing with the three-valued metadata filter (see the module docstring)."""
        uow = self._uow
        if isinstance(metadata_filter, NotSetType) or metadata_filter is None:
            rows = uow.fetch_all(build(without_metadata=metadata_filter is None, limit=limit))
            return [decode(row) for row in rows]
        flt = validate_metadata_filter(metadata_filter)
        if uow.sql.filters_metadata:
            return [decode(row) for row in uow.fetch_all(build(metadata_filter=flt, limit=limit))]
        if limit is None:
            entities = [decode(row) for row in uow.fetch_all(build(limit=None))]
            return [e for e in entities if metadata_matches(e.metadata, flt)]
        page = min(max(limit, MIN_PAGE), MAX_PAGE)
        found: list[T] = []
        seen: set[str] = set()
        after: Keyset | None = None
        while len(found) < limit:
            rows = uow.fetch_all(build(page=page, after=after))
            fresh = 0
            for row in rows:
                entity = decode(row)
                after = Keyset(entity.created_at, entity.id)
                if entity.id in seen:  # defence: a keyset that did not move on never loops
                    continue
                seen.add(entity.id)
                fresh += 1
                if metadata_matches(entity.metadata, flt):
                    found.append(entity)
                    if len(found) == limit:
                        break
            if len(rows) < page or fresh == 0:
                break
        found.reverse()
        return found


# --- threads ---------------------------------------------------------------------------------------


class SqlThreadRepository(SqlRepository, ThreadRepository):
    __slots__ = ()

    def _deleting(self, thread_id: str) -> None:
        """Hook: inside the delete's write, before the thread row goes."""

    def add(self, thread: Thread) -> None:
        try:
            self._uow.run(self._uow.sql.thread_insert(thread))
        except DuplicateIdError as exc:
            raise DuplicateIdError(f"A thread with id {thread.id!r} already exists.") from exc.__cause__

    def get(self, thread_id: str) -> Thread | None:
        row = self._uow.fetch_one(self._uow.sql.thread_get(thread_id))
        return None if row is None else self._uow.codec.thread(row)

    def update(self, thread: Thread) -> None:
        if self._uow.run(self._uow.sql.thread_update(thread)) == 0:
            raise ThreadNotFoundError(f"No thread with id {thread.id!r}.")

    def delete(self, thread_id: str) -> bool:
        # ON DELETE CASCADE removes messages, records (and their links), summaries and jobs.
        uow = self._uow
        with uow.atomic():
            self._deleting(thread_id)
            return uow.run(uow.sql.thread_delete(thread_id)) > 0

    def list(
        self,
        *,
        user_id: ScopeArg = NOTSET,
        agent_id: ScopeArg = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[Thread]:
        user_id = _scope_arg(user_id, "user_id")
        agent_id = _scope_arg(agent_id, "agent_id")
        limit = check_limit(limit)
        sql = self._uow.sql

        def build(**kwargs: Any) -> Statement:
            return sql.thread_list(user_id=user_id, agent_id=agent_id, **kwargs)

        return self._filtered(build, self._uow.codec.thread, metadata_filter, limit)


# --- messages --------------------------------------------------------------------------------------


class SqlMessageRepository(SqlRepository, MessageRepository):
    __slots__ = ()

    # Hooks: each runs inside the write (its savepoint), after the statement named.
    def _messages_added(self, messages: Sequence[Message], vectors: Sequence[Any], *, batch: bool) -> None:
        """After the inserts (``vectors``: each message's bind value, or ``None``; ``batch``:
        from ``add_many``, else one ``add``)."""

    def _message_updated(self, message: Message, vector: Any, place: tuple[Any, ...]) -> None:
        """After the update (``place``: the stored (thread, seq, content, metadata) before it)."""

    def _message_deleted(self, message_id: str, place: tuple[Any, ...]) -> None:
        """After the delete (``place``: its (thread, seq))."""

    def _messages_purging(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Before the purge deletes its (id, thread, seq) rows."""

    def _messages_purged(self, purged: Sequence[tuple[str, int]]) -> None:
        """After the purge, with the sorted (thread, seq) pairs gone."""

    def _explain_duplicate(self, messages: Sequence[Message]) -> None:
        """A batch hit a unique key: raise the error naming it, if the store can tell."""

    def _vectors(self, embeddings: Sequence[Vector | None]) -> list[Any]:
        """Each embedding's bind value (``None`` stays ``None``), all checked first."""
        uow = self._uow
        present = [i for i, v in enumerate(embeddings) if v is not None]
        if not present:
            return [None] * len(embeddings)
        units = uow.unit_vectors([embeddings[i] for i in present])  # type: ignore[misc]
        encoded: list[Any] = [None] * len(embeddings)
        for i, unit in zip(present, units, strict=True):
            encoded[i] = unit
        return encoded

    def _fix(self, vectors: Sequence[Any]) -> list[Any]:
        """Fix the dimension by the first vector (inside the write); the bind values."""
        uow = self._uow
        first = next((v for v in vectors if v is not None), None)
        if first is not None:
            uow.fix_dimension(len(first))
        encode = uow.dialect.encode_vector
        return [None if v is None else encode(v) for v in vectors]

    def add(self, message: Message, *, embedding: Vector | None = None) -> None:
        uow = self._uow
        units = self._vectors([embedding])
        try:
            with uow.atomic():
                vectors = self._fix(units)
                uow.run(uow.sql.message_insert(message, vectors[0]), missing=ThreadNotFoundError)
                self._messages_added([message], vectors, batch=False)
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {message.thread_id!r}.") from exc.__cause__
        except DuplicateIdError as exc:
            key = self._violated(exc)
            if key == Key.MESSAGE_ID:
                raise DuplicateIdError(f"A message with id {message.id!r} already exists.") from exc.__cause__
            if key == Key.MESSAGE_SEQ:
                raise DuplicateIdError(
                    f"Thread {message.thread_id!r} already has a message with seq {message.seq}."
                ) from exc.__cause__
            raise

    def add_many(self, messages: Sequence[Message], embeddings: Sequence[Vector | None] | None = None) -> None:
        """One ``executemany`` for the whole batch, all or nothing."""
        if not messages:
            return
        given = list(embeddings) if embeddings is not None else [None] * len(messages)
        if len(given) != len(messages):
            raise ValidationError("add_many needs one embedding (or None) per message.")
        units = self._vectors(given)
        ids = [m.id for m in messages]
        if len(set(ids)) != len(ids):
            raise DuplicateIdError("A batch cannot hold the same message id twice.")
        slots = [(m.thread_id, m.seq) for m in messages]
        if len(set(slots)) != len(slots):
            raise DuplicateIdError("A batch cannot hold two messages with the same thread and seq.")
        uow = self._uow
        sql = uow.sql
        try:
            with uow.atomic():
                vectors = self._fix(units)
                uow.run_many(
                    [sql.message_insert(m, v) for m, v in zip(messages, vectors, strict=True)],
                    missing=ThreadNotFoundError,
                )
                self._messages_added(messages, vectors, batch=True)
        except ThreadNotFoundError as exc:
            raise self._missing_thread(messages) from exc.__cause__
        except DuplicateIdError:
            self._explain_duplicate(messages)
            raise

    def _missing_thread(self, messages: Sequence[Message]) -> ThreadNotFoundError:
        uow = self._uow
        wanted = list(dict.fromkeys(m.thread_id for m in messages))
        found: set[str] = set()
        for batch in id_batches(wanted, uow.dialect.id_batch_bytes):
            found.update(row[0] for row in uow.fetch_all(uow.sql.threads_existing(batch)))
        missing = [t for t in wanted if t not in found]
        if missing:
            return ThreadNotFoundError(f"No thread with id {missing[0]!r}.")
        return ThreadNotFoundError("A thread of the batch does not exist.")

    def get(self, message_id: str, *, now: datetime) -> Message | None:
        row = self._uow.fetch_one(self._uow.sql.message_get(message_id, check_time(now, "now")))
        return None if row is None else self._uow.codec.message(row)

    def last_seq(self, thread_id: str) -> int:
        row = self._uow.fetch_one(self._uow.sql.message_last_seq(thread_id))
        return int(row[0]) if row is not None and row[0] is not None else 0

    def vectors(self, thread_id: str, message_ids: Sequence[str]) -> dict[str, Vector]:
        if not message_ids:
            return {}
        uow = self._uow
        decode = uow.dialect.decode_vector
        rows = uow.fetch_all(uow.sql.message_vectors(thread_id, message_ids))
        return {row[0]: decode(row[1]) for row in rows}

    def list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> list[Message]:
        last_n = check_limit(last_n, "last_n", minimum=0)
        if last_n == 0:
            return []
        uow = self._uow
        statement = uow.sql.message_list_for_thread(
            thread_id, now=check_time(now, "now"), start_seq=start_seq, end_seq=end_seq, last_n=last_n
        )
        decode = uow.codec.message
        return [decode(row) for row in uow.fetch_all(statement)]

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
        now = check_time(now, "now")
        user_id = _scope_arg(user_id, "user_id")
        agent_id = _scope_arg(agent_id, "agent_id")
        thread_id = _scope_arg(thread_id, "thread_id")
        limit = check_limit(limit)
        uow = self._uow
        decode = uow.codec.message

        def build(**kwargs: Any) -> Statement:
            return uow.sql.message_list(now=now, user_id=user_id, agent_id=agent_id, thread_id=thread_id, **kwargs)

        if isinstance(metadata_filter, NotSetType) or metadata_filter is None:
            rows = uow.fetch_all(build(without_metadata=metadata_filter is None, limit=limit))
            return [decode(row) for row in rows]
        flt = validate_metadata_filter(metadata_filter)
        if uow.sql.filters_metadata:
            return [decode(row) for row in uow.fetch_all(build(metadata_filter=flt, limit=limit))]
        # Messages are ordered by (created_at, thread_id, seq), not by the (created_at, id)
        # keyset of the paged listings: read the scope's rows and filter them here (D7).
        found = [m for m in (decode(row) for row in uow.fetch_all(build(limit=None))) if metadata_matches(m.metadata, flt)]
        return found if limit is None else found[-limit:]

    def update(self, message: Message, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        uow = self._uow
        unit: Any = NOTSET if isinstance(embedding, NotSetType) else None
        if not isinstance(embedding, NotSetType) and embedding is not None:
            unit = uow.unit_vector(embedding)
        place = uow.fetch_one(uow.sql.message_place(message.id, with_text=True))
        if place is None:
            raise MessageNotFoundError(f"No message with id {message.id!r}.")
        if (message.thread_id, message.seq) != (place[0], int(place[1])):
            # (thread, seq) is a message's place in its conversation, not an editable field.
            raise ValidationError(f"Message {message.id!r} cannot change its thread or seq.")
        with uow.atomic():
            vector = unit if unit is NOTSET or unit is None else self._fix([unit])[0]
            uow.run(uow.sql.message_update(message, vector))
            self._message_updated(message, vector, place)

    def delete(self, message_id: str) -> bool:
        uow = self._uow
        place = uow.fetch_one(uow.sql.message_place(message_id))
        if place is None:
            return False
        with uow.atomic():
            if uow.run(uow.sql.message_delete(message_id)) == 0:
                return False
            self._message_deleted(message_id, place)
            return True

    def purge_expired(self, now: datetime) -> builtins.list[tuple[str, int]]:
        uow = self._uow
        sql = uow.sql
        rows = uow.fetch_all(sql.messages_expired(check_time(now, "now")))
        if not rows:
            return []
        purged = sorted((row[1], int(row[2])) for row in rows)
        with uow.atomic():
            self._messages_purging(rows)
            uow.run_many([sql.message_delete(row[0]) for row in rows])
            self._messages_purged(purged)
        return purged

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[Message]:
        limit = check_limit(limit, minimum=0)
        if limit == 0:
            return []
        uow = self._uow
        decode = uow.codec.message
        return [decode(row) for row in uow.fetch_all(uow.sql.messages_unembedded(check_time(now, "now"), limit=limit))]


# --- memory records --------------------------------------------------------------------------------


class SqlRecordRepository(SqlRepository, RecordRepository):
    __slots__ = ()

    # Hooks: each runs inside the write (its savepoint), after the statement named.
    def _record_added(self, record: MemoryRecord, vector: Any) -> None:
        """After the insert (``vector``: the bind value, or ``None``)."""

    def _record_updated(self, record: MemoryRecord, vector: Any) -> None:
        """After the update (``vector``: the bind value, ``None``, or ``NOTSET``: unchanged)."""

    def _record_deleted(self, record_id: str) -> None:
        """After a delete that found the record."""

    def add(self, record: MemoryRecord, *, embedding: Vector | None = None) -> None:
        uow = self._uow
        unit = None if embedding is None else uow.unit_vector(embedding)
        try:
            with uow.atomic():
                vector = None
                if unit is not None:
                    uow.fix_dimension(len(unit))
                    vector = uow.dialect.encode_vector(unit)
                uow.run(uow.sql.record_insert(record, vector), missing=ThreadNotFoundError)
                self._record_added(record, vector)
        except DuplicateIdError as exc:
            raise DuplicateIdError(f"A memory record with id {record.id!r} already exists.") from exc.__cause__
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {record.thread_id!r}.") from exc.__cause__

    def get(self, record_id: str, *, now: datetime | None = None) -> MemoryRecord | None:
        if now is not None:
            now = check_time(now, "now")
        row = self._uow.fetch_one(self._uow.sql.record_get(record_id, now=now))
        return None if row is None else self._uow.codec.record(row)

    def get_many(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if isinstance(record_ids, str):
            raise ValidationError("record_ids must be a sequence of ids, not a string.")
        uow = self._uow
        ids = list(dict.fromkeys(record_ids))
        found: dict[str, MemoryRecord] = {}
        decode = uow.codec.record
        for batch in id_batches(ids, uow.dialect.id_batch_bytes):
            for row in uow.fetch_all(uow.sql.record_get_many(batch)):
                record = decode(row)
                found[record.id] = record
        return {rid: found[rid] for rid in ids if rid in found}

    def update(self, record: MemoryRecord, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        uow = self._uow
        unit: Any = NOTSET if isinstance(embedding, NotSetType) else None
        if not isinstance(embedding, NotSetType) and embedding is not None:
            unit = uow.unit_vector(embedding)
        stored = uow.fetch_one(uow.sql.record_scope(record.id))
        if stored is None:
            raise RecordNotFoundError(f"No memory record with id {record.id!r}.")
        wanted = (record.record_type.value, record.user_id, record.agent_id, record.thread_id)
        if tuple(stored) != wanted:
            raise ValidationError(
                f"Memory record {record.id!r} cannot change its type or scope "
                f"(stored {tuple(stored)!r}, got {wanted!r})."
            )
        with uow.atomic():
            vector = unit
            if unit is not NOTSET and unit is not None:
                uow.fix_dimension(len(unit))
                vector = uow.dialect.encode_vector(unit)
            uow.run(uow.sql.record_update(record, vector))
            self._record_updated(record, vector)

    def delete(self, record_id: str) -> bool:
        # Links touching the record go with it (ON DELETE CASCADE).
        uow = self._uow
        with uow.atomic():
            if uow.run(uow.sql.record_delete(record_id)) == 0:
                return False
            self._record_deleted(record_id)
            return True

    def expired_ids(self, now: datetime, *, limit: int | None = None) -> list[str]:
        limit = check_limit(limit, minimum=0)
        if limit == 0:
            return []
        rows = self._uow.fetch_all(self._uow.sql.record_expired_ids(check_time(now, "now"), limit=limit))
        return [row[0] for row in rows]

    def unembedded(self, *, now: datetime, limit: int | None = None) -> builtins.list[MemoryRecord]:
        limit = check_limit(limit, minimum=0)
        if limit == 0:
            return []
        uow = self._uow
        decode = uow.codec.record
        return [decode(row) for row in uow.fetch_all(uow.sql.records_unembedded(check_time(now, "now"), limit=limit))]

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
        now = check_time(now, "now")
        user_id = _scope_arg(user_id, "user_id")
        agent_id = _scope_arg(agent_id, "agent_id")
        thread_id = _scope_arg(thread_id, "thread_id")
        types: list[RecordType] | None = None
        if record_types is not None:
            if isinstance(record_types, str):
                raise ValidationError("record_types must be a collection of type names, not a string.")
            types = sorted({parse_record_type(t) for t in record_types}, key=lambda t: t.value)
            if not types:
                return []
        limit = check_limit(limit)
        sql = self._uow.sql

        def build(**kwargs: Any) -> Statement:
            return sql.record_list(
                now=now, user_id=user_id, agent_id=agent_id, thread_id=thread_id, record_types=types, **kwargs
            )

        return self._filtered(build, self._uow.codec.record, metadata_filter, limit)


# --- links -----------------------------------------------------------------------------------------


class SqlLinkRepository(SqlRepository, LinkRepository):
    __slots__ = ()

    def add(self, link: RecordLink) -> None:
        if link.source_id == link.target_id:
            raise SelfLinkError("A memory cannot be linked to itself.")
        uow = self._uow
        row = uow.fetch_one(uow.sql.link_check_add(link))
        if _count(row, 0) == 0:
            raise RecordNotFoundError(f"No memory record with id {link.source_id!r}.")
        if _count(row, 1) == 0:
            raise RecordNotFoundError(f"No memory record with id {link.target_id!r}.")
        if _count(row, 2):
            raise DuplicateIdError(f"A link with id {link.id!r} already exists.")
        if _count(row, 3):
            raise LinkExistsError(
                f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} already exists."
            )
        uow.run(uow.sql.link_insert(link), missing=RecordNotFoundError)

    def _one(self, statement: Statement) -> RecordLink | None:
        row = self._uow.fetch_one(statement)
        return None if row is None else self._uow.codec.link(row)

    def _many(self, statement: Statement) -> builtins.list[RecordLink]:
        decode = self._uow.codec.link
        return [decode(row) for row in self._uow.fetch_all(statement)]

    def get(self, link_id: str) -> RecordLink | None:
        return self._one(self._uow.sql.link_get(link_id))

    def find(self, source_id: str, target_id: str, relation_type: str) -> RecordLink | None:
        return self._one(self._uow.sql.link_find(source_id, target_id, relation_type))

    def between(self, a: str, b: str) -> builtins.list[RecordLink]:
        return self._many(self._uow.sql.link_between(a, b))

    def touching(self, record_id: str) -> builtins.list[RecordLink]:
        return self._many(self._uow.sql.link_touching(record_id))

    def update(self, link: RecordLink) -> None:
        uow = self._uow
        stored = uow.fetch_one(uow.sql.link_endpoints(link.id))
        if stored is None:
            raise LinkNotFoundError(f"No link with id {link.id!r}.")
        if tuple(stored) != (link.source_id, link.target_id):
            raise InvalidLinkError(f"Link {link.id!r} cannot change its endpoints.")
        other = uow.fetch_one(uow.sql.link_find_id(link.source_id, link.target_id, link.relation_type))
        if other is not None and other[0] != link.id:
            raise LinkExistsError(
                f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} "
                f"already exists ({other[0]})."
            )
        uow.run(uow.sql.link_update(link))

    def delete(self, link_id: str) -> bool:
        return self._uow.run(self._uow.sql.link_delete(link_id)) > 0

    def list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> builtins.list[RecordLink]:
        limit = check_limit(limit)
        return self._many(
            self._uow.sql.link_list(
                source_id=source_id, target_id=target_id, relation_type=relation_type, limit=limit
            )
        )


# --- summaries -------------------------------------------------------------------------------------


class SqlSummaryRepository(SqlRepository, SummaryRepository):
    __slots__ = ()

    def add(self, summary: ThreadSummary) -> None:
        uow = self._uow
        row = uow.fetch_one(uow.sql.summary_check_add(summary))
        if _count(row, 0) == 0:
            raise ThreadNotFoundError(f"No thread with id {summary.thread_id!r}.")
        if _count(row, 1):
            raise DuplicateIdError(f"A summary with id {summary.id!r} already exists.")
        if _count(row, 2):
            raise ConflictError(
                f"Thread {summary.thread_id!r} already has summary revision {summary.revision}; "
                "it was refreshed or invalidated concurrently."
            )
        # The unique (thread, revision) key is the compare-and-set: a concurrent writer of the
        # same revision fails here with ConflictError.
        uow.run(uow.sql.summary_insert(summary), missing=ThreadNotFoundError)

    def latest(self, thread_id: str, *, valid_only: bool = False) -> ThreadSummary | None:
        row = self._uow.fetch_one(self._uow.sql.summary_latest(thread_id, valid_only=valid_only))
        return None if row is None else self._uow.codec.summary(row)

    def list_for_thread(self, thread_id: str) -> list[ThreadSummary]:
        decode = self._uow.codec.summary
        return [decode(row) for row in self._uow.fetch_all(self._uow.sql.summary_list_for_thread(thread_id))]

    def invalidate_covering(self, thread_id: str, seq: int) -> int:
        return self._uow.run(self._uow.sql.summary_invalidate_covering(thread_id, seq))

    def prune(self, thread_id: str, *, keep: int) -> int:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValidationError("keep must be a non-negative integer.")
        return self._uow.run(self._uow.sql.summary_prune(thread_id, keep))


# --- extraction jobs -------------------------------------------------------------------------------


class SqlJobRepository(SqlRepository, JobRepository):
    __slots__ = ()

    def add(self, job: ExtractionJob) -> None:
        try:
            self._uow.run(self._uow.sql.job_insert(job), missing=ThreadNotFoundError)
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {job.thread_id!r}.") from exc.__cause__
        except DuplicateIdError as exc:
            raise DuplicateIdError(f"A job with id {job.id!r} already exists.") from exc.__cause__

    def _get(self, job_id: str) -> ExtractionJob | None:
        row = self._uow.fetch_one(self._uow.sql.job_get(job_id))
        return None if row is None else self._uow.codec.job(row)

    def pending(self, now: datetime, *, limit: int | None = None) -> list[ExtractionJob]:
        limit = check_limit(limit)
        decode = self._uow.codec.job
        return [decode(row) for row in self._uow.fetch_all(self._uow.sql.job_pending(check_time(now, "now"), limit=limit))]

    def list(self, *, thread_id: str | None = None, limit: int | None = None) -> list[ExtractionJob]:
        return self._listing(failed=False, thread_id=thread_id, limit=limit)

    # builtins.list: in this class body, `list` names the list() method.
    def _listing(self, *, failed: bool, thread_id: str | None, limit: int | None) -> builtins.list[ExtractionJob]:
        limit = check_limit(limit)
        if thread_id is not None:
            thread_id = check_id(thread_id, "thread_id")
        sql = self._uow.sql
        build = sql.job_failed if failed else sql.job_list
        decode = self._uow.codec.job
        return [decode(row) for row in self._uow.fetch_all(build(thread_id=thread_id, limit=limit))]

    def postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool = False
    ) -> bool:
        # Both checks before any statement: a refused reason or time writes nothing.
        reason = check_failure_reason(reason)
        until = check_time(until, "until")
        statement = self._uow.sql.job_postpone(
            job_id, owner=owner, until=until, reason=reason, refund_attempt=refund_attempt
        )
        return self._uow.run(statement) > 0

    def claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> ExtractionJob | None:
        # A conditional UPDATE, then a read in the same transaction.
        statement = self._uow.sql.job_claim(
            job_id, owner=owner, until=check_time(until, "until"), now=check_time(now, "now")
        )
        if self._uow.run(statement) == 0:
            return None
        return self._get(job_id)

    def renew(self, job_id: str, *, owner: str, until: datetime) -> bool:
        statement = self._uow.sql.job_renew(job_id, owner=owner, until=check_time(until, "until"))
        return self._uow.run(statement) > 0

    def release(self, job_id: str, *, owner: str, until: datetime | None = None) -> bool:
        until = None if until is None else check_time(until, "until")
        return self._uow.run(self._uow.sql.job_release(job_id, owner=owner, until=until)) > 0

    def fail(self, job_id: str, *, reason: str, at: datetime) -> bool:
        # Both checks before any statement: a refused reason or time writes nothing.
        reason = check_failure_reason(reason)
        at = check_time(at, "at")
        return self._uow.run(self._uow.sql.job_fail(job_id, reason=reason, at=at)) > 0

    # builtins.list: in this class body, `list` names the list() method.
    def failed(self, *, thread_id: str | None = None, limit: int | None = None) -> builtins.list[ExtractionJob]:
        return self._listing(failed=True, thread_id=thread_id, limit=limit)

    def retry(self, job_id: str) -> ExtractionJob | None:
        if self._uow.run(self._uow.sql.job_retry(job_id)) == 0:
            return None
        return self._get(job_id)

    def delete(self, job_id: str) -> bool:
        return self._uow.run(self._uow.sql.job_delete(job_id)) > 0


# --- settings --------------------------------------------------------------------------------------


class SqlImageRepository(SqlRepository, ImageRepository):
    __slots__ = ()

    def add(self, image: StoredImage) -> None:
        if image.data is None:
            raise ValidationError("image must be raw bytes.")
        uow = self._uow
        row = uow.fetch_one(uow.sql.record_scope(image.record_id))
        if row is None or row[0] != RecordType.IMAGE.value:
            raise RecordNotFoundError(f"No image record with id {image.record_id!r}.")
        if uow.fetch_one(uow.sql.image_get_many([image.record_id], include_bytes=False)) is not None:
            raise DuplicateIdError(f"The image {image.record_id!r} already has its bytes.")
        uow.run(uow.sql.image_insert(image))

    def replace(self, image: StoredImage) -> None:
        if image.data is None:
            raise ValidationError("image must be raw bytes.")
        uow = self._uow
        if not uow.run(uow.sql.image_replace(image)):
            raise RecordNotFoundError(f"No image with id {image.record_id!r}.")

    def _decode(self, row: Sequence[Any]) -> StoredImage:
        decode = self._uow.dialect
        position = row[4]
        return StoredImage(
            record_id=decode.decode_text(row[0]) or "",
            mime_type=ImageMimeType(decode.decode_text(row[1])),
            data=decode.decode_bytes(row[2]),
            message_id=decode.decode_text(row[3]),
            position=None if position is None else int(position),
        )

    def get_many(self, record_ids: Sequence[str], *, include_bytes: bool = False) -> dict[str, StoredImage]:
        if isinstance(record_ids, str):
            raise ValidationError("record_ids must be a sequence of ids, not a string.")
        uow = self._uow
        ids = list(dict.fromkeys(record_ids))
        found: dict[str, StoredImage] = {}
        for batch in id_batches(ids, uow.dialect.id_batch_bytes):
            for row in uow.fetch_all(uow.sql.image_get_many(batch, include_bytes=include_bytes)):
                image = self._decode(row)
                found[image.record_id] = image
        return {rid: found[rid] for rid in ids if rid in found}

    def of_messages(self, message_ids: Sequence[str]) -> dict[str, builtins.list[StoredImage]]:
        if isinstance(message_ids, str):
            raise ValidationError("message_ids must be a sequence of ids, not a string.")
        uow = self._uow
        ids = list(dict.fromkeys(message_ids))
        found: dict[str, list[StoredImage]] = {}
        for batch in id_batches(ids, uow.dialect.id_batch_bytes):
            for row in uow.fetch_all(uow.sql.image_of_messages(batch)):
                image = self._decode(row)
                found.setdefault(image.message_id or "", []).append(image)
        return {mid: sorted(found[mid], key=lambda i: i.position or 0) for mid in ids if mid in found}


class SqlSettingsRepository(SqlRepository, SettingsRepository):
    __slots__ = ()

    def get(self, key: str) -> Any:
        row = self._uow.fetch_one(self._uow.sql.setting_get(key))
        if row is None or row[0] is None:
            return None
        return json.loads(self._uow.dialect.decode_text(row[0]) or "null")

    def set(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise ValidationError("a setting key must be a non-empty string.")
        uow = self._uow
        if value is None:
            uow.run(uow.sql.setting_delete(key))
            return
        # The same JSON checks as metadata (finite numbers, string keys, bounded depth).
        plain = check_metadata({"value": value}) or {}
        text = json.dumps(plain["value"], ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        statement = uow.sql.setting_set(key, text)
        try:
            uow.run(statement)
        except DuplicateIdError:
            # Two upserts inserting the same new key at once: the loser's row exists now.
            uow.run(statement)
