"""Adapters layer (Oracle): the CRUD statements of the repositories, built as values.

Every builder is a pure function of the store's :class:`StoreNames` and the values of one call,
returning a :class:`Statement` whose name (``"threads.insert"``, ``"records.list_newest"``...) is
stable and names its golden-file entry. Identifiers come only from ``StoreNames`` (validated and
quoted); every value is a bind: timestamps through the dialect's ``encode_time``, JSON
through its ``encode_json`` (bound as text), vectors through :func:`encode_vector` by the caller. Column
lists are the codec's, so a decoder always matches the SELECT it reads.

Conventions:

* a message or memory record owns one ``RECORD_CHUNKS`` row (``chunk_seq`` 1, ``source_emb_column``
  ``'content'``, ``source_record_type`` the record type value) carrying copies of its text (for a
  message its keyword text, read with the message before it), scope, status, expiry and creation
  time, and its embedding or NULL. The vector and no-vector variants are separate statements,
  so a batch never mixes ``array`` and ``None`` binds in one column;
* visibility is ``expires_at IS NULL OR expires_at > :now`` with the caller's ``now``, never
  ``SYSTIMESTAMP``;
* "the newest ``limit`` rows, oldest first" is an inner ``ORDER BY ... DESC FETCH FIRST :limit
  ROWS ONLY`` re-sorted by the outer query; listings filtered by metadata in Python read pages
  newest first with a keyset (``created_at``, id) instead (``*_page`` statements);
* id lists travel as one JSON array bind expanded by ``JSON_TABLE`` (one SQL text for any
  count); deletes of many rows use one statement with ``executemany``.

SQL forms used here, checked against documentation (not against a running database):
``FETCH FIRST :n ROWS ONLY`` with a bind, also in subqueries, and never together with
``FOR UPDATE`` (Oracle SQL Language Reference, SELECT, row_limiting_clause and its restrictions);
``SELECT ... FOR UPDATE`` (SELECT, for_update_clause); ``MERGE INTO ... USING (SELECT ... FROM
DUAL) ... WHEN MATCHED THEN UPDATE ... WHEN NOT MATCHED THEN INSERT`` (MERGE);
``JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$'))`` (JSON_TABLE); ``SAVEPOINT`` and
``ROLLBACK TO SAVEPOINT``; textual JSON bound into a ``JSON`` column is implicitly wrapped with the
``JSON`` constructor on INSERT and UPDATE, so plain ``INSERT ... VALUES``/``UPDATE ... SET`` write
no ``JSON(:b)`` (Oracle JSON Developer's Guide 23, "Creating a Table With a JSON Column"), while
the MERGE of a setting calls ``JSON(...)`` on its subquery column (SQL Language Reference, "JSON
Type Constructor": textual scalars, objects or arrays); ``JSON_SERIALIZE(expr RETURNING CLOB)``
(SQL Language Reference, JSON_SERIALIZE); ``array.array('f')`` binds to ``VECTOR`` columns
(python-oracledb user guide, "Using VECTOR Data"). Large texts are bound only in plain
``INSERT ... VALUES`` and ``UPDATE ... SET`` (python-oracledb sends strings over 32 KB as LONG,
which those forms accept).
"""

from __future__ import annotations

import array
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Final

