"""Embedded adapter: the SQLite repositories behind a unit of work (threads, messages, records, links).

Every method runs on the unit of work's connection inside its write transaction. Foreign keys
and unique constraints are the last line of defence; explicit existence checks come first so
that errors name exactly what is missing or taken.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import sys
from array import array
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

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
from palimpsest.domain.metadata_filter import validate_filter
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
    parse_record_type,
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

from .codec import (
    LINK_COLUMNS,
    MESSAGE_COLUMNS,
    RECORD_COLUMNS,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
    decode_time,
    encode_json,
    encode_time,
    link_from_row,
    message_from_row,
    record_from_row,
    summary_from_row,
    thread_from_row,
)
from .errors import translate

if TYPE_CHECKING:
    from .unit_of_work import SqliteUnitOfWork

__all__ = [
    "SqliteJobRepository",
    "SqliteLinkRepository",
    "SqliteMessageRepository",
    "SqliteRecordRepository",
    "SqliteSettingsRepository",
    "SqliteSummaryRepository",
    "SqliteThreadRepository",
]

ScopeArg = str | None | NotSetType
Vector = Sequence[float]


class _Where:
    """A growing list of SQL conditions with their parameters."""

    __slots__ = ("clauses", "params")

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def scope(self, column: str, value: ScopeArg, what: str) -> None:
        """Three-valued scope filter: NOTSET → none, None → unscoped rows, str → exact."""
        if value is NOTSET:
            return
        value = check_optional_id(value, what)
        if value is None:
            self.add(f"{column} IS NULL")
        else:
            self.add(f"{column} = ?", value)

    def metadata(self, column: str, flt: Mapping[str, Any] | None | NotSetType) -> None:
        if flt is NOTSET:
            return
        if flt is None:
            self.add(f"{column} IS NULL")
            return
        plain = validate_filter(flt)
        self.add(f"metadata_matches({column}, ?)", json.dumps(plain, separators=(",", ":")))

    def visible(self, column: str, now: datetime) -> None:
        self.add(f"({column} IS NULL OR {column} > ?)", encode_time(check_time(now, "now")))

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


def _check_limit(limit: int | None, what: str = "limit", *, minimum: int = 1) -> int | None:
    """A validated row count; one of at least :data:`UNBOUNDED_LIMIT` means every row (``None``),
    since no SQLite integer bind holds a number near 2**63."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < minimum:
        raise ValidationError(f"{what} must be an integer of at least {minimum}, or None.")
    return None if limit >= UNBOUNDED_LIMIT else limit


def _newest(
    conn: sqlite3.Connection, columns: str, table: str, where: _Where, order: Sequence[str], limit: int | None
) -> list[Any]:
    """Rows oldest first; with ``limit``, the newest ``limit`` of them (still oldest first)."""
    if limit is None:
        sql = f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {', '.join(order)}"
        return conn.execute(sql, where.params).fetchall()
    descending = ", ".join(f"{column} DESC" for column in order)
    sql = f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {descending} LIMIT ?"
    rows = conn.execute(sql, (*where.params, limit)).fetchall()
    rows.reverse()
    return rows


def _ids_json(ids: Sequence[str]) -> str:
    return json.dumps(list(ids))


class _Repository:
    __slots__ = ("_uow",)

    def __init__(self, uow: SqliteUnitOfWork) -> None:
        self._uow = uow

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._uow.connection()

    def _exists(self, table: str, column: str, value: str) -> bool:
        sql = f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1"
        return self._conn.execute(sql, (value,)).fetchone() is not None


