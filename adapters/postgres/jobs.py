"""Adapters layer (PostgreSQL): the durable extraction-job claim, ``FOR UPDATE SKIP LOCKED``.

Workers on any number of machines share one backlog: a claim takes the oldest pending jobs
(not failed, lease absent or ended) that no other transaction is claiming at that moment
(``SKIP LOCKED``: a locked row is passed over, never waited for), leases them to ``owner`` until
``until`` and counts the attempt, in one statement. A worker renews its lease while it works
and releases the job (or the job repository deletes it) when done; a worker that dies leaves a
lease that ends, and the job is claimed again. A job is never claimed by two workers at once:
the row lock orders concurrent claims, and a claim re-checks the lease under it.

The statements work in the caller's transaction (``search_path`` at the store's schema); the
job repository written once over the SQL kit uses them for ``claim``, ``renew`` and
``release``. Semantics as the embedded store's (:class:`~palimpsest.domain.ports.JobRepository`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import psycopg
from palimpsest.adapters.sql.codec import JOB_COLUMNS
from palimpsest.domain.model import ExtractionJob, check_time

from .errors import translate
from .rows import CODEC

__all__ = ["JOB_COLUMNS", "claim", "claim_next", "job_from_row", "release", "renew"]

job_from_row: Final = CODEC.job
"""A job row (the kit's column order, :data:`JOB_COLUMNS`) as an :class:`ExtractionJob`."""


def claim_next(
    conn: psycopg.Connection[Any], *, owner: str, until: datetime, now: datetime, limit: int = 1
) -> list[ExtractionJob]:
    """Lease up to ``limit`` pending jobs (oldest first) that no concurrent claim holds."""
    with translate():
        rows = conn.execute(
            "WITH c AS (SELECT id FROM extraction_jobs "
            "WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= %s) "
            "ORDER BY created_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
            "UPDATE extraction_jobs j SET claimed_by = %s, claimed_until = %s, attempts = j.attempts + 1 "
            f"FROM c WHERE j.id = c.id RETURNING {', '.join('j.' + c.strip() for c in JOB_COLUMNS.split(','))}",
            (check_time(now, "now"), limit, owner, check_time(until, "until")),
        ).fetchall()
    jobs = [job_from_row(row) for row in rows]
    jobs.sort(key=lambda job: (job.created_at, job.id))
    return jobs


def claim(
    conn: psycopg.Connection[Any], job_id: str, *, owner: str, until: datetime, now: datetime
) -> ExtractionJob | None:
    """Lease one named job to ``owner`` if it is pending, its lease ended or already
    ``owner``'s; ``None`` if another worker holds it (or is claiming it right now) or it is
    gone or failed."""
    with translate():
        row = conn.execute(
            "WITH c AS (SELECT id FROM extraction_jobs WHERE id = %s AND failed_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until <= %s OR claimed_by = %s) FOR UPDATE SKIP LOCKED) "
            "UPDATE extraction_jobs j SET claimed_by = %s, claimed_until = %s, attempts = j.attempts + 1 "
            f"FROM c WHERE j.id = c.id RETURNING {', '.join('j.' + c.strip() for c in JOB_COLUMNS.split(','))}",
            (job_id, check_time(now, "now"), owner, owner, check_time(until, "until")),
        ).fetchone()
    return None if row is None else job_from_row(row)


def renew(conn: psycopg.Connection[Any], job_id: str, *, owner: str, until: datetime) -> bool:
    """Extend ``owner``'s lease of a job to ``until``; False if ``owner`` no longer holds it."""
    with translate():
        cursor = conn.execute(
            "UPDATE extraction_jobs SET claimed_until = %s WHERE id = %s AND failed_at IS NULL AND claimed_by = %s",
            (check_time(until, "until"), job_id, owner),
        )
    return cursor.rowcount > 0


def release(conn: psycopg.Connection[Any], job_id: str, *, owner: str, until: datetime | None = None) -> bool:
    """Give a job back (pending again, or from ``until`` on); False if ``owner`` did not hold it."""
    with translate():
        cursor = conn.execute(
            "UPDATE extraction_jobs SET claimed_by = NULL, claimed_until = %s "
            "WHERE id = %s AND failed_at IS NULL AND claimed_by = %s",
            (None if until is None else check_time(until, "until"), job_id, owner),
        )
    return cursor.rowcount > 0