from palimpsest.adapters.sql.codec import column_names, named
from palimpsest.adapters.sql.statements import Keyset
from palimpsest.domain.checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint
from palimpsest.domain.images import StoredImage
from palimpsest.domain.model import (
    STORED_RECORD_TYPES,
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
    ThreadSummary,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .codec import (
    CODEC,
    DIALECT,
    JOB_COLUMNS,
    LINK_COLUMNS,
    MEMORY_COLUMNS,
    MESSAGE_COLUMNS,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
    columns,
)
from .names import StoreNames
from .sql import Statement

__all__ = [
    "CHUNK_COLUMN",
    "CHUNK_SEQ",
    "MEMORY_TYPE_VALUES",
    "RECORD_TYPE_VALUES",
    "Keyset",
    "OracleStatements",
    "ScopeValue",
    "checkpoint_blob_delete",
    "checkpoint_blob_insert",
    "checkpoint_blobs",
    "checkpoint_copy",
    "checkpoint_delete",
    "checkpoint_delete_runs",
    "checkpoint_delete_threads",
    "checkpoint_get",
    "checkpoint_list",
    "checkpoint_put",
    "checkpoint_write_put",
    "checkpoint_writes",
    "chunk_delete",
    "chunk_insert",
    "chunk_text_update",
    "chunk_update",
    "chunks_clear_vectors",
    "chunks_delete_for_thread",
    "image_get_many",
    "image_insert",
    "image_of_messages",
    "image_replace",
    "job_claim",
    "job_delete",
    "job_fail",
    "job_failed",
    "job_get",
    "job_insert",
    "job_list",
    "job_pending",
    "job_postpone",
    "job_release",
    "job_renew",
    "job_retry",
    "link_between",
    "link_check_add",
    "link_delete",
    "link_endpoints",
    "link_find",
    "link_find_id",
    "link_get",
    "link_insert",
    "link_list",
    "link_touching",
    "link_update",
    "message_after",
    "message_before",
    "message_delete",
    "message_get",
    "message_insert",
    "message_last_seq",
    "message_list",
    "message_list_for_thread",
    "message_place",
    "message_update",
    "message_vectors",
    "messages_expired",
    "messages_unembedded",
    "read_only_transaction",
    "record_delete",
    "record_expired_ids",
    "record_get",
    "record_get_many",
    "record_insert",
    "record_list",
    "record_scope",
    "record_update",
    "records_unembedded",
    "rollback_to_savepoint",
    "savepoint",
    "setting_delete",
    "setting_get",
    "setting_set",
    "summary_check_add",
    "summary_insert",
    "summary_invalidate_covering",
    "summary_latest",
    "summary_list_for_thread",
    "summary_prune",
    "thread_delete",
    "thread_get",
    "thread_insert",
    "thread_list",
    "thread_update",
    "threads_existing",
]

CHUNK_COLUMN: Final = "content"
"""``source_emb_column`` of every chunk: the domain embeds a record's ``content``."""
CHUNK_SEQ: Final = 1
"""A record has one chunk (the domain keeps one vector per record)."""
MEMORY_TYPE_VALUES: Final = tuple(sorted(t.value for t in RecordType if t.is_memory_like))
RECORD_TYPE_VALUES: Final = tuple(sorted(t.value for t in STORED_RECORD_TYPES))
"""The ``source_record_type`` of a record's chunk: every record type but ``message`` (memories,
profiles and images)."""

ScopeValue = str | None | NotSetType
"""A three-valued list filter: NOTSET no filter, None ``IS NULL``, a string equality."""

_CHUNK_COLUMNS: Final = (
    "source_id, source_record_type, source_emb_column, chunk_seq, chunk_text, thread_id, user_id, agent_id, "
    "status, expires_at, created_at"
)
_VISIBLE: Final = "({a}.expires_at IS NULL OR {a}.expires_at > :now)"
_BIND_NAMES: Final = {"timestamp": "event_time"}
_ID_LIST: Final = "SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids"


# --- helpers ---------------------------------------------------------------------------------------


def _bind(column: str) -> str:
    """The bind name of a column (``timestamp`` is a keyword; its bind is ``:event_time``)."""
    return _BIND_NAMES.get(column, column)


def _bind_names(column_list: str) -> list[str]:
    return [_bind(name) for name in column_names(column_list)]


def _placeholders(column_list: str) -> str:
    return ", ".join(f":{_bind(name.strip())}" for name in column_list.split(","))


def _ids_json(ids: Sequence[str]) -> str:
    return json.dumps(list(ids), ensure_ascii=False, separators=(",", ":"))


def _scope(where: list[str], binds: dict[str, Any], alias: str, column: str, value: ScopeValue) -> None:
    if value is NOTSET:
        return
    if value is None:
        where.append(f"{alias}.{column} IS NULL")
    else:
        where.append(f"{alias}.{column} = :{column}")
        binds[column] = value


def _where(clauses: Sequence[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def _lines(*lines: str) -> str:
    """SQL text from lines, leaving out empty ones (an absent WHERE)."""
    return "\n".join(line for line in lines if line.strip())


def _listing(
    name: str,
    select_columns: str,
    source: str,
    alias: str,
    clauses: list[str],
    binds: dict[str, Any],
    order: Sequence[str],
    *,
    limit: int | None,
    page: int | None = None,
    after: Keyset | None = None,
    id_column: str = "record_id",
) -> Statement:
    """A listing in one of three shapes (see the module docstring).

    ``limit``: the newest ``limit`` rows by ``order``, re-sorted oldest first (``*_newest``);
    ``page``: newest first, ``:page_size`` rows strictly older than ``after`` (``*_page``; ``order``
    must then be ``("created_at", id_column)``); neither: every row, oldest first.
    """
    selected = columns(alias, select_columns)
    ascending = ", ".join(f"{alias}.{column}" for column in order)
    descending = ", ".join(f"{alias}.{column} DESC" for column in order)
    if page is not None:
        if after is not None:
            clauses = [
                *clauses,
                (
                    f"({alias}.created_at < :after_created_at OR "
                    f"({alias}.created_at = :after_created_at AND {alias}.{id_column} < :after_id))"
                ),
            ]
            binds = {**binds, "after_created_at": DIALECT.encode_time(after.created_at), "after_id": after.id}
        sql = _lines(
            f"SELECT {selected}",
            f"FROM {source} {alias}",
            _where(clauses),
            f"ORDER BY {descending}",
            "FETCH FIRST :page_size ROWS ONLY",
        )
        return Statement(f"{name}_page", sql, {**binds, "page_size": page})
    if limit is not None:
        sql = _lines(
            f"SELECT {selected}",
            "FROM (",
            f"  SELECT {selected}",
            f"  FROM {source} {alias}",
            f"  {_where(clauses)}",
            f"  ORDER BY {descending}",
            "  FETCH FIRST :limit ROWS ONLY",
            f") {alias}",
            f"ORDER BY {ascending}",
        )
        return Statement(f"{name}_newest", sql, {**binds, "limit": limit})
    sql = _lines(f"SELECT {selected}", f"FROM {source} {alias}", _where(clauses), f"ORDER BY {ascending}")
    return Statement(name, sql, binds)


# --- transactions ----------------------------------------------------------------------------------


def _savepoint_name(depth: int) -> str:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 99:
        raise ValueError("savepoint depth must be an integer from 1 to 99")
    return f"PALIMPSEST_W{depth}"


def savepoint(depth: int) -> Statement:
    """Mark the start of one all-or-nothing write (nested writes get deeper names)."""
    return Statement("uow.savepoint", f"SAVEPOINT {_savepoint_name(depth)}")


def rollback_to_savepoint(depth: int) -> Statement:
    """Undo what the write begun by :func:`savepoint` did; the transaction goes on."""
    return Statement("uow.rollback_to_savepoint", f"ROLLBACK TO SAVEPOINT {_savepoint_name(depth)}")


def read_only_transaction() -> Statement:
    """Start a read-only unit of work's transaction: every query sees the data committed before
    it began, and the database refuses DML. Oracle requires it as the transaction's first
    statement (``ALTER SESSION`` starts no transaction, so the lease's session setup may precede)."""
    return Statement("uow.read_only", "SET TRANSACTION READ ONLY")


# --- chunks ----------------------------------------------------------------------------------------


def chunk_insert(
    names: StoreNames,
    *,
    source_id: str,
    record_type: RecordType,
    content: str,
    thread_id: str | None,
    user_id: str | None,
    agent_id: str | None,
    status: RecordStatus,
    expires_at: datetime | None,
    created_at: datetime,
    vector: array.array[float] | None,
) -> Statement:
    """The search row of a new message or memory record (``chunks.insert[_without_vector]``)."""
    binds: dict[str, Any] = {
        "source_id": source_id,
        "source_record_type": RecordType(record_type).value,
        "source_emb_column": CHUNK_COLUMN,
        "chunk_seq": CHUNK_SEQ,
        "chunk_text": content,
        "thread_id": thread_id,
        "user_id": user_id,
        "agent_id": agent_id,
        "status": RecordStatus(status).value,
        "expires_at": DIALECT.encode_time(expires_at),
        "created_at": DIALECT.encode_time(created_at),
    }
    if vector is None:
        sql = (
            f"INSERT INTO {names('RECORD_CHUNKS')} ({_CHUNK_COLUMNS}, embedding)\n"
            f"VALUES ({_placeholders(_CHUNK_COLUMNS)}, NULL)"
        )
        return Statement("chunks.insert_without_vector", sql, binds)
    sql = (
        f"INSERT INTO {names('RECORD_CHUNKS')} ({_CHUNK_COLUMNS}, embedding)\n"
        f"VALUES ({_placeholders(_CHUNK_COLUMNS)}, :embedding)"
    )
    return Statement("chunks.insert", sql, {**binds, "embedding": vector})


def chunk_update(
    names: StoreNames,
    *,
    source_id: str,
    record_type: RecordType,
    content: str,
    user_id: str | None,
    agent_id: str | None,
    status: RecordStatus,
    expires_at: datetime | None,
    created_at: datetime,
    vector: array.array[float] | None | NotSetType = NOTSET,
) -> Statement:
    """Keep a record's chunk in step with it: text, scope, status, expiry, and the embedding
    (NOTSET keeps it, None drops it, a vector replaces it)."""
    binds: dict[str, Any] = {
        "source_id": source_id,
        "source_record_type": RecordType(record_type).value,
        "chunk_seq": CHUNK_SEQ,
        "chunk_text": content,
        "user_id": user_id,
        "agent_id": agent_id,
        "status": RecordStatus(status).value,
        "expires_at": DIALECT.encode_time(expires_at),
        "created_at": DIALECT.encode_time(created_at),
    }
    assignments = (
        "chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, "
        "expires_at = :expires_at, created_at = :created_at"
    )
    name = "chunks.update"
    if vector is None:
        assignments += ", embedding = NULL"
        name = "chunks.update_drop_vector"
    elif not isinstance(vector, NotSetType):
        assignments += ", embedding = :embedding"
        binds["embedding"] = vector
        name = "chunks.update_vector"
    sql = (
        f"UPDATE {names('RECORD_CHUNKS')}\n"
        f"SET {assignments}\n"
        f"WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq"
    )
    return Statement(name, sql, binds)


def chunk_text_update(names: StoreNames, message_id: str, text: str) -> Statement:
    """Rewrite the keyword text of a message's chunk, nothing else (its vector, scope and
    expiry stay): a message whose turn before it changed or left."""
    sql = (
        f"UPDATE {names('RECORD_CHUNKS')}\n"
        "SET chunk_text = :chunk_text\n"
        "WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq"
    )
    binds = {
        "chunk_text": text,
        "source_record_type": RecordType.MESSAGE.value,
        "source_id": message_id,
        "chunk_seq": CHUNK_SEQ,
    }
    return Statement("chunks.update_text", sql, binds)


def chunk_delete(names: StoreNames, source_id: str, *, message: bool) -> Statement:
    """Delete the chunks of one message (``message=True``) or of one memory record (any type)."""
    if message:
        sql = (
            f"DELETE FROM {names('RECORD_CHUNKS')}\n"
            "WHERE source_record_type = :source_record_type AND source_id = :source_id"
        )
        return Statement(
            "chunks.delete_message",
            sql,
            {"source_record_type": RecordType.MESSAGE.value, "source_id": source_id},
        )
    types = {f"record_type_{i}": value for i, value in enumerate(RECORD_TYPE_VALUES)}
    sql = (
        f"DELETE FROM {names('RECORD_CHUNKS')}\n"
        f"WHERE source_id = :source_id AND source_record_type IN ({', '.join(f':{k}' for k in types)})"
    )
    return Statement("chunks.delete_record", sql, {"source_id": source_id, **types})


def chunks_delete_for_thread(names: StoreNames, thread_id: str) -> Statement:
    """Delete the chunks of a thread's messages and thread-scoped records (their copied thread id)."""
    sql = f"DELETE FROM {names('RECORD_CHUNKS')}\nWHERE thread_id = :thread_id"
    return Statement("chunks.delete_for_thread", sql, {"thread_id": thread_id})


def chunks_clear_vectors(names: StoreNames) -> Statement:
    """Drop every stored vector (``clear_vectors``); texts stay for keyword search."""
    sql = f"UPDATE {names('RECORD_CHUNKS')}\nSET embedding = NULL\nWHERE embedding IS NOT NULL"
    return Statement("chunks.clear_vectors", sql)


# --- threads ---------------------------------------------------------------------------------------


def _thread_binds(thread: Thread) -> dict[str, Any]:
    return named(_bind_names(THREAD_COLUMNS), CODEC.thread_values(thread))


def thread_insert(names: StoreNames, thread: Thread) -> Statement:
    sql = f"INSERT INTO {names('THREAD')} ({THREAD_COLUMNS})\nVALUES ({_placeholders(THREAD_COLUMNS)})"
    return Statement("threads.insert", sql, _thread_binds(thread))


def thread_get(names: StoreNames, thread_id: str) -> Statement:
    sql = f"SELECT {columns('t', THREAD_COLUMNS)}\nFROM {names('THREAD')} t\nWHERE t.record_id = :record_id"
    return Statement("threads.get", sql, {"record_id": thread_id})


def threads_existing(names: StoreNames, thread_ids: Sequence[str]) -> Statement:
    """Which of ``thread_ids`` exist (one JSON array bind)."""
    sql = f"SELECT t.record_id\nFROM {names('THREAD')} t\nWHERE t.record_id IN ({_ID_LIST})"
    return Statement("threads.existing", sql, {"ids": _ids_json(thread_ids)})


def thread_update(names: StoreNames, thread: Thread) -> Statement:
    sql = (
        f"UPDATE {names('THREAD')}\n"
        "SET user_id = :user_id, agent_id = :agent_id, metadata = :metadata, runtime_config = :runtime_config, "
        "runtime_state = :runtime_state, created_at = :created_at, updated_at = :updated_at\n"
        "WHERE record_id = :record_id"
    )
    return Statement("threads.update", sql, _thread_binds(thread))


def thread_delete(names: StoreNames, thread_id: str) -> Statement:
    """Delete a thread; its messages, scoped records (with their links), summaries and jobs go
    with it by ``ON DELETE CASCADE``. Delete its chunks first (:func:`chunks_delete_for_thread`)."""
    sql = f"DELETE FROM {names('THREAD')}\nWHERE record_id = :record_id"
    return Statement("threads.delete", sql, {"record_id": thread_id})


def thread_list(
    names: StoreNames,
    *,
    user_id: ScopeValue = NOTSET,
    agent_id: ScopeValue = NOTSET,
    without_metadata: bool = False,
    limit: int | None = None,
    page: int | None = None,
    after: Keyset | None = None,
) -> Statement:
    """``threads.list`` (all, oldest first), ``threads.list_newest`` (``limit``) or
    ``threads.list_page`` (newest first, for metadata filtering in Python)."""
    clauses: list[str] = []
    binds: dict[str, Any] = {}
    _scope(clauses, binds, "t", "user_id", user_id)
    _scope(clauses, binds, "t", "agent_id", agent_id)
    if without_metadata:
        clauses.append("t.metadata IS NULL")
    return _listing(
        "threads.list",
        THREAD_COLUMNS,
        names("THREAD"),
        "t",
        clauses,
        binds,
        ("created_at", "record_id"),
        limit=limit,
        page=page,
        after=after,
    )


# --- messages --------------------------------------------------------------------------------------


def _message_binds(message: Message) -> dict[str, Any]:
    return named(_bind_names(MESSAGE_COLUMNS), CODEC.message_values(message))


def message_insert(names: StoreNames, message: Message) -> Statement:
    sql = f"INSERT INTO {names('MESSAGE')} ({MESSAGE_COLUMNS})\nVALUES ({_placeholders(MESSAGE_COLUMNS)})"
    return Statement("messages.insert", sql, _message_binds(message))


def message_get(names: StoreNames, message_id: str, now: datetime) -> Statement:
    sql = (
        f"SELECT {columns('m', MESSAGE_COLUMNS)}\nFROM {names('MESSAGE')} m\n"
        f"WHERE m.record_id = :record_id AND {_VISIBLE.format(a='m')}"
    )
    return Statement("messages.get", sql, {"record_id": message_id, "now": DIALECT.encode_time(now)})


def message_last_seq(names: StoreNames, thread_id: str) -> Statement:
    sql = f"SELECT MAX(m.order_seq)\nFROM {names('MESSAGE')} m\nWHERE m.thread_id = :thread_id"
    return Statement("messages.last_seq", sql, {"thread_id": thread_id})


def message_vectors(names: StoreNames, thread_id: str, message_ids: Sequence[str]) -> Statement:
    """The stored embeddings of some messages of a thread (their chunk rows that have one), by id."""
    sql = (
        f"SELECT c.source_id, c.embedding\nFROM {names('RECORD_CHUNKS')} c\n"
        "WHERE c.source_record_type = :source_record_type AND c.thread_id = :thread_id\n"
        f"AND c.embedding IS NOT NULL AND c.source_id IN ({_ID_LIST})"
    )
    return Statement(
        "messages.vectors",
        sql,
        {
            "source_record_type": RecordType.MESSAGE.value,
            "thread_id": thread_id,
            "ids": json.dumps(list(message_ids)),
        },
    )


def message_list_for_thread(
    names: StoreNames,
    thread_id: str,
    *,
    now: datetime,
    start_seq: int | None = None,
    end_seq: int | None = None,
    last_n: int | None = None,
) -> Statement:
    """Visible messages with ``start_seq <= seq < end_seq`` oldest first; ``last_n`` keeps the newest."""
    clauses = ["m.thread_id = :thread_id", _VISIBLE.format(a="m")]
    binds: dict[str, Any] = {"thread_id": thread_id, "now": DIALECT.encode_time(now)}
    if start_seq is not None:
        clauses.append("m.order_seq >= :start_seq")
        binds["start_seq"] = start_seq
    if end_seq is not None:
        clauses.append("m.order_seq < :end_seq")
        binds["end_seq"] = end_seq
    return _listing(
        "messages.list_for_thread",
        MESSAGE_COLUMNS,
        names("MESSAGE"),
        "m",
        clauses,
        binds,
        ("order_seq",),
        limit=last_n,
    )


def message_list(
    names: StoreNames,
    *,
    now: datetime,
    user_id: ScopeValue = NOTSET,
    agent_id: ScopeValue = NOTSET,
    thread_id: ScopeValue = NOTSET,
    without_metadata: bool = False,
    limit: int | None = None,
) -> Statement:
    """``messages.list``/``messages.list_newest``: visible messages of every thread, oldest
    first (creation time, thread, place in the thread); ``limit`` keeps the newest."""
    clauses = [_VISIBLE.format(a="m")]
    binds: dict[str, Any] = {"now": DIALECT.encode_time(now)}
    _scope(clauses, binds, "m", "user_id", user_id)
    _scope(clauses, binds, "m", "agent_id", agent_id)
    _scope(clauses, binds, "m", "thread_id", thread_id)
    if without_metadata:
        clauses.append("m.metadata IS NULL")
    return _listing(
        "messages.list",
        MESSAGE_COLUMNS,
        names("MESSAGE"),
        "m",
        clauses,
        binds,
        ("created_at", "thread_id", "order_seq"),
        limit=limit,
    )


def message_place(names: StoreNames, message_id: str, *, with_text: bool = False) -> Statement:
    """A stored message's (thread id, seq), or no row; ``with_text`` adds its content and
    metadata (``messages.place_with_text``: what the message after it reads of it)."""
    selected, name = "m.thread_id, m.order_seq", "messages.place"
    if with_text:
        selected, name = f"{selected}, m.content, m.metadata", "messages.place_with_text"
    sql = f"SELECT {selected}\nFROM {names('MESSAGE')} m\nWHERE m.record_id = :record_id"
    return Statement(name, sql, {"record_id": message_id})


def message_before(names: StoreNames, thread_id: str, seq: int) -> Statement:
    """(content, metadata) of the thread's message just before ``seq`` (the highest seq below
    it, expired or not), or no row. The ``(thread_id, order_seq)`` unique key's index serves
    it; ``FETCH FIRST 1 ROWS ONLY`` after the ``ORDER BY`` is the row_limiting_clause (Oracle
    SQL Language Reference, SELECT)."""
    sql = (
        f"SELECT m.content, m.metadata\nFROM {names('MESSAGE')} m\n"
        "WHERE m.thread_id = :thread_id AND m.order_seq < :order_seq\n"
        "ORDER BY m.order_seq DESC\nFETCH FIRST 1 ROWS ONLY"
    )
    return Statement("messages.before", sql, {"thread_id": thread_id, "order_seq": seq})


def message_after(names: StoreNames, thread_id: str, seq: int) -> Statement:
    """(id, seq, content, metadata) of the thread's message just after ``seq`` (the lowest seq
    above it, expired or not), or no row; the same index and row_limiting_clause as
    :func:`message_before`."""
    sql = (
        f"SELECT m.record_id, m.order_seq, m.content, m.metadata\nFROM {names('MESSAGE')} m\n"
        "WHERE m.thread_id = :thread_id AND m.order_seq > :order_seq\n"
        "ORDER BY m.order_seq\nFETCH FIRST 1 ROWS ONLY"
    )
    return Statement("messages.after", sql, {"thread_id": thread_id, "order_seq": seq})


def message_update(names: StoreNames, message: Message) -> Statement:
    """Replace a message's fields (its thread and seq never change)."""
    binds = _message_binds(message)
    del binds["thread_id"], binds["order_seq"]
    sql = (
        f"UPDATE {names('MESSAGE')}\n"
        "SET message_role = :message_role, content = :content, timestamp = :event_time, metadata = :metadata, "
        "user_id = :user_id, agent_id = :agent_id, created_at = :created_at, expires_at = :expires_at\n"
        "WHERE record_id = :record_id"
    )
    return Statement("messages.update", sql, binds)


def message_delete(names: StoreNames, message_id: str) -> Statement:
    sql = f"DELETE FROM {names('MESSAGE')}\nWHERE record_id = :record_id"
    return Statement("messages.delete", sql, {"record_id": message_id})


def messages_expired(names: StoreNames, now: datetime) -> Statement:
    """The (id, thread id, seq) of every message expired at ``now``, locked for the purge."""
    sql = (
        f"SELECT m.record_id, m.thread_id, m.order_seq\nFROM {names('MESSAGE')} m\n"
        "WHERE m.expires_at IS NOT NULL AND m.expires_at <= :now\nFOR UPDATE"
    )
    return Statement("messages.expired", sql, {"now": DIALECT.encode_time(now)})


def _unembedded(name: str, sql: str, binds: dict[str, Any], limit: int | None) -> Statement:
    if limit is None:
        return Statement(name, sql, binds)
    return Statement(f"{name}_limited", f"{sql}\nFETCH FIRST :limit ROWS ONLY", {**binds, "limit": limit})


def messages_unembedded(names: StoreNames, now: datetime, *, limit: int | None = None) -> Statement:
    """Visible messages whose chunk has no vector (or that have no chunk), oldest first
    (creation time, thread, place in the thread): the vector backfill's work list."""
    sql = (
        f"SELECT {columns('m', MESSAGE_COLUMNS)}\nFROM {names('MESSAGE')} m\n"
        f"WHERE {_VISIBLE.format(a='m')} AND NOT EXISTS (\n"
        f"  SELECT 1 FROM {names('RECORD_CHUNKS')} c\n"
        "  WHERE c.source_id = m.record_id AND c.source_record_type = :source_record_type\n"
        "  AND c.embedding IS NOT NULL)\n"
        "ORDER BY m.created_at, m.thread_id, m.order_seq"
    )
    binds = {"now": DIALECT.encode_time(now), "source_record_type": RecordType.MESSAGE.value}
    return _unembedded("messages.unembedded", sql, binds, limit)


# --- memory records --------------------------------------------------------------------------------


def _record_binds(record: MemoryRecord) -> dict[str, Any]:
    return named(_bind_names(MEMORY_COLUMNS), CODEC.record_values(record))


def record_insert(names: StoreNames, record: MemoryRecord) -> Statement:
    sql = f"INSERT INTO {names('MEMORY')} ({MEMORY_COLUMNS})\nVALUES ({_placeholders(MEMORY_COLUMNS)})"
    return Statement("records.insert", sql, _record_binds(record))


def record_get(names: StoreNames, record_id: str, *, now: datetime | None = None) -> Statement:
    """``records.get`` (expired included) or ``records.get_visible`` (with ``now``)."""
    select = (
        f"SELECT {columns('r', MEMORY_COLUMNS)}\nFROM {names('MEMORY')} r\nWHERE r.record_id = :record_id"
    )
    if now is None:
        return Statement("records.get", select, {"record_id": record_id})
    return Statement(
        "records.get_visible",
        f"{select} AND {_VISIBLE.format(a='r')}",
        {"record_id": record_id, "now": DIALECT.encode_time(now)},
    )


def record_get_many(names: StoreNames, record_ids: Sequence[str]) -> Statement:
    sql = (
        f"SELECT {columns('r', MEMORY_COLUMNS)}\nFROM {names('MEMORY')} r\nWHERE r.record_id IN ({_ID_LIST})"
    )
    return Statement("records.get_many", sql, {"ids": _ids_json(record_ids)})


def record_scope(names: StoreNames, record_id: str) -> Statement:
    """A stored record's (type, user, agent, thread), or no row."""
    sql = (
        f"SELECT r.memory_type, r.user_id, r.agent_id, r.thread_id\nFROM {names('MEMORY')} r\n"
        "WHERE r.record_id = :record_id"
    )
    return Statement("records.scope", sql, {"record_id": record_id})


def record_update(names: StoreNames, record: MemoryRecord) -> Statement:
    """Replace a record's mutable fields (type and scope never change)."""
    binds = _record_binds(record)
    for fixed in ("memory_type", "user_id", "agent_id", "thread_id"):
        del binds[fixed]
    sql = (
        f"UPDATE {names('MEMORY')}\n"
        "SET content = :content, metadata = :metadata, status = :status, invalidation_reason = :invalidation_reason, "
        "invalidated_at = :invalidated_at, timestamp = :event_time, expires_at = :expires_at, "
        "created_at = :created_at, updated_at = :updated_at\n"
        "WHERE record_id = :record_id"
    )
    return Statement("records.update", sql, binds)


def record_delete(names: StoreNames, record_id: str) -> Statement:
    """Delete a record; links touching it go by ``ON DELETE CASCADE``. Delete its chunk too."""
    sql = f"DELETE FROM {names('MEMORY')}\nWHERE record_id = :record_id"
    return Statement("records.delete", sql, {"record_id": record_id})


def record_expired_ids(names: StoreNames, now: datetime, *, limit: int | None = None) -> Statement:
    """Ids of records expired at ``now``, oldest expiry first (then id)."""
    sql = (
        f"SELECT r.record_id\nFROM {names('MEMORY')} r\n"
        "WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now\nORDER BY r.expires_at, r.record_id"
    )
    binds: dict[str, Any] = {"now": DIALECT.encode_time(now)}
    if limit is None:
        return Statement("records.expired_ids", sql, binds)
    return Statement(
        "records.expired_ids_limited", f"{sql}\nFETCH FIRST :limit ROWS ONLY", {**binds, "limit": limit}
    )


def records_unembedded(names: StoreNames, now: datetime, *, limit: int | None = None) -> Statement:
    """Visible memory records whose chunk has no vector (or that have no chunk), oldest first
    (creation time, then id): the vector backfill's work list."""
    sql = (
        f"SELECT {columns('r', MEMORY_COLUMNS)}\nFROM {names('MEMORY')} r\n"
        f"WHERE {_VISIBLE.format(a='r')} AND NOT EXISTS (\n"
        f"  SELECT 1 FROM {names('RECORD_CHUNKS')} c\n"
        "  WHERE c.source_id = r.record_id AND c.source_record_type = r.memory_type\n"
        "  AND c.embedding IS NOT NULL)\n"
        "ORDER BY r.created_at, r.record_id"
    )
    return _unembedded("records.unembedded", sql, {"now": DIALECT.encode_time(now)}, limit)


def record_list(
    names: StoreNames,
    *,
    now: datetime,
    user_id: ScopeValue = NOTSET,
    agent_id: ScopeValue = NOTSET,
    thread_id: ScopeValue = NOTSET,
    record_types: Sequence[RecordType] | None = None,
    without_metadata: bool = False,
    limit: int | None = None,
    page: int | None = None,
    after: Keyset | None = None,
) -> Statement:
    """``records.list``/``records.list_newest``/``records.list_page`` over visible records."""
    clauses = [_VISIBLE.format(a="r")]
    binds: dict[str, Any] = {"now": DIALECT.encode_time(now)}
    _scope(clauses, binds, "r", "user_id", user_id)
    _scope(clauses, binds, "r", "agent_id", agent_id)
    _scope(clauses, binds, "r", "thread_id", thread_id)
    if record_types is not None:
        values = sorted({RecordType(t).value for t in record_types})
        if not values:
            raise ValueError("record_types must not be empty here (an empty filter matches nothing)")
        type_binds = {f"memory_type_{i}": value for i, value in enumerate(values)}
        clauses.append(f"r.memory_type IN ({', '.join(f':{k}' for k in type_binds)})")
        binds.update(type_binds)
    if without_metadata:
        clauses.append("r.metadata IS NULL")
    return _listing(
        "records.list",
        MEMORY_COLUMNS,
        names("MEMORY"),
        "r",
        clauses,
        binds,
        ("created_at", "record_id"),
        limit=limit,
        page=page,
        after=after,
    )


# --- links -----------------------------------------------------------------------------------------


def _link_binds(link: RecordLink) -> dict[str, Any]:
    return named(_bind_names(LINK_COLUMNS), CODEC.link_values(link))


def link_check_add(names: StoreNames, link: RecordLink) -> Statement:
    """One row: (source exists, target exists, id taken, (source, target, type) taken)."""
    memory, links = names("MEMORY"), names("MEMORY_LINK")
    sql = (
        "SELECT\n"
        f"  (SELECT COUNT(*) FROM {memory} r WHERE r.record_id = :source_memory_id) AS source_found,\n"
        f"  (SELECT COUNT(*) FROM {memory} r WHERE r.record_id = :target_memory_id) AS target_found,\n"
        f"  (SELECT COUNT(*) FROM {links} l WHERE l.relation_id = :relation_id) AS id_taken,\n"
        f"  (SELECT COUNT(*) FROM {links} l WHERE l.source_memory_id = :source_memory_id"
        " AND l.target_memory_id = :target_memory_id AND l.relation_type = :relation_type) AS link_taken\n"
        "FROM DUAL"
    )
    return Statement(
        "links.check_add",
        sql,
        {
            "source_memory_id": link.source_id,
            "target_memory_id": link.target_id,
            "relation_id": link.id,
            "relation_type": link.relation_type,
        },
    )


def link_insert(names: StoreNames, link: RecordLink) -> Statement:
    """Insert a link; the endpoints' owners are copied into ``*_user_id`` from ``MEMORY``."""
    memory = names("MEMORY")
    sql = (
        f"INSERT INTO {names('MEMORY_LINK')} ({LINK_COLUMNS}, source_memory_user_id, target_memory_user_id)\n"
        f"VALUES ({_placeholders(LINK_COLUMNS)},\n"
        f"  (SELECT r.user_id FROM {memory} r WHERE r.record_id = :source_memory_id),\n"
        f"  (SELECT r.user_id FROM {memory} r WHERE r.record_id = :target_memory_id))"
    )
    return Statement("links.insert", sql, _link_binds(link))


def _link_select(names: StoreNames, where: str) -> str:
    return (
        f"SELECT {columns('l', LINK_COLUMNS)}\nFROM {names('MEMORY_LINK')} l\nWHERE {where}\n"
        "ORDER BY l.created_at, l.relation_id"
    )


def link_get(names: StoreNames, link_id: str) -> Statement:
    return Statement(
        "links.get", _link_select(names, "l.relation_id = :relation_id"), {"relation_id": link_id}
    )


def link_find(names: StoreNames, source_id: str, target_id: str, relation_type: str) -> Statement:
    where = "l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type"
    return Statement(
        "links.find",
        _link_select(names, where),
        {"source_id": source_id, "target_id": target_id, "relation_type": relation_type},
    )


def link_find_id(names: StoreNames, source_id: str, target_id: str, relation_type: str) -> Statement:
    sql = (
        f"SELECT l.relation_id\nFROM {names('MEMORY_LINK')} l\n"
        "WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type"
    )
    return Statement(
        "links.find_id", sql, {"source_id": source_id, "target_id": target_id, "relation_type": relation_type}
    )


def link_between(names: StoreNames, a: str, b: str) -> Statement:
    where = "((l.source_memory_id = :a AND l.target_memory_id = :b) OR (l.source_memory_id = :b AND l.target_memory_id = :a))"
    return Statement("links.between", _link_select(names, where), {"a": a, "b": b})


def link_touching(names: StoreNames, record_id: str) -> Statement:
    """Links with the record as source or target: two index lookups joined by ``UNION ALL``
    (a link never has the record at both ends: self-links are forbidden)."""
    table = names("MEMORY_LINK")
    sql = (
        f"SELECT {columns('l', LINK_COLUMNS)}\n"
        "FROM (\n"
        f"  SELECT {columns('s', LINK_COLUMNS)} FROM {table} s WHERE s.source_memory_id = :record_id\n"
        "  UNION ALL\n"
        f"  SELECT {columns('t', LINK_COLUMNS)} FROM {table} t WHERE t.target_memory_id = :record_id\n"
        ") l\n"
        "ORDER BY l.created_at, l.relation_id"
    )
    return Statement("links.touching", sql, {"record_id": record_id})


def link_endpoints(names: StoreNames, link_id: str) -> Statement:
    """A stored link's (source id, target id), or no row."""
    sql = (
        f"SELECT l.source_memory_id, l.target_memory_id\nFROM {names('MEMORY_LINK')} l\n"
        "WHERE l.relation_id = :relation_id"
    )
    return Statement("links.endpoints", sql, {"relation_id": link_id})


def link_update(names: StoreNames, link: RecordLink) -> Statement:
    """Replace a link's types, labels, metadata and times (its endpoints never change)."""
    binds = _link_binds(link)
    del binds["source_memory_id"], binds["target_memory_id"]
    sql = (
        f"UPDATE {names('MEMORY_LINK')}\n"
        "SET source_memory_type = :source_memory_type, target_memory_type = :target_memory_type, "
        "relation_type = :relation_type, opposite_relation_type = :opposite_relation_type, metadata = :metadata, "
        "timestamp = :event_time, created_at = :created_at\n"
        "WHERE relation_id = :relation_id"
    )
    return Statement("links.update", sql, binds)


def link_delete(names: StoreNames, link_id: str) -> Statement:
    sql = f"DELETE FROM {names('MEMORY_LINK')}\nWHERE relation_id = :relation_id"
    return Statement("links.delete", sql, {"relation_id": link_id})


def link_list(
    names: StoreNames,
    *,
    source_id: str | NotSetType = NOTSET,
    target_id: str | NotSetType = NOTSET,
    relation_type: str | NotSetType = NOTSET,
    limit: int | None = None,
) -> Statement:
    """``links.list``/``links.list_newest``: links by creation, then id."""
    clauses: list[str] = []
    binds: dict[str, Any] = {}
    for column, bind, value in (
        ("source_memory_id", "source_id", source_id),
        ("target_memory_id", "target_id", target_id),
        ("relation_type", "relation_type", relation_type),
    ):
        if not isinstance(value, NotSetType):
            clauses.append(f"l.{column} = :{bind}")
            binds[bind] = value
    return _listing(
        "links.list",
        LINK_COLUMNS,
        names("MEMORY_LINK"),
        "l",
        clauses,
        binds,
        ("created_at", "relation_id"),
        limit=limit,
    )


# --- summaries -------------------------------------------------------------------------------------


def summary_check_add(names: StoreNames, summary: ThreadSummary) -> Statement:
    """One row: (thread exists, id taken, revision taken). The unique (thread, revision) key is
    the compare-and-set itself; this check only names the error before writing."""
    table = names("THREAD_SUMMARY")
    sql = (
        "SELECT\n"
        f"  (SELECT COUNT(*) FROM {names('THREAD')} t WHERE t.record_id = :thread_id) AS thread_found,\n"
        f"  (SELECT COUNT(*) FROM {table} s WHERE s.record_id = :record_id) AS id_taken,\n"
        f"  (SELECT COUNT(*) FROM {table} s WHERE s.thread_id = :thread_id AND s.revision = :revision) AS revision_taken\n"
        "FROM DUAL"
    )
    return Statement(
        "summaries.check_add",
        sql,
        {"thread_id": summary.thread_id, "record_id": summary.id, "revision": summary.revision},
    )


def summary_insert(names: StoreNames, summary: ThreadSummary) -> Statement:
    """Store a revision; ``THREAD_SUMMARY_REVISION_UQ`` refuses a taken (thread, revision)."""
    binds = named(_bind_names(SUMMARY_COLUMNS), CODEC.summary_values(summary))
    sql = f"INSERT INTO {names('THREAD_SUMMARY')} ({SUMMARY_COLUMNS})\nVALUES ({_placeholders(SUMMARY_COLUMNS)})"
    return Statement("summaries.insert", sql, binds)


def summary_latest(names: StoreNames, thread_id: str, *, valid_only: bool = False) -> Statement:
    where = "s.thread_id = :thread_id"
    binds: dict[str, Any] = {"thread_id": thread_id}
    name = "summaries.latest"
    if valid_only:
        where += " AND s.status = :status"
        binds["status"] = RecordStatus.VALID.value
        name = "summaries.latest_valid"
    sql = (
        f"SELECT {columns('s', SUMMARY_COLUMNS)}\nFROM {names('THREAD_SUMMARY')} s\nWHERE {where}\n"
        "ORDER BY s.revision DESC\nFETCH FIRST 1 ROWS ONLY"
    )
    return Statement(name, sql, binds)


def summary_list_for_thread(names: StoreNames, thread_id: str) -> Statement:
    sql = (
        f"SELECT {columns('s', SUMMARY_COLUMNS)}\nFROM {names('THREAD_SUMMARY')} s\n"
        "WHERE s.thread_id = :thread_id\nORDER BY s.revision"
    )
    return Statement("summaries.list_for_thread", sql, {"thread_id": thread_id})


def summary_invalidate_covering(names: StoreNames, thread_id: str, seq: int) -> Statement:
    sql = (
        f"UPDATE {names('THREAD_SUMMARY')}\nSET status = :invalid\n"
        "WHERE thread_id = :thread_id AND status = :valid AND covered_through_seq >= :seq"
    )
    return Statement(
        "summaries.invalidate_covering",
        sql,
        {
            "invalid": RecordStatus.INVALID.value,
            "valid": RecordStatus.VALID.value,
            "thread_id": thread_id,
            "seq": seq,
        },
    )


def summary_prune(names: StoreNames, thread_id: str, keep: int) -> Statement:
    """Delete all but the ``keep`` highest revisions of the thread."""
    table = names("THREAD_SUMMARY")
    sql = (
        f"DELETE FROM {table}\n"
        "WHERE record_id IN (\n"
        "  SELECT ranked.record_id FROM (\n"
        "    SELECT s.record_id, ROW_NUMBER() OVER (ORDER BY s.revision DESC) AS newest\n"
        f"    FROM {table} s WHERE s.thread_id = :thread_id\n"
        "  ) ranked\n"
        "  WHERE ranked.newest > :keep\n"
        ")"
    )
    return Statement("summaries.prune", sql, {"thread_id": thread_id, "keep": keep})


# --- extraction jobs -------------------------------------------------------------------------------


def job_insert(names: StoreNames, job: ExtractionJob) -> Statement:
    binds = named(_bind_names(JOB_COLUMNS), CODEC.job_values(job))
    sql = f"INSERT INTO {names('EXTRACTION_JOB')} ({JOB_COLUMNS})\nVALUES ({_placeholders(JOB_COLUMNS)})"
    return Statement("jobs.insert", sql, binds)


def job_get(names: StoreNames, job_id: str) -> Statement:
    sql = f"SELECT {columns('j', JOB_COLUMNS)}\nFROM {names('EXTRACTION_JOB')} j\nWHERE j.job_id = :job_id"
    return Statement("jobs.get", sql, {"job_id": job_id})


def job_pending(names: StoreNames, now: datetime, *, limit: int | None = None) -> Statement:
    """Jobs not failed and not claimed, or whose lease expired by ``now``, oldest first
    (creation, then id)."""
    sql = (
        f"SELECT {columns('j', JOB_COLUMNS)}\nFROM {names('EXTRACTION_JOB')} j\n"
        "WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)\n"
        "ORDER BY j.created_at, j.job_id"
    )
    binds: dict[str, Any] = {"now": DIALECT.encode_time(now)}
    if limit is None:
        return Statement("jobs.pending", sql, binds)
    return Statement(
        "jobs.pending_limited", f"{sql}\nFETCH FIRST :limit ROWS ONLY", {**binds, "limit": limit}
    )


def job_claim(names: StoreNames, job_id: str, *, owner: str, until: datetime, now: datetime) -> Statement:
    """Lease the job if it is not failed and free or its lease expired: a conditional UPDATE (row
    count 1 or 0), atomic against concurrent claims (and against :func:`job_fail`) because the
    row lock serialises them and the second one re-evaluates the condition."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1\n"
        "WHERE job_id = :job_id AND failed_at IS NULL\n"
        "AND (claimed_until IS NULL OR claimed_until <= :now OR claimed_by = :holder)"
    )
    return Statement(
        "jobs.claim",
        sql,
        {"owner": owner, "until": DIALECT.encode_time(until), "job_id": job_id, "now": DIALECT.encode_time(now), "holder": owner},
    )


def job_list(names: StoreNames, *, thread_id: str | None = None, limit: int | None = None) -> Statement:
    """Jobs not failed, whatever their lease (of one thread, or all), oldest first (creation,
    then id). ``jobs.list``, ``jobs.list_limited`` and the ``*_for_thread`` forms."""
    return _job_listing(names, failed=False, thread_id=thread_id, limit=limit)


def _job_listing(names: StoreNames, *, failed: bool, thread_id: str | None, limit: int | None) -> Statement:
    """The jobs not failed (by creation) or the failed ones (by failure time), then by id; of
    one thread or all; the first ``limit`` of them."""
    clauses = ["j.failed_at IS NOT NULL" if failed else "j.failed_at IS NULL"]
    binds: dict[str, Any] = {}
    name = "jobs.failed" if failed else "jobs.list"
    if thread_id is not None:
        clauses.append("j.thread_id = :thread_id")
        binds["thread_id"] = thread_id
        name += "_for_thread"
    order = "j.failed_at" if failed else "j.created_at"
    sql = (
        f"SELECT {columns('j', JOB_COLUMNS)}\nFROM {names('EXTRACTION_JOB')} j\n"
        f"{_where(clauses)}\nORDER BY {order}, j.job_id"
    )
    if limit is None:
        return Statement(name, sql, binds)
    return Statement(f"{name}_limited", f"{sql}\nFETCH FIRST :limit ROWS ONLY", {**binds, "limit": limit})


def job_postpone(
    names: StoreNames, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool
) -> Statement:
    """Record a failed attempt of a job ``owner`` holds: its reason, the lease to ``until`` (the
    next attempt), and optionally the claim's attempt taken back (``GREATEST`` keeps it at 0 or
    more). A conditional UPDATE (row count 1, or 0 if the job is gone, failed or held by
    another owner)."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET claimed_until = :until, failure_reason = :failure_reason, attempts = GREATEST(0, attempts - :refund)\n"
        "WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner"
    )
    return Statement(
        "jobs.postpone",
        sql,
        {
            "until": DIALECT.encode_time(until),
            "failure_reason": reason,
            "refund": 1 if refund_attempt else 0,
            "job_id": job_id,
            "owner": owner,
        },
    )


def job_renew(names: StoreNames, job_id: str, *, owner: str, until: datetime) -> Statement:
    """Extend the lease ``owner`` holds to ``until`` (an attempt's heartbeat): a conditional
    UPDATE (row count 1, or 0 if the job is gone, failed or held by another owner)."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET claimed_until = :until\n"
        "WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner"
    )
    return Statement("jobs.renew", sql, {"until": DIALECT.encode_time(until), "job_id": job_id, "owner": owner})


def job_release(names: StoreNames, job_id: str, *, owner: str, until: datetime | None) -> Statement:
    """Hand back a job ``owner`` holds: no owner, claimable by anyone from ``until`` (``NULL``:
    at once), attempts and reason kept. A conditional UPDATE like :func:`job_renew`."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET claimed_by = NULL, claimed_until = :until\n"
        "WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner"
    )
    return Statement("jobs.release", sql, {"until": DIALECT.encode_time(until), "job_id": job_id, "owner": owner})


