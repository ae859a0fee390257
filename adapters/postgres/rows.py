"""Adapters layer (PostgreSQL): rows of the search reads as domain entities.

The decoders are the SQL kit's row codecs (:class:`palimpsest.adapters.sql.RowCodec`) with the
PostgreSQL dialect: psycopg already returns ``timestamptz`` as aware ``datetime`` and ``jsonb``
parsed, so a row decodes with a constructor call. The column lists are the kit's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from palimpsest.adapters.sql.codec import LINK_COLUMNS, MESSAGE_COLUMNS, RECORD_COLUMNS, RowCodec
from palimpsest.adapters.sql.dialects.postgres import PostgresDialect

__all__ = [
    "CODEC",
    "LINK_COLUMNS",
    "MESSAGE_COLUMNS",
    "RECORD_COLUMNS",
    "link_from_row",
    "message_from_row",
    "record_from_row",
    "utc",
]

CODEC: Final = RowCodec(PostgresDialect())
"""The kit's row codecs with PostgreSQL values (the repositories' codec carries the store's
error map too; decoding is the same)."""

message_from_row: Final = CODEC.message
record_from_row: Final = CODEC.record
link_from_row: Final = CODEC.link


def utc(value: Any) -> datetime | None:
    """A ``timestamptz`` read back, in UTC (``None`` stays ``None``)."""
    return CODEC.dialect.decode_time(value)
