"""Adapters layer (SQL kit): the kit's statements in standard SQL, written once for every store
whose schema names its tables and columns as the kit does (the embedded and PostgreSQL stores).

:class:`StandardStatements` implements :class:`~.statements.Statements` over the tables
``threads``, ``messages``, ``records``, ``links``, ``summaries``, ``extraction_jobs`` and
``settings``, with the kit's column lists (:data:`~.codec.THREAD_COLUMNS`...) and vectors in the
entity rows (an ``embedding`` column). The text is written with ``?`` placeholders and bound
positionally; the store's dialect turns it into its own style
(:meth:`~.dialect.Dialect.positional`) and says how an id list binds
(:meth:`~.dialect.Dialect.in_list`) and how an upsert is written (:meth:`~.dialect.Dialect.upsert`).
Everything else is plain SQL both SQLite and PostgreSQL run: row values for keyset pages,
``LIMIT``, ``UNION``, ``CASE``.

A store subclasses it and overrides only the statements its database writes otherwise (the
embedded store filters metadata in SQL; PostgreSQL claims a job with ``FOR UPDATE SKIP
LOCKED``). A store with its own names (Oracle) writes its own builders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Final

from palimpsest.domain.checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint
from palimpsest.domain.images import StoredImage
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

from .codec import (
    JOB_COLUMNS,
    LINK_COLUMNS,
    MESSAGE_COLUMNS,
    RECORD_COLUMNS,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
    RowCodec,
)
from .statements import Keyset, Sql

__all__ = ["StandardStatements", "Where"]

Scope = str | None | NotSetType


def _marks(columns: str) -> str:
    return ", ".join("?" * len(columns.split(",")))


_THREAD_INSERT: Final = f"INSERT INTO threads ({THREAD_COLUMNS}) VALUES ({_marks(THREAD_COLUMNS)})"
_MESSAGE_INSERT: Final = f"INSERT INTO messages ({MESSAGE_COLUMNS}, embedding) VALUES ({_marks(MESSAGE_COLUMNS)}, ?)"
_RECORD_INSERT: Final = f"INSERT INTO records ({RECORD_COLUMNS}, embedding) VALUES ({_marks(RECORD_COLUMNS)}, ?)"
_LINK_INSERT: Final = f"INSERT INTO links ({LINK_COLUMNS}) VALUES ({_marks(LINK_COLUMNS)})"
_SUMMARY_INSERT: Final = f"INSERT INTO summaries ({SUMMARY_COLUMNS}) VALUES ({_marks(SUMMARY_COLUMNS)})"
CHECKPOINT_COLUMNS: Final = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, data, metadata, "
    "channel_versions, created_at"
)
CHECKPOINT_BLOB_COLUMNS: Final = "thread_id, checkpoint_ns, channel, version, type_tag, data"
CHECKPOINT_WRITE_COLUMNS: Final = (
    "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, data"
)
_CHECKPOINT_BLOB_INSERT: Final = (
    f"INSERT INTO checkpoint_blobs ({CHECKPOINT_BLOB_COLUMNS}) VALUES ({_marks(CHECKPOINT_BLOB_COLUMNS)}) "
    "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING"
)
_CHECKPOINT_WRITE_INSERT: Final = (
    f"INSERT INTO checkpoint_writes ({CHECKPOINT_WRITE_COLUMNS}) VALUES ({_marks(CHECKPOINT_WRITE_COLUMNS)}) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING"
)
_JOB_INSERT: Final = f"INSERT INTO extraction_jobs ({JOB_COLUMNS}) VALUES ({_marks(JOB_COLUMNS)})"


class Where:
    """A growing list of SQL conditions and their parameters (the standard statements write
    ``?``; the PostgreSQL search session writes ``%s``: the class only keeps them in order)."""

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

    def predicate(self) -> str:
        """``a AND b`` (``true`` when there is no condition)."""
        return " AND ".join(self.clauses) if self.clauses else "true"

    def sql(self) -> str:
        """`` WHERE a AND b`` (nothing when there is no condition)."""
        return f" WHERE {self.predicate()}" if self.clauses else ""


class StandardStatements:
    """The builders of :class:`palimpsest.adapters.sql.Statements` in standard SQL (see the
    module docstring). ``filters_metadata`` is False: the kit filters metadata over newest-first
    keyset pages; a store that filters in SQL sets it and overrides :meth:`_metadata_condition`."""

    filters_metadata: ClassVar[bool] = False
    filters_checkpoint_metadata: ClassVar[bool] = False

    __slots__ = ("_checkpoint_put", "_checkpoint_write_put", "_codec", "_dialect", "_setting_set", "_texts", "_time")

    def __init__(self, codec: RowCodec) -> None:
        self._codec = codec
        self._dialect = codec.dialect
        self._time = codec.dialect.encode_time
        self._texts: dict[str, str] = {}
        self._setting_set = self._dialect.upsert("settings", ("key",), ("key", "value"))
        self._checkpoint_put = self._dialect.upsert(
            "checkpoints", ("thread_id", "checkpoint_ns", "checkpoint_id"), CHECKPOINT_COLUMNS.split(", ")
        )
        self._checkpoint_write_put = self._dialect.upsert(
            "checkpoint_writes", ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
            CHECKPOINT_WRITE_COLUMNS.split(", "),
        )

    def _sql(self, name: str, sql: str, params: Sequence[Any] = (), *, reverse: bool = False) -> Sql:
        """A statement of text written with ``?``, in the dialect's placeholders (converted
        once per text)."""
        text = self._texts.get(sql)
        if text is None:
            text = self._texts[sql] = self._dialect.positional(sql)
        return Sql(name, text, params, reverse)

    def _in(self, column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        return self._dialect.in_list(column, values)

    # --- hooks -----------------------------------------------------------------------------------

    def _metadata_condition(self, metadata_filter: Mapping[str, Any]) -> tuple[str, Sequence[Any]]:
        """The condition of a validated metadata filter (only where ``filters_metadata``)."""
        raise NotImplementedError("this store filters metadata in Python (filters_metadata is False)")

    def _listing(
        self,
        where: Where,
        *,
        without_metadata: bool,
        metadata_filter: Mapping[str, Any] | None,
        after: Keyset | None,
    ) -> None:
        """A listing's metadata conditions and the keyset its page continues after."""
        if without_metadata:
            where.add("metadata IS NULL")
        elif metadata_filter is not None:
            clause, params = self._metadata_condition(metadata_filter)
            where.add(clause, *params)
        if after is not None:
            where.add("(created_at, id) < (?, ?)", self._time(after.created_at), after.id)

    def _newest(
        self,
        name: str,
        columns: str,
        table: str,
        where: Where,
        order: Sequence[str],
        limit: int | None,
        page: int | None = None,
    ) -> Sql:
        """Rows oldest first; with ``limit``, the newest ``limit`` of them (still oldest first);
        with ``page``, a page of ``page`` rows newest first (the kit filters metadata on it)."""
        select = f"SELECT {columns} FROM {table}{where.sql()} ORDER BY "
        if page is None and limit is None:
            return self._sql(name, select + ", ".join(order), where.params)
        descending = ", ".join(f"{column} DESC" for column in order)
        if page is not None:
            return self._sql(f"{name}_page", f"{select}{descending} LIMIT ?", (*where.params, page))
        return self._sql(f"{name}_newest", f"{select}{descending} LIMIT ?", (*where.params, limit), reverse=True)

    # --- threads -------------------------------------------------------------------------------

    def thread_insert(self, thread: Thread) -> Sql:
        return self._sql("threads.insert", _THREAD_INSERT, self._codec.thread_values(thread))

    def thread_get(self, thread_id: str) -> Sql:
        return self._sql("threads.get", f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,))

    def threads_existing(self, thread_ids: Sequence[str]) -> Sql:
        clause, params = self._in("id", thread_ids)
        return self._sql("threads.existing", f"SELECT id FROM threads WHERE {clause}", params)

    def thread_update(self, thread: Thread) -> Sql:
        sql = (
            "UPDATE threads SET user_id = ?, agent_id = ?, metadata = ?, config = ?, state = ?, "
            "created_at = ?, updated_at = ? WHERE id = ?"
        )
        return self._sql("threads.update", sql, (*self._codec.thread_values(thread)[1:], thread.id))

    def thread_delete(self, thread_id: str) -> Sql:
        # ON DELETE CASCADE removes the messages, the records scoped to the thread and, through
        # them, their links.
        return self._sql("threads.delete", "DELETE FROM threads WHERE id = ?", (thread_id,))

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
        where = Where()
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        self._listing(where, without_metadata=without_metadata, metadata_filter=metadata_filter, after=after)
        return self._newest("threads.list", THREAD_COLUMNS, "threads", where, ("created_at", "id"), limit, page)

    # --- messages ------------------------------------------------------------------------------

    def message_insert(self, message: Message, vector: Any) -> Sql:
        return self._sql("messages.insert", _MESSAGE_INSERT, (*self._codec.message_values(message), vector))

    def message_get(self, message_id: str, now: datetime) -> Sql:
        sql = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)"
        return self._sql("messages.get", sql, (message_id, self._time(now)))

    def message_last_seq(self, thread_id: str) -> Sql:
        return self._sql("messages.last_seq", "SELECT max(seq) FROM messages WHERE thread_id = ?", (thread_id,))

    def message_vectors(self, thread_id: str, message_ids: Sequence[str]) -> Sql:
        clause, params = self._in("id", message_ids)
        sql = f"SELECT id, embedding FROM messages WHERE {clause} AND thread_id = ? AND embedding IS NOT NULL"
        return self._sql("messages.vectors", sql, (*params, thread_id))

    def message_list_for_thread(
        self,
        thread_id: str,
        *,
        now: datetime,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last_n: int | None = None,
    ) -> Sql:
        where = Where()
        where.add("thread_id = ?", thread_id)
        where.add("(expires_at IS NULL OR expires_at > ?)", self._time(now))
        if start_seq is not None:
            where.add("seq >= ?", start_seq)
        if end_seq is not None:
            where.add("seq < ?", end_seq)
        return self._newest("messages.list_for_thread", MESSAGE_COLUMNS, "messages", where, ("seq",), last_n)

    def message_list(
        self,
        *,
        now: datetime,
        user_id: Scope = NOTSET,
        agent_id: Scope = NOTSET,
        thread_id: Scope = NOTSET,
        without_metadata: bool = False,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Sql:
        where = Where()
        where.add("(expires_at IS NULL OR expires_at > ?)", self._time(now))
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        where.scope("thread_id", thread_id)
        self._listing(where, without_metadata=without_metadata, metadata_filter=metadata_filter, after=None)
        order = ("created_at", "thread_id", "seq")
        return self._newest("messages.list", MESSAGE_COLUMNS, "messages", where, order, limit)

    def message_place(self, message_id: str, *, with_text: bool = False) -> Sql:
        selected = "thread_id, seq, content, metadata" if with_text else "thread_id, seq"
        return self._sql("messages.place", f"SELECT {selected} FROM messages WHERE id = ?", (message_id,))

    def message_update(self, message: Message, vector: Any) -> Sql:
        assignments = (
            "role = ?, content = ?, timestamp = ?, metadata = ?, user_id = ?, agent_id = ?, created_at = ?, expires_at = ?"
        )
        params: list[Any] = list(self._codec.message_values(message)[3:])
        if not isinstance(vector, NotSetType):
            assignments += ", embedding = ?"
            params.append(vector)
        return self._sql("messages.update", f"UPDATE messages SET {assignments} WHERE id = ?", (*params, message.id))

    def message_delete(self, message_id: str) -> Sql:
        return self._sql("messages.delete", "DELETE FROM messages WHERE id = ?", (message_id,))

    def messages_expired(self, now: datetime) -> Sql:
        sql = "SELECT id, thread_id, seq FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ?"
        return self._sql("messages.expired", sql, (self._time(now),))

    def messages_unembedded(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE embedding IS NULL"
            " AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, thread_id, seq"
        )
        if limit is None:
            return self._sql("messages.unembedded", sql, (self._time(now),))
        return self._sql("messages.unembedded_limited", f"{sql} LIMIT ?", (self._time(now), limit))

    # --- records -------------------------------------------------------------------------------

    def record_insert(self, record: MemoryRecord, vector: Any) -> Sql:
        return self._sql("records.insert", _RECORD_INSERT, (*self._codec.record_values(record), vector))

    def record_get(self, record_id: str, *, now: datetime | None = None) -> Sql:
        sql = f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ?"
        if now is None:
            return self._sql("records.get", sql, (record_id,))
        visible = f"{sql} AND (expires_at IS NULL OR expires_at > ?)"
        return self._sql("records.get_visible", visible, (record_id, self._time(now)))

    def record_get_many(self, record_ids: Sequence[str]) -> Sql:
        clause, params = self._in("id", record_ids)
        return self._sql("records.get_many", f"SELECT {RECORD_COLUMNS} FROM records WHERE {clause}", params)

    def record_scope(self, record_id: str) -> Sql:
        sql = "SELECT record_type, user_id, agent_id, thread_id FROM records WHERE id = ?"
        return self._sql("records.scope", sql, (record_id,))

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
        return self._sql("records.update", f"UPDATE records SET {assignments} WHERE id = ?", (*params, record.id))

    def record_delete(self, record_id: str) -> Sql:
        # Links touching the record go with it (ON DELETE CASCADE).
        return self._sql("records.delete", "DELETE FROM records WHERE id = ?", (record_id,))

    def record_expired_ids(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = "SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id"
        if limit is None:
            return self._sql("records.expired_ids", sql, (self._time(now),))
        return self._sql("records.expired_ids_limited", f"{sql} LIMIT ?", (self._time(now), limit))

    def records_unembedded(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM records WHERE embedding IS NULL"
            " AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id"
        )
        if limit is None:
            return self._sql("records.unembedded", sql, (self._time(now),))
        return self._sql("records.unembedded_limited", f"{sql} LIMIT ?", (self._time(now), limit))

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
        where = Where()
        where.add("(expires_at IS NULL OR expires_at > ?)", self._time(now))
        where.scope("user_id", user_id)
        where.scope("agent_id", agent_id)
        where.scope("thread_id", thread_id)
        if record_types is not None:
            types = sorted({RecordType(t).value for t in record_types})
            where.add(f"record_type IN ({', '.join('?' * len(types))})", *types)
        self._listing(where, without_metadata=without_metadata, metadata_filter=metadata_filter, after=after)
        return self._newest("records.list", RECORD_COLUMNS, "records", where, ("created_at", "id"), limit, page)

    # --- links ---------------------------------------------------------------------------------

    def link_check_add(self, link: RecordLink) -> Sql:
        """One row: (source exists, target exists, id taken, (source, target, type) taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM records WHERE id = ?), (SELECT count(*) FROM records WHERE id = ?), "
            "(SELECT count(*) FROM links WHERE id = ?), "
            "(SELECT count(*) FROM links WHERE source_id = ? AND target_id = ? AND relation_type = ?)"
        )
        params = (link.source_id, link.target_id, link.id, link.source_id, link.target_id, link.relation_type)
        return self._sql("links.check_add", sql, params)

    def link_insert(self, link: RecordLink) -> Sql:
        return self._sql("links.insert", _LINK_INSERT, self._codec.link_values(link))

    def _links(self, name: str, where: str, params: Sequence[Any]) -> Sql:
        return self._sql(name, f"SELECT {LINK_COLUMNS} FROM links WHERE {where} ORDER BY created_at, id", params)

    def link_get(self, link_id: str) -> Sql:
        return self._links("links.get", "id = ?", (link_id,))

    def link_find(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        where = "source_id = ? AND target_id = ? AND relation_type = ?"
        return self._links("links.find", where, (source_id, target_id, relation_type))

    def link_find_id(self, source_id: str, target_id: str, relation_type: str) -> Sql:
        sql = "SELECT id FROM links WHERE source_id = ? AND target_id = ? AND relation_type = ?"
        return self._sql("links.find_id", sql, (source_id, target_id, relation_type))

    def link_between(self, a: str, b: str) -> Sql:
        where = "(source_id = ? AND target_id = ?) OR (source_id = ? AND target_id = ?)"
        return self._links("links.between", where, (a, b, b, a))

    def link_touching(self, record_id: str) -> Sql:
        # A UNION lets the database use both endpoint indexes instead of scanning for the OR.
        sql = (
            f"SELECT {LINK_COLUMNS} FROM links WHERE source_id = ? UNION "
            f"SELECT {LINK_COLUMNS} FROM links WHERE target_id = ? ORDER BY created_at, id"
        )
        return self._sql("links.touching", sql, (record_id, record_id))

    def link_endpoints(self, link_id: str) -> Sql:
        return self._sql("links.endpoints", "SELECT source_id, target_id FROM links WHERE id = ?", (link_id,))

    def link_update(self, link: RecordLink) -> Sql:
        sql = (
            "UPDATE links SET source_type = ?, target_type = ?, relation_type = ?, opposite_relation_type = ?, "
            "metadata = ?, timestamp = ?, created_at = ? WHERE id = ?"
        )
        values = self._codec.link_values(link)
        return self._sql("links.update", sql, (values[2], *values[4:], link.id))

    def link_delete(self, link_id: str) -> Sql:
        return self._sql("links.delete", "DELETE FROM links WHERE id = ?", (link_id,))

    def link_list(
        self,
        *,
        source_id: str | NotSetType = NOTSET,
        target_id: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> Sql:
        where = Where()
        for column, value in (("source_id", source_id), ("target_id", target_id), ("relation_type", relation_type)):
            if not isinstance(value, NotSetType):
                where.add(f"{column} = ?", value)
        return self._newest("links.list", LINK_COLUMNS, "links", where, ("created_at", "id"), limit)

    # --- summaries -----------------------------------------------------------------------------

    def summary_check_add(self, summary: ThreadSummary) -> Sql:
        """One row: (thread exists, id taken, revision taken)."""
        sql = (
            "SELECT (SELECT count(*) FROM threads WHERE id = ?), (SELECT count(*) FROM summaries WHERE id = ?), "
            "(SELECT count(*) FROM summaries WHERE thread_id = ? AND revision = ?)"
        )
        params = (summary.thread_id, summary.id, summary.thread_id, summary.revision)
        return self._sql("summaries.check_add", sql, params)

    def summary_insert(self, summary: ThreadSummary) -> Sql:
        return self._sql("summaries.insert", _SUMMARY_INSERT, self._codec.summary_values(summary))

    def summary_latest(self, thread_id: str, *, valid_only: bool = False) -> Sql:
        status = " AND status = 'valid'" if valid_only else ""
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ?{status} ORDER BY revision DESC LIMIT 1"
        return self._sql("summaries.latest", sql, (thread_id,))

    def summary_list_for_thread(self, thread_id: str) -> Sql:
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE thread_id = ? ORDER BY revision"
        return self._sql("summaries.list_for_thread", sql, (thread_id,))

    def summary_invalidate_covering(self, thread_id: str, seq: int) -> Sql:
        sql = "UPDATE summaries SET status = ? WHERE thread_id = ? AND status = ? AND covered_through_seq >= ?"
        params = (RecordStatus.INVALID.value, thread_id, RecordStatus.VALID.value, seq)
        return self._sql("summaries.invalidate_covering", sql, params)

    def summary_prune(self, thread_id: str, keep: int) -> Sql:
        sql = (
            "DELETE FROM summaries WHERE thread_id = ? AND revision NOT IN "
            "(SELECT revision FROM summaries WHERE thread_id = ? ORDER BY revision DESC LIMIT ?)"
        )
        return self._sql("summaries.prune", sql, (thread_id, thread_id, keep))

    # --- extraction jobs -----------------------------------------------------------------------

    def job_insert(self, job: ExtractionJob) -> Sql:
        return self._sql("jobs.insert", _JOB_INSERT, self._codec.job_values(job))

    def job_get(self, job_id: str) -> Sql:
        return self._sql("jobs.get", f"SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE id = ?", (job_id,))

    def job_pending(self, now: datetime, *, limit: int | None = None) -> Sql:
        sql = (
            f"SELECT {JOB_COLUMNS} FROM extraction_jobs "
            "WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?) ORDER BY created_at, id"
        )
        if limit is None:
            return self._sql("jobs.pending", sql, (self._time(now),))
        return self._sql("jobs.pending_limited", f"{sql} LIMIT ?", (self._time(now), limit))

    def job_claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 "
            "WHERE id = ? AND failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?)"
        )
        return self._sql("jobs.claim", sql, (owner, self._time(until), job_id, self._time(now), owner))

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
        return self._sql("jobs.failed" if failed else "jobs.list", sql, params)

    def job_list(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=False, thread_id=thread_id, limit=limit)

    def job_failed(self, *, thread_id: str | None = None, limit: int | None = None) -> Sql:
        return self._job_listing(failed=True, thread_id=thread_id, limit=limit)

    def job_postpone(self, job_id: str, *, owner: str, until: datetime, reason: str, refund_attempt: bool) -> Sql:
        # attempts = max(0, attempts - refund), in standard SQL
        sql = (
            "UPDATE extraction_jobs SET claimed_until = ?, failure_reason = ?, "
            "attempts = CASE WHEN attempts > ? THEN attempts - ? ELSE 0 END "
            "WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        )
        refund = 1 if refund_attempt else 0
        return self._sql("jobs.postpone", sql, (self._time(until), reason, refund, refund, job_id, owner))

    def job_renew(self, job_id: str, *, owner: str, until: datetime) -> Sql:
        sql = "UPDATE extraction_jobs SET claimed_until = ? WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        return self._sql("jobs.renew", sql, (self._time(until), job_id, owner))

    def job_release(self, job_id: str, *, owner: str, until: datetime | None) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET claimed_by = NULL, claimed_until = ? "
            "WHERE id = ? AND failed_at IS NULL AND claimed_by = ?"
        )
        return self._sql("jobs.release", sql, (self._time(until), job_id, owner))

    def job_fail(self, job_id: str, *, reason: str, at: datetime) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET failed_at = ?, failure_reason = ?, claimed_by = NULL, claimed_until = NULL "
            "WHERE id = ?"
        )
        return self._sql("jobs.fail", sql, (self._time(at), reason, job_id))

    def job_retry(self, job_id: str) -> Sql:
        sql = (
            "UPDATE extraction_jobs SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, "
            "failure_reason = NULL WHERE id = ? AND failed_at IS NOT NULL"
        )
        return self._sql("jobs.retry", sql, (job_id,))

    def job_delete(self, job_id: str) -> Sql:
        return self._sql("jobs.delete", "DELETE FROM extraction_jobs WHERE id = ?", (job_id,))

    # --- settings ------------------------------------------------------------------------------

    # --- images ---------------------------------------------------------------------------------

    def image_insert(self, image: StoredImage) -> Sql:
        sql = "INSERT INTO images (record_id, mime_type, data, message_id, position) VALUES (?, ?, ?, ?, ?)"
        values = (image.record_id, image.mime_type.value, image.data, image.message_id, image.position)
        return self._sql("images.insert", sql, values)

    def image_replace(self, image: StoredImage) -> Sql:
        sql = "UPDATE images SET mime_type = ?, data = ? WHERE record_id = ?"
        return self._sql("images.replace", sql, (image.mime_type.value, image.data, image.record_id))

    def image_get_many(self, record_ids: Sequence[str], *, include_bytes: bool) -> Sql:
        clause, params = self._in("record_id", record_ids)
        data = "data" if include_bytes else "NULL"
        sql = f"SELECT record_id, mime_type, {data}, message_id, position FROM images WHERE {clause}"
        return self._sql("images.get_many" if include_bytes else "images.get_many_headers", sql, params)

    def image_of_messages(self, message_ids: Sequence[str]) -> Sql:
        clause, params = self._in("message_id", message_ids)
        sql = (
            f"SELECT record_id, mime_type, NULL, message_id, position FROM images WHERE {clause} "
            "ORDER BY message_id, position"
        )
        return self._sql("images.of_messages", sql, params)

    # --- checkpoints (D41) ----------------------------------------------------------------------

    def _checkpoint_metadata_condition(self, metadata: Mapping[str, Any]) -> tuple[str, Sequence[Any]]:
        """The exact condition of a checkpoint metadata filter (only where
        ``filters_checkpoint_metadata``: equality of each key's JSON value)."""
        raise NotImplementedError("this store filters checkpoint metadata in Python")

    def checkpoint_put(self, checkpoint: StoredCheckpoint, metadata_json: str, versions_json: str) -> Sql:
        values = (
            checkpoint.thread_id, checkpoint.checkpoint_ns, checkpoint.checkpoint_id,
            checkpoint.parent_checkpoint_id, checkpoint.run_id, checkpoint.checkpoint.type,
            checkpoint.checkpoint.data, metadata_json, versions_json, self._time(checkpoint.created_at),
        )
        return Sql("checkpoints.put", self._checkpoint_put, values)  # the dialect's own placeholders

    def checkpoint_blob_insert(self, thread_id: str, checkpoint_ns: str, blob: ChannelBlob) -> Sql:
        values = (thread_id, checkpoint_ns, blob.channel, blob.version, blob.value.type, blob.value.data)
        return self._sql("checkpoints.blob_insert", _CHECKPOINT_BLOB_INSERT, values)

    def checkpoint_write_put(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, write: CheckpointWrite, *, replace: bool
    ) -> Sql:
        values = (
            thread_id, checkpoint_ns, checkpoint_id, write.task_id, write.idx, write.task_path, write.channel,
            write.value.type, write.value.data,
        )
        if replace:
            return Sql("checkpoints.write_replace", self._checkpoint_write_put, values)
        return self._sql("checkpoints.write_insert", _CHECKPOINT_WRITE_INSERT, values)

    def _checkpoint_select(self) -> str:
        json_text = self._dialect.json_text
        return (
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, data, "
            f"{json_text('metadata')}, {json_text('channel_versions')}, created_at FROM checkpoints"
        )

    def checkpoint_get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> Sql:
        if checkpoint_id is None:
            sql = (
                f"{self._checkpoint_select()} WHERE thread_id = ? AND checkpoint_ns = ? "
                "ORDER BY checkpoint_id DESC LIMIT 1"
            )
            return self._sql("checkpoints.latest", sql, (thread_id, checkpoint_ns))
        sql = f"{self._checkpoint_select()} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
        return self._sql("checkpoints.get", sql, (thread_id, checkpoint_ns, checkpoint_id))

    def checkpoint_list(
        self,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
        metadata: Mapping[str, Any] | None,
        limit: int | None,
    ) -> Sql:
        """Newest first; ``metadata`` only where ``filters_checkpoint_metadata`` (the kit filters
        and limits in Python otherwise)."""
        where = Where()
        if thread_id is not None:
            where.add("thread_id = ?", thread_id)
        if checkpoint_ns is not None:
            where.add("checkpoint_ns = ?", checkpoint_ns)
        if checkpoint_id is not None:
            where.add("checkpoint_id = ?", checkpoint_id)
        if before is not None:
            where.add("checkpoint_id < ?", before)
        if metadata:
            clause, params = self._checkpoint_metadata_condition(metadata)
            where.add(clause, *params)
        sql = f"{self._checkpoint_select()}{where.sql()} ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC"
        if limit is not None:
            sql += " LIMIT ?"
            where.params.append(limit)
        return self._sql("checkpoints.list", sql, tuple(where.params))

    def checkpoint_blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> Sql:
        pairs = " OR ".join("(channel = ? AND version = ?)" for _ in versions) or "1 = 0"
        sql = (
            f"SELECT channel, version, type_tag, data FROM checkpoint_blobs "
            f"WHERE thread_id = ? AND checkpoint_ns = ? AND ({pairs})"
        )
        return self._sql("checkpoints.blobs", sql, (thread_id, checkpoint_ns, *(v for pair in versions for v in pair)))

    def checkpoint_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Sql:
        sql = (
            "SELECT task_id, task_path, idx, channel, type_tag, data FROM checkpoint_writes "
            "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx"
        )
        return self._sql("checkpoints.writes", sql, (thread_id, checkpoint_ns, checkpoint_id))

    def checkpoint_delete_threads(self, table: str, thread_ids: Sequence[str]) -> Sql:
        """``table``: ``checkpoints``, ``checkpoint_blobs`` or ``checkpoint_writes``."""
        clause, params = self._in("thread_id", thread_ids)
        return self._sql(f"{table}.delete_threads", f"DELETE FROM {_checkpoint_table(table)} WHERE {clause}", params)

    def checkpoint_delete_runs(self, run_ids: Sequence[str], *, writes: bool) -> Sql:
        """The checkpoints of these runs, or (``writes``) their pending writes."""
        clause, params = self._in("run_id", run_ids)
        if not writes:
            return self._sql("checkpoints.delete_runs", f"DELETE FROM checkpoints WHERE {clause}", params)
        sql = (
            "DELETE FROM checkpoint_writes WHERE (thread_id, checkpoint_ns, checkpoint_id) IN "
            f"(SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE {clause})"
        )
        return self._sql("checkpoint_writes.delete_runs", sql, params)

    def checkpoint_delete(self, table: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> Sql:
        """These checkpoints (``table``: ``checkpoints``) or their writes (``checkpoint_writes``)."""
        clause, params = self._in("checkpoint_id", checkpoint_ids)
        sql = f"DELETE FROM {_checkpoint_table(table)} WHERE thread_id = ? AND checkpoint_ns = ? AND {clause}"
        return self._sql(f"{table}.delete", sql, (thread_id, checkpoint_ns, *params))

    def checkpoint_blob_delete(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> Sql:
        sql = "DELETE FROM checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?"
        return self._sql("checkpoint_blobs.delete", sql, (thread_id, checkpoint_ns, channel, version))

    def checkpoint_copy(self, table: str, source_thread_id: str, target_thread_id: str) -> Sql:
        """Copy a thread's rows of ``table`` to another thread; rows the target has are kept."""
        table = _checkpoint_table(table)
        columns, key = _CHECKPOINT_COPY[table]
        others = columns.replace("thread_id, ", "", 1)
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT CAST(? AS TEXT), {others} FROM {table} WHERE thread_id = ? "
            f"ON CONFLICT ({key}) DO NOTHING"
        )
        return self._sql(f"{table}.copy", sql, (target_thread_id, source_thread_id))

    # --- settings -------------------------------------------------------------------------------

    def setting_get(self, key: str) -> Sql:
        sql = f"SELECT {self._dialect.json_text('value')} FROM settings WHERE key = ?"
        return self._sql("settings.get", sql, (key,))

    def setting_set(self, key: str, value_json: str) -> Sql:
        return Sql("settings.set", self._setting_set, (key, value_json))  # the dialect's own placeholders

    def setting_delete(self, key: str) -> Sql:
        return self._sql("settings.delete", "DELETE FROM settings WHERE key = ?", (key,))


_CHECKPOINT_COPY: Final = {
    "checkpoints": (CHECKPOINT_COLUMNS, "thread_id, checkpoint_ns, checkpoint_id"),
    "checkpoint_blobs": (CHECKPOINT_BLOB_COLUMNS, "thread_id, checkpoint_ns, channel, version"),
    "checkpoint_writes": (CHECKPOINT_WRITE_COLUMNS, "thread_id, checkpoint_ns, checkpoint_id, task_id, idx"),
}


def _checkpoint_table(table: str) -> str:
    if table not in _CHECKPOINT_COPY:
        raise ValueError(f"not a checkpoint table: {table!r}")
    return table