def job_fail(names: StoreNames, job_id: str, *, reason: str, at: datetime) -> Statement:
    """Mark the job failed at ``at`` with ``reason`` and release its lease (row count 1, or 0 if
    it is gone). The reason, a CLOB of up to 2000 characters, is bound in a plain ``UPDATE ...
    SET``; the caller validates it first."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET failed_at = :failed_at, failure_reason = :failure_reason, claimed_by = NULL, claimed_until = NULL\n"
        "WHERE job_id = :job_id"
    )
    return Statement(
        "jobs.fail",
        sql,
        {"failed_at": DIALECT.encode_time(at), "failure_reason": reason, "job_id": job_id},
    )


def job_failed(names: StoreNames, *, thread_id: str | None = None, limit: int | None = None) -> Statement:
    """Failed jobs (of one thread, or all), oldest failure first, then by id; the first
    ``limit`` of them. ``jobs.failed`` (every one), ``jobs.failed_limited``, and the
    ``*_for_thread`` forms."""
    return _job_listing(names, failed=True, thread_id=thread_id, limit=limit)


def job_retry(names: StoreNames, job_id: str) -> Statement:
    """Make a failed job pending again: attempts back to 0, lease and failure cleared. A
    conditional UPDATE like :func:`job_claim` (row count 1, or 0 if the job is gone or not
    failed); the caller reads the job back with :func:`job_get` in the same transaction."""
    sql = (
        f"UPDATE {names('EXTRACTION_JOB')}\n"
        "SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, failure_reason = NULL\n"
        "WHERE job_id = :job_id AND failed_at IS NOT NULL"
    )
    return Statement("jobs.retry", sql, {"job_id": job_id})


def job_delete(names: StoreNames, job_id: str) -> Statement:
    sql = f"DELETE FROM {names('EXTRACTION_JOB')}\nWHERE job_id = :job_id"
    return Statement("jobs.delete", sql, {"job_id": job_id})


# --- settings --------------------------------------------------------------------------------------


# --- images ----------------------------------------------------------------------------------------

_IMAGE_COLUMNS: Final = "record_id, mime_type, image_bytes, message_id, part_seq"


def image_insert(names: StoreNames, image: StoredImage) -> Statement:
    """Store an image's bytes (its MEMORY row exists: the foreign key says so)."""
    sql = (
        f"INSERT INTO {names('IMAGE')} ({_IMAGE_COLUMNS})\n"
        "VALUES (:record_id, :mime_type, :image_bytes, :message_id, :part_seq)"
    )
    binds = {
        "record_id": image.record_id,
        "mime_type": image.mime_type.value,
        "image_bytes": image.data,
        "message_id": image.message_id,
        "part_seq": image.position,
    }
    return Statement("images.insert", sql, binds)


