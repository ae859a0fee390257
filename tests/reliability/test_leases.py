"""Extraction claims end with their client: a closing client hands back what it has not
finished, and a process that ends without a word (``os._exit``, SIGTERM's default action, an
exit after ``close(timeout)`` timed out) leaves leases that end within ``JOB_LEASE`` (30 s) of its
death, because an attempt's lease is short and renewed while it runs. Before, a claim held
its job for 10 minutes after any of these: no other client could run it meanwhile.

A job is still never run by two clients at once: an attempt under way keeps its lease (renewed),
also after ``close(timeout)`` returned, until it ends.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clients import build_client
from doubles import fact_per_message
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import RecordType, WaitTimeoutError
from palimpsest.domain.ports import MemoryStore
from reliability_stores import drop, location, open_store, postgres_spec

BACKGROUND = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False)
LATER = timedelta(seconds=45)  # past a dead client's last lease (30 s), far below the old 10 minutes

SCRIPT = """
    import os, sys, threading, time
    from reliability_stores import location
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.application import MemoryExtractionConfig, MemoryExtractionMode
    from palimpsest.application.testing import ScriptedExtractor
    from palimpsest.domain import WaitTimeoutError

    entered = threading.Semaphore(0)

    def stuck(request):  # a model call that outlives the process
        entered.release()
        time.sleep(3600)

    memory = open_memory(
        location(sys.argv[1]),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(stuck),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
        ),
    )
    for tid, text in (("t1", "I live in Oslo."), ("t2", "I play the cello.")):
        memory.create_thread(thread_id=tid, user_id="u1").add_messages([{"role": "user", "content": text}])
    for _ in range(2):
        assert entered.acquire(timeout=60)
    how = sys.argv[2]
    if how == "close-timeout":
        try:
            memory.close(timeout=0.2)
        except WaitTimeoutError:
            print("close timed out", flush=True)
        sys.exit(0)  # the daemon workers are still inside the model call
    print("started", flush=True)
    if how == "os._exit":
        os._exit(0)
    time.sleep(3600)  # SIGTERM: the default action ends the process, no Python code runs
