"""Adapters layer (SQL kit): one row codec per entity, for every SQL store.

Every SQL store keeps an entity's columns in the same order (its own column names: ``id`` or
``record_id``, ``config`` or ``runtime_config``...), so one decoder per entity reads a row of any
of them, with the store's :class:`~.dialect.Dialect` decoding times, JSON and text; and one
encoder per entity gives the parameters of an insert in that order (:meth:`RowCodec.thread_values`
...). A store names its columns; :func:`named` pairs those names with the values for drivers that
bind by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

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

from .dialect import Dialect

__all__ = [
    "COLUMN_ORDER",
    "JOB_COLUMNS",
    "LINK_COLUMNS",
    "MESSAGE_COLUMNS",
    "RECORD_COLUMNS",
    "SUMMARY_COLUMNS",
    "THREAD_COLUMNS",
    "RowCodec",
    "column_names",
    "named",
]

COLUMN_ORDER: Final = {
    "thread": ("id", "user_id", "agent_id", "metadata", "config", "state", "created_at", "updated_at"),
    "message": (
        "id", "thread_id", "seq", "role", "content", "timestamp", "metadata", "user_id", "agent_id",
        "created_at", "expires_at",
    ),
    "record": (
        "id", "record_type", "content", "user_id", "agent_id", "thread_id", "metadata", "status",
        "invalidation_reason", "invalidated_at", "timestamp", "expires_at", "created_at", "updated_at",
    ),
    "link": (
        "id", "source_id", "source_type", "target_id", "target_type", "relation_type",
        "opposite_relation_type", "metadata", "timestamp", "created_at",
    ),
    "summary": (
        "id", "thread_id", "revision", "text", "topics", "covered_through_seq", "status", "user_id",
        "agent_id", "metadata", "created_at",
    ),
    "job": (
        "id", "thread_id", "first_seq", "last_seq", "created_at", "attempts", "claimed_by",
        "claimed_until", "failed_at", "failure_reason",
    ),
}  # fmt: skip
"""Each entity's fields in the column order every SQL store uses (a store's column list for an
entity names these fields, in this order, as its schema calls them)."""

THREAD_COLUMNS: Final = ", ".join(COLUMN_ORDER["thread"])
MESSAGE_COLUMNS: Final = ", ".join(COLUMN_ORDER["message"])
RECORD_COLUMNS: Final = ", ".join(COLUMN_ORDER["record"])
LINK_COLUMNS: Final = ", ".join(COLUMN_ORDER["link"])
SUMMARY_COLUMNS: Final = ", ".join(COLUMN_ORDER["summary"])
JOB_COLUMNS: Final = ", ".join(COLUMN_ORDER["job"])
"""The column lists of a schema that names its columns as the fields (the standard statements'
schema: :mod:`.standard`)."""


def column_names(columns: str) -> list[str]:
    """``["a", "b"]`` from ``"a, b"``."""
    return [name.strip() for name in columns.split(",")]


def named(names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """Parameters by name: a store's bind names paired with an encoder's values."""
    if len(names) != len(values):
        raise ValueError(f"{len(names)} names for {len(values)} values")
    return dict(zip(names, values, strict=True))


class RowCodec:
    """Rows of a store to entities and entities to parameters, with the store's dialect.

    The decoders validate (they build entities through their constructors): they read what
    a user may have written to the database by other means. A store with a trusted hot path
    (search) may rehydrate without validation on its own.
    """

    __slots__ = ("_json", "_text", "_time", "_to_json", "_to_time", "dialect")

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._time = dialect.decode_time
        self._json = dialect.decode_json
        self._text = dialect.decode_text
        self._to_time = dialect.encode_time
        self._to_json = dialect.encode_json

    # --- rows → entities -----------------------------------------------------------------------

    def thread(self, row: Sequence[Any]) -> Thread:
        decode_json, decode_time = self._json, self._time
        return Thread(
            id=row[0],
            user_id=row[1],
            agent_id=row[2],
            metadata=decode_json(row[3]),
            config=decode_json(row[4]) or {},
            state=decode_json(row[5]) or {},
            created_at=decode_time(row[6]),  # type: ignore[arg-type]  # NOT NULL column
            updated_at=decode_time(row[7]),  # type: ignore[arg-type]  # NOT NULL column
        )

    def message(self, row: Sequence[Any]) -> Message:
        decode_time = self._time
        return Message(
            id=row[0],
            thread_id=row[1],
            seq=int(row[2]),
            role=row[3],
            content=self._text(row[4]) or "",
            timestamp=decode_time(row[5]),
            metadata=self._json(row[6]),
            user_id=row[7],
            agent_id=row[8],
            created_at=decode_time(row[9]),  # type: ignore[arg-type]  # NOT NULL column
            expires_at=decode_time(row[10]),
        )

    def record(self, row: Sequence[Any]) -> MemoryRecord:
        decode_time = self._time
        return MemoryRecord(
            id=row[0],
            record_type=RecordType(row[1]),
            content=self._text(row[2]) or "",
            user_id=row[3],
            agent_id=row[4],
            thread_id=row[5],
            metadata=self._json(row[6]),
            status=RecordStatus(row[7]),
            invalidation_reason=row[8],
            invalidated_at=decode_time(row[9]),
            timestamp=decode_time(row[10]),
            expires_at=decode_time(row[11]),
            created_at=decode_time(row[12]),  # type: ignore[arg-type]  # NOT NULL column
            updated_at=decode_time(row[13]),  # type: ignore[arg-type]  # NOT NULL column
        )

    def link(self, row: Sequence[Any]) -> RecordLink:
        decode_time = self._time
        return RecordLink(
            id=row[0],
            source_id=row[1],
            source_type=RecordType(row[2]),
            target_id=row[3],
            target_type=RecordType(row[4]),
            relation_type=row[5],
            opposite_relation_type=row[6],
            metadata=self._json(row[7]),
            timestamp=decode_time(row[8]),
            created_at=decode_time(row[9]),  # type: ignore[arg-type]  # NOT NULL column
        )

    def summary(self, row: Sequence[Any]) -> ThreadSummary:
        return ThreadSummary(
            id=row[0],
            thread_id=row[1],
            revision=int(row[2]),
            text=self._text(row[3]) or "",
            topics=tuple(self._json(row[4]) or ()),
            covered_through_seq=int(row[5]),
            status=RecordStatus(row[6]),
            user_id=row[7],
            agent_id=row[8],
            metadata=self._json(row[9]),
            created_at=self._time(row[10]),  # type: ignore[arg-type]  # NOT NULL column
        )

    def job(self, row: Sequence[Any]) -> ExtractionJob:
        decode_time = self._time
        return ExtractionJob(
            id=row[0],
            thread_id=row[1],
            first_seq=int(row[2]),
            last_seq=int(row[3]),
            created_at=decode_time(row[4]),  # type: ignore[arg-type]  # NOT NULL column
            attempts=int(row[5]),
            claimed_by=row[6],
            claimed_until=decode_time(row[7]),
            failed_at=decode_time(row[8]),
            failure_reason=self._text(row[9]),
        )

    # --- entities → parameters (column order) ------------------------------------------------

    def thread_values(self, thread: Thread) -> tuple[Any, ...]:
        to_json, to_time = self._to_json, self._to_time
        return (
            thread.id,
            thread.user_id,
            thread.agent_id,
            to_json(thread.metadata),
            to_json(thread.config),
            to_json(thread.state),
            to_time(thread.created_at),
            to_time(thread.updated_at),
        )

    def message_values(self, message: Message) -> tuple[Any, ...]:
        to_time = self._to_time
        return (
            message.id,
            message.thread_id,
            message.seq,
            message.role,
            message.content,
            to_time(message.timestamp),
            self._to_json(message.metadata),
            message.user_id,
            message.agent_id,
            to_time(message.created_at),
            to_time(message.expires_at),
        )

    def record_values(self, record: MemoryRecord) -> tuple[Any, ...]:
        to_time = self._to_time
        return (
            record.id,
            record.record_type.value,
            record.content,
            record.user_id,
            record.agent_id,
            record.thread_id,
            self._to_json(record.metadata),
            record.status.value,
            record.invalidation_reason,
            to_time(record.invalidated_at),
            to_time(record.timestamp),
            to_time(record.expires_at),
            to_time(record.created_at),
            to_time(record.updated_at),
        )

    def link_values(self, link: RecordLink) -> tuple[Any, ...]:
        to_time = self._to_time
        return (
            link.id,
            link.source_id,
            link.source_type.value,
            link.target_id,
            link.target_type.value,
            link.relation_type,
            link.opposite_relation_type,
            self._to_json(link.metadata),
            to_time(link.timestamp),
            to_time(link.created_at),
        )

    def summary_values(self, summary: ThreadSummary) -> tuple[Any, ...]:
        return (
            summary.id,
            summary.thread_id,
            summary.revision,
            summary.text,
            self._to_json(list(summary.topics)),
            summary.covered_through_seq,
            summary.status.value,
            summary.user_id,
            summary.agent_id,
            self._to_json(summary.metadata),
            self._to_time(summary.created_at),
        )

    def job_values(self, job: ExtractionJob) -> tuple[Any, ...]:
        to_time = self._to_time
        return (
            job.id,
            job.thread_id,
            job.first_seq,
            job.last_seq,
            to_time(job.created_at),
            job.attempts,
            job.claimed_by,
            to_time(job.claimed_until),
            to_time(job.failed_at),
            job.failure_reason,
        )