def image_replace(names: StoreNames, image: StoredImage) -> Statement:
    """New bytes and MIME type for a stored image (its message and position stay)."""
    sql = (
        f"UPDATE {names('IMAGE')} i\nSET i.mime_type = :mime_type, i.image_bytes = :image_bytes\n"
        "WHERE i.record_id = :record_id"
    )
    binds = {"mime_type": image.mime_type.value, "image_bytes": image.data, "record_id": image.record_id}
    return Statement("images.replace", sql, binds)


def image_get_many(names: StoreNames, record_ids: Sequence[str], *, include_bytes: bool) -> Statement:
    """The images among ``record_ids``; the BLOB is selected only with ``include_bytes``."""
    data = "i.image_bytes" if include_bytes else "NULL"
    sql = (
        f"SELECT i.record_id, i.mime_type, {data}, i.message_id, i.part_seq\nFROM {names('IMAGE')} i\n"
        f"WHERE i.record_id IN ({_ID_LIST})"
    )
    name = "images.get_many" if include_bytes else "images.get_many_headers"
    return Statement(name, sql, {"ids": _ids_json(record_ids)})


def image_of_messages(names: StoreNames, message_ids: Sequence[str]) -> Statement:
    """The images attached to ``message_ids`` (no bytes), by message then position."""
    sql = (
        f"SELECT i.record_id, i.mime_type, NULL, i.message_id, i.part_seq\nFROM {names('IMAGE')} i\n"
        f"WHERE i.message_id IN ({_ID_LIST})\nORDER BY i.message_id, i.part_seq"
    )
    return Statement("images.of_messages", sql, {"ids": _ids_json(message_ids)})


