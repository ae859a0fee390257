"""Adapters layer (Oracle): conversions between domain values and python-oracledb bind/fetch values.

Conventions (decision D17): timestamps are ``TIMESTAMP(6) WITH TIME ZONE`` bound as aware UTC
datetimes; JSON values are bound as compact JSON text (:func:`encode_json`) and fetched as
whatever the driver returns (:func:`decode_json` accepts dict, list, str or LOB); CLOBs are
fetched as ``str``; vectors are bound and fetched as ``array.array("f")`` (FLOAT32), L2-normalised
by the adapter so that cosine distance equals ``1 - dot``.

Column lists live next to the decoders that depend on their order; SELECT builders use them
verbatim with a table alias (``columns("m", MEMORY_COLUMNS)``).
"""

from __future__ import annotations

import array
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from palimpsest.domain.errors import VectorDimensionError
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
from palimpsest.domain.search import check_vector

__all__ = [
    "JOB_COLUMNS",
    "LINK_COLUMNS",
    "MEMORY_COLUMNS",
    "MESSAGE_COLUMNS",
    "SUMMARY_COLUMNS",
    "THREAD_COLUMNS",
    "columns",
    "decode_json",
    "decode_text",
    "decode_time",
    "encode_json",
    "encode_time",
    "encode_vector",
    "job_from_row",
    "link_from_row",
    "message_from_row",
    "record_from_row",
    "summary_from_row",
    "thread_from_row",
]


def encode_time(value: datetime | None) -> datetime | None:
    """A naive UTC datetime for a ``TIMESTAMP WITH TIME ZONE`` column.

    python-oracledb binds a ``datetime`` as a ``TIMESTAMP`` without its zone; Oracle converts it
    in the session time zone, which every lease sets to UTC (``connection.SESSION_SETUP``). So
    the value sent is the UTC wall time, never a local one.
    """
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None)


def decode_time(value: Any) -> datetime | None:
    """A fetched timestamp as an aware UTC datetime (naive values are UTC by convention)."""
    if value is None:
        return None
    moment: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def encode_json(value: Mapping[str, Any] | Sequence[Any] | None) -> str | None:
    """Compact JSON text for a ``JSON`` column (bound as text; Oracle parses it on insert)."""
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def decode_json(value: Any) -> Any:
    """A fetched JSON value: the driver returns ``dict``/``list`` for native JSON, ``str`` or
    a LOB for JSON stored as text; all become plain Python values."""
    if value is None:
        return None
    if hasattr(value, "read"):
        value = value.read()
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        return json.loads(value)
    return _plain_json(value)


def _plain_json(value: Any) -> Any:
    """Native JSON arrives with NUMBER attributes as ``decimal.Decimal``: integral ones become
    ``int``, others ``float``, as ``json.loads`` would have made them (containers are copied)."""
    if isinstance(value, decimal.Decimal):
        if value == value.to_integral_value():
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_json(item) for item in value]
    return value


def decode_text(value: Any) -> str | None:
    """A fetched CLOB/VARCHAR2 as ``str`` (LOB locators are read)."""
    if value is None:
        return None
    if hasattr(value, "read"):
        return str(value.read())
    return str(value)


def encode_vector(vector: Sequence[float], dimension: int | None) -> array.array[float]:
    """A validated, L2-normalised FLOAT32 array for a ``VECTOR`` bind.

    Raises ``VectorDimensionError`` (wrong dimension, non-finite values, all zeros).
    """
    values = check_vector(vector, dimension)
    norm = math.sqrt(math.fsum(v * v for v in values))
    if not math.isfinite(norm) or norm == 0.0:
        scale = max(abs(v) for v in values)
        values = tuple(v / scale for v in values)
        norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0.0:
        raise VectorDimensionError("a vector must not be all zeros (it has no direction).")
    return array.array("f", (v / norm for v in values))


