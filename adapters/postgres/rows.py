"""Adapters layer (PostgreSQL): rows of the search reads as domain entities.

psycopg already returns the Postgres types as Python values (``timestamptz`` as aware
``datetime``, ``jsonb`` as dicts), so decoding is a constructor call per row. Only the columns
the search session reads are here; the repositories' row codecs come from the shared SQL kit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordStatus, RecordType

__all__ = [
    "LINK_COLUMNS",
    "MESSAGE_COLUMNS",
    "RECORD_COLUMNS",
    "link_from_row",
    "message_from_row",
    "record_from_row",
    "utc",
]

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


def _time(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def utc(value: datetime | None) -> datetime | None:
    """A ``timestamptz`` read back, in UTC (``None`` stays ``None``)."""
    return _time(value)


def _required_time(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _metadata(value: Any) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def message_from_row(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        thread_id=row[1],
        seq=row[2],
        role=row[3],
        content=row[4],
        timestamp=_time(row[5]),
        metadata=_metadata(row[6]),
        user_id=row[7],
        agent_id=row[8],
        created_at=_required_time(row[9]),
        expires_at=_time(row[10]),
    )


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        record_type=RecordType(row[1]),
        content=row[2],
        user_id=row[3],
        agent_id=row[4],
        thread_id=row[5],
        metadata=_metadata(row[6]),
        status=RecordStatus(row[7]),
        invalidation_reason=row[8],
        invalidated_at=_time(row[9]),
        timestamp=_time(row[10]),
        expires_at=_time(row[11]),
        created_at=_required_time(row[12]),
        updated_at=_required_time(row[13]),
    )


def link_from_row(row: Sequence[Any]) -> RecordLink:
    return RecordLink(
        id=row[0],
        source_id=row[1],
        source_type=RecordType(row[2]),
        target_id=row[3],
        target_type=RecordType(row[4]),
        relation_type=row[5],
        opposite_relation_type=row[6],
        metadata=_metadata(row[7]),
        timestamp=_time(row[8]),
        created_at=_required_time(row[9]),
    )
