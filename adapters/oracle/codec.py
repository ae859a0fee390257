"""Adapters layer (Oracle): conversions between domain values and python-oracledb bind/fetch values.

The conventions (decision D17) are the Oracle dialect's (:mod:`.dialect`); the row codecs are the
SQL kit's (:class:`palimpsest.adapters.sql.RowCodec`) with that dialect. What stays here is
Oracle's own: its column names, in the kit's column order, which SELECT builders use verbatim
with a table alias (``columns("m", MEMORY_COLUMNS)``).
"""

from __future__ import annotations

from typing import Final

from palimpsest.adapters.sql.codec import RowCodec

from .dialect import OracleDialect, encode_vector

__all__ = [
    "CODEC",
    "DIALECT",
    "JOB_COLUMNS",
    "LINK_COLUMNS",
    "MEMORY_COLUMNS",
    "MESSAGE_COLUMNS",
    "SUMMARY_COLUMNS",
    "THREAD_COLUMNS",
    "columns",
    "encode_vector",
]


DIALECT: Final = OracleDialect()
"""The Oracle dialect's value conversions (statements get a dialect with the store's names)."""
CODEC: Final = RowCodec(DIALECT)
"""The SQL kit's row codecs with Oracle values (``CODEC.record(row)``...)."""


def columns(alias: str, names: str) -> str:
    """``"a.x, a.y"`` from ``"x, y"``: a column list qualified by a table alias."""
    return ", ".join(f"{alias}.{name.strip()}" for name in names.split(","))


# --- column lists ----------------------------------------------------------------------------------
# In the kit's column order (palimpsest.adapters.sql.codec.COLUMN_ORDER), with the Oracle names.

THREAD_COLUMNS: Final = "record_id, user_id, agent_id, metadata, runtime_config, runtime_state, created_at, updated_at"
MESSAGE_COLUMNS: Final = (
    "record_id, thread_id, order_seq, message_role, content, timestamp, metadata, user_id, agent_id, "
    "created_at, expires_at"
)
MEMORY_COLUMNS: Final = (
    "record_id, memory_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, "
    "invalidated_at, timestamp, expires_at, created_at, updated_at"
)
LINK_COLUMNS: Final = (
    "relation_id, source_memory_id, source_memory_type, target_memory_id, target_memory_type, relation_type, "
    "opposite_relation_type, metadata, timestamp, created_at"
)
SUMMARY_COLUMNS: Final = (
    "record_id, thread_id, revision, content, topics, covered_through_seq, status, user_id, agent_id, metadata, "
    "created_at"
)
JOB_COLUMNS: Final = (
    "job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, "
    "failure_reason"
)
