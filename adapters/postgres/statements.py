"""Adapters layer (PostgreSQL): the statements of the SQL kit's repositories (:mod:`palimpsest.adapters.sql`).

The kit's repositories hold the behaviour; these builders hold the SQL text, with psycopg's
positional ``%s`` placeholders. Vectors live in the entity rows (``embedding``, pgvector text
literals), id lists travel as one array bind (``= ANY(%s)``), JSON columns are ``jsonb`` (bound
as text, which PostgreSQL casts by the column's type). Metadata filters are applied by the kit
over newest-first pages (``filters_metadata = False``): one filter semantics (D7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Final

from palimpsest.adapters.sql import Keyset, Sql
from palimpsest.adapters.sql.codec import RowCodec
from palimpsest.domain.model import (
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

__all__ = [
    "JOB_COLUMNS",
    "LINK_COLUMNS",
    "MESSAGE_COLUMNS",
    "RECORD_COLUMNS",
    "SUMMARY_COLUMNS",
    "THREAD_COLUMNS",
    "PostgresStatements",
]

Scope = str | None | NotSetType

THREAD_COLUMNS: Final = "id, user_id, agent_id, metadata, config, state, created_at, updated_at"
MESSAGE_COLUMNS: Final = (
    "id, thread_id, seq, role, content, timestamp, metadata, user_id, agent_id, created_at, expires_at"
)
RECORD_COLUMNS: Final = (
    "id, record_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, "
    "invalidated_at, timestamp, expires_at, created_at, updated_at"
)
LINK_COLUMNS: Final = (
    "id, source_id, source_type, target_id, target_type, relation_type, opposite_relation_type, "
    "metadata, timestamp, created_at"
)
SUMMARY_COLUMNS: Final = "id, thread_id, revision, text, topics, covered_through_seq, status, user_id, agent_id, metadata, created_at"
JOB_COLUMNS: Final = "id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason"


def _marks(columns: str) -> str:
    return ", ".join(["%s"] * len(columns.split(",")))


_THREAD_INSERT: Final = f"INSERT INTO threads ({THREAD_COLUMNS}) VALUES ({_marks(THREAD_COLUMNS)})"
_MESSAGE_INSERT: Final = (
    f"INSERT INTO messages ({MESSAGE_COLUMNS}, embedding) VALUES ({_marks(MESSAGE_COLUMNS)}, %s)"
)
_RECORD_INSERT: Final = (
    f"INSERT INTO records ({RECORD_COLUMNS}, embedding) VALUES ({_marks(RECORD_COLUMNS)}, %s)"
)
_LINK_INSERT: Final = f"INSERT INTO links ({LINK_COLUMNS}) VALUES ({_marks(LINK_COLUMNS)})"
_SUMMARY_INSERT: Final = f"INSERT INTO summaries ({SUMMARY_COLUMNS}) VALUES ({_marks(SUMMARY_COLUMNS)})"
_JOB_INSERT: Final = f"INSERT INTO extraction_jobs ({JOB_COLUMNS}) VALUES ({_marks(JOB_COLUMNS)})"


class _Where:
    """A growing list of SQL conditions with their parameters."""

    __slots__ = ("clauses", "params")

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def scope(self, column: str, value: Scope) -> None:
        """Three-valued scope filter: NOTSET → none, None → unscoped rows, str → exact."""
        if isinstance(value, NotSetType):
            return
        if value is None:
            self.add(f"{column} IS NULL")
        else:
            self.add(f"{column} = %s", value)

    def metadata(self, without: bool) -> None:
        if without:
            self.add("metadata IS NULL")

    def after(self, after: Keyset | None) -> None:
        """Strictly older than ``after`` (the kit's newest-first pages)."""
        if after is not None:
            self.add("(created_at, id) < (%s, %s)", after.created_at, after.id)

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "TRUE"


def _newest(
    name: str,
    columns: str,
    table: str,
    where: _Where,
    order: Sequence[str],
    limit: int | None,
    page: int | None = None,
) -> Sql:
    """Rows oldest first; with ``limit``, the newest ``limit`` of them (still oldest first);
    with ``page``, a page of ``page`` rows newest first (the kit filters metadata in Python)."""
    if page is not None:
        descending = ", ".join(f"{column} DESC" for column in order)
        sql = f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {descending} LIMIT %s"
        return Sql(f"{name}_page", sql, (*where.params, page))
    ascending = ", ".join(order)
    if limit is None:
        return Sql(
            name, f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {ascending}", where.params
        )
    descending = ", ".join(f"{column} DESC" for column in order)
    sql = f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {descending} LIMIT %s"
    return Sql(f"{name}_newest", sql, (*where.params, limit), reverse=True)


class PostgresStatements:
    """The builders of :class:`palimpsest.adapters.sql.Statements` for the PostgreSQL schema."""

    filters_metadata: ClassVar[bool] = False

    __slots__ = ("_codec", "_time")

    def __init__(self, codec: RowCodec) -> None:
        self._codec = codec
        self._time = codec.dialect.encode_time

    # --- threads -------------------------------------------------------------------------------

    def thread_insert(self, thread: Thread) -> Sql:
        sql = _THREAD_INSERT
        return Sql("threads.insert", sql, self._codec.thread_values(thread))

    def thread_get(self, thread_id: str) -> Sql:
        return Sql("threads.get", f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = %s", (thread_id,))

    def threads_existing(self, thread_ids: Sequence[str]) -> Sql:
        return Sql("threads.existing", "SELECT id FROM threads WHERE id = ANY(%s)", (list(thread_ids),))

    def thread_update(self, thread: Thread) -> Sql:
        sql = (
            "UPDATE threads SET user_id = %s, agent_id = %s, metadata = %s, config = %s, state = %s, "
            "created_at = %s, updated_at = %s WHERE id = %s"
        )
        return Sql("threads.update", sql, (*self._codec.thread_values(thread)[1:], thread.id))

    def thread_delete(self, thread_id: str) -> Sql:
        # ON DELETE CASCADE removes the messages, the records scoped to the thread and, through
        # them, their links; the change-log triggers fire for every cascaded row.
        return Sql("threads.delete", "DELETE FROM threads WHERE id = %s", (thread_id,))

    def thread_list(
        self,
        *,
        user_id: Scope = NOTSET,
        agent_id: Scope = NOTSET,
        without_metadata: bool = False,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        page: int | None = None,
        after: Keyset | None = None,
    ) -> Sql:
        where = _Where()
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        where.metadata(without_metadata)
        where.after(after)
        return _newest("threads.list", THREAD_COLUMNS, "threads", where, ("created_at", "id"), limit, page)

    # --- messages ------------------------------------------------------------------------------

    def message_insert(self, message: Message, vector: Any) -> Sql:
        sql = _MESSAGE_INSERT
        return Sql("messages.insert", sql, (*self._codec.message_values(message), vector))

    def message_get(self, message_id: str, now: datetime) -> Sql:
        sql = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = %s AND (expires_at IS NULL OR expires_at > %s)"
        return Sql("messages.get", sql, (message_id, self._time(now)))

    def message_last_seq(self, thread_id: str) -> Sql:
        return Sql("messages.last_seq", "SELECT max(seq) FROM messages WHERE thread_id = %s", (thread_id,))

    def message_vectors(self, thread_id: str, message_ids: Sequence[str]) -> Sql:
        sql = (
            "SELECT id, embedding::text FROM messages WHERE id = ANY(%s) "
            "AND thread_id = %s AND embedding IS NOT NULL"
        )
        return Sql("messages.vectors", sql, (list(message_ids), thread_id))

    def message_list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> Sql:
        where = _Where()
        where.add("thread_id = %s", thread_id)
        where.add("(expires_at IS NULL OR expires_at > %s)", self._time(now))
        if start_seq is not None:
            where.add("seq >= %s", start_seq)
        if end_seq is not None:
            where.add("seq < %s", end_seq)
        return _newest("messages.list_for_thread", MESSAGE_COLUMNS, "messages", where, ("seq",), last_n)

    def message_place(self, message_id: str, *, with_text: bool = False) -> Sql:
        selected = "thread_id, seq, content, metadata" if with_text else "thread_id, seq"
        return Sql("messages.place", f"SELECT {selected} FROM messages WHERE id = %s", (message_id,))

    def message_update(self, message: Message, vector: Any) -> Sql:
        assignments = "role = %s, content = %s, timestamp = %s, metadata = %s, user_id = %s, agent_id = %s, created_at = %s, expires_at = %s"
        params: list[Any] = list(self._codec.message_values(message)[3:])
        if not isinstance(vector, NotSetType):
            assignments += ", embedding = %s"
            params.append(vector)
        return Sql(
            "messages.update", f"UPDATE messages SET {assignments} WHERE id = %s", (*params, message.id)
        )

    def message_delete(self, message_id: str) -> Sql:
        return Sql("messages.delete", "DELETE FROM messages WHERE id = %s", (message_id,))

    def messages_expired(self, now: datetime) -> Sql:
        sql = "SELECT id, thread_id, seq FROM messages WHERE expires_at IS NOT NULL AND expires_at <= %s"
        return Sql("messages.expired", sql, (self._time(now),))

    # --- records -------------------------------------------------------------------------------

    def record_insert(self, record: MemoryRecord, vector: Any) -> Sql:
        sql = _RECORD_INSERT
        return Sql("records.insert", sql, (*self._codec.record_values(record), vector))

    def record_get(self, record_id: str, *, now: datetime | None = None) -> Sql:
        sql = f"SELECT {RECORD_COLUMNS} FROM records WHERE id = %s"
        if now is None:
            return Sql("records.get", sql, (record_id,))
        return Sql(
            "records.get_visible",
            f"{sql} AND (expires_at IS NULL OR expires_at > %s)",
            (record_id, self._time(now)),
        )

    def record_get_many(self, record_ids: Sequence[str]) -> Sql:
        sql = f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ANY(%s)"
        return Sql("records.get_many", sql, (list(record_ids),))

    def record_scope(self, record_id: str) -> Sql:
        sql = "SELECT record_type, user_id, agent_id, thread_id FROM records WHERE id = %s"
        return Sql("records.scope", sql, (record_id,))

    def record_update(self, record: MemoryRecord, vector: Any) -> Sql:
        assignments = (
            "content = %s, metadata = %s, status = %s, invalidation_reason = %s, invalidated_at = %s, "
            "timestamp = %s, expires_at = %s, created_at = %s, updated_at = %s"
        )
        values = self._codec.record_values(record)
        params: list[Any] = [values[2], *values[6:]]
        if not isinstance(vector, NotSetType):
            assignments += ", embedding = %s"
            params.append(vector)
        return Sql("records.update", f"UPDATE records SET {assignments} WHERE id = %s", (*params, record.id))

    def record_delete(self, record_id: str) -> Sql:
        # Links touching the record go with it (ON DELETE CASCADE).
        return Sql("records.delete", "DELETE FROM records WHERE id = %s", (record_id,))

    def record_expired_ids(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            "SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= %s ORDER BY expires_at, id"
        )
        if limit is None:
            return Sql("records.expired_ids", sql, (self._time(now),))
        return Sql("records.expired_ids_limited", f"{sql} LIMIT %s", (self._time(now), limit))

    def record_list(
        self,
        *,
        now: datetime,
        user_id: Scope = NOTSET,
        agent_id: Scope = NOTSET,
        thread_id: Scope = NOTSET,
        record_types: Sequence[RecordType] | None = None,
        without_metadata: bool = False,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        page: int | None = None,
        after: Keyset | None = None,
    ) -> Sql:
        where = _Where()
        where.add("(expires_at IS NULL OR expires_at > %s)", self._time(now))
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        where.scope("thread_id", thread_id)
        if record_types is not None:
            types = sorted({RecordType(t).value for t in record_types})
            where.add("record_type = ANY(%s)", types)
        where.metadata(without_metadata)
        where.after(after)
        return _newest("records.list", RECORD_COLUMNS, "records", where, ("created_at", "id"), limit, page)

    # --- links ---------------------------------------------------------------------------------

    def link_check_add(self, link: RecordLink) -> Sql:
        """One row: (source exists, target exists, id taken, (source, target, type) taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM records WHERE id = %s), (SELECT count(*) FROM records WHERE id = %s), "
            "(SELECT count(*) FROM links WHERE id = %s), "
            "(SELECT count(*) FROM links WHERE source_id = %s AND target_id = %s AND relation_type = %s)"
        )
        params = (link.source_id, link.target_id, link.id, link.source_id, link.target_id, link.relation_type)
        return Sql("links.check_add", sql, params)

    def link_insert(self, link: RecordLink) -> Sql:
        sql = _LINK_INSERT
        return Sql("links.insert", sql, self._codec.link_values(link))

    @staticmethod
    def _select(name: str, where: str, params: Sequence[Any]) -> Sql:
        return Sql(name, f"SELECT {LINK_COLUMNS} FROM links WHERE {where} ORDER BY created_at, id", params)

    def link_get(self, link_id: str) -> Sql:
        return self._select("links.get", "id = %s", (link_id,))

    def link_find(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        where = "source_id = %s AND target_id = %s AND relation_type = %s"
        return self._select("links.find", where, (source_id, target_id, relation_type))

    def link_find_id(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        sql = "SELECT id FROM links WHERE source_id = %s AND target_id = %s AND relation_type = %s"
        return Sql("links.find_id", sql, (source_id, target_id, relation_type))

    def link_between(self, a: str, b: str) -> Sql:
        where = "(source_id = %s AND target_id = %s) OR (source_id = %s AND target_id = %s)"
        return self._select("links.between", where, (a, b, b, a))

    def link_touching(self, record_id: str) -> Sql:
        # A UNION lets SQLite use both endpoint indexes instead of scanning for the OR.
        sql = (
            f"SELECT {LINK_COLUMNS} FROM links WHERE source_id = %s UNION "
            f"SELECT {LINK_COLUMNS} FROM links WHERE target_id = %s ORDER BY created_at, id"
        )
        return Sql("links.touching", sql, (record_id, record_id))

    def link_endpoints(self, link_id: str) -> Sql:
        return Sql("links.endpoints", "SELECT source_id, target_id FROM links WHERE id = %s", (link_id,))

    def link_update(self, link: RecordLink) -> Sql:
        sql = (
            "UPDATE links SET source_type = %s, target_type = %s, relation_type = %s, opposite_relation_type = %s, "
            "metadata = %s, timestamp = %s, created_at = %s WHERE id = %s"
        )
        values = self._codec.link_values(link)
        return Sql("links.update", sql, (values[2], *values[4:], link.id))

    def link_delete(self, link_id: str) -> Sql:
        return Sql("links.delete", "DELETE FROM links WHERE id = %s", (link_id,))

    def link_list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> Sql:
        where = _Where()
        for column, value in (
            ("source_id", source_id),
            ("target_id", target_id),
            ("relation_type", relation_type),
        ):
            if not isinstance(value, NotSetType):
                where.add(f"{column} = %s", value)
        return _newest("links.list", LINK_COLUMNS, "links", where, ("created_at", "id"), limit)

    # --- summaries -----------------------------------------------------------------------------

    def summary_check_add(self, summary: ThreadSummary) -> Sql:
        """One row: (thread exists, id taken, revision taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM threads WHERE id = %s), (SELECT count(*) FROM summaries WHERE id = %s), "
            "(SELECT count(*) FROM summaries WHERE thread_id = %s AND revision = %s)"
        )
        return Sql(
            "summaries.check_add", sql, (summary.thread_id, summary.id, summary.thread_id, summary.revision)
        )

    def summary_insert(self, summary: ThreadSummary) -> Sql:
        sql = _SUMMARY_INSERT
        return Sql("summaries.insert", sql, self._codec.summary_values(summary))

    def summary_latest(self, thread_id: str, *, valid_only: bool = False) -> Sql:
        status = " AND status = 'valid'" if valid_only else ""
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = %s{status} ORDER BY revision DESC LIMIT 1"
        return Sql("summaries.latest", sql, (thread_id,))

    def summary_list_for_thread(self, thread_id: str) -> Sql:
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = %s ORDER BY revision"
        return Sql("summaries.list_for_thread", sql, (thread_id,))

    def summary_invalidate_covering(self, thread_id: str, seq: int) -> Sql:
        sql = "UPDATE summaries SET status = %s WHERE thread_id = %s AND status = %s AND covered_through_seq >= %s"
        return Sql(
            "summaries.invalidate_covering",
            sql,
            (RecordStatus.INVALID.value, thread_id, RecordStatus.VALID.value, seq),
        )

    def summary_prune(self, thread_id: str, keep: int) -> Sql:
        sql = (
            "DELETE FROM summaries WHERE thread_id = %s AND revision NOT IN "
            "(SELECT revision FROM summaries WHERE thread_id = %s ORDER BY revision DESC LIMIT %s)"
        )
        return Sql("summaries.prune", sql, (thread_id, thread_id, keep))

    # --- extraction jobs -----------------------------------------------------------------------

    def job_insert(self, job: ExtractionJob) -> Sql:
        sql = _JOB_INSERT
        return Sql("jobs.insert", sql, self._codec.job_values(job))

    def job_get(self, job_id: str) -> Sql:
        return Sql("jobs.get", f"SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE id = %s", (job_id,))

    def job_pending(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            f"SELECT {JOB_COLUMNS} FROM extraction_jobs "
            "WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= %s) ORDER BY created_at, id"
        )
        if limit is None:
            return Sql("jobs.pending", sql, (self._time(now),))
        return Sql("jobs.pending_limited", f"{sql} LIMIT %s", (self._time(now), limit))

    def job_claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> Sql:
        # The row is locked and re-checked by the claim (SKIP LOCKED: a job being claimed by
        # another worker at this moment is passed over, never waited for).
        sql = (
            "WITH c AS (SELECT id FROM extraction_jobs WHERE id = %s AND failed_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until <= %s OR claimed_by = %s) FOR UPDATE SKIP LOCKED) "
            "UPDATE extraction_jobs j SET claimed_by = %s, claimed_until = %s, attempts = j.attempts + 1 "
            "FROM c WHERE j.id = c.id"
        )
        return Sql("jobs.claim", sql, (job_id, self._time(now), owner, owner, self._time(until)))

    def _job_listing(self, *, failed: bool, thread_id: str | None, limit: int | None) -> Sql:
        """The jobs not failed (by creation) or the failed ones (by failure time), then by id."""
        sql = (
            f"SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE failed_at IS {'NOT NULL' if failed else 'NULL'}"
        )
        params: tuple[Any, ...] = ()
        if thread_id is not None:
            sql += " AND thread_id = %s"
            params += (thread_id,)
        sql += " ORDER BY failed_at, id" if failed else " ORDER BY created_at, id"
        if limit is not None:
            sql += " LIMIT %s"
            params += (limit,)
        return Sql("jobs.failed" if failed else "jobs.list", sql, params)

    def job_list(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=False, thread_id=thread_id, limit=limit)

    def job_failed(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=True, thread_id=thread_id, limit=limit)

    def job_postpone(
        self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool
    ) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_until = %s, failure_reason = %s, attempts = GREATEST(0, attempts - %s) "
            "WHERE id = %s AND failed_at IS NULL AND claimed_by = %s"
        )
        return Sql(
            "jobs.postpone", sql, (self._time(until), reason, 1 if refund_attempt else 0, job_id, owner)
        )

    def job_renew(self, job_id: str, *, owner: str, until: datetime) -> Sql:
        sql = "UPDATE extraction_jobs SET claimed_until = %s WHERE id = %s AND failed_at IS NULL AND claimed_by = %s"
        return Sql("jobs.renew", sql, (self._time(until), job_id, owner))

    def job_release(self, job_id: str, *, owner: str, until: datetime | None) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_by = NULL, claimed_until = %s "
            "WHERE id = %s AND failed_at IS NULL AND claimed_by = %s"
        )
        return Sql("jobs.release", sql, (self._time(until), job_id, owner))

    def job_fail(self, job_id: str, *, reason: str, at: datetime) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET failed_at = %s, failure_reason = %s, claimed_by = NULL, claimed_until = NULL "
            "WHERE id = %s"
        )
        return Sql("jobs.fail", sql, (self._time(at), reason, job_id))

    def job_retry(self, job_id: str) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, "
            "failure_reason = NULL WHERE id = %s AND failed_at IS NOT NULL"
        )
        return Sql("jobs.retry", sql, (job_id,))

    def job_delete(self, job_id: str) -> Sql:
        return Sql("jobs.delete", "DELETE FROM extraction_jobs WHERE id = %s", (job_id,))

    # --- settings ------------------------------------------------------------------------------

    def setting_get(self, key: str) -> Sql:
        return Sql("settings.get", "SELECT value::text FROM settings WHERE key = %s", (key,))

    def setting_set(self, key: str, value_json: str) -> Sql:
        sql = "INSERT INTO settings (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        return Sql("settings.set", sql, (key, value_json))

    def setting_delete(self, key: str) -> Sql:
        return Sql("settings.delete", "DELETE FROM settings WHERE key = %s", (key,))
