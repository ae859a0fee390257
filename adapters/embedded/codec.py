"""Embedded adapter: conversions between domain values and SQLite column values (text, JSON, blobs).

The row codecs, value encodings and column lists are the SQL kit's (:mod:`palimpsest.adapters.sql`)
with its SQLite dialect (``DIALECT.encode_time``, ``CODEC.record``...); what stays here is the
embedded store's own: its unique keys, the record type codes and integer clocks of its caches,
and the trusted rehydration of its search path."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

import numpy as np
from palimpsest.adapters.sql.codec import RowCodec
from palimpsest.adapters.sql.dialect import Key
from palimpsest.adapters.sql.dialects.sqlite import SqliteDialect
from palimpsest.domain.model import (
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
)

__all__ = [
    "CODEC",
    "DIALECT",
    "EPOCH",
    "MESSAGE_CODE",
    "NO_EXPIRY_US",
    "TYPES_BY_CODE",
    "TYPE_CODES",
    "decode_embedding",
    "epoch_us",
    "expiry_us",
    "stored_link",
    "stored_message",
    "stored_record",
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


DIALECT: Final = SqliteDialect(
    {
        "threads.id": Key.THREAD_ID,
        "messages.id": Key.MESSAGE_ID,
        "messages.thread_id, messages.seq": Key.MESSAGE_SEQ,
        "records.id": Key.RECORD_ID,
        "links.id": Key.LINK_ID,
        "links.source_id, links.target_id, links.relation_type": Key.LINK_RELATION,
        "summaries.id": Key.SUMMARY_ID,
        "summaries.thread_id, summaries.revision": Key.SUMMARY_REVISION,
        "extraction_jobs.id": Key.JOB_ID,
    }
)
"""The embedded schema's SQLite dialect: its unique keys by the columns SQLite names."""
CODEC: Final = RowCodec(DIALECT)
"""The SQL kit's row codecs with SQLite values."""


def epoch_us(value: datetime) -> int:
    """Exact integer microseconds since the epoch (floats would blur far-future instants)."""
    return (value - EPOCH) // _ONE_US


def expiry_us(value: str | None) -> int:
    """The vector index's expiry clock for a stored ``expires_at`` text."""
    if value is None:
        return int(NO_EXPIRY_US)
    return epoch_us(datetime.fromisoformat(value))


def decode_embedding(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


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
    CODEC.record,
)
"""A record from a trusted row in the kit's ``RECORD_COLUMNS`` order (no re-validation)."""

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
    CODEC.message,
)
"""A message from a trusted row in the kit's ``MESSAGE_COLUMNS`` order (no re-validation)."""

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
    CODEC.link,
)
"""A link from a trusted row in the kit's ``LINK_COLUMNS`` order (no re-validation)."""
