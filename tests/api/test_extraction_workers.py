"""A client that leaves its extraction to workers (``extraction_runs_in="workers"``), and the
worker the composition root builds (``open_worker``, what ``palimpsest worker`` runs), in one
process on one store. The same across processes: tests/reliability/test_worker_processes.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import build_container, open_worker
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.jobs import ExtractionWorker, JobOutcome
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.application.vector_backfill import BACKFILL_BATCH
from palimpsest.domain import RecordType
from palimpsest.domain.errors import ConfigurationError, ModelUnavailableError, WaitTimeoutError


def fact_per_message(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
    return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}") for m in request.target_messages]


def test_a_client_leaving_extraction_to_workers_records_jobs_and_runs_none() -> None:
    store = InMemoryStore()
    calls: list[str] = []

    def counted(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        calls.append(request.target_messages[0].content)
        return fact_per_message(request)

    inline = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)
    client = build_client(
        store, embedder=HashingEmbedder(), extractor=ScriptedExtractor(counted), extraction_runs_in="workers",
        memory_extraction_config=inline,
    )
    thread = client.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Oslo."}])  # INLINE, yet left to workers
    thread.add_messages([{"role": "user", "content": "I walk to work."}])

    assert calls == [] and client.list_memories(user_id="u1") == []
    assert [j.first_seq for j in client.pending_extractions()] == [1, 2]
    with pytest.raises(WaitTimeoutError, match="palimpsest worker"):
        client.wait_for_memory_extraction(timeout=0.05)  # no worker runs
    client.close()  # returns at once: the jobs are the workers'
    with store.reading() as uow:
        assert len(uow.jobs.list()) == 2
    store.close()


def test_a_client_without_an_extractor_may_leave_extraction_to_workers() -> None:
    with build_client(embedder=HashingEmbedder(), extraction_runs_in=ExtractionRunsIn.WORKERS) as client:
        thread = client.create_thread(thread_id="t1", user_id="u1")  # extraction on: the workers extract
        thread.add_messages([{"role": "user", "content": "I live in Oslo."}])
        assert len(client.pending_extractions()) == 1
    with build_client(embedder=HashingEmbedder()) as plain, pytest.raises(ConfigurationError):
        plain.create_thread(thread_id="t1", user_id="u1")  # as before: extraction needs an extractor


def test_the_root_s_worker_drains_the_jobs_and_the_waiting_client_returns() -> None:
    store = InMemoryStore()
    client = build_client(store, embedder=HashingEmbedder(), extraction_runs_in="workers")
    for t in range(3):
        thread = client.create_thread(thread_id=f"t{t}", user_id="u1")
        for i in range(3):
            thread.add_messages([{"role": "user", "content": f"note {t}.{i}"}])
    seen: list[tuple[str, int]] = []

    def heard(outcome: JobOutcome) -> None:
        seen.append((outcome.job.thread_id, outcome.job.first_seq))

    container = build_container(
        overrides={"store": store, "embedder": HashingEmbedder(), "extractor": ScriptedExtractor(fact_per_message)},
        profile="worker",
    )
    worker_client, worker = open_worker(container, poll_seconds=0.02, on_outcome=heard)
    drained = threading.Thread(target=worker.run, args=(threading.Event(),), kwargs={"drain": True})
    drained.start()
    client.wait_for_memory_extraction(timeout=60)
    drained.join(60)
    assert not drained.is_alive()
    worker_client.close()

    assert client.pending_extractions() == [] and client.failed_extractions() == []
    assert sorted(m.content for m in client.list_memories(user_id="u1")) == sorted(
        f"Fact: note {t}.{i}" for t in range(3) for i in range(3)
    )
    for t in range(3):  # one thread's jobs ran in order
        assert [seq for tid, seq in seen if tid == f"t{t}"] == [1, 2, 3]
    client.close()
    store.close()


def test_bad_worker_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="extraction_runs_in"):
        build_client(extraction_runs_in="elsewhere")
    with pytest.raises(ConfigurationError, match="lease_seconds"):
        ExtractionRetryPolicy(lease_seconds=0)
    with build_client() as client, pytest.raises(ConfigurationError, match="extractor"):
        client.extraction_worker()
    with pytest.raises(ConfigurationError, match="extractor"):
        build_container(profile="worker", extractor_choice="magic")


def test_a_claim_lasts_the_policy_s_lease() -> None:
    from datetime import UTC, datetime, timedelta

    from palimpsest.adapters.inmemory import ManualClock

    clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    entered, release = threading.Event(), threading.Event()

    def gate(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        entered.set()
        assert release.wait(60)
        return fact_per_message(request)

    with build_client(
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(gate),
        clock=clock,
        extraction_retry_policy=ExtractionRetryPolicy(lease_seconds=7),
    ) as client:
        try:
            start = clock.now()  # the manual clock ticks a microsecond per reading
            client.create_thread(thread_id="t1", user_id="u1").add_messages([{"role": "user", "content": "Hi."}])
            assert entered.wait(60)
            (job,) = client.pending_extractions()
            assert job.claimed_until is not None
            assert timedelta(seconds=7) < job.claimed_until - start < timedelta(seconds=8)  # not the default 30
        finally:
            release.set()
        client.wait_for_memory_extraction(timeout=60)


class _DownEmbedder(HashingEmbedder):
    """The hashing embedder (same model id, same vectors), unavailable: a write through it stores
    its rows without vectors (ARCHITECTURE.md D43)."""

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Sequence[Sequence[float]]:
        raise ModelUnavailableError("embed: the model server stayed unavailable: HTTP 503.")


def _waiting(store: InMemoryStore) -> int:
    """The rows of ``store`` that wait for their vectors."""
    with build_client(store, embedder=HashingEmbedder(), close_store=False) as reader:
        return reader.admin.waiting_vectors().total


def _worker_on(store: InMemoryStore, **options: float) -> tuple[AgentMemory, ExtractionWorker]:
    container = build_container(
        overrides={"store": store, "embedder": HashingEmbedder(), "extractor": ScriptedExtractor(fact_per_message)},
        profile="worker",
    )
    return open_worker(container, poll_seconds=0.02, **options)


def test_a_serving_worker_embeds_the_rows_stored_while_the_embedder_was_down() -> None:
    store = InMemoryStore()
    writer = build_client(store, embedder=_DownEmbedder(), extraction_runs_in="workers")
    thread = writer.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Oslo."}])
    writer.add_memory("Prefers tea to coffee.", user_id="u1")
    assert _waiting(store) == 2  # the message and the memory
    worker_client, worker = _worker_on(store, backfill_seconds=0.05)
    stop = threading.Event()
    serving = threading.Thread(target=worker.run, args=(stop,))
    serving.start()
    try:
        writer.add_memory("Walks to work.", user_id="u1")  # stored without a vector while the worker serves
        deadline = time.monotonic() + 60
        while _waiting(store) or writer.pending_extractions():  # no client writes with a working embedder
            assert time.monotonic() < deadline, "the worker did not embed the waiting rows"
            stop.wait(0.05)
    finally:
        stop.set()
        serving.join(60)
    assert not serving.is_alive()
    worker_client.close()
    hits = writer.search("Prefers tea to coffee", user_id="u1", search_strategy="vector", max_results=5)
    assert "Prefers tea to coffee." in [r.content for r in hits]  # found by its vector now
    writer.close()
    store.close()


def test_a_draining_worker_leaves_no_row_without_its_vector() -> None:
    store = InMemoryStore()
    writer = build_client(
        store, embedder=_DownEmbedder(), memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    for i in range(BACKFILL_BATCH + 6):  # more than one pass embeds
        writer.add_memory(f"note {i}", user_id="u1")
    assert _waiting(store) == BACKFILL_BATCH + 6
    worker_client, worker = _worker_on(store)  # the default period: passes at start, while rows are found
    worker.run(threading.Event(), drain=True)
    worker_client.close()
    assert _waiting(store) == 0
    writer.close()
    store.close()