def setting_get(names: StoreNames, key: str) -> Statement:
    """The setting's JSON text (serialised in SQL: a native JSON scalar string would otherwise
    arrive as a bare ``str``, indistinguishable from JSON text)."""
    sql = (
        "SELECT JSON_SERIALIZE(s.setting_value RETURNING CLOB)\n"
        f"FROM {names('STORE_SETTING')} s\nWHERE s.setting_key = :setting_key"
    )
    return Statement("settings.get", sql, {"setting_key": key})


def setting_set(names: StoreNames, key: str, value_json: str) -> Statement:
    """Insert or replace a setting (``value_json`` is the JSON text of the value, a scalar too).

    The text passes through a subquery here, so it is parsed with the ``JSON`` constructor
    explicitly rather than by the implicit conversion of a plain INSERT or UPDATE bind."""
    sql = (
        f"MERGE INTO {names('STORE_SETTING')} s\n"
        "USING (SELECT :setting_key AS setting_key, :setting_value AS setting_value FROM DUAL) v\n"
        "ON (s.setting_key = v.setting_key)\n"
        "WHEN MATCHED THEN UPDATE SET s.setting_value = JSON(v.setting_value)\n"
        "WHEN NOT MATCHED THEN INSERT (setting_key, setting_value) VALUES (v.setting_key, JSON(v.setting_value))"
    )
    return Statement("settings.set", sql, {"setting_key": key, "setting_value": value_json})