"""


class Quick:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        self.calls += 1
        return [ExtractedMemory(RecordType.FACT, "Fact: " + m.content) for m in request.target_messages]


@pytest.mark.parametrize("how", ["close-timeout", "os._exit", "SIGTERM"])
def test_the_jobs_of_a_process_that_ended_mid_attempt_are_free_within_seconds(store_spec: str, how: str) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), store_spec, how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent,
    ) as script:
        try:
            if how == "SIGTERM":
                assert script.stdout is not None
                assert script.stdout.readline() == "started\n"
                script.send_signal(signal.SIGTERM)
            script.wait(timeout=300)
        finally:
            if script.poll() is None:
                script.kill()
                script.wait()
        died = datetime.now(UTC)
        assert script.stderr is not None and script.stderr.read() == ""
    with open_store(store_spec) as store, store.reading() as uow:
        jobs = uow.jobs.list()
    assert len(jobs) == 2 and all(j.claimed_until is not None and j.claimed_until <= died + LATER for j in jobs)

    quick = Quick()
    with build_client(
        path=location(store_spec),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(quick),
        clock=ManualClock(died + LATER),
        memory_extraction_config=BACKGROUND,
    ) as memory:
        memory.wait_for_memory_extraction(timeout=60)
        assert memory.pending_extractions() == [] and memory.failed_extractions() == []
        assert sorted(m.content for m in memory.list_memories()) == ["Fact: I live in Oslo.", "Fact: I play the cello."]
    assert quick.calls == 2  # each job run once here (the dead process never finished one)


class Gate:
    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.calls = 0

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        self.calls += 1
        self.entered.set()
        assert self.open.wait(120), "the test never opened the gate"
        return fact_per_message(request)


@pytest.fixture(params=["memory", "embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStore:
    opened: MemoryStore
    if request.param == "postgres":
        spec = postgres_spec(request.getfixturevalue("postgres_target").url, f"lease{uuid.uuid4().hex[:12]}")
        request.addfinalizer(lambda: drop(spec))
        opened = open_store(spec)
    else:
        opened = InMemoryStore() if request.param == "memory" else EmbeddedStore(tmp_path / "m.db")
    request.addfinalizer(opened.close)
    return opened


def test_an_attempt_under_way_keeps_its_renewed_lease_after_close_timed_out(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's lease is renewed while its attempt runs, past the old 10-minute lease, so a
    new client never takes it; when the attempt ends, the closed client finishes the job."""
    import palimpsest.application.jobs as jobs

    monkeypatch.setattr(jobs, "HEARTBEAT_SECONDS", 0.02)
    clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    gate = Gate()
    first = build_client(
        store=store, embedder=HashingEmbedder(), extractor=ScriptedExtractor(gate), clock=clock,
        memory_extraction_config=BACKGROUND,
    )
    first.create_thread(thread_id="t1", user_id="u1").add_messages([{"role": "user", "content": "I live in Oslo."}])
    assert gate.entered.wait(60)
    with pytest.raises(WaitTimeoutError):
        first.close(timeout=0.1)
    clock.advance(timedelta(minutes=11))
    deadline = time.monotonic() + 30  # well before the gate gives up
    while True:  # the next beat renews the lease from the moved clock
        with store.reading() as uow:
            (job,) = uow.jobs.list()
        if job.claimed_until is not None and job.claimed_until > clock.now():
            break
        assert time.monotonic() < deadline, "the lease of the attempt under way was not renewed"
        time.sleep(0.02)
    later = Quick()
    with build_client(
        store=store, embedder=HashingEmbedder(), extractor=ScriptedExtractor(later), clock=clock,
        memory_extraction_config=BACKGROUND,
    ) as second:
        assert second.pending_extractions() != []  # the job is there, held by the first client
        with store.reading() as uow:
            assert uow.jobs.pending(clock.now()) == []
        gate.open.set()
        deadline = time.monotonic() + 60
        while second.pending_extractions():  # the first client's attempt ends and finishes the job
            assert time.monotonic() < deadline, "the attempt under way never finished its job"
            time.sleep(0.02)
        second.wait_for_memory_extraction(timeout=60)
        assert [m.content for m in second.list_memories()] == ["Fact: I live in Oslo."]
    assert gate.calls == 1 and later.calls == 0  # run once, by the client that claimed it


def test_close_hands_back_a_job_waiting_for_its_retry(store: MemoryStore) -> None:
    """A job whose attempt failed waits out its backoff under its client's claim; closing the
    client hands it back (no owner, due at its retry time), and the next client runs it then."""
    clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    calls: list[int] = []

    def fails_once(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("model down")
        return fact_per_message(request)

    first = build_client(
        store=store, embedder=HashingEmbedder(), extractor=ScriptedExtractor(fails_once), clock=clock,
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=ExtractionRetryPolicy(base_delay_seconds=60, max_delay_seconds=60),
    )
    first.create_thread(thread_id="t1", user_id="u1").add_messages([{"role": "user", "content": "I live in Oslo."}])
    deadline = time.monotonic() + 60
    while True:  # the first attempt failed: the job waits for its retry
        with store.reading() as uow:
            (job,) = uow.jobs.list()
        if job.failure_reason is not None:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert job.claimed_by is not None
    with pytest.raises(WaitTimeoutError):
        first.close(timeout=0.1)
    with store.reading() as uow:
        (handed,) = uow.jobs.list()
    assert handed.claimed_by is None and handed.attempts == 1 and handed.failure_reason == "RuntimeError: model down"
    assert handed.claimed_until == job.claimed_until  # due when its retry was
    with store.reading() as uow:
        assert uow.jobs.pending(clock.now()) == []
    clock.advance(timedelta(seconds=61))
    with build_client(
        store=store, embedder=HashingEmbedder(), extractor=ScriptedExtractor(fails_once), clock=clock,
        memory_extraction_config=BACKGROUND,
    ) as second:
        second.wait_for_memory_extraction(timeout=60)
        assert [m.content for m in second.list_memories()] == ["Fact: I live in Oslo."]
        assert second.pending_extractions() == []
    assert len(calls) == 2