class SqliteThreadRepository(_Repository, ThreadRepository):
    __slots__ = ()

    def add(self, thread: Thread) -> None:
        with translate(ThreadNotFoundError):
            conn = self._conn
            if self._exists("threads", "id", thread.id):
                raise DuplicateIdError(f"A thread with id {thread.id!r} already exists.")
            conn.execute(
                f"INSERT INTO threads ({THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._values(thread),
            )

    @staticmethod
    def _values(thread: Thread) -> tuple[Any, ...]:
        return (
            thread.id,
            thread.user_id,
            thread.agent_id,
            encode_json(thread.metadata),
            encode_json(thread.config),
            encode_json(thread.state),
            encode_time(thread.created_at),
            encode_time(thread.updated_at),
        )

    def get(self, thread_id: str) -> Thread | None:
        with translate():
            row = self._conn.execute(
                f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)
            ).fetchone()
        return None if row is None else thread_from_row(row)

    def update(self, thread: Thread) -> None:
        with translate(ThreadNotFoundError):
            cursor = self._conn.execute(
                "UPDATE threads SET user_id = ?, agent_id = ?, metadata = ?, config = ?, state = ?, "
                "created_at = ?, updated_at = ? WHERE id = ?",
                (*self._values(thread)[1:], thread.id),
            )
            if cursor.rowcount == 0:
                raise ThreadNotFoundError(f"No thread with id {thread.id!r}.")

    def delete(self, thread_id: str) -> bool:
        # ON DELETE CASCADE removes the messages, the records scoped to the thread and, through
        # them, their links; the change-log triggers fire for every cascaded row.
        with translate():
            return self._conn.execute("DELETE FROM threads WHERE id = ?", (thread_id,)).rowcount > 0

    def list(
        self,
        *,
        user_id: ScopeArg = NOTSET,
        agent_id: ScopeArg = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[Thread]:
        where = _Where()
        where.scope("user_id", user_id, "user_id")
        where.scope("agent_id", agent_id, "agent_id")
        where.metadata("metadata", metadata_filter)
        limit = _check_limit(limit)
        with translate():
            rows = _newest(self._conn, THREAD_COLUMNS, "threads", where, ("created_at", "id"), limit)
        return [thread_from_row(row) for row in rows]


class SqliteMessageRepository(_Repository, MessageRepository):
    __slots__ = ()

    def add(self, message: Message, *, embedding: Vector | None = None) -> None:
        vector = None if embedding is None else self._uow.validate_vector(embedding)
        with translate(ThreadNotFoundError):
            conn = self._conn
            if not self._exists("threads", "id", message.thread_id):
                raise ThreadNotFoundError(f"No thread with id {message.thread_id!r}.")
            if self._exists("messages", "id", message.id):
                raise DuplicateIdError(f"A message with id {message.id!r} already exists.")
            if conn.execute(
                "SELECT 1 FROM messages WHERE thread_id = ? AND seq = ?", (message.thread_id, message.seq)
            ).fetchone():
                raise DuplicateIdError(
                    f"Thread {message.thread_id!r} already has a message with seq {message.seq}."
                )
            blob = None if vector is None else self._uow.store_vector(vector)
            conn.execute(
                f"INSERT INTO messages ({MESSAGE_COLUMNS}, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*self._values(message), blob),
            )
            # Logged here rather than by a trigger: see migration 0003.
            conn.execute("INSERT INTO changes (kind, ref) VALUES ('message', ?)", (message.id,))

    def add_many(self, messages: Sequence[Message], embeddings: Sequence[Vector | None] | None = None) -> None:
        """One round of checks and ``executemany`` inserts for a whole batch (add_messages)."""
        if not messages:
            return
        vectors = list(embeddings) if embeddings is not None else [None] * len(messages)
        if len(vectors) != len(messages):
            raise ValidationError("add_many needs one embedding (or None) per message.")
        present = [i for i, v in enumerate(vectors) if v is not None]
        checked: list[Any] = [None] * len(vectors)
        for i, unit in zip(present, self._uow.validate_vectors([v for v in vectors if v is not None])):
            checked[i] = unit
        ids = [m.id for m in messages]
        if len(set(ids)) != len(ids):
            raise DuplicateIdError("A batch cannot hold the same message id twice.")
        slots = [(m.thread_id, m.seq) for m in messages]
        if len(set(slots)) != len(slots):
            raise DuplicateIdError("A batch cannot hold two messages with the same thread and seq.")
        with translate(ThreadNotFoundError):
            conn = self._conn
            for thread_id in {m.thread_id for m in messages}:
                if not self._exists("threads", "id", thread_id):
                    raise ThreadNotFoundError(f"No thread with id {thread_id!r}.")
            rows = [
                (*self._values(m), None if v is None else self._uow.store_vector(v))
                for m, v in zip(messages, checked)
            ]
            conn.execute("SAVEPOINT add_many")  # all or nothing even if the caller goes on
            try:
                conn.executemany(
                    f"INSERT INTO messages ({MESSAGE_COLUMNS}, embedding) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                conn.execute(
                    "INSERT INTO changes (kind, ref) SELECT 'message', value FROM json_each(?)",
                    (json.dumps(ids),),
                )
            except BaseException as exc:
                conn.execute("ROLLBACK TO add_many")
                conn.execute("RELEASE add_many")
                if isinstance(exc, sqlite3.IntegrityError):
                    # The unique constraints caught it (no pre-checks on the hot path); name it.
                    self._explain_duplicate(ids, slots)
                raise
            conn.execute("RELEASE add_many")

    def _explain_duplicate(self, ids: Sequence[str], slots: Sequence[tuple[str, int]]) -> None:
        conn = self._conn
        taken = conn.execute(
            "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        ).fetchone()
        if taken:
            raise DuplicateIdError(f"A message with id {taken[0]!r} already exists.")
        clash = conn.execute(
            "SELECT m.thread_id, m.seq FROM messages m JOIN json_each(?) j "
            "ON m.thread_id = json_extract(j.value, '$[0]') AND m.seq = json_extract(j.value, '$[1]')",
            (json.dumps(list(slots)),),
        ).fetchone()
        if clash:
            raise DuplicateIdError(f"Thread {clash[0]!r} already has a message with seq {clash[1]}.")

    @staticmethod
    def _values(message: Message) -> tuple[Any, ...]:
        return (
            message.id,
            message.thread_id,
            message.seq,
            message.role,
            message.content,
            encode_time(message.timestamp),
            encode_json(message.metadata),
            message.user_id,
            message.agent_id,
            encode_time(message.created_at),
            encode_time(message.expires_at),
        )

    def get(self, message_id: str, *, now: datetime) -> Message | None:
        where = _Where()
        where.add("id = ?", message_id)
        where.visible("expires_at", now)
        with translate():
            row = self._conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where.sql()}", where.params
            ).fetchone()
        return None if row is None else message_from_row(row)

    def last_seq(self, thread_id: str) -> int:
        with translate():
            row = self._conn.execute(
                "SELECT max(seq) FROM messages WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return int(row[0] or 0)

    def vectors(self, thread_id: str, message_ids: Sequence[str]) -> dict[str, Vector]:
        if not message_ids:
            return {}
        with translate():
            rows = self._conn.execute(
                "SELECT id, embedding FROM messages WHERE id IN (SELECT value FROM json_each(?)) "
                "AND thread_id = ? AND embedding IS NOT NULL",
                (json.dumps(list(message_ids)), thread_id),
            ).fetchall()
        out: dict[str, Vector] = {}
        for message_id, blob in rows:
            vector = array("f")
            vector.frombytes(blob)  # little-endian float32, as the codec writes it
            if sys.byteorder == "big":
                vector.byteswap()
            out[message_id] = vector
        return out

    def list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> list[Message]:
        where = _Where()
        where.add("thread_id = ?", thread_id)
        where.visible("expires_at", now)
        if start_seq is not None:
            where.add("seq >= ?", start_seq)
        if end_seq is not None:
            where.add("seq < ?", end_seq)
        last_n = _check_limit(last_n, "last_n", minimum=0)
        with translate():
            rows = _newest(self._conn, MESSAGE_COLUMNS, "messages", where, ("seq",), last_n)
        return [message_from_row(row) for row in rows]

    def update(self, message: Message, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        vector = None
        if embedding is not NOTSET and embedding is not None:
            vector = self._uow.validate_vector(embedding)
        with translate():
            conn = self._conn
            stored = conn.execute(
                "SELECT thread_id, seq FROM messages WHERE id = ?", (message.id,)
            ).fetchone()
            if stored is None:
                raise MessageNotFoundError(f"No message with id {message.id!r}.")
            if (message.thread_id, message.seq) != tuple(stored):
                # (thread, seq) is a message's place in its conversation, not an editable field.
                raise ValidationError(f"Message {message.id!r} cannot change its thread or seq.")
            assignments = (
                "role = ?, content = ?, timestamp = ?, metadata = ?, "
                "user_id = ?, agent_id = ?, created_at = ?, expires_at = ?"
            )
            params: list[Any] = list(self._values(message)[3:])
            if embedding is not NOTSET:
                assignments += ", embedding = ?"
                params.append(None if vector is None else self._uow.store_vector(vector))
            conn.execute(f"UPDATE messages SET {assignments} WHERE id = ?", (*params, message.id))

    def delete(self, message_id: str) -> bool:
        with translate():
            return self._conn.execute("DELETE FROM messages WHERE id = ?", (message_id,)).rowcount > 0

    def purge_expired(self, now: datetime) -> list[tuple[str, int]]:
        # The change-log delete trigger fires per row, as for any delete.
        expired = encode_time(check_time(now, "now"))
        with translate():
            purged = self._conn.execute(
                "DELETE FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING thread_id, seq",
                (expired,),
            ).fetchall()
        return sorted((thread_id, seq) for thread_id, seq in purged)


class SqliteRecordRepository(_Repository, RecordRepository):
    __slots__ = ()

    def add(self, record: MemoryRecord, *, embedding: Vector | None = None) -> None:
        vector = None if embedding is None else self._uow.validate_vector(embedding)
        with translate(ThreadNotFoundError):
            conn = self._conn
            if self._exists("records", "id", record.id):
                raise DuplicateIdError(f"A memory record with id {record.id!r} already exists.")
            if record.thread_id is not None and not self._exists("threads", "id", record.thread_id):
                raise ThreadNotFoundError(f"No thread with id {record.thread_id!r}.")
            blob = None if vector is None else self._uow.store_vector(vector)
            conn.execute(
                f"INSERT INTO records ({RECORD_COLUMNS}, embedding) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*self._values(record), blob),
            )

    @staticmethod
    def _values(record: MemoryRecord) -> tuple[Any, ...]:
        return (
            record.id,
            record.record_type.value,
            record.content,
            record.user_id,
            record.agent_id,
            record.thread_id,
            encode_json(record.metadata),
            record.status.value,
            record.invalidation_reason,
            encode_time(record.invalidated_at),
            encode_time(record.timestamp),
            encode_time(record.expires_at),
            encode_time(record.created_at),
            encode_time(record.updated_at),
        )

    def get(self, record_id: str, *, now: datetime | None = None) -> MemoryRecord | None:
        where = _Where()
        where.add("id = ?", record_id)
        if now is not None:
            where.visible("expires_at", now)
        with translate():
            row = self._conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE {where.sql()}", where.params
            ).fetchone()
        return None if row is None else record_from_row(row)

    def get_many(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if isinstance(record_ids, str):
            raise ValidationError("record_ids must be a sequence of ids, not a string.")
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        with translate():
            rows = self._conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN (SELECT value FROM json_each(?))",
                (_ids_json(ids),),
            ).fetchall()
        found = {row[0]: record_from_row(row) for row in rows}
        return {rid: found[rid] for rid in ids if rid in found}

    def update(self, record: MemoryRecord, *, embedding: Vector | None | NotSetType = NOTSET) -> None:
        vector = None
        if embedding is not NOTSET and embedding is not None:
            vector = self._uow.validate_vector(embedding)
        with translate(ThreadNotFoundError):
            conn = self._conn
            stored = conn.execute(
                "SELECT record_type, user_id, agent_id, thread_id FROM records WHERE id = ?", (record.id,)
            ).fetchone()
            if stored is None:
                raise RecordNotFoundError(f"No memory record with id {record.id!r}.")
            wanted = (record.record_type.value, record.user_id, record.agent_id, record.thread_id)
            if tuple(stored) != wanted:
                raise ValidationError(
                    f"Memory record {record.id!r} cannot change its type or scope "
                    f"(stored {tuple(stored)!r}, got {wanted!r})."
                )
            assignments = (
                "content = ?, metadata = ?, status = ?, invalidation_reason = ?, invalidated_at = ?, "
                "timestamp = ?, expires_at = ?, created_at = ?, updated_at = ?"
            )
            values = self._values(record)
            params: list[Any] = [values[2], *values[6:]]
            if embedding is not NOTSET:
                assignments += ", embedding = ?"
                params.append(None if vector is None else self._uow.store_vector(vector))
            conn.execute(f"UPDATE records SET {assignments} WHERE id = ?", (*params, record.id))

    def delete(self, record_id: str) -> bool:
        # Links touching the record go with it (ON DELETE CASCADE).
        with translate():
            return self._conn.execute("DELETE FROM records WHERE id = ?", (record_id,)).rowcount > 0

    def expired_ids(self, now: datetime, *, limit: int | None = None) -> list[str]:
        expired = encode_time(check_time(now, "now"))
        limit = _check_limit(limit, minimum=0)
        sql = (
            "SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id"
        )
        with translate():
            if limit is None:
                rows = self._conn.execute(sql, (expired,)).fetchall()
            else:
                rows = self._conn.execute(f"{sql} LIMIT ?", (expired, limit)).fetchall()
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
        where = _Where()
        where.visible("expires_at", now)
        where.scope("user_id", user_id, "user_id")
        where.scope("agent_id", agent_id, "agent_id")
        where.scope("thread_id", thread_id, "thread_id")
        if record_types is not None:
            if isinstance(record_types, str):
                raise ValidationError("record_types must be a collection of type names, not a string.")
            types = sorted({parse_record_type(t).value for t in record_types})
            if not types:
                return []
            where.add(f"record_type IN ({', '.join('?' * len(types))})", *types)
        where.metadata("metadata", metadata_filter)
        limit = _check_limit(limit)
        with translate():
            rows = _newest(self._conn, RECORD_COLUMNS, "records", where, ("created_at", "id"), limit)
        return [record_from_row(row) for row in rows]


class SqliteLinkRepository(_Repository, LinkRepository):
    __slots__ = ()

    def add(self, link: RecordLink) -> None:
        if link.source_id == link.target_id:
            raise SelfLinkError("A memory cannot be linked to itself.")
        with translate(RecordNotFoundError):
            conn = self._conn
            rows = conn.execute(
                "SELECT id FROM records WHERE id IN (?, ?)", (link.source_id, link.target_id)
            ).fetchall()
            present = {row[0] for row in rows}
            for endpoint in (link.source_id, link.target_id):
                if endpoint not in present:
                    raise RecordNotFoundError(f"No memory record with id {endpoint!r}.")
            if self._exists("links", "id", link.id):
                raise DuplicateIdError(f"A link with id {link.id!r} already exists.")
            if self._find_id(link.source_id, link.target_id, link.relation_type) is not None:
                raise LinkExistsError(
                    f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} already exists."
                )
            conn.execute(
                f"INSERT INTO links ({LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._values(link),
            )

    @staticmethod
    def _values(link: RecordLink) -> tuple[Any, ...]:
        return (
            link.id,
            link.source_id,
            link.source_type.value,
            link.target_id,
            link.target_type.value,
            link.relation_type,
            link.opposite_relation_type,
            encode_json(link.metadata),
            encode_time(link.timestamp),
            encode_time(link.created_at),
        )

    def _find_id(self, source_id: str, target_id: str, relation_type: str) -> str | None:
        row = self._conn.execute(
            "SELECT id FROM links WHERE source_id = ? AND target_id = ? AND relation_type = ?",
            (source_id, target_id, relation_type),
        ).fetchone()
        return None if row is None else str(row[0])

    def _select(self, where: str, params: Sequence[Any]) -> list[RecordLink]:
        with translate():
            rows = self._conn.execute(
                f"SELECT {LINK_COLUMNS} FROM links WHERE {where} ORDER BY created_at, id", params
            ).fetchall()
        return [link_from_row(row) for row in rows]

    def get(self, link_id: str) -> RecordLink | None:
        found = self._select("id = ?", (link_id,))
        return found[0] if found else None

    def find(self, source_id: str, target_id: str, relation_type: str) -> RecordLink | None:
        found = self._select(
            "source_id = ? AND target_id = ? AND relation_type = ?", (source_id, target_id, relation_type)
        )
        return found[0] if found else None

    def between(self, a: str, b: str) -> list[RecordLink]:
        return self._select(
            "(source_id = ? AND target_id = ?) OR (source_id = ? AND target_id = ?)", (a, b, b, a)
        )

    def touching(self, record_id: str) -> list[RecordLink]:
        # A UNION lets SQLite use both endpoint indexes instead of scanning for the OR.
        with translate():
            rows = self._conn.execute(
                f"SELECT {LINK_COLUMNS} FROM links WHERE source_id = ? UNION "
                f"SELECT {LINK_COLUMNS} FROM links WHERE target_id = ? ORDER BY created_at, id",
                (record_id, record_id),
            ).fetchall()
        return [link_from_row(row) for row in rows]

    def update(self, link: RecordLink) -> None:
        with translate(RecordNotFoundError):
            conn = self._conn
            stored = conn.execute(
                "SELECT source_id, target_id FROM links WHERE id = ?", (link.id,)
            ).fetchone()
            if stored is None:
                raise LinkNotFoundError(f"No link with id {link.id!r}.")
            if tuple(stored) != (link.source_id, link.target_id):
                raise InvalidLinkError(f"Link {link.id!r} cannot change its endpoints.")
            other = self._find_id(link.source_id, link.target_id, link.relation_type)
            if other is not None and other != link.id:
                raise LinkExistsError(
                    f"A {link.relation_type!r} link from {link.source_id!r} to {link.target_id!r} "
                    f"already exists ({other})."
                )
            conn.execute(
                "UPDATE links SET source_type = ?, target_type = ?, relation_type = ?, opposite_relation_type = ?, "
                "metadata = ?, timestamp = ?, created_at = ? WHERE id = ?",
                (
                    link.source_type.value,
                    link.target_type.value,
                    link.relation_type,
                    link.opposite_relation_type,
                    encode_json(link.metadata),
                    encode_time(link.timestamp),
                    encode_time(link.created_at),
                    link.id,
                ),
            )

    def delete(self, link_id: str) -> bool:
        with translate():
            return self._conn.execute("DELETE FROM links WHERE id = ?", (link_id,)).rowcount > 0

    def list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[RecordLink]:
        where = _Where()
        for column, value in (
            ("source_id", source_id),
            ("target_id", target_id),
            ("relation_type", relation_type),
        ):
            if value is not NOTSET:
                where.add(f"{column} = ?", value)
        limit = _check_limit(limit)
        with translate():
            rows = _newest(self._conn, LINK_COLUMNS, "links", where, ("created_at", "id"), limit)
        return [link_from_row(row) for row in rows]