def setting_delete(names: StoreNames, key: str) -> Statement:
    sql = f"DELETE FROM {names('STORE_SETTING')}\nWHERE setting_key = :setting_key"
    return Statement("settings.delete", sql, {"setting_key": key})


# --- checkpoints (D41) -----------------------------------------------------------------------------
#
# A namespace is stored with a leading "/" (Oracle stores '' as NULL; a key column cannot be
# NULL): binds carry _ns(ns), selects strip it (SUBSTR from 2 is NULL for "/", read as "").
# Values are BLOBs and JSON texts declared as LOBs (see .sql: a MERGE's USING subquery takes
# no LONG bind). Upserts are MERGE statements; "insert unless present" is a MERGE without its
# WHEN MATCHED clause.

_CHECKPOINT_TABLES: Final = {
    "checkpoints": "CHECKPOINT",
    "checkpoint_blobs": "CHECKPOINT_BLOB",
    "checkpoint_writes": "CHECKPOINT_WRITE",
}
_CHECKPOINT_COLUMNS: Final = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, checkpoint_data, "
    "metadata, channel_versions, created_at"
)
_CHECKPOINT_SELECT: Final = (
    "SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, "
    "c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at\nFROM {table} c"
)
_CHECKPOINT_BLOB_COLUMNS: Final = "thread_id, checkpoint_ns, channel, channel_version, type_tag, blob_data"
_CHECKPOINT_WRITE_COLUMNS: Final = (
    "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data"
)
_CHECKPOINT_KEYS: Final = {
    "CHECKPOINT": ("thread_id", "checkpoint_ns", "checkpoint_id"),
    "CHECKPOINT_BLOB": ("thread_id", "checkpoint_ns", "channel", "channel_version"),
    "CHECKPOINT_WRITE": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}
_CHECKPOINT_TABLE_COLUMNS: Final = {
    "CHECKPOINT": _CHECKPOINT_COLUMNS,
    "CHECKPOINT_BLOB": _CHECKPOINT_BLOB_COLUMNS,
    "CHECKPOINT_WRITE": _CHECKPOINT_WRITE_COLUMNS,
}


def _ns(checkpoint_ns: str) -> str:
    """A namespace as stored (see the section comment)."""
    return f"/{checkpoint_ns}"


def _checkpoint_table(table: str) -> str:
    """The base name of one of the kit's checkpoint tables (``checkpoints``...)."""
    if table not in _CHECKPOINT_TABLES:
        raise ValueError(f"not a checkpoint table: {table!r}")
    return _CHECKPOINT_TABLES[table]


def _merge(
    names: StoreNames, base: str, *, replace: bool, json_columns: Sequence[str] = ()
) -> str:
    """``MERGE`` of one row bound by column name into a checkpoint table: an upsert
    (``replace``), or an insert of a row whose key is not stored yet."""
    cols = column_names(_CHECKPOINT_TABLE_COLUMNS[base])
    keys = _CHECKPOINT_KEYS[base]

    def value(column: str) -> str:
        return f"JSON(v.{column})" if column in json_columns else f"v.{column}"

    using = ", ".join(f":{column} AS {column}" for column in cols)
    on = " AND ".join(f"t.{key} = v.{key}" for key in keys)
    sql = f"MERGE INTO {names(base)} t\nUSING (SELECT {using} FROM DUAL) v\nON ({on})\n"
    if replace:
        updates = ", ".join(f"t.{column} = {value(column)}" for column in cols if column not in keys)
        sql += f"WHEN MATCHED THEN UPDATE SET {updates}\n"
    sql += (
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(cols)})\n"
        f"VALUES ({', '.join(value(column) for column in cols)})"
    )
    return sql


