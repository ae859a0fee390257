"""Adapters layer (PostgreSQL): the statements of the SQL kit's repositories (:mod:`palimpsest.adapters.sql`).

The kit's standard statements (:class:`~palimpsest.adapters.sql.standard.StandardStatements`)
with the PostgreSQL dialect: psycopg's ``%s`` placeholders, id lists as one array bind
(``= ANY(%s)``), ``jsonb`` bound as text (the column's type casts it) and settings read back as
JSON text, vectors as pgvector text literals. Metadata filters are applied by the kit over
newest-first pages (``filters_metadata = False``): one filter semantics (D7). What PostgreSQL
writes its own way: a job is claimed with ``FOR UPDATE SKIP LOCKED``, and a checkpoint listing's
metadata filter (D41) compares ``jsonb`` values exactly in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from palimpsest.adapters.sql import Sql
from palimpsest.adapters.sql.standard import StandardStatements

__all__ = ["PostgresStatements"]


class PostgresStatements(StandardStatements):
    """The standard statements, with PostgreSQL's job claim and checkpoint metadata filter."""

    filters_checkpoint_metadata: ClassVar[bool] = True

    __slots__ = ()

    def _checkpoint_metadata_condition(self, metadata: Mapping[str, Any]) -> tuple[str, Sequence[Any]]:
        # jsonb equality of each key's value is JSON equality (true is not 1, 1 is 1.0, objects by
        # keys and values, arrays by order; a missing key is SQL NULL, never equal); containment
        # alone would accept a nested value that merely contains the filter's.
        clauses = ["metadata @> ?::jsonb"]
        params: list[Any] = [_json(metadata)]
        for key, value in metadata.items():
            clauses.append("metadata -> CAST(? AS text) = ?::jsonb")
            params.extend((key, _json(value)))
        return " AND ".join(clauses), params

    def job_claim(self, job_id: str, *, owner: str, until: datetime, now: datetime) -> Sql:
        # The row is locked and re-checked by the claim (SKIP LOCKED: a job being claimed by
        # another worker at this moment is passed over, never waited for).
        sql = (
            "WITH c AS (SELECT id FROM extraction_jobs WHERE id = ? AND failed_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?) FOR UPDATE SKIP LOCKED) "
            "UPDATE extraction_jobs j SET claimed_by = ?, claimed_until = ?, attempts = j.attempts + 1 "
            "FROM c WHERE j.id = c.id"
        )
        return self._sql("jobs.claim", sql, (job_id, self._time(now), owner, owner, self._time(until)))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
