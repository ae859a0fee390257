"""Embedded adapter: conversions between domain values and SQLite column values (text, JSON, blobs)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

import numpy as np
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.model import (
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
    "EPOCH",
    "MESSAGE_CODE",
    "NO_EXPIRY_US",
    "TYPES_BY_CODE",
    "TYPE_CODES",
    "decode_embedding",
    "decode_json",
    "decode_time",
    "encode_embedding",
    "encode_json",
    "encode_time",
    "epoch_us",
    "link_from_row",
    "message_from_row",
    "record_from_row",
    "stored_link",
    "stored_message",
    "stored_record",
    "summary_from_row",
    "thread_from_row",
]

E = TypeVar("E")

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US: Final = timedelta(microseconds=1)
NO_EXPIRY_US: Final = np.iinfo(np.int64).max
"""Expiry of a row that never expires, in the integer microsecond clock of the vector index."""

# Codes follow the alphabetical order of the type names, so ordering by code is ordering by
# the (string) record type, which is the documented tie-breaker of search results.
TYPE_CODES: Final[Mapping[RecordType, int]] = {
    t: i for i, t in enumerate(sorted(RecordType, key=lambda t: t.value))
}
TYPES_BY_CODE: Final = tuple(sorted(RecordType, key=lambda t: t.value))
MESSAGE_CODE: Final = TYPE_CODES[RecordType.MESSAGE]


def encode_time(value: datetime | None) -> str | None:
    """Fixed-width UTC text: equal widths make SQLite's text comparison a time comparison."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def decode_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value)


def epoch_us(value: datetime) -> int:
    """Exact integer microseconds since the epoch (floats would blur far-future instants)."""
    return (value - EPOCH) // _ONE_US


def expiry_us(value: str | None) -> int:
    """The vector index's expiry clock for a stored ``expires_at`` text."""
    if value is None:
        return int(NO_EXPIRY_US)
    return epoch_us(datetime.fromisoformat(value))


def encode_json(value: Mapping[str, Any] | None) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def decode_json(value: str | None) -> Any:
    if value is None:
        return None
    return json.loads(value)