def checkpoint_put(names: StoreNames, checkpoint: StoredCheckpoint, metadata_json: str, versions_json: str) -> Statement:
    """Store a checkpoint, replacing the row of the same key."""
    binds = {
        "thread_id": checkpoint.thread_id,
        "checkpoint_ns": _ns(checkpoint.checkpoint_ns),
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "run_id": checkpoint.run_id,
        "type_tag": checkpoint.checkpoint.type,
        "checkpoint_data": checkpoint.checkpoint.data,
        "metadata": metadata_json,
        "channel_versions": versions_json,
        "created_at": DIALECT.encode_time(checkpoint.created_at),
    }
    sql = _merge(names, "CHECKPOINT", replace=True, json_columns=("metadata", "channel_versions"))
    lobs = {"checkpoint_data": "BLOB", "metadata": "CLOB", "channel_versions": "CLOB"}
    return Statement("checkpoints.put", sql, binds, lobs)


def checkpoint_blob_insert(names: StoreNames, thread_id: str, checkpoint_ns: str, blob: ChannelBlob) -> Statement:
    """Store a channel value unless that thread, namespace, channel and version has one."""
    binds = {
        "thread_id": thread_id,
        "checkpoint_ns": _ns(checkpoint_ns),
        "channel": blob.channel,
        "channel_version": blob.version,
        "type_tag": blob.value.type,
        "blob_data": blob.value.data,
    }
    sql = _merge(names, "CHECKPOINT_BLOB", replace=False)
    return Statement("checkpoints.blob_insert", sql, binds, {"blob_data": "BLOB"})


def checkpoint_write_put(
    names: StoreNames, thread_id: str, checkpoint_ns: str, checkpoint_id: str, write: CheckpointWrite, *, replace: bool
) -> Statement:
    """Store a pending write: replacing the stored one of its (task, idx) (``replace``), or
    keeping it."""
    binds = {
        "thread_id": thread_id,
        "checkpoint_ns": _ns(checkpoint_ns),
        "checkpoint_id": checkpoint_id,
        "task_id": write.task_id,
        "idx": write.idx,
        "task_path": write.task_path,
        "channel": write.channel,
        "type_tag": write.value.type,
        "write_data": write.value.data,
    }
    sql = _merge(names, "CHECKPOINT_WRITE", replace=replace)
    name = "checkpoints.write_replace" if replace else "checkpoints.write_insert"
    return Statement(name, sql, binds, {"write_data": "BLOB"})


def checkpoint_get(names: StoreNames, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> Statement:
    """One checkpoint, or the newest of the thread and namespace (``checkpoint_id`` None)."""
    select = _CHECKPOINT_SELECT.format(table=names("CHECKPOINT"))
    binds: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": _ns(checkpoint_ns)}
    where = "WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns"
    if checkpoint_id is None:
        sql = f"{select}\n{where}\nORDER BY c.checkpoint_id DESC\nFETCH FIRST 1 ROWS ONLY"
        return Statement("checkpoints.latest", sql, binds)
    binds["checkpoint_id"] = checkpoint_id
    return Statement("checkpoints.get", f"{select}\n{where} AND c.checkpoint_id = :checkpoint_id", binds)


def checkpoint_list(
    names: StoreNames,
    *,
    thread_id: str | None,
    checkpoint_ns: str | None,
    checkpoint_id: str | None,
    before: str | None,
    metadata: Mapping[str, Any] | None = None,
    limit: int | None,
) -> Statement:
    """Checkpoints newest first (by id, then thread and namespace, descending). Metadata is
    filtered by the kit in Python (``filters_checkpoint_metadata`` is False)."""
    if metadata:
        raise ValueError("the Oracle store filters checkpoint metadata in Python")
    clauses: list[str] = []
    binds: dict[str, Any] = {}
    if thread_id is not None:
        clauses.append("c.thread_id = :thread_id")
        binds["thread_id"] = thread_id
    if checkpoint_ns is not None:
        clauses.append("c.checkpoint_ns = :checkpoint_ns")
        binds["checkpoint_ns"] = _ns(checkpoint_ns)
    if checkpoint_id is not None:
        clauses.append("c.checkpoint_id = :checkpoint_id")
        binds["checkpoint_id"] = checkpoint_id
    if before is not None:
        clauses.append("c.checkpoint_id < :before")
        binds["before"] = before
    where = f"\n{_where(clauses)}" if clauses else ""
    sql = (
        f"{_CHECKPOINT_SELECT.format(table=names('CHECKPOINT'))}{where}\n"
        "ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC"
    )
    if limit is None:
        return Statement("checkpoints.list", sql, binds)
    return Statement("checkpoints.list_limited", f"{sql}\nFETCH FIRST :limit ROWS ONLY", {**binds, "limit": limit})


def checkpoint_blobs(
    names: StoreNames, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]
) -> Statement:
    """The stored blobs among ``(channel, version)`` pairs of a thread and namespace."""
    binds: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": _ns(checkpoint_ns)}
    pairs: list[str] = []
    for n, (channel, version) in enumerate(versions):
        pairs.append(f"(b.channel = :channel_{n} AND b.channel_version = :version_{n})")
        binds[f"channel_{n}"] = channel
        binds[f"version_{n}"] = version
    sql = (
        f"SELECT b.channel, b.channel_version, b.type_tag, b.blob_data\nFROM {names('CHECKPOINT_BLOB')} b\n"
        f"WHERE b.thread_id = :thread_id AND b.checkpoint_ns = :checkpoint_ns AND ({' OR '.join(pairs) or '1 = 0'})"
    )
    return Statement("checkpoints.blobs", sql, binds)


def checkpoint_writes(names: StoreNames, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Statement:
    """A checkpoint's pending writes by (task_path, task_id, idx); a task_path '' is NULL here,
    so NULLS FIRST keeps it first."""
    sql = (
        "SELECT w.task_id, w.task_path, w.idx, w.channel, w.type_tag, w.write_data\n"
        f"FROM {names('CHECKPOINT_WRITE')} w\n"
        "WHERE w.thread_id = :thread_id AND w.checkpoint_ns = :checkpoint_ns AND w.checkpoint_id = :checkpoint_id\n"
        "ORDER BY w.task_path NULLS FIRST, w.task_id, w.idx"
    )
    binds = {"thread_id": thread_id, "checkpoint_ns": _ns(checkpoint_ns), "checkpoint_id": checkpoint_id}
    return Statement("checkpoints.writes", sql, binds)


def checkpoint_delete_threads(names: StoreNames, table: str, thread_ids: Sequence[str]) -> Statement:
    """Every row of these threads in one checkpoint table (``checkpoints``...)."""
    base = _checkpoint_table(table)
    sql = f"DELETE FROM {names(base)}\nWHERE thread_id IN ({_ID_LIST})"
    return Statement(f"{table}.delete_threads", sql, {"ids": _ids_json(thread_ids)})


def checkpoint_delete_runs(names: StoreNames, run_ids: Sequence[str], *, writes: bool) -> Statement:
    """The checkpoints written by these runs, or (``writes``) their pending writes."""
    if not writes:
        sql = f"DELETE FROM {names('CHECKPOINT')}\nWHERE run_id IN ({_ID_LIST})"
        return Statement("checkpoints.delete_runs", sql, {"ids": _ids_json(run_ids)})
    sql = (
        f"DELETE FROM {names('CHECKPOINT_WRITE')}\nWHERE (thread_id, checkpoint_ns, checkpoint_id) IN (\n"
        f"    SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id FROM {names('CHECKPOINT')} c\n"
        f"    WHERE c.run_id IN ({_ID_LIST}))"
    )
    return Statement("checkpoint_writes.delete_runs", sql, {"ids": _ids_json(run_ids)})


def checkpoint_delete(
    names: StoreNames, table: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
) -> Statement:
    """These checkpoints (``table`` ``checkpoints``) or their writes (``checkpoint_writes``)."""
    base = _checkpoint_table(table)
    sql = (
        f"DELETE FROM {names(base)}\nWHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns "
        f"AND checkpoint_id IN ({_ID_LIST})"
    )
    binds = {"thread_id": thread_id, "checkpoint_ns": _ns(checkpoint_ns), "ids": _ids_json(checkpoint_ids)}
    return Statement(f"{table}.delete", sql, binds)


def checkpoint_blob_delete(names: StoreNames, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> Statement:
    sql = (
        f"DELETE FROM {names('CHECKPOINT_BLOB')}\nWHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns "
        "AND channel = :channel AND channel_version = :channel_version"
    )
    binds = {"thread_id": thread_id, "checkpoint_ns": _ns(checkpoint_ns), "channel": channel, "channel_version": version}
    return Statement("checkpoint_blobs.delete", sql, binds)


def checkpoint_copy(names: StoreNames, table: str, source_thread_id: str, target_thread_id: str) -> Statement:
    """Copy a thread's rows of one checkpoint table to another thread (ids kept); rows the
    target has already are kept (a MERGE without WHEN MATCHED)."""
    base = _checkpoint_table(table)
    cols = column_names(_CHECKPOINT_TABLE_COLUMNS[base])
    keys = _CHECKPOINT_KEYS[base]
    others = ", ".join(f"s.{column}" for column in cols if column != "thread_id")
    on = " AND ".join(f"t.{key} = v.{key}" for key in keys)
    sql = (
        f"MERGE INTO {names(base)} t\n"
        f"USING (SELECT :target_thread_id AS thread_id, {others}\n"
        f"       FROM {names(base)} s WHERE s.thread_id = :source_thread_id) v\n"
        f"ON ({on})\n"
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(cols)})\n"
        f"VALUES ({', '.join(f'v.{column}' for column in cols)})"
    )
    return Statement(f"{table}.copy", sql, {"target_thread_id": target_thread_id, "source_thread_id": source_thread_id})


