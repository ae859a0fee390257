"""Embedded adapter: the SQLite statements of the SQL kit's repositories (:mod:`palimpsest.adapters.sql`).

The kit's repositories hold the behaviour; these builders hold the SQL text. Vectors live in the
entity rows (``embedding`` blobs), metadata filters run in SQL (``metadata_matches``, registered
by :mod:`.schema`), and id lists travel as one JSON text read by ``json_each``.
"""

from __future__ import annotations

import json
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

from .codec import JOB_COLUMNS, LINK_COLUMNS, MESSAGE_COLUMNS, RECORD_COLUMNS, SUMMARY_COLUMNS, THREAD_COLUMNS

__all__ = ["SqliteStatements"]

Scope = str | None | NotSetType

_IDS: Final = "SELECT value FROM json_each(?)"


def _marks(columns: str) -> str:
    return ", ".join("?" * len(columns.split(",")))


_THREAD_INSERT: Final = f"INSERT INTO threads ({THREAD_COLUMNS}) VALUES ({_marks(THREAD_COLUMNS)})"
_MESSAGE_INSERT: Final = f"INSERT INTO messages ({MESSAGE_COLUMNS}, embedding) VALUES ({_marks(MESSAGE_COLUMNS)}, ?)"
_RECORD_INSERT: Final = f"INSERT INTO records ({RECORD_COLUMNS}, embedding) VALUES ({_marks(RECORD_COLUMNS)}, ?)"
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
            self.add(f"{column} = ?", value)

    def metadata(self, without: bool, flt: Mapping[str, Any] | None) -> None:
        if without:
            self.add("metadata IS NULL")
        elif flt is not None:
            self.add("metadata_matches(metadata, ?)", json.dumps(flt, separators=(",", ":")))

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


