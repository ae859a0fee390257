"""The Oracle job repository's failed-job methods on the recording fake connection: what
``fail``, ``failed`` and ``retry`` send (SQL and binds), what they validate before sending
anything, and how rows with a failure decode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import oracledb
import pytest
from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import MAX_FAILURE_REASON_LENGTH, ExtractionJob
from palimpsest.domain.ports import UNBOUNDED_LIMIT

from .test_unit_of_work import NOW, Database, at, harness

HOSTILE = 'x\'); DROP TABLE "ACME_EXTRACTION_JOB"; -- :job_id'
JOBS = '"ACME_EXTRACTION_JOB"'


class Lob:
    """A CLOB locator as the driver returns one when no output handler turned it into text."""

    def __init__(self, text: str) -> None:
        self._text = text

    def read(self) -> str:
        return self._text


def job_row(job_id: str = "j1", *, failed_at: datetime | None = None, reason: Any = None) -> tuple[Any, ...]:
    return (job_id, "t1", 1, 3, NOW, 2, None, None, failed_at, reason)


def statements(h: Any) -> list[str]:
    return [sql for sql in h.sql() if not sql.startswith("SELECT store_config")]


# --- fail -------------------------------------------------------------------------------------------


def test_fail_binds_the_reason_and_time_and_releases_the_lease() -> None:
    h = harness()
    with h.uow() as uow:
        assert uow.jobs.fail("j1", reason=HOSTILE, at=at(5)) is True
        uow.commit()
    (call,) = h.calls("UPDATE")
    assert call.sql == (
        f"UPDATE {JOBS}\n"
        "SET failed_at = :failed_at, failure_reason = :failure_reason, claimed_by = NULL, claimed_until = NULL\n"
        "WHERE job_id = :job_id"
    )
    # the hostile reason is data: in the binds only, never in the SQL text
    assert call.binds == {"failed_at": at(5).replace(tzinfo=None), "failure_reason": HOSTILE, "job_id": "j1"}
    assert HOSTILE not in call.sql and "DROP" not in call.sql
    # the time is declared a TIMESTAMP (its microseconds survive) and sent as UTC wall time
    assert call.sizes == {"failed_at": oracledb.DB_TYPE_TIMESTAMP}


def test_fail_sends_a_local_time_as_utc_with_its_microseconds() -> None:
    h = harness()
    local = (NOW + timedelta(microseconds=123456)).astimezone(timezone(timedelta(hours=5, minutes=30)))
    with h.uow() as uow:
        uow.jobs.fail("j1", reason="TimeoutError", at=local)
    (call,) = h.calls("UPDATE")
    assert call.binds["failed_at"] == datetime(2025, 3, 14, 12, 0, 0, 123456)


def test_fail_of_a_job_that_is_gone_is_false() -> None:
    h = harness(Database().on(f"UPDATE {JOBS}", 0))
    with h.uow() as uow:
        assert uow.jobs.fail("gone", reason="x", at=at(1)) is False


@pytest.mark.parametrize(
    "reason", ["", "   ", "x" * (MAX_FAILURE_REASON_LENGTH + 1), "bad\x00nul", "\ud800", None, 42, b"bytes"]
)
def test_a_bad_reason_is_refused_before_anything_is_sent(reason: Any) -> None:
    h = harness()
    with h.uow() as uow, pytest.raises(ValidationError):
        uow.jobs.fail("j1", reason=reason, at=at(1))
    assert statements(h) == []


@pytest.mark.parametrize("when", [datetime(2025, 3, 14, 12, 0), "2025-03-14T12:00:00Z", None, 0])
def test_a_bad_time_is_refused_before_anything_is_sent(when: Any) -> None:
    h = harness()
    with h.uow() as uow, pytest.raises(ValidationError):
        uow.jobs.fail("j1", reason="TimeoutError", at=when)
    assert statements(h) == []


def test_the_longest_reason_is_bound_whole() -> None:
    reason = ("失敗 ✓ " * 500)[:MAX_FAILURE_REASON_LENGTH]
    assert len(reason.encode("utf-8")) > 4000  # more than a standard VARCHAR2 holds: a CLOB column
    h = harness()
    with h.uow() as uow:
        assert uow.jobs.fail("j1", reason=reason, at=at(1))
    (call,) = h.calls("UPDATE")
    assert call.binds["failure_reason"] == reason


# --- failed -----------------------------------------------------------------------------------------


def test_failed_lists_oldest_failure_first_and_decodes_the_failure() -> None:
    rows = [
        job_row("j3", failed_at=at(5), reason=Lob("TimeoutError")),
        job_row("j1", failed_at=at(6).replace(tzinfo=None), reason="ModelOutputError: not JSON"),
    ]
    h = harness(Database().on(f"FROM {JOBS} j\nWHERE j.failed_at IS NOT NULL", rows))
    with h.uow() as uow:
        failed = uow.jobs.failed()
    (call,) = h.calls("SELECT j.job_id")
    assert call.sql.endswith("WHERE j.failed_at IS NOT NULL\nORDER BY j.failed_at, j.job_id")
    assert call.binds == {}
    assert [j.id for j in failed] == ["j3", "j1"]
    assert failed[0].failure_reason == "TimeoutError"  # a LOB locator is read
    assert failed[1] == ExtractionJob(
        id="j1",
        thread_id="t1",
        first_seq=1,
        last_seq=3,
        created_at=NOW,
        attempts=2,
        failed_at=at(6),  # a naive fetched time is UTC
        failure_reason="ModelOutputError: not JSON",
    )
    assert failed[1].failed and failed[1].failed_at.tzinfo is UTC


def test_failed_of_one_thread_with_a_limit_binds_both() -> None:
    h = harness()
    with h.uow() as uow:
        assert uow.jobs.failed(thread_id=HOSTILE, limit=3) == []
    (call,) = h.calls("SELECT j.job_id")
    assert "WHERE j.failed_at IS NOT NULL AND j.thread_id = :thread_id\n" in call.sql
    assert call.sql.endswith("ORDER BY j.failed_at, j.job_id\nFETCH FIRST :limit ROWS ONLY")
    assert call.binds == {"thread_id": HOSTILE, "limit": 3}
    assert HOSTILE not in call.sql


def test_failed_treats_a_huge_limit_as_every_row() -> None:
    h = harness()
    with h.uow() as uow:
        uow.jobs.failed(limit=UNBOUNDED_LIMIT)
    (call,) = h.calls("SELECT j.job_id")
    assert "FETCH FIRST" not in call.sql and call.binds == {}


@pytest.mark.parametrize(
    ("kwargs"), [{"limit": 0}, {"limit": -1}, {"limit": True}, {"limit": 2.0}, {"thread_id": ""}]
)
def test_failed_validates_its_arguments_before_anything_is_sent(kwargs: dict[str, Any]) -> None:
    h = harness()
    with h.uow() as uow, pytest.raises(ValidationError):
        uow.jobs.failed(**kwargs)
    assert statements(h) == []


# --- retry, pending and claim ---------------------------------------------------------------------


def test_retry_is_a_conditional_update_then_a_read() -> None:
    h = harness(Database().on(f"FROM {JOBS} j\nWHERE j.job_id", [job_row("j1")]))
    with h.uow() as uow:
        again = uow.jobs.retry("j1")
    (update,) = h.calls("UPDATE")
    assert update.sql == (
        f"UPDATE {JOBS}\n"
        "SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, failure_reason = NULL\n"
        "WHERE job_id = :job_id AND failed_at IS NOT NULL"
    )
    assert update.binds == {"job_id": "j1"}
    (read,) = h.calls("SELECT j.job_id")
    assert read.binds == {"job_id": "j1"}
    assert again is not None and again.id == "j1" and not again.failed


def test_retry_of_a_job_gone_or_not_failed_is_none_and_reads_nothing() -> None:
    h = harness(Database().on(f"UPDATE {JOBS}", 0))
    with h.uow() as uow:
        assert uow.jobs.retry("j2") is None
    assert not h.calls("SELECT j.job_id")


def test_pending_and_claim_leave_failed_jobs_alone() -> None:
    h = harness(Database().on(f"UPDATE {JOBS}", 0))
    with h.uow() as uow:
        assert uow.jobs.pending(NOW, limit=5) == []
        assert uow.jobs.claim("j1", owner="w1", until=at(10), now=NOW) is None
    (pending,) = h.calls("SELECT j.job_id")
    assert "WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)" in pending.sql
    (claim,) = h.calls("UPDATE")
    assert "WHERE job_id = :job_id AND failed_at IS NULL\nAND (" in claim.sql
    assert "OR claimed_by = :holder)" in claim.sql and claim.binds["holder"] == "w1"


def test_postpone_records_the_reason_and_keeps_the_lease_for_its_holder() -> None:
    h = harness(Database().on(f"UPDATE {JOBS}", 1))
    with h.uow() as uow:
        assert uow.jobs.postpone("j1", owner="w1", until=at(10), reason=HOSTILE, refund_attempt=True) is True
    (call,) = h.calls("UPDATE")
    assert "WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner" in call.sql
    assert "attempts = GREATEST(0, attempts - :refund)" in call.sql
    assert call.binds == {
        "until": at(10).replace(tzinfo=None),
        "failure_reason": HOSTILE,
        "refund": 1,
        "job_id": "j1",
        "owner": "w1",
    }


def test_postpone_refuses_a_bad_reason_before_any_statement() -> None:
    h = harness(Database())
    with h.uow() as uow, pytest.raises(ValidationError):
        uow.jobs.postpone("j1", owner="w1", until=at(10), reason="")
    assert not h.calls("UPDATE")


def test_adding_a_failed_job_writes_its_failure() -> None:
    job = ExtractionJob(
        id="j9",
        thread_id="t1",
        first_seq=1,
        last_seq=2,
        created_at=NOW,
        attempts=3,
        failed_at=at(3),
        failure_reason=HOSTILE,
    )
    h = harness()
    with h.uow() as uow:
        uow.jobs.add(job)
    (call,) = h.calls("INSERT")
    assert call.binds["failed_at"] == at(3).replace(tzinfo=None)
    assert call.binds["failure_reason"] == HOSTILE and HOSTILE not in call.sql
    assert call.sizes["failed_at"] is oracledb.DB_TYPE_TIMESTAMP