class SqliteSummaryRepository(_Repository, SummaryRepository):
    __slots__ = ()

    def add(self, summary: ThreadSummary) -> None:
        with translate(ThreadNotFoundError):
            conn = self._conn
            if not self._exists("threads", "id", summary.thread_id):
                raise ThreadNotFoundError(f"No thread with id {summary.thread_id!r}.")
            if self._exists("summaries", "id", summary.id):
                raise DuplicateIdError(f"A summary with id {summary.id!r} already exists.")
            if conn.execute(
                "SELECT 1 FROM summaries WHERE thread_id = ? AND revision = ?",
                (summary.thread_id, summary.revision),
            ).fetchone():
                raise ConflictError(
                    f"Thread {summary.thread_id!r} already has summary revision {summary.revision}; "
                    "it was refreshed or invalidated concurrently."
                )
            conn.execute(
                f"INSERT INTO summaries ({SUMMARY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    summary.id,
                    summary.thread_id,
                    summary.revision,
                    summary.text,
                    json.dumps(list(summary.topics), ensure_ascii=False),
                    summary.covered_through_seq,
                    summary.status.value,
                    summary.user_id,
                    summary.agent_id,
                    encode_json(summary.metadata),
                    encode_time(summary.created_at),
                ),
            )

    def latest(self, thread_id: str, *, valid_only: bool = False) -> ThreadSummary | None:
        status = " AND status = 'valid'" if valid_only else ""
        with translate():
            row = self._conn.execute(
                f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ?{status} "
                "ORDER BY revision DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
        return None if row is None else summary_from_row(row)

    def list_for_thread(self, thread_id: str) -> list[ThreadSummary]:
        with translate():
            rows = self._conn.execute(
                f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ? ORDER BY revision", (thread_id,)
            ).fetchall()
        return [summary_from_row(row) for row in rows]

    def invalidate_covering(self, thread_id: str, seq: int) -> int:
        with translate():
            cursor = self._conn.execute(
                "UPDATE summaries SET status = ? WHERE thread_id = ? AND status = ? AND covered_through_seq >= ?",
                (RecordStatus.INVALID.value, thread_id, RecordStatus.VALID.value, seq),
            )
        return cursor.rowcount

    def prune(self, thread_id: str, *, keep: int) -> int:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValidationError("keep must be a non-negative integer.")
        with translate():
            cursor = self._conn.execute(
                "DELETE FROM summaries WHERE thread_id = ? AND revision NOT IN "
                "(SELECT revision FROM summaries WHERE thread_id = ? ORDER BY revision DESC LIMIT ?)",
                (thread_id, thread_id, keep),
            )
        return cursor.rowcount


_JOB_COLUMNS = (
    "id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason"
)


def _job_from_row(row: Sequence[Any]) -> ExtractionJob:
    return ExtractionJob(
        id=row[0],
        thread_id=row[1],
        first_seq=row[2],
        last_seq=row[3],
        created_at=decode_time(row[4]),  # type: ignore[arg-type]
        attempts=row[5],
        claimed_by=row[6],
        claimed_until=decode_time(row[7]) if row[7] is not None else None,
        failed_at=decode_time(row[8]) if row[8] is not None else None,
        failure_reason=row[9],
    )


class SqliteJobRepository(_Repository, JobRepository):
    __slots__ = ()

    def add(self, job: ExtractionJob) -> None:
        with translate(ThreadNotFoundError):
            if not self._exists("threads", "id", job.thread_id):
                raise ThreadNotFoundError(f"No thread with id {job.thread_id!r}.")
            if self._exists("extraction_jobs", "id", job.id):
                raise DuplicateIdError(f"A job with id {job.id!r} already exists.")
            self._conn.execute(
                f"INSERT INTO extraction_jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.id,
                    job.thread_id,
                    job.first_seq,
                    job.last_seq,
                    encode_time(job.created_at),
                    job.attempts,
                    job.claimed_by,
                    encode_time(job.claimed_until),
                    encode_time(job.failed_at),
                    job.failure_reason,
                ),
            )

    def pending(self, now: datetime, *, limit: int | None = None) -> list[ExtractionJob]:
        limit = _check_limit(limit)
        sql = (
            f"SELECT {_JOB_COLUMNS} FROM extraction_jobs "
            "WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?) "
            "ORDER BY created_at, id"
        )
        params: tuple[Any, ...] = (encode_time(check_time(now, "now")),)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        with translate():
            return [_job_from_row(row) for row in self._conn.execute(sql, params)]

    def list(self, *, thread_id: str | None = None, limit: int | None = None) -> list[ExtractionJob]:
        return self._listing(failed=False, thread_id=thread_id, limit=limit)

    # builtins.list: in this class body, `list` names the list() method.
    def _listing(self, *, failed: bool, thread_id: str | None, limit: int | None) -> builtins.list[ExtractionJob]:
        """The jobs not failed (by creation) or the failed ones (by failure time), then by id."""
        limit = _check_limit(limit)
        sql = f"SELECT {_JOB_COLUMNS} FROM extraction_jobs WHERE failed_at IS {'NOT NULL' if failed else 'NULL'}"
        params: tuple[Any, ...] = ()
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params += (check_id(thread_id, "thread_id"),)
        sql += " ORDER BY failed_at, id" if failed else " ORDER BY created_at, id"
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        with translate():
            return [_job_from_row(row) for row in self._conn.execute(sql, params)]

    def claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> ExtractionJob | None:
        with translate():
            updated = self._conn.execute(
                "UPDATE extraction_jobs SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 "
                "WHERE id = ? AND failed_at IS NULL "
                "AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?) "
                f"RETURNING {_JOB_COLUMNS}",
                (owner, encode_time(check_time(until, "until")), job_id, encode_time(check_time(now, "now")), owner),
            ).fetchone()
        return None if updated is None else _job_from_row(updated)

    def postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool = False
    ) -> bool:
        check_failure_reason(reason)
        until_text = encode_time(check_time(until, "until"))
        with translate():
            return (
                self._conn.execute(
                    "UPDATE extraction_jobs SET claimed_until = ?, failure_reason = ?, "
                    "attempts = MAX(0, attempts - ?) WHERE id = ? AND failed_at IS NULL AND claimed_by = ?",
                    (until_text, reason, 1 if refund_attempt else 0, job_id, owner),
                ).rowcount
                > 0
            )

    def renew(self, job_id: str, *, owner: str, until: datetime) -> bool:
        until_text = encode_time(check_time(until, "until"))
        with translate():
            return (
                self._conn.execute(
                    "UPDATE extraction_jobs SET claimed_until = ? WHERE id = ? AND failed_at IS NULL AND claimed_by = ?",
                    (until_text, job_id, owner),
                ).rowcount
                > 0
            )

    def release(self, job_id: str, *, owner: str, until: datetime | None = None) -> bool:
        until_text = None if until is None else encode_time(check_time(until, "until"))
        with translate():
            return (
                self._conn.execute(
                    "UPDATE extraction_jobs SET claimed_by = NULL, claimed_until = ? "
                    "WHERE id = ? AND failed_at IS NULL AND claimed_by = ?",
                    (until_text, job_id, owner),
                ).rowcount
                > 0
            )

    def fail(self, job_id: str, *, reason: str, at: datetime) -> bool:
        check_failure_reason(reason)
        failed_at = encode_time(check_time(at, "at"))
        with translate():
            return (
                self._conn.execute(
                    "UPDATE extraction_jobs SET failed_at = ?, failure_reason = ?, claimed_by = NULL, "
                    "claimed_until = NULL WHERE id = ?",
                    (failed_at, reason, job_id),
                ).rowcount
                > 0
            )

    # builtins.list: in this class body, `list` names the list() method.
    def failed(self, *, thread_id: str | None = None, limit: int | None = None) -> builtins.list[ExtractionJob]:
        return self._listing(failed=True, thread_id=thread_id, limit=limit)

    def retry(self, job_id: str) -> ExtractionJob | None:
        with translate():
            row = self._conn.execute(
                "UPDATE extraction_jobs SET attempts = 0, claimed_by = NULL, claimed_until = NULL, "
                f"failed_at = NULL, failure_reason = NULL WHERE id = ? AND failed_at IS NOT NULL RETURNING {_JOB_COLUMNS}",
                (job_id,),
            ).fetchone()
        return None if row is None else _job_from_row(row)

    def delete(self, job_id: str) -> bool:
        with translate():
            return self._conn.execute("DELETE FROM extraction_jobs WHERE id = ?", (job_id,)).rowcount > 0


class SqliteSettingsRepository(_Repository, SettingsRepository):
    __slots__ = ()

    def get(self, key: str) -> Any:
        with translate():
            row = self._conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise ValidationError("a setting key must be a non-empty string.")
        with translate():
            if value is None:
                self._conn.execute("DELETE FROM settings WHERE key = ?", (key,))
                return
            # The same JSON checks as metadata (finite numbers, string keys, bounded depth).
            plain = check_metadata({"value": value}) or {}
            self._conn.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(plain["value"], ensure_ascii=False, allow_nan=False)),
            )