def _newest(name: str, columns: str, table: str, where: _Where, order: Sequence[str], limit: int | None) -> Sql:
    """Rows oldest first; with ``limit``, the newest ``limit`` of them (still oldest first)."""
    ascending = ", ".join(order)
    if limit is None:
        return Sql(name, f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {ascending}", where.params)
    descending = ", ".join(f"{column} DESC" for column in order)
    sql = f"SELECT {columns} FROM {table} WHERE {where.sql()} ORDER BY {descending} LIMIT ?"
    return Sql(f"{name}_newest", sql, (*where.params, limit), reverse=True)


class SqliteStatements:
    """The builders of :class:`palimpsest.adapters.sql.Statements` for the embedded schema."""

    filters_metadata: ClassVar[bool] = True

    __slots__ = ("_codec", "_time")

    def __init__(self, codec: RowCodec) -> None:
        self._codec = codec
        self._time = codec.dialect.encode_time

    # --- threads -------------------------------------------------------------------------------

    def thread_insert(self, thread: Thread) -> Sql:
        sql = _THREAD_INSERT
        return Sql("threads.insert", sql, self._codec.thread_values(thread))

    def thread_get(self, thread_id: str) -> Sql:
        return Sql("threads.get", f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,))

    def threads_existing(self, thread_ids: Sequence[str]) -> Sql:
        return Sql("threads.existing", f"SELECT id FROM threads WHERE id IN ({_IDS})", (json.dumps(list(thread_ids)),))

    def thread_update(self, thread: Thread) -> Sql:
        sql = (
            "UPDATE threads SET user_id = ?, agent_id = ?, metadata = ?, config = ?, state = ?, "
            "created_at = ?, updated_at = ? WHERE id = ?"
        )
        return Sql("threads.update", sql, (*self._codec.thread_values(thread)[1:], thread.id))

    def thread_delete(self, thread_id: str) -> Sql:
        # ON DELETE CASCADE removes the messages, the records scoped to the thread and, through
        # them, their links; the change-log triggers fire for every cascaded row.
        return Sql("threads.delete", "DELETE FROM threads WHERE id = ?", (thread_id,))

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
        where.metadata(without_metadata, metadata_filter)
        return _newest("threads.list", THREAD_COLUMNS, "threads", where, ("created_at", "id"), limit)

    # --- messages ------------------------------------------------------------------------------

    def message_insert(self, message: Message, vector: Any) -> Sql:
        sql = _MESSAGE_INSERT
        return Sql("messages.insert", sql, (*self._codec.message_values(message), vector))

    def message_logged(self, message_ids: Sequence[str]) -> Sql:
        """The change-log rows of added messages (logged here rather than by a trigger: see
        migration 0003)."""
        sql = "INSERT INTO changes (kind, ref) SELECT 'message', value FROM json_each(?)"
        return Sql("messages.logged", sql, (json.dumps(list(message_ids)),))

    def messages_taken(self, message_ids: Sequence[str]) -> Sql:
        """The first of ``message_ids`` stored already, if any."""
        return Sql("messages.taken", f"SELECT id FROM messages WHERE id IN ({_IDS}) LIMIT 1", (json.dumps(list(message_ids)),))

    def messages_placed(self, slots: Sequence[tuple[str, int]]) -> Sql:
        """The first (thread, seq) of ``slots`` taken by a stored message, if any."""
        sql = (
            "SELECT m.thread_id, m.seq FROM messages m JOIN json_each(?) j "
            "ON m.thread_id = json_extract(j.value, '$[0]') AND m.seq = json_extract(j.value, '$[1]') LIMIT 1"
        )
        return Sql("messages.placed", sql, (json.dumps(list(slots)),))

    def message_get(self, message_id: str, now: datetime) -> Sql:
        sql = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)"
        return Sql("messages.get", sql, (message_id, self._time(now)))

    def message_last_seq(self, thread_id: str) -> Sql:
        return Sql("messages.last_seq", "SELECT max(seq) FROM messages WHERE thread_id = ?", (thread_id,))

    def message_vectors(self, thread_id: str, message_ids: Sequence[str]) -> Sql:
        sql = (
            f"SELECT id, embedding FROM messages WHERE id IN ({_IDS}) "
            "AND thread_id = ? AND embedding IS NOT NULL"
        )
        return Sql("messages.vectors", sql, (json.dumps(list(message_ids)), thread_id))

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
        where.add("thread_id = ?", thread_id)
        where.add("(expires_at IS NULL OR expires_at > ?)", self._time(now))
        if start_seq is not None:
            where.add("seq >= ?", start_seq)
        if end_seq is not None:
            where.add("seq < ?", end_seq)
        return _newest("messages.list_for_thread", MESSAGE_COLUMNS, "messages", where, ("seq",), last_n)

    def message_place(self, message_id: str, *, with_text: bool = False) -> Sql:
        selected = "thread_id, seq, content, metadata" if with_text else "thread_id, seq"
        return Sql("messages.place", f"SELECT {selected} FROM messages WHERE id = ?", (message_id,))

    def message_update(self, message: Message, vector: Any) -> Sql:
        assignments = (
            "role = ?, content = ?, timestamp = ?, metadata = ?, user_id = ?, agent_id = ?, created_at = ?, expires_at = ?"
        )
        params: list[Any] = list(self._codec.message_values(message)[3:])
        if not isinstance(vector, NotSetType):
            assignments += ", embedding = ?"
            params.append(vector)
        return Sql("messages.update", f"UPDATE messages SET {assignments} WHERE id = ?", (*params, message.id))

    def message_delete(self, message_id: str) -> Sql:
        return Sql("messages.delete", "DELETE FROM messages WHERE id = ?", (message_id,))

    def messages_expired(self, now: datetime) -> Sql:
        sql = "SELECT id, thread_id, seq FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ?"
        return Sql("messages.expired", sql, (self._time(now),))

    # --- records -------------------------------------------------------------------------------

    def record_insert(self, record: MemoryRecord, vector: Any) -> Sql:
        sql = _RECORD_INSERT
        return Sql("records.insert", sql, (*self._codec.record_values(record), vector))

    def record_get(self, record_id: str, *, now: datetime | None = None) -> Sql:
        sql = f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ?"
        if now is None:
            return Sql("records.get", sql, (record_id,))
        return Sql(
            "records.get_visible", f"{sql} AND (expires_at IS NULL OR expires_at > ?)", (record_id, self._time(now))
        )

    def record_get_many(self, record_ids: Sequence[str]) -> Sql:
        sql = f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN ({_IDS})"
        return Sql("records.get_many", sql, (json.dumps(list(record_ids)),))

    def record_scope(self, record_id: str) -> Sql:
        sql = "SELECT record_type, user_id, agent_id, thread_id FROM records WHERE id = ?"
        return Sql("records.scope", sql, (record_id,))

    def record_update(self, record: MemoryRecord, vector: Any) -> Sql:
        assignments = (
            "content = ?, metadata = ?, status = ?, invalidation_reason = ?, invalidated_at = ?, "
            "timestamp = ?, expires_at = ?, created_at = ?, updated_at = ?"
        )
        values = self._codec.record_values(record)
        params: list[Any] = [values[2], *values[6:]]
        if not isinstance(vector, NotSetType):
            assignments += ", embedding = ?"
            params.append(vector)
        return Sql("records.update", f"UPDATE records SET {assignments} WHERE id = ?", (*params, record.id))

    def record_delete(self, record_id: str) -> Sql:
        # Links touching the record go with it (ON DELETE CASCADE).
        return Sql("records.delete", "DELETE FROM records WHERE id = ?", (record_id,))

    def record_expired_ids(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = "SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id"
        if limit is None:
            return Sql("records.expired_ids", sql, (self._time(now),))
        return Sql("records.expired_ids_limited", f"{sql} LIMIT ?", (self._time(now), limit))

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
        where.add("(expires_at IS NULL OR expires_at > ?)", self._time(now))
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        where.scope("thread_id", thread_id)
        if record_types is not None:
            types = sorted({RecordType(t).value for t in record_types})
            where.add(f"record_type IN ({', '.join('?' * len(types))})", *types)
        where.metadata(without_metadata, metadata_filter)
        return _newest("records.list", RECORD_COLUMNS, "records", where, ("created_at", "id"), limit)

    # --- links ---------------------------------------------------------------------------------

    def link_check_add(self, link: RecordLink) -> Sql:
        """One row: (source exists, target exists, id taken, (source, target, type) taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM records WHERE id = ?), (SELECT count(*) FROM records WHERE id = ?), "
            "(SELECT count(*) FROM links WHERE id = ?), "
            "(SELECT count(*) FROM links WHERE source_id = ? AND target_id = ? AND relation_type = ?)"
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
        return self._select("links.get", "id = ?", (link_id,))

    def link_find(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        where = "source_id = ? AND target_id = ? AND relation_type = ?"
        return self._select("links.find", where, (source_id, target_id, relation_type))

    def link_find_id(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        sql = "SELECT id FROM links WHERE source_id = ? AND target_id = ? AND relation_type = ?"
        return Sql("links.find_id", sql, (source_id, target_id, relation_type))

    def link_between(self, a: str, b: str) -> Sql:
        where = "(source_id = ? AND target_id = ?) OR (source_id = ? AND target_id = ?)"
        return self._select("links.between", where, (a, b, b, a))

    def link_touching(self, record_id: str) -> Sql:
        # A UNION lets SQLite use both endpoint indexes instead of scanning for the OR.
        sql = (
            f"SELECT {LINK_COLUMNS} FROM links WHERE source_id = ? UNION "
            f"SELECT {LINK_COLUMNS} FROM links WHERE target_id = ? ORDER BY created_at, id"
        )
        return Sql("links.touching", sql, (record_id, record_id))

    def link_endpoints(self, link_id: str) -> Sql:
        return Sql("links.endpoints", "SELECT source_id, target_id FROM links WHERE id = ?", (link_id,))

    def link_update(self, link: RecordLink) -> Sql:
        sql = (
            "UPDATE links SET source_type = ?, target_type = ?, relation_type = ?, opposite_relation_type = ?, "
            "metadata = ?, timestamp = ?, created_at = ? WHERE id = ?"
        )
        values = self._codec.link_values(link)
        return Sql("links.update", sql, (values[2], *values[4:], link.id))

    def link_delete(self, link_id: str) -> Sql:
        return Sql("links.delete", "DELETE FROM links WHERE id = ?", (link_id,))

    def link_list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> Sql:
        where = _Where()
        for column, value in (("source_id", source_id), ("target_id", target_id), ("relation_type", relation_type)):
            if not isinstance(value, NotSetType):
                where.add(f"{column} = ?", value)
        return _newest("links.list", LINK_COLUMNS, "links", where, ("created_at", "id"), limit)

    # --- summaries -----------------------------------------------------------------------------

    def summary_check_add(self, summary: ThreadSummary) -> Sql:
        """One row: (thread exists, id taken, revision taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM threads WHERE id = ?), (SELECT count(*) FROM summaries WHERE id = ?), "
            "(SELECT count(*) FROM summaries WHERE thread_id = ? AND revision = ?)"
        )
        return Sql("summaries.check_add", sql, (summary.thread_id, summary.id, summary.thread_id, summary.revision))

    def summary_insert(self, summary: ThreadSummary) -> Sql:
        sql = _SUMMARY_INSERT
        return Sql("summaries.insert", sql, self._codec.summary_values(summary))

    def summary_latest(self, thread_id: str, *, valid_only: bool = False) -> Sql:
        status = " AND status = 'valid'" if valid_only else ""
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ?{status} ORDER BY revision DESC LIMIT 1"
        return Sql("summaries.latest", sql, (thread_id,))

    def summary_list_for_thread(self, thread_id: str) -> Sql:
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ? ORDER BY revision"
        return Sql("summaries.list_for_thread", sql, (thread_id,))

    def summary_invalidate_covering(self, thread_id: str, seq: int) -> Sql:
        sql = "UPDATE summaries SET status = ? WHERE thread_id = ? AND status = ? AND covered_through_seq >= ?"
        return Sql(
            "summaries.invalidate_covering",
            sql,
            (RecordStatus.INVALID.value, thread_id, RecordStatus.VALID.value, seq),
        )

    def summary_prune(self, thread_id: str, keep: int) -> Sql:
        sql = (
            "DELETE FROM summaries WHERE thread_id = ? AND revision NOT IN "
            "(SELECT revision FROM summaries WHERE thread_id = ? ORDER BY revision DESC LIMIT ?)"
        )
        return Sql("summaries.prune", sql, (thread_id, thread_id, keep))

    # --- extraction jobs -----------------------------------------------------------------------

    def job_insert(self, job: ExtractionJob) -> Sql:
        sql = _JOB_INSERT
        return Sql("jobs.insert", sql, self._codec.job_values(job))

    def job_get(self, job_id: str) -> Sql:
        return Sql("jobs.get", f"SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE id = ?", (job_id,))

    def job_pending(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            f"SELECT {JOB_COLUMNS} FROM extraction_jobs "
            "WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?) ORDER BY created_at, id"
        )
        if limit is None:
            return Sql("jobs.pending", sql, (self._time(now),))
        return Sql("jobs.pending_limited", f"{sql} LIMIT ?", (self._time(now), limit))

    def job_claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 "
            "WHERE id = ? AND failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?)"
        )
        return Sql("jobs.claim", sql, (owner, self._time(until), job_id, self._time(now), owner))

    def _job_listing(self, *, failed: bool, thread_id: str | None, limit: int | None) -> Sql:
        """The jobs not failed (by creation) or the failed ones (by failure time), then by id."""
        sql = f"SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE failed_at IS {'NOT NULL' if failed else 'NULL'}"
        params: tuple[Any, ...] = ()
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params += (thread_id,)
        sql += " ORDER BY failed_at, id" if failed else " ORDER BY created_at, id"
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        return Sql("jobs.failed" if failed else "jobs.list", sql, params)

    def job_list(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=False, thread_id=thread_id, limit=limit)

    def job_failed(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=True, thread_id=thread_id, limit=limit)

    def job_postpone(self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_until = ?, failure_reason = ?, attempts = MAX(0, attempts - ?) "
            "WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        )
        return Sql("jobs.postpone", sql, (self._time(until), reason, 1 if refund_attempt else 0, job_id, owner))

    def job_renew(self, job_id: str, *, owner: str, until: datetime) -> Sql:
        sql = "UPDATE extraction_jobs SET claimed_until = ? WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        return Sql("jobs.renew", sql, (self._time(until), job_id, owner))

    def job_release(self, job_id: str, *, owner: str, until: datetime | None) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_by = NULL, claimed_until = ? "
            "WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        )
        return Sql("jobs.release", sql, (self._time(until), job_id, owner))

    def job_fail(self, job_id: str, *, reason: str, at: datetime) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET failed_at = ?, failure_reason = ?, claimed_by = NULL, claimed_until = NULL "
            "WHERE id = ?"
        )
        return Sql("jobs.fail", sql, (self._time(at), reason, job_id))

    def job_retry(self, job_id: str) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, "
            "failure_reason = NULL WHERE id = ? AND failed_at IS NOT NULL"
        )
        return Sql("jobs.retry", sql, (job_id,))

    def job_delete(self, job_id: str) -> Sql:
        return Sql("jobs.delete", "DELETE FROM extraction_jobs WHERE id = ?", (job_id,))

    # --- settings ------------------------------------------------------------------------------

    def setting_get(self, key: str) -> Sql:
        return Sql("settings.get", "SELECT value FROM settings WHERE key = ?", (key,))

    def setting_set(self, key: str, value_json: str) -> Sql:
        sql = self._codec.dialect.upsert("settings", ("key",), ("key", "value"))
        return Sql("settings.set", sql, (key, value_json))

    def setting_delete(self, key: str) -> Sql:
        return Sql("settings.delete", "DELETE FROM settings WHERE key = ?", (key,))