# --- the SQL kit's statements ----------------------------------------------------------------------


class OracleStatements:
    """The builders above, bound to one store's names, as the SQL kit's repositories call them
    (:class:`palimpsest.adapters.sql.Statements`). Vectors live in the chunk rows, which the
    Oracle repositories' hooks write: the entity statements ignore them."""

    filters_metadata: ClassVar[bool] = False
    filters_checkpoint_metadata: ClassVar[bool] = False

    __slots__ = ("names",)

    def __init__(self, names: StoreNames) -> None:
        self.names = names

    # threads
    def thread_insert(self, thread: Thread) -> Statement:
        return thread_insert(self.names, thread)

    def thread_get(self, thread_id: str) -> Statement:
        return thread_get(self.names, thread_id)

    def threads_existing(self, thread_ids: Sequence[str]) -> Statement:
        return threads_existing(self.names, thread_ids)

    def thread_update(self, thread: Thread) -> Statement:
        return thread_update(self.names, thread)

    def thread_delete(self, thread_id: str) -> Statement:
        return thread_delete(self.names, thread_id)

    def thread_list(self, **kwargs: Any) -> Statement:
        return thread_list(self.names, **kwargs)

    # messages
    def message_insert(self, message: Message, vector: Any) -> Statement:
        return message_insert(self.names, message)

    def message_get(self, message_id: str, now: datetime) -> Statement:
        return message_get(self.names, message_id, now)

    def message_last_seq(self, thread_id: str) -> Statement:
        return message_last_seq(self.names, thread_id)

    def message_vectors(self, thread_id: str, message_ids: Sequence[str]) -> Statement:
        return message_vectors(self.names, thread_id, message_ids)

    def message_list_for_thread(self, thread_id: str, **kwargs: Any) -> Statement:
        return message_list_for_thread(self.names, thread_id, **kwargs)

    def message_list(self, **kwargs: Any) -> Statement:
        return message_list(self.names, **kwargs)

    def message_place(self, message_id: str, *, with_text: bool = False) -> Statement:
        return message_place(self.names, message_id, with_text=with_text)

    def message_update(self, message: Message, vector: Any) -> Statement:
        return message_update(self.names, message)

    def message_delete(self, message_id: str) -> Statement:
        return message_delete(self.names, message_id)

    def messages_expired(self, now: datetime) -> Statement:
        return messages_expired(self.names, now)

    def messages_unembedded(self, now: datetime, *, limit: int | None = None) -> Statement:
        return messages_unembedded(self.names, now, limit=limit)

    # records
    def record_insert(self, record: MemoryRecord, vector: Any) -> Statement:
        return record_insert(self.names, record)

    def record_get(self, record_id: str, *, now: datetime | None = None) -> Statement:
        return record_get(self.names, record_id, now=now)

    def record_get_many(self, record_ids: Sequence[str]) -> Statement:
        return record_get_many(self.names, record_ids)

    def record_scope(self, record_id: str) -> Statement:
        return record_scope(self.names, record_id)

    def record_update(self, record: MemoryRecord, vector: Any) -> Statement:
        return record_update(self.names, record)

    def record_delete(self, record_id: str) -> Statement:
        return record_delete(self.names, record_id)

    def record_expired_ids(self, now: datetime, *, limit: int | None = None) -> Statement:
        return record_expired_ids(self.names, now, limit=limit)

    def records_unembedded(self, now: datetime, *, limit: int | None = None) -> Statement:
        return records_unembedded(self.names, now, limit=limit)

    def record_list(self, **kwargs: Any) -> Statement:
        return record_list(self.names, **kwargs)

    # links
    def link_check_add(self, link: RecordLink) -> Statement:
        return link_check_add(self.names, link)

    def link_insert(self, link: RecordLink) -> Statement:
        return link_insert(self.names, link)

    def link_get(self, link_id: str) -> Statement:
        return link_get(self.names, link_id)

    def link_find(self, source_id: str, target_id: str, relation_type: str) -> Statement:
        return link_find(self.names, source_id, target_id, relation_type)

    def link_find_id(self, source_id: str, target_id: str, relation_type: str) -> Statement:
        return link_find_id(self.names, source_id, target_id, relation_type)

    def link_between(self, a: str, b: str) -> Statement:
        return link_between(self.names, a, b)

    def link_touching(self, record_id: str) -> Statement:
        return link_touching(self.names, record_id)

    def link_endpoints(self, link_id: str) -> Statement:
        return link_endpoints(self.names, link_id)

    def link_update(self, link: RecordLink) -> Statement:
        return link_update(self.names, link)

    def link_delete(self, link_id: str) -> Statement:
        return link_delete(self.names, link_id)

    def link_list(self, **kwargs: Any) -> Statement:
        return link_list(self.names, **kwargs)

    # summaries
    def summary_check_add(self, summary: ThreadSummary) -> Statement:
        return summary_check_add(self.names, summary)

    def summary_insert(self, summary: ThreadSummary) -> Statement:
        return summary_insert(self.names, summary)

    def summary_latest(self, thread_id: str, *, valid_only: bool = False) -> Statement:
        return summary_latest(self.names, thread_id, valid_only=valid_only)

    def summary_list_for_thread(self, thread_id: str) -> Statement:
        return summary_list_for_thread(self.names, thread_id)

    def summary_invalidate_covering(self, thread_id: str, seq: int) -> Statement:
        return summary_invalidate_covering(self.names, thread_id, seq)

    def summary_prune(self, thread_id: str, keep: int) -> Statement:
        return summary_prune(self.names, thread_id, keep)

    # extraction jobs
    def job_insert(self, job: ExtractionJob) -> Statement:
        return job_insert(self.names, job)

    def job_get(self, job_id: str) -> Statement:
        return job_get(self.names, job_id)

    def job_pending(self, now: datetime, *, limit: int | None = None) -> Statement:
        return job_pending(self.names, now, limit=limit)

    def job_claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> Statement:
        return job_claim(self.names, job_id, owner=owner, until=until, now=now)

    def job_list(self, *, thread_id: str | None = None, limit: int | None = None) -> Statement:
        return job_list(self.names, thread_id=thread_id, limit=limit)

    def job_failed(self, *, thread_id: str | None = None, limit: int | None = None) -> Statement:
        return job_failed(self.names, thread_id=thread_id, limit=limit)

    def job_postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool
    ) -> Statement:
        return job_postpone(
            self.names, job_id, owner=owner, until=until, reason=reason, refund_attempt=refund_attempt
        )

    def job_renew(self, job_id: str, *, owner: str, until: datetime) -> Statement:
        return job_renew(self.names, job_id, owner=owner, until=until)

    def job_release(self, job_id: str, *, owner: str, until: datetime | None) -> Statement:
        return job_release(self.names, job_id, owner=owner, until=until)

    def job_fail(self, job_id: str, *, reason: str, at: datetime) -> Statement:
        return job_fail(self.names, job_id, reason=reason, at=at)

    def job_retry(self, job_id: str) -> Statement:
        return job_retry(self.names, job_id)

    def job_delete(self, job_id: str) -> Statement:
        return job_delete(self.names, job_id)

    # settings
    # images
    def image_insert(self, image: StoredImage) -> Statement:
        return image_insert(self.names, image)

    def image_replace(self, image: StoredImage) -> Statement:
        return image_replace(self.names, image)

    def image_get_many(self, record_ids: Sequence[str], *, include_bytes: bool) -> Statement:
        return image_get_many(self.names, record_ids, include_bytes=include_bytes)

    def image_of_messages(self, message_ids: Sequence[str]) -> Statement:
        return image_of_messages(self.names, message_ids)

    def setting_get(self, key: str) -> Statement:
        return setting_get(self.names, key)

    def setting_set(self, key: str, value_json: str) -> Statement:
        return setting_set(self.names, key, value_json)

    def setting_delete(self, key: str) -> Statement:
        return setting_delete(self.names, key)

    # checkpoints
    def checkpoint_put(self, checkpoint: StoredCheckpoint, metadata_json: str, versions_json: str) -> Statement:
        return checkpoint_put(self.names, checkpoint, metadata_json, versions_json)

    def checkpoint_blob_insert(self, thread_id: str, checkpoint_ns: str, blob: ChannelBlob) -> Statement:
        return checkpoint_blob_insert(self.names, thread_id, checkpoint_ns, blob)

    def checkpoint_write_put(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, write: CheckpointWrite, *, replace: bool
    ) -> Statement:
        return checkpoint_write_put(self.names, thread_id, checkpoint_ns, checkpoint_id, write, replace=replace)

    def checkpoint_get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> Statement:
        return checkpoint_get(self.names, thread_id, checkpoint_ns, checkpoint_id)

    def checkpoint_list(self, **kwargs: Any) -> Statement:
        return checkpoint_list(self.names, **kwargs)

    def checkpoint_blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> Statement:
        return checkpoint_blobs(self.names, thread_id, checkpoint_ns, versions)

    def checkpoint_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Statement:
        return checkpoint_writes(self.names, thread_id, checkpoint_ns, checkpoint_id)

    def checkpoint_delete_threads(self, table: str, thread_ids: Sequence[str]) -> Statement:
        return checkpoint_delete_threads(self.names, table, thread_ids)

    def checkpoint_delete_runs(self, run_ids: Sequence[str], *, writes: bool) -> Statement:
        return checkpoint_delete_runs(self.names, run_ids, writes=writes)

    def checkpoint_delete(
        self, table: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> Statement:
        return checkpoint_delete(self.names, table, thread_id, checkpoint_ns, checkpoint_ids)

    def checkpoint_blob_delete(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> Statement:
        return checkpoint_blob_delete(self.names, thread_id, checkpoint_ns, channel, version)

    def checkpoint_copy(self, table: str, source_thread_id: str, target_thread_id: str) -> Statement:
        return checkpoint_copy(self.names, table, source_thread_id, target_thread_id)