def columns(alias: str, names: str) -> str:
    """``"a.x, a.y"`` from ``"x, y"``: a column list qualified by a table alias."""
    return ", ".join(f"{alias}.{name.strip()}" for name in names.split(","))


# --- rows → entities -------------------------------------------------------------------------

THREAD_COLUMNS: Final = "record_id, user_id, agent_id, metadata, runtime_config, runtime_state, created_at, updated_at"


def thread_from_row(row: Sequence[Any]) -> Thread:
    return Thread(
        id=row[0],
        user_id=row[1],
        agent_id=row[2],
        metadata=decode_json(row[3]),
        config=decode_json(row[4]) or {},
        state=decode_json(row[5]) or {},
        created_at=decode_time(row[6]),  # type: ignore[arg-type]
        updated_at=decode_time(row[7]),  # type: ignore[arg-type]
    )


MESSAGE_COLUMNS: Final = (
    "record_id, thread_id, order_seq, message_role, content, timestamp, metadata, user_id, agent_id, "
    "created_at, expires_at"
)


def message_from_row(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        thread_id=row[1],
        seq=int(row[2]),
        role=row[3],
        content=decode_text(row[4]) or "",
        timestamp=decode_time(row[5]),
        metadata=decode_json(row[6]),
        user_id=row[7],
        agent_id=row[8],
        created_at=decode_time(row[9]),  # type: ignore[arg-type]
        expires_at=decode_time(row[10]),
    )


MEMORY_COLUMNS: Final = (
    "record_id, memory_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, "
    "invalidated_at, timestamp, expires_at, created_at, updated_at"
)


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        record_type=RecordType(row[1]),
        content=decode_text(row[2]) or "",
        user_id=row[3],
        agent_id=row[4],
        thread_id=row[5],
        metadata=decode_json(row[6]),
        status=RecordStatus(row[7]),
        invalidation_reason=row[8],
        invalidated_at=decode_time(row[9]),
        timestamp=decode_time(row[10]),
        expires_at=decode_time(row[11]),
        created_at=decode_time(row[12]),  # type: ignore[arg-type]
        updated_at=decode_time(row[13]),  # type: ignore[arg-type]
    )


LINK_COLUMNS: Final = (
    "relation_id, source_memory_id, source_memory_type, target_memory_id, target_memory_type, relation_type, "
    "opposite_relation_type, metadata, timestamp, created_at"
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
        metadata=decode_json(row[7]),
        timestamp=decode_time(row[8]),
        created_at=decode_time(row[9]),  # type: ignore[arg-type]
    )


SUMMARY_COLUMNS: Final = (
    "record_id, thread_id, revision, content, topics, covered_through_seq, status, user_id, agent_id, metadata, "
    "created_at"
)


def summary_from_row(row: Sequence[Any]) -> ThreadSummary:
    return ThreadSummary(
        id=row[0],
        thread_id=row[1],
        revision=int(row[2]),
        text=decode_text(row[3]) or "",
        topics=tuple(decode_json(row[4]) or ()),
        covered_through_seq=int(row[5]),
        status=RecordStatus(row[6]),
        user_id=row[7],
        agent_id=row[8],
        metadata=decode_json(row[9]),
        created_at=decode_time(row[10]),  # type: ignore[arg-type]
    )


JOB_COLUMNS: Final = (
    "job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, "
    "failure_reason"
)


def job_from_row(row: Sequence[Any]) -> ExtractionJob:
    """A job from the columns of :data:`JOB_COLUMNS` (``failure_reason`` is a CLOB: a ``str`` or
    a LOB, which is read)."""
    return ExtractionJob(
        id=row[0],
        thread_id=row[1],
        first_seq=int(row[2]),
        last_seq=int(row[3]),
        created_at=decode_time(row[4]),  # type: ignore[arg-type]
        attempts=int(row[5]),
        claimed_by=row[6],
        claimed_until=decode_time(row[7]),
        failed_at=decode_time(row[8]),
        failure_reason=decode_text(row[9]),
    )
