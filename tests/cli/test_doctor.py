"""doctor: a table of OK / WARN / FAIL, exit code 1 on any FAIL, and it reads without writing."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.model import ExtractionJob

from .conftest import Invoke, Seeded


def _rows(output: str) -> dict[str, tuple[str, str]]:
    """``check name -> (status, detail)`` from the doctor's table (continuation lines joined)."""
    rows: dict[str, tuple[str, str]] = {}
    last: str | None = None
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) != 3 or line.lstrip().startswith(("┃", "┏", "┡", "└")):
            continue
        name, status, detail = cells
        if name:
            rows[name] = (status, detail)
            last = name
        elif last is not None:
            previous = rows[last]
            rows[last] = (previous[0], f"{previous[1]} {detail}".strip())
    return rows


def _schema_version(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])


def _set_schema_version(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        conn.commit()
    finally:
        conn.close()


def test_a_healthy_store_passes(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "doctor")
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert rows["Python"][0] == "OK"
    assert rows["store"] == ("OK", f"store file {seeded.store}: 2 thread(s), 5 memory record(s), 2 link(s)")
    assert rows["store schema"][0] == "OK" and re.fullmatch(r"v\d+ \(current\)", rows["store schema"][1])
    assert rows["MiniLM weights"][0] in ("OK", "WARN")
    assert rows["embedding model"] == ("OK", "store and --embedder auto agree: 'hashing-v1-64'")
    assert rows["extraction jobs"] == ("OK", "none pending")
    assert rows["OpenAI environment"][0] == "OK" and "not configured" in rows["OpenAI environment"][1]
    assert re.search(r"^0 failed, \d+ warning\(s\), \d+ OK$", result.stdout, re.MULTILINE)


def test_without_a_store_it_warns(invoke: Invoke) -> None:
    result = invoke("doctor")
    rows = _rows(result.stdout)
    assert rows["store"][0] == "WARN" and "--store" in rows["store"][1]
    assert "extraction jobs" not in rows
    assert result.exit_code == (1 if any(status == "FAIL" for status, _ in rows.values()) else 0)


@pytest.mark.parametrize("problem", ["missing", "not a database", "newer schema"])
def test_a_store_that_cannot_be_used_fails(
    invoke: Invoke, seeded: Seeded, tmp_path: Path, problem: str
) -> None:
    path = seeded.path
    if problem == "missing":
        path = tmp_path / "missing.db"
    elif problem == "not a database":
        path = tmp_path / "notes.txt"
        path.write_text("hello\n" * 200, encoding="utf-8")
    else:
        _set_schema_version(path, 999)
    result = invoke("--store", str(path), "doctor")
    assert result.exit_code == 1
    rows = _rows(result.stdout)
    failed = {name: detail for name, (status, detail) in rows.items() if status == "FAIL"}
    assert len(failed) == 1
    detail = next(iter(failed.values()))
    expected = {
        "missing": "no store file at",
        "not a database": "cannot be read",
        "newer schema": "newer than",
    }
    assert expected[problem] in detail
    assert "1 failed" in result.stdout
    assert problem != "missing" or not path.exists()


def test_an_older_schema_is_reported_and_left_alone(invoke: Invoke, seeded: Seeded) -> None:
    _set_schema_version(seeded.path, 1)
    result = invoke("--store", seeded.store, "doctor")
    rows = _rows(result.stdout)
    assert rows["store schema"][0] == "WARN" and "v1; it will be migrated" in rows["store schema"][1]
    assert _schema_version(seeded.path) == "1"


def test_an_embedder_that_does_not_match_the_store_fails(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "--embedder", "minilm", "doctor")
    assert result.exit_code == 1
    status, detail = _rows(result.stdout)["embedding model"]
    assert status == "FAIL"
    assert "hashing-v1-64" in detail or "MiniLM embedder is not available" in detail


def test_pending_extraction_jobs_are_a_warning(invoke: Invoke, seeded: Seeded) -> None:
    with EmbeddedStore(seeded.path) as store, store.unit_of_work() as uow:
        uow.jobs.add(
            ExtractionJob(
                id="job-1", thread_id=seeded.thread, first_seq=1, last_seq=3, created_at=datetime.now(UTC)
            )
        )
        uow.commit()
    result = invoke("--store", seeded.store, "doctor")
    assert result.exit_code == 0, result.output
    status, detail = _rows(result.stdout)["extraction jobs"]
    assert status == "WARN" and detail.startswith("1 to run (1 pending)")


def test_running_and_retrying_extraction_jobs_are_reported_with_the_last_error(
    invoke: Invoke, seeded: Seeded
) -> None:
    """A job under a live client's lease, or postponed after a failed attempt, is still to run:
    doctor counted only unleased jobs and said "none pending" for both."""
    now = datetime.now(UTC)
    with EmbeddedStore(seeded.path) as store, store.unit_of_work() as uow:
        for job_id in ("job-1", "job-2"):
            uow.jobs.add(ExtractionJob(id=job_id, thread_id=seeded.thread, first_seq=1, last_seq=3, created_at=now))
            uow.jobs.claim(job_id, owner="client-a", until=now + timedelta(minutes=10), now=now)
        uow.jobs.postpone(
            "job-2", owner="client-a", until=now + timedelta(minutes=5), reason="APIStatusError: [b]503[/b]"
        )
        uow.commit()
    result = invoke("--store", seeded.store, "doctor")
    assert result.exit_code == 0, result.output
    status, detail = _rows(result.stdout)["extraction jobs"]
    assert status == "WARN" and detail.startswith("2 to run (1 running, 1 retrying)")
    assert "latest failed attempt" in detail and "[b]503[/b]" in detail


def test_failed_extractions_are_a_warning_with_the_latest_reason_shown_as_text(
    invoke: Invoke, seeded: Seeded
) -> None:
    result = invoke("--store", seeded.store, "doctor")
    assert _rows(result.stdout)["failed extractions"] == ("OK", "none")
    with EmbeddedStore(seeded.path) as store, store.unit_of_work() as uow:
        uow.jobs.add(
            ExtractionJob(
                id="job-1", thread_id=seeded.thread, first_seq=1, last_seq=3, created_at=datetime.now(UTC)
            )
        )
        uow.jobs.fail("job-1", reason="ModelOutputError: [bold]not JSON[/bold]", at=datetime.now(UTC))
        uow.commit()
    result = invoke("--store", seeded.store, "doctor")
    assert result.exit_code == 0, result.output
    status, detail = _rows(result.stdout)["failed extractions"]
    assert status == "WARN" and detail.startswith("1 job(s) failed")
    assert "[bold]not JSON[/bold]" in detail  # markup in the reason is printed, not applied
    assert _rows(result.stdout)["extraction jobs"] == ("OK", "none pending")


def test_the_openai_environment_is_reported_without_its_key(
    invoke: Invoke, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    result = invoke("--store", seeded.store, "doctor")
    status, detail = _rows(result.stdout)["OpenAI environment"]
    assert status in ("OK", "WARN")
    assert "OPENAI_API_KEY" in detail
    assert "sk-very-secret" not in result.output


def test_the_openai_embedder_without_a_key_fails(invoke: Invoke) -> None:
    result = invoke("--embedder", "openai", "doctor")
    assert result.exit_code == 1
    rows = _rows(result.stdout)
    assert rows["OpenAI environment"][0] == "FAIL"
    assert rows["embedding model"][0] == "FAIL"


def test_conflicting_store_options_fail(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "--oracle-dsn", "db:1521/FREEPDB1", "doctor")
    assert result.exit_code == 1
    assert _rows(result.stdout)["store"][0] == "FAIL"


def test_store_settings_that_do_not_parse_fail(invoke: Invoke, seeded: Seeded) -> None:
    from dataclasses import replace

    result = invoke("--store", seeded.store, "doctor")
    assert _rows(result.stdout)["store settings"] == ("OK", "the retention policy and 2 thread(s) read back")
    with EmbeddedStore(seeded.path) as store, store.unit_of_work() as uow:
        uow.settings.set("memory_retention_config", {"default_ttl_days": "abc"})
        thread = uow.threads.get(seeded.thread)
        assert thread is not None
        uow.threads.update(replace(thread, config={**thread.config, "max_message_token_length": "abc"}))
        uow.commit()
    result = invoke("--store", seeded.store, "doctor")
    assert result.exit_code == 1
    status, detail = _rows(result.stdout)["store settings"]
    assert status == "FAIL"
    assert "'memory_retention_config': default_ttl_days must be a finite, non-negative number" in detail
    assert f"thread {seeded.thread}: thread config: max_message_token_length must be an integer." in detail
    assert "1 failed" in result.stdout


def test_messages_and_memories_waiting_for_vectors_are_a_warning(invoke: Invoke, seeded: Seeded) -> None:
    """Rows stored while the embedder was unavailable (ARCHITECTURE.md D43) are counted, so an
    outage that left search keyword-only for them is seen."""
    result = invoke("--store", seeded.store, "doctor")
    assert _rows(result.stdout)["waiting vectors"] == ("OK", "every message and memory has its vector")
    now = datetime.now(UTC)
    with EmbeddedStore(seeded.path) as store, store.unit_of_work() as uow:
        message = uow.messages.list_for_thread(seeded.thread, now=now)[0]
        record = uow.records.get(seeded.lyon)
        assert record is not None
        uow.messages.update(message, embedding=None)
        uow.records.update(record, embedding=None)
        uow.commit()
    result = invoke("--store", seeded.store, "doctor")
    status, detail = _rows(result.stdout)["waiting vectors"]
    assert status == "WARN"
    assert detail.startswith("1 message(s) and 1 memory record(s) wait for their vectors")
    assert "embed_waiting()" in detail