def normalise_many(vectors: Sequence[Sequence[float]], dimension: int | None) -> list[np.ndarray]:
    """:func:`normalise` for a batch in one vectorised pass (bulk inserts); any irregular
    input takes the one-by-one path so that errors name the same problems."""
    if not vectors:
        return []
    try:
        matrix = np.array(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        matrix = None
    if (
        matrix is None
        or matrix.ndim != 2
        or matrix.shape[1] == 0
        or (dimension is not None and matrix.shape[1] != dimension)
        or not np.isfinite(matrix).all()
    ):
        return [normalise(v, dimension) for v in vectors]
    norms = np.linalg.norm(matrix, axis=1)
    if not norms.all():
        return [normalise(v, dimension) for v in vectors]
    unit = (matrix / norms[:, None]).astype(np.float32)
    return list(unit)


def normalise(vector: Sequence[float], dimension: int | None) -> np.ndarray:
    """A validated, L2-normalised float32 copy of ``vector`` (raises ``VectorDimensionError``).

    The domain's :func:`check_vector` defines what a valid vector is; plain numeric sequences
    and arrays take an equivalent vectorised path because per-element Python checks would
    dominate the cost of a bulk insert, and anything else falls back to ``check_vector``.
    """
    try:
        array = np.array(vector, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 1 or array.size == 0:
        # Anything unusual gets the domain's own checks and error messages.
        array = np.asarray(check_vector(vector, dimension), dtype=np.float64)
    else:
        if not np.isfinite(array).all():
            raise VectorDimensionError("a vector must contain only finite values.")
        if dimension is not None and array.size != dimension:
            raise VectorDimensionError(
                f"vector has {array.size} dimensions but this store holds {dimension}-dimensional vectors."
            )
        if not array.any():
            raise VectorDimensionError("a vector must not be all zeros (it has no direction).")
    norm = float(np.sqrt(np.dot(array, array)))
    if not np.isfinite(norm) or norm == 0.0:  # overflowing or underflowing magnitudes
        scale = float(np.abs(array).max())
        array = array / scale
        norm = float(np.sqrt(np.dot(array, array)))
    return (array / norm).astype(np.float32)


def encode_embedding(vector: np.ndarray) -> bytes:
    return vector.astype("<f4", copy=False).tobytes()


def decode_embedding(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


# --- rows → entities -------------------------------------------------------------------------
# Column lists are kept next to the decoders that depend on their order.

THREAD_COLUMNS: Final = "id, user_id, agent_id, metadata, config, state, created_at, updated_at"


def thread_from_row(row: Sequence[Any]) -> Thread:
    return Thread(
        id=row[0],
        user_id=row[1],
        agent_id=row[2],
        metadata=decode_json(row[3]),
        config=decode_json(row[4]) or {},
        state=decode_json(row[5]) or {},
        created_at=datetime.fromisoformat(row[6]),
        updated_at=datetime.fromisoformat(row[7]),
    )


MESSAGE_COLUMNS: Final = (
    "id, thread_id, seq, role, content, timestamp, metadata, user_id, agent_id, created_at, expires_at"
)


def message_from_row(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        thread_id=row[1],
        seq=row[2],
        role=row[3],
        content=row[4],
        timestamp=decode_time(row[5]),
        metadata=decode_json(row[6]),
        user_id=row[7],
        agent_id=row[8],
        created_at=datetime.fromisoformat(row[9]),
        expires_at=decode_time(row[10]),
    )


RECORD_COLUMNS: Final = (
    "id, record_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, "
    "invalidated_at, timestamp, expires_at, created_at, updated_at"
)


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        record_type=RecordType(row[1]),
        content=row[2],
        user_id=row[3],
        agent_id=row[4],
        thread_id=row[5],
        metadata=decode_json(row[6]),
        status=RecordStatus(row[7]),
        invalidation_reason=row[8],
        invalidated_at=decode_time(row[9]),
        timestamp=decode_time(row[10]),
        expires_at=decode_time(row[11]),
        created_at=datetime.fromisoformat(row[12]),
        updated_at=datetime.fromisoformat(row[13]),
    )


LINK_COLUMNS: Final = (
    "id, source_id, source_type, target_id, target_type, relation_type, opposite_relation_type, "
    "metadata, timestamp, created_at"
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
        created_at=datetime.fromisoformat(row[9]),
    )


SUMMARY_COLUMNS: Final = "id, thread_id, revision, text, topics, covered_through_seq, status, user_id, agent_id, metadata, created_at"


def summary_from_row(row: Sequence[Any]) -> ThreadSummary:
    return ThreadSummary(
        id=row[0],
        thread_id=row[1],
        revision=row[2],
        text=row[3],
        topics=tuple(json.loads(row[4])),
        covered_through_seq=row[5],
        status=RecordStatus(row[6]),
        user_id=row[7],
        agent_id=row[8],
        metadata=decode_json(row[9]),
        created_at=datetime.fromisoformat(row[10]),
    )


# --- trusted rehydration (search hot path) ------------------------------------------------------
# Rows were validated by the entity constructors on their way in. Re-validating every hit,
# linked record and link of a search (id character checks, enum parsing...) costs more than the
# search itself, so the search path rebuilds entities field by field instead, with a builder
# generated once per entity (as dataclasses generates __init__). The field lists are checked
# against the dataclasses at import: if the domain grows a field, the validated constructors
# above are used until this codec learns it.

_OPTIONAL_TIME: Final = "(None if row[{0}] is None else fromiso(row[{0}]))"
_OPTIONAL_JSON: Final = "(None if row[{0}] is None else loads(row[{0}]))"


def _rehydrator(
    cls: type[E], fields: Sequence[tuple[str, str]], fallback: Callable[[Sequence[Any]], E]
) -> Callable[[Sequence[Any]], E]:
    """``build(row)`` setting each field of ``cls`` to its expression over ``row``."""
    if {f.name for f in dataclasses.fields(cls)} != {name for name, _ in fields}:  # type: ignore[arg-type]  # pragma: no cover
        return fallback
    body = "\n".join(f"    assign(entity, {name!r}, {expression})" for name, expression in fields)
    source = f"def build(row):\n    entity = new(cls)\n{body}\n    return entity\n"
    namespace: dict[str, Any] = {
        "new": object.__new__,
        "assign": object.__setattr__,
        "cls": cls,
        "fromiso": datetime.fromisoformat,
        "loads": json.loads,
        "TYPES": {t.value: t for t in RecordType},
        "STATUSES": {s.value: s for s in RecordStatus},
        "MESSAGE": RecordType.MESSAGE,
    }
    exec(source, namespace)  # noqa: S102 - generated from the constant field lists below
    build: Callable[[Sequence[Any]], E] = namespace["build"]
    return build


stored_record = _rehydrator(
    MemoryRecord,
    [
        ("id", "row[0]"),
        ("record_type", "TYPES[row[1]]"),
        ("content", "row[2]"),
        ("user_id", "row[3]"),
        ("agent_id", "row[4]"),
        ("thread_id", "row[5]"),
        ("metadata", _OPTIONAL_JSON.format(6)),
        ("status", "STATUSES[row[7]]"),
        ("invalidation_reason", "row[8]"),
        ("invalidated_at", _OPTIONAL_TIME.format(9)),
        ("timestamp", _OPTIONAL_TIME.format(10)),
        ("expires_at", _OPTIONAL_TIME.format(11)),
        ("created_at", "fromiso(row[12])"),
        ("updated_at", "fromiso(row[13])"),
    ],
    record_from_row,
)
"""A record from a trusted row in :data:`RECORD_COLUMNS` order (no re-validation)."""

stored_message = _rehydrator(
    Message,
    [
        ("id", "row[0]"),
        ("thread_id", "row[1]"),
        ("seq", "row[2]"),
        ("role", "row[3]"),
        ("content", "row[4]"),
        ("timestamp", _OPTIONAL_TIME.format(5)),
        ("metadata", _OPTIONAL_JSON.format(6)),
        ("user_id", "row[7]"),
        ("agent_id", "row[8]"),
        ("created_at", "fromiso(row[9])"),
        ("expires_at", _OPTIONAL_TIME.format(10)),
        ("record_type", "MESSAGE"),
    ],
    message_from_row,
)
"""A message from a trusted row in :data:`MESSAGE_COLUMNS` order (no re-validation)."""

stored_link = _rehydrator(
    RecordLink,
    [
        ("id", "row[0]"),
        ("source_id", "row[1]"),
        ("source_type", "TYPES[row[2]]"),
        ("target_id", "row[3]"),
        ("target_type", "TYPES[row[4]]"),
        ("relation_type", "row[5]"),
        ("opposite_relation_type", "row[6]"),
        ("metadata", _OPTIONAL_JSON.format(7)),
        ("timestamp", _OPTIONAL_TIME.format(8)),
        ("created_at", "fromiso(row[9])"),
    ],
    link_from_row,
)
"""A link from a trusted row in :data:`LINK_COLUMNS` order (no re-validation)."""
