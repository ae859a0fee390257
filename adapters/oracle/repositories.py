"""Adapters layer (Oracle): the repositories behind a unit of work (threads, messages, records, links,
summaries, settings, extraction jobs).

Every method runs its statements (built in :mod:`.statements`) on the unit of work's connection,
inside its transaction. Behaviour follows the port docstrings in ``domain/ports.py`` exactly; the
contract suite is the judge. Where the contract names an error that the database would report
ambiguously (a link's id or its (source, target, type); a summary's id or its revision), one
query checks first; elsewhere the named constraints report it (a taken id, an unknown thread),
translated by :mod:`.errors`. Writes of more than one statement (a record and its chunk, a batch)
run inside :meth:`OracleUnitOfWork.atomic`, so a failure leaves nothing behind.

Listing with a metadata filter reads pages newest first without the metadata predicate and keeps
the rows :func:`palimpsest.domain.metadata_filter.metadata_matches` accepts, until ``limit`` of
them are found or the rows run out: one filter semantics, defined once (D7).
"""

from __future__ import annotations

import array
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
from palimpsest.domain.metadata_filter import metadata_matches, validate_metadata_filter
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
    check_id,
    check_metadata,
    check_optional_id,
    check_time,
    keyword_text,
    parse_record_type,
    searched_text,
    speaker_of,
)
from palimpsest.domain.ports import (
    UNBOUNDED_LIMIT,
    JobRepository,
    LinkRepository,
    MessageRepository,
    RecordRepository,
    SettingsRepository,
    SummaryRepository,
    ThreadRepository,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from . import statements as st
from .codec import (
    decode_json,
    decode_text,
    job_from_row,
    link_from_row,
    message_from_row,
    record_from_row,
    summary_from_row,
    thread_from_row,
)
from .errors import constraint_base, error_info
from .sql import Statement

if TYPE_CHECKING:
    from .unit_of_work import OracleUnitOfWork

__all__ = [
    "OracleJobRepository",
    "OracleLinkRepository",
    "OracleMessageRepository",
    "OracleRecordRepository",
    "OracleSettingsRepository",
    "OracleSummaryRepository",
    "OracleThreadRepository",
]

ScopeArg = str | None | NotSetType
Vector = Sequence[float]
T = TypeVar("T", Thread, MemoryRecord)

MIN_PAGE: Final = 100
MAX_PAGE: Final = 1_000
ID_BATCH_BYTES: Final = 4_000
"""An id list travels as one JSON text bind, the argument of ``JSON_TABLE``. A VARCHAR2 value in a
SQL expression holds at most 4000 bytes unless the database runs with ``MAX_STRING_SIZE =
EXTENDED`` (a longer bind fails, ORA-01460/ORA-01461), so a batch's JSON text stays within 4000."""


def _check_limit(limit: int | None, what: str = "limit", *, minimum: int = 1) -> int | None:
    """A validated row count; one of at least :data:`UNBOUNDED_LIMIT` means every row (``None``),
    since no Oracle integer bind holds a number near 2**63."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < minimum:
        raise ValidationError(f"{what} must be an integer of at least {minimum}, or None.")
    return None if limit >= UNBOUNDED_LIMIT else limit


def _scope_arg(value: ScopeArg, what: str) -> ScopeArg:
    return value if isinstance(value, NotSetType) else check_optional_id(value, what)


def _id_batches(ids: Sequence[str]) -> list[list[str]]:
    """``ids`` cut into lists whose JSON text stays under :data:`ID_BATCH_BYTES`."""
    batches: list[list[str]] = []
    current: list[str] = []
    size = 2
    for item in ids:
        cost = len(json.dumps(item, ensure_ascii=False).encode("utf-8")) + 1
        if current and size + cost > ID_BATCH_BYTES:
            batches.append(current)
            current, size = [], 2
        current.append(item)
        size += cost
    if current:
        batches.append(current)
    return batches


def _count(row: tuple[Any, ...] | None, index: int) -> int:
    return int(row[index] or 0) if row is not None else 0


class _Repository:
    __slots__ = ("_uow",)

    def __init__(self, uow: OracleUnitOfWork) -> None:
        self._uow = uow

    @property
    def _names(self) -> Any:
        return self._uow.names

    def _violated(self, exc: BaseException) -> str | None:
        """The base name of the constraint behind a translated error, if the driver named one."""
        cause = exc.__cause__
        return None if cause is None else constraint_base(error_info(cause).message, self._names)

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
        if limit is None:
            entities = [decode(row) for row in uow.fetch_all(build(limit=None))]
            return [e for e in entities if metadata_matches(e.metadata, flt)]
        page = min(max(limit, MIN_PAGE), MAX_PAGE)
        found: list[T] = []
        seen: set[str] = set()
        after: st.Keyset | None = None
        while len(found) < limit:
            rows = uow.fetch_all(build(page=page, after=after))
            fresh = 0
            for row in rows:
                entity = decode(row)
                after = st.Keyset(entity.created_at, entity.id)
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


class OracleThreadRepository(_Repository, ThreadRepository):
    __slots__ = ()

    def add(self, thread: Thread) -> None:
        try:
            self._uow.run(st.thread_insert(self._names, thread))
        except DuplicateIdError as exc:
            raise DuplicateIdError(f"A thread with id {thread.id!r} already exists.") from exc.__cause__

    def get(self, thread_id: str) -> Thread | None:
        row = self._uow.fetch_one(st.thread_get(self._names, thread_id))
        return None if row is None else thread_from_row(row)

    def update(self, thread: Thread) -> None:
        if self._uow.run(st.thread_update(self._names, thread)) == 0:
            raise ThreadNotFoundError(f"No thread with id {thread.id!r}.")

    def delete(self, thread_id: str) -> bool:
        # The chunks of its messages and thread-scoped records first (they carry the thread id);
        # ON DELETE CASCADE then removes messages, records (and their links), summaries and jobs.
        uow = self._uow
        with uow.atomic():
            uow.run(st.chunks_delete_for_thread(self._names, thread_id))
            return uow.run(st.thread_delete(self._names, thread_id)) > 0

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
        limit = _check_limit(limit)

        def build(**kwargs: Any) -> Statement:
            return st.thread_list(self._names, user_id=user_id, agent_id=agent_id, **kwargs)

        return self._filtered(build, thread_from_row, metadata_filter, limit)


# --- messages --------------------------------------------------------------------------------------


Turn = tuple[str, str | None]
"""A message as the message after it reads it: (content, speaker)."""


def _turn(content: Any, metadata: Any) -> Turn:
    """The turn of a fetched (content, metadata) pair."""
    return decode_text(content) or "", speaker_of(decode_json(metadata))


def _lead(turn: Turn) -> str | None:
    """What the message after ``turn`` reads of it: its searched text when it has a speaker."""
    return searched_text(*turn) if turn[1] else None


def _keyword_text(turn: Turn, before: Turn | None) -> str:
    """The chunk text of a message: the :func:`keyword_text` of its turn after ``before``."""
    return keyword_text(*turn) if before is None else keyword_text(*turn, *before)


def _own_turn(message: Message) -> Turn:
    return message.content, message.speaker


def _message_chunk(names: Any, message: Message, vector: array.array[float] | None, text: str) -> Statement:
    return st.chunk_insert(
        names,
        source_id=message.id,
        record_type=RecordType.MESSAGE,
        content=text,
        thread_id=message.thread_id,
        user_id=message.user_id,
        agent_id=message.agent_id,
        status=RecordStatus.VALID,
        expires_at=message.expires_at,
        created_at=message.created_at,
        vector=vector,
    )


class OracleMessageRepository(_Repository, MessageRepository):
    """A message's chunk text is its keyword text (:func:`keyword_text`), which reads the stored
    message just before it in its thread (by seq, expired or not). Every write keeps it current
    in the same transaction: an added message reads the one before it, an edited one rewrites
    the text of the message after it when what that one reads of it changed, and a delete or
    a purge rewrites the text of the message that followed (``chunks.update_text``). Messages
    are appended in seq order: one added below a stored message leaves that message's text."""

    __slots__ = ()

    def _before(self, thread_id: str, seq: int) -> Turn | None:
        """The thread's stored message just before ``seq``, or ``None``."""
        row = self._uow.fetch_one(st.message_before(self._names, thread_id, seq))
        return None if row is None else _turn(row[0], row[1])

    def _refresh_after(
        self, thread_id: str, seq: int, before: Turn | None | NotSetType = NOTSET
    ) -> int | None:
        """Rewrite the chunk text of the thread's message just after ``seq``, read after
        ``before`` (NOTSET: the stored message now just before it); returns that message's seq,
        ``None`` when none follows. One without a speaker reads nothing before it: left as is."""
        row = self._uow.fetch_one(st.message_after(self._names, thread_id, seq))
        if row is None:
            return None
        following, turn = int(row[1]), _turn(row[2], row[3])
        if turn[1] is None:
            return following
        if isinstance(before, NotSetType):
            before = self._before(thread_id, following)
        self._uow.run(st.chunk_text_update(self._names, row[0], _keyword_text(turn, before)))
        return following

    def add(self, message: Message, *, embedding: Vector | None = None) -> None:
        uow = self._uow
        vector = None if embedding is None else uow.encode_vector(embedding)
        try:
            with uow.atomic():
                if vector is not None:
                    uow.fix_dimension(len(vector))
                uow.run(st.message_insert(self._names, message), missing=ThreadNotFoundError)
                before = self._before(message.thread_id, message.seq) if message.speaker else None
                text = _keyword_text(_own_turn(message), before)
                uow.run(_message_chunk(self._names, message, vector, text))
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {message.thread_id!r}.") from exc.__cause__
        except DuplicateIdError as exc:
            base = self._violated(exc)
            if base == "MESSAGE_PK":
                raise DuplicateIdError(f"A message with id {message.id!r} already exists.") from exc.__cause__
            if base == "MESSAGE_THREAD_ORDER_UQ":
                raise DuplicateIdError(
                    f"Thread {message.thread_id!r} already has a message with seq {message.seq}."
                ) from exc.__cause__
            raise

    def add_many(
        self, messages: Sequence[Message], embeddings: Sequence[Vector | None] | None = None
    ) -> None:
        """One ``executemany`` per statement for the whole batch, all or nothing; a message reads
        the batch's message before it in its thread, the first of a thread the stored one (one
        query per thread, when that first message has a speaker)."""
        if not messages:
            return
        vectors = list(embeddings) if embeddings is not None else [None] * len(messages)
        if len(vectors) != len(messages):
            raise ValidationError("add_many needs one embedding (or None) per message.")
        uow = self._uow
        present = [i for i, v in enumerate(vectors) if v is not None]
        encoded: list[array.array[float] | None] = [None] * len(messages)
        for i, vector in zip(present, uow.encode_vectors([vectors[i] for i in present])):  # type: ignore[misc]
            encoded[i] = vector
        ids = [m.id for m in messages]
        if len(set(ids)) != len(ids):
            raise DuplicateIdError("A batch cannot hold the same message id twice.")
        slots = [(m.thread_id, m.seq) for m in messages]
        if len(set(slots)) != len(slots):
            raise DuplicateIdError("A batch cannot hold two messages with the same thread and seq.")
        names = self._names
        try:
            with uow.atomic():
                first = next((v for v in encoded if v is not None), None)
                if first is not None:
                    uow.fix_dimension(len(first))
                uow.run_many([st.message_insert(names, m) for m in messages], missing=ThreadNotFoundError)
                texts: dict[str, str] = {}
                previous: Message | None = None
                for m in sorted(messages, key=lambda m: (m.thread_id, m.seq)):
                    if previous is not None and previous.thread_id == m.thread_id:
                        before: Turn | None = _own_turn(previous)
                    else:
                        before = self._before(m.thread_id, m.seq) if m.speaker else None
                    texts[m.id] = _keyword_text(_own_turn(m), before)
                    previous = m
                with_vector = [
                    _message_chunk(names, m, v, texts[m.id])
                    for m, v in zip(messages, encoded)
                    if v is not None
                ]
                without = [
                    _message_chunk(names, m, None, texts[m.id])
                    for m, v in zip(messages, encoded)
                    if v is None
                ]
                uow.run_many(with_vector)
                uow.run_many(without)
        except ThreadNotFoundError as exc:
            raise self._missing_thread(messages) from exc.__cause__

    def _missing_thread(self, messages: Sequence[Message]) -> ThreadNotFoundError:
        wanted = list(dict.fromkeys(m.thread_id for m in messages))
        found: set[str] = set()
        for batch in _id_batches(wanted):
            found.update(row[0] for row in self._uow.fetch_all(st.threads_existing(self._names, batch)))
        missing = [t for t in wanted if t not in found]
        if missing:
            return ThreadNotFoundError(f"No thread with id {missing[0]!r}.")
        return ThreadNotFoundError("A thread of the batch does not exist.")

    def get(self, message_id: str, *, now: datetime) -> Message | None:
        row = self._uow.fetch_one(st.message_get(self._names, message_id, check_time(now, "now")))
        return None if row is None else message_from_row(row)

    def last_seq(self, thread_id: str) -> int:
        row = self._uow.fetch_one(st.message_last_seq(self._names, thread_id))
        return int(row[0]) if row is not None and row[0] is not None else 0

    def vectors(self, thread_id: str, message_ids: Sequence[str]) -> dict[str, Vector]:
        if not message_ids:
            return {}
        rows = self._uow.fetch_all(st.message_vectors(self._names, thread_id, message_ids))
        return {row[0]: row[1] if isinstance(row[1], array.array) else tuple(map(float, row[1])) for row in rows}

    def list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> list[Message]:
        last_n = _check_limit(last_n, "last_n", minimum=0)
        if last_n == 0:
            return []
        statement = st.message_list_for_thread(
            self._names,
            thread_id,
            now=check_time(now, "now"),
            start_seq=start_seq,
            end_seq=end_seq,
            last_n=last_n,
        )
        return [message_from_row(row) for row in self._uow.fetch_all(statement)]

    def update(self, message: Message, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        uow = self._uow
        vector: array.array[float] | None | NotSetType = NOTSET if isinstance(embedding, NotSetType) else None
        if not isinstance(embedding, NotSetType) and embedding is not None:
            vector = uow.encode_vector(embedding)
        place = uow.fetch_one(st.message_place(self._names, message.id, with_text=True))
        if place is None:
            raise MessageNotFoundError(f"No message with id {message.id!r}.")
        if (message.thread_id, message.seq) != (place[0], int(place[1])):
            # (thread, seq) is a message's place in its conversation, not an editable field.
            raise ValidationError(f"Message {message.id!r} cannot change its thread or seq.")
        turn = _own_turn(message)
        with uow.atomic():
            if isinstance(vector, array.array):
                uow.fix_dimension(len(vector))
            uow.run(st.message_update(self._names, message))
            before = self._before(message.thread_id, message.seq) if message.speaker else None
            text = _keyword_text(turn, before)
            chunk = st.chunk_update(
                self._names,
                source_id=message.id,
                record_type=RecordType.MESSAGE,
                content=text,
                user_id=message.user_id,
                agent_id=message.agent_id,
                status=RecordStatus.VALID,
                expires_at=message.expires_at,
                created_at=message.created_at,
                vector=vector,
            )
            if uow.run(chunk) == 0:  # no chunk (never expected): write it now
                uow.run(
                    _message_chunk(
                        self._names, message, vector if isinstance(vector, array.array) else None, text
                    )
                )
            if _lead(turn) != _lead(_turn(place[2], place[3])):
                self._refresh_after(message.thread_id, message.seq, turn)

    def delete(self, message_id: str) -> bool:
        uow = self._uow
        place = uow.fetch_one(st.message_place(self._names, message_id))
        if place is None:
            return False
        with uow.atomic():
            if uow.run(st.message_delete(self._names, message_id)) == 0:
                return False
            uow.run(st.chunk_delete(self._names, message_id, message=True))
            self._refresh_after(place[0], int(place[1]))
            return True

    def purge_expired(self, now: datetime) -> list[tuple[str, int]]:
        """After the deletes, the survivor following each run of purged seqs of a thread gets its
        chunk text anew (one pass per thread, in seq order)."""
        uow = self._uow
        rows = uow.fetch_all(st.messages_expired(self._names, check_time(now, "now")))
        if not rows:
            return []
        names = self._names
        purged = sorted((row[1], int(row[2])) for row in rows)
        with uow.atomic():
            uow.run_many([st.chunk_delete(names, row[0], message=True) for row in rows])
            uow.run_many([st.message_delete(names, row[0]) for row in rows])
            thread: str | None = None
            follower: int | None = None  # the seq of the thread's last follower rewritten
            for thread_id, seq in purged:
                if thread_id == thread and (follower is None or seq < follower):
                    continue  # nothing follows, or the same follower as the purged seq before
                thread, follower = thread_id, self._refresh_after(thread_id, seq)
        return purged


# --- memory records --------------------------------------------------------------------------------


def _record_chunk(names: Any, record: MemoryRecord, vector: array.array[float] | None) -> Statement:
    return st.chunk_insert(
        names,
        source_id=record.id,
        record_type=record.record_type,
        content=record.content,
        thread_id=record.thread_id,
        user_id=record.user_id,
        agent_id=record.agent_id,
        status=record.status,
        expires_at=record.expires_at,
        created_at=record.created_at,
        vector=vector,
    )


class OracleRecordRepository(_Repository, RecordRepository):
    __slots__ = ()

    def add(self, record: MemoryRecord, *, embedding: Vector | None = None) -> None:
        uow = self._uow
        vector = None if embedding is None else uow.encode_vector(embedding)
        try:
            with uow.atomic():
                if vector is not None:
                    uow.fix_dimension(len(vector))
                uow.run(st.record_insert(self._names, record), missing=ThreadNotFoundError)
                uow.run(_record_chunk(self._names, record, vector))
        except DuplicateIdError as exc:
            raise DuplicateIdError(
                f"A memory record with id {record.id!r} already exists."
            ) from exc.__cause__
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {record.thread_id!r}.") from exc.__cause__

    def get(self, record_id: str, *, now: datetime | None = None) -> MemoryRecord | None:
        if now is not None:
            now = check_time(now, "now")
        row = self._uow.fetch_one(st.record_get(self._names, record_id, now=now))
        return None if row is None else record_from_row(row)

    def get_many(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if isinstance(record_ids, str):
            raise ValidationError("record_ids must be a sequence of ids, not a string.")
        ids = list(dict.fromkeys(record_ids))
        found: dict[str, MemoryRecord] = {}
        for batch in _id_batches(ids):
            for row in self._uow.fetch_all(st.record_get_many(self._names, batch)):
                record = record_from_row(row)
                found[record.id] = record
        return {rid: found[rid] for rid in ids if rid in found}

    def update(self, record: MemoryRecord, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        uow = self._uow
        vector: array.array[float] | None | NotSetType = NOTSET if isinstance(embedding, NotSetType) else None
        if not isinstance(embedding, NotSetType) and embedding is not None:
            vector = uow.encode_vector(embedding)
        stored = uow.fetch_one(st.record_scope(self._names, record.id))
        if stored is None:
            raise RecordNotFoundError(f"No memory record with id {record.id!r}.")
        wanted = (record.record_type.value, record.user_id, record.agent_id, record.thread_id)
        if tuple(stored) != wanted:
            raise ValidationError(
                f"Memory record {record.id!r} cannot change its type or scope "
                f"(stored {tuple(stored)!r}, got {wanted!r})."
            )
        with uow.atomic():
            if isinstance(vector, array.array):
                uow.fix_dimension(len(vector))
            uow.run(st.record_update(self._names, record))
            chunk = st.chunk_update(
                self._names,
                source_id=record.id,
                record_type=record.record_type,
                content=record.content,
                user_id=record.user_id,
                agent_id=record.agent_id,
                status=record.status,
                expires_at=record.expires_at,
                created_at=record.created_at,
                vector=vector,
            )
            if uow.run(chunk) == 0:  # no chunk (never expected): write it now
                uow.run(
                    _record_chunk(self._names, record, vector if isinstance(vector, array.array) else None)
                )

    def delete(self, record_id: str) -> bool:
        # Links touching the record go with it (ON DELETE CASCADE); its chunk is deleted here.
        uow = self._uow
        with uow.atomic():
            if uow.run(st.record_delete(self._names, record_id)) == 0:
                return False
            uow.run(st.chunk_delete(self._names, record_id, message=False))
            return True

    def expired_ids(self, now: datetime, *, limit: int | None = None) -> list[str]:
        limit = _check_limit(limit, minimum=0)
        if limit == 0:
            return []
        rows = self._uow.fetch_all(st.record_expired_ids(self._names, check_time(now, "now"), limit=limit))
        return [row[0] for row in rows]

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
        limit = _check_limit(limit)

        def build(**kwargs: Any) -> Statement:
            return st.record_list(
                self._names,
                now=now,
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                record_types=types,
                **kwargs,
            )

        return self._filtered(build, record_from_row, metadata_filter, limit)


# --- links -----------------------------------------------------------------------------------------


class OracleLinkRepository(_Repository, LinkRepository):
    __slots__ = ()

    def add(self, link: RecordLink) -> None:
        if link.source_id == link.target_id:
            raise SelfLinkError("A memory cannot be linked to itself.")
        uow = self._uow
        row = uow.fetch_one(st.link_check_add(self._names, link))
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
        uow.run(st.link_insert(self._names, link), missing=RecordNotFoundError)

    def _one(self, statement: Statement) -> RecordLink | None:
        row = self._uow.fetch_one(statement)
        return None if row is None else link_from_row(row)

    def _many(self, statement: Statement) -> list[RecordLink]:
        return [link_from_row(row) for row in self._uow.fetch_all(statement)]

    def get(self, link_id: str) -> RecordLink | None:
        return self._one(st.link_get(self._names, link_id))

    def find(self, source_id: str, target_id: str, relation_type: str) -> RecordLink | None:
        return self._one(st.link_find(self._names, source_id, target_id, relation_type))

    def between(self, a: str, b: str) -> list[RecordLink]:
        return self._many(st.link_between(self._names, a, b))

    def touching(self, record_id: str) -> list[RecordLink]:
        return self._many(st.link_touching(self._names, record_id))

    def update(self, link: RecordLink) -> None:
        uow = self._uow
        stored = uow.fetch_one(st.link_endpoints(self._names, link.id))
        if stored is None:
            raise LinkNotFoundError(f"No link with id {link.id!r}.")
        if tuple(stored) != (link.source_id, link.target_id):
            raise InvalidLinkError(f"Link {link.id!r} cannot change its endpoints.")
        other = uow.fetch_one(
            st.link_find_id(self._names, link.source_id, link.target_id, link.relation_type)
        )
        if other is not None and other[0] != link.id:
            raise LinkExistsError(
                f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} "
                f"already exists ({other[0]})."
            )
        uow.run(st.link_update(self._names, link))

    def delete(self, link_id: str) -> bool:
        return self._uow.run(st.link_delete(self._names, link_id)) > 0

    def list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[RecordLink]:
        limit = _check_limit(limit)
        return self._many(
            st.link_list(
                self._names,
                source_id=source_id,
                target_id=target_id,
                relation_type=relation_type,
                limit=limit,
            )
        )


# --- summaries -------------------------------------------------------------------------------------


class OracleSummaryRepository(_Repository, SummaryRepository):
    __slots__ = ()

    def add(self, summary: ThreadSummary) -> None:
        uow = self._uow
        row = uow.fetch_one(st.summary_check_add(self._names, summary))
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
        # same revision fails here with ConflictError (THREAD_SUMMARY_REVISION_UQ).
        uow.run(st.summary_insert(self._names, summary), missing=ThreadNotFoundError)

    def latest(self, thread_id: str, *, valid_only: bool = False) -> ThreadSummary | None:
        row = self._uow.fetch_one(st.summary_latest(self._names, thread_id, valid_only=valid_only))
        return None if row is None else summary_from_row(row)

    def list_for_thread(self, thread_id: str) -> list[ThreadSummary]:
        rows = self._uow.fetch_all(st.summary_list_for_thread(self._names, thread_id))
        return [summary_from_row(row) for row in rows]

    def invalidate_covering(self, thread_id: str, seq: int) -> int:
        return self._uow.run(st.summary_invalidate_covering(self._names, thread_id, seq))

    def prune(self, thread_id: str, *, keep: int) -> int:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValidationError("keep must be a non-negative integer.")
        return self._uow.run(st.summary_prune(self._names, thread_id, keep))


# --- extraction jobs -------------------------------------------------------------------------------


class OracleJobRepository(_Repository, JobRepository):
    __slots__ = ()

    def add(self, job: ExtractionJob) -> None:
        try:
            self._uow.run(st.job_insert(self._names, job), missing=ThreadNotFoundError)
        except ThreadNotFoundError as exc:
            raise ThreadNotFoundError(f"No thread with id {job.thread_id!r}.") from exc.__cause__
        except DuplicateIdError as exc:
            raise DuplicateIdError(f"A job with id {job.id!r} already exists.") from exc.__cause__

    def pending(self, now: datetime, *, limit: int | None = None) -> list[ExtractionJob]:
        limit = _check_limit(limit)
        rows = self._uow.fetch_all(st.job_pending(self._names, check_time(now, "now"), limit=limit))
        return [job_from_row(row) for row in rows]

    def list(self, *, thread_id: str | None = None, limit: int | None = None) -> list[ExtractionJob]:
        return self._listing(st.job_list, thread_id, limit)

    # builtins.list: in this class body, `list` names the list() method.
    def _listing(self, build: Any, thread_id: str | None, limit: int | None) -> builtins.list[ExtractionJob]:
        """Run a job listing (:func:`~.statements.job_list` or ``job_failed``) with checked arguments."""
        limit = _check_limit(limit)
        if thread_id is not None:
            thread_id = check_id(thread_id, "thread_id")
        rows = self._uow.fetch_all(build(self._names, thread_id=thread_id, limit=limit))
        return [job_from_row(row) for row in rows]

    def postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool = False
    ) -> bool:
        # Both checks before any statement: a refused reason or time writes nothing.
        reason = check_failure_reason(reason)
        until = check_time(until, "until")
        statement = st.job_postpone(
            self._names, job_id, owner=owner, until=until, reason=reason, refund_attempt=refund_attempt
        )
        return self._uow.run(statement) > 0

    def claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> ExtractionJob | None:
        uow = self._uow
        statement = st.job_claim(
            self._names, job_id, owner=owner, until=check_time(until, "until"), now=check_time(now, "now")
        )
        if uow.run(statement) == 0:
            return None
        row = uow.fetch_one(st.job_get(self._names, job_id))
        return None if row is None else job_from_row(row)

    def renew(self, job_id: str, *, owner: str, until: datetime) -> bool:
        statement = st.job_renew(self._names, job_id, owner=owner, until=check_time(until, "until"))
        return self._uow.run(statement) > 0

    def release(self, job_id: str, *, owner: str, until: datetime | None = None) -> bool:
        until = None if until is None else check_time(until, "until")
        return self._uow.run(st.job_release(self._names, job_id, owner=owner, until=until)) > 0

    def fail(self, job_id: str, *, reason: str, at: datetime) -> bool:
        # Both checks before any statement: a refused reason or time writes nothing.
        reason = check_failure_reason(reason)
        at = check_time(at, "at")
        return self._uow.run(st.job_fail(self._names, job_id, reason=reason, at=at)) > 0

    # builtins.list: in this class body, `list` names the list() method.
    def failed(self, *, thread_id: str | None = None, limit: int | None = None) -> builtins.list[ExtractionJob]:
        return self._listing(st.job_failed, thread_id, limit)

    def retry(self, job_id: str) -> ExtractionJob | None:
        # A conditional UPDATE, then a read in the same transaction, as claim() does.
        uow = self._uow
        if uow.run(st.job_retry(self._names, job_id)) == 0:
            return None
        row = uow.fetch_one(st.job_get(self._names, job_id))
        return None if row is None else job_from_row(row)

    def delete(self, job_id: str) -> bool:
        return self._uow.run(st.job_delete(self._names, job_id)) > 0


# --- settings --------------------------------------------------------------------------------------


class OracleSettingsRepository(_Repository, SettingsRepository):
    __slots__ = ()

    def get(self, key: str) -> Any:
        row = self._uow.fetch_one(st.setting_get(self._names, key))
        if row is None or row[0] is None:
            return None
        return json.loads(decode_text(row[0]) or "null")

    def set(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise ValidationError("a setting key must be a non-empty string.")
        uow = self._uow
        if value is None:
            uow.run(st.setting_delete(self._names, key))
            return
        # The same JSON checks as metadata (finite numbers, string keys, bounded depth).
        plain = check_metadata({"value": value}) or {}
        text = json.dumps(plain["value"], ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        statement = st.setting_set(self._names, key, text)
        try:
            uow.run(statement)
        except DuplicateIdError:
            # Two MERGEs inserting the same new key at once: the loser's row exists now.
            uow.run(statement)
