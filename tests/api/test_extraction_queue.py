"""The background queue's bounds and its queue-full behaviours (``MemoryExtractionConfig``'s
``background_extraction_queue_full_behavior`` and ``..._put_timeout_seconds``, which were
accepted and never read). A job that does not fit is never lost: it stays in the store and
runs, in its thread's order, once the queue has room."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import pytest
from doubles import fact_per_message
from palimpsest.application import (
    AgentMemory,
    BackgroundExtractionQueueFullBehavior,
    ExtractedMemory,
    ExtractionRequest,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryThread,
)
from palimpsest.application.jobs import THREAD_QUEUE_LIMIT
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import WaitTimeoutError

from .conftest import ClientFactory

Behavior = BackgroundExtractionQueueFullBehavior


class Gate:
    """An extractor that blocks until opened, and records the order it saw the messages in."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.seen: list[str] = []

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        assert self.open.wait(60), "the test never opened the gate"
        self.seen.extend(m.content for m in request.target_messages)
        return fact_per_message(request)


def _thread(make_client: ClientFactory, gate: Gate, behavior: Behavior, timeout: float) -> tuple[AgentMemory, MemoryThread]:
    config = MemoryExtractionConfig(
        extraction_mode=MemoryExtractionMode.BACKGROUND,
        enable_context_summary=False,
        background_extraction_queue_full_behavior=behavior,
        background_extraction_queue_put_timeout_seconds=timeout,
    )
    client = make_client(extractor=ScriptedExtractor(gate), memory_extraction_config=config)
    return client, client.create_thread(thread_id="t1", user_id="u")


def _fill(thread: MemoryThread) -> list[str]:
    texts = [f"message {i}" for i in range(THREAD_QUEUE_LIMIT)]
    for text in texts:
        thread.add_messages([{"role": "user", "content": text}])
    return texts


@pytest.mark.parametrize("behavior", [Behavior.DROP, Behavior.WAIT_THEN_DROP])
def test_a_job_that_does_not_fit_stays_in_the_store_and_runs_in_order(
    make_client: ClientFactory, behavior: Behavior, caplog: pytest.LogCaptureFixture
) -> None:
    gate = Gate()
    client, thread = _thread(make_client, gate, behavior, timeout=0.05)
    texts = _fill(thread)
    with caplog.at_level(logging.WARNING, logger="palimpsest"):
        thread.add_messages([{"role": "user", "content": "one too many"}])
        thread.add_messages([{"role": "user", "content": "and another"}])  # behind it, never before it
    assert [r for r in caplog.records if "extraction queue full" in r.getMessage()]
    assert len(client.pending_extractions()) == THREAD_QUEUE_LIMIT + 2  # nothing was lost
    gate.open.set()
    client.wait_for_memory_extraction(timeout=60)
    assert gate.seen == [*texts, "one too many", "and another"]
    assert len(client.list_memories(user_id="u")) == THREAD_QUEUE_LIMIT + 2
    assert client.pending_extractions() == []


def test_wait_then_raise_raises_after_the_raw_write_and_the_job_still_runs(make_client: ClientFactory) -> None:
    gate = Gate()
    client, thread = _thread(make_client, gate, Behavior.WAIT_THEN_RAISE, timeout=0.05)
    texts = _fill(thread)
    with pytest.raises(WaitTimeoutError, match="stored"):
        thread.add_messages([{"role": "user", "content": "one too many"}])
    assert thread.get_messages()[-1].content == "one too many"  # written before the wait
    gate.open.set()
    client.wait_for_memory_extraction(timeout=60)
    assert gate.seen == [*texts, "one too many"]


def test_a_wait_that_sees_room_queues_the_job(make_client: ClientFactory) -> None:
    gate = Gate()
    client, thread = _thread(make_client, gate, Behavior.WAIT_THEN_RAISE, timeout=60)
    texts = _fill(thread)
    threading.Timer(0.2, gate.open.set).start()  # room frees up while the append waits
    thread.add_messages([{"role": "user", "content": "one too many"}])  # no WaitTimeoutError
    client.wait_for_memory_extraction(timeout=60)
    assert gate.seen == [*texts, "one too many"]


def test_many_threads_with_a_flaky_model_each_get_every_memory_once_in_order(make_client: ClientFactory) -> None:
    """Random model failures (seeded) and storage faults across 12 threads × 6 appends: every
    job ends done, each message's memory is stored exactly once, and each thread's passes ran
    in append order."""
    import random

    from palimpsest.application import ExtractionRetryPolicy

    rng = random.Random(7)
    lock = threading.Lock()
    order: dict[str, list[str]] = {}

    def flaky(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        with lock:
            fail = rng.random() < 0.3
        if fail:
            raise RuntimeError("model down")
        with lock:
            for m in request.target_messages:
                order.setdefault(m.thread_id, []).append(m.content)
        return fact_per_message(request)

    client = make_client(
        extractor=ScriptedExtractor(flaky),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
        ),
        extraction_retry_policy=ExtractionRetryPolicy(max_attempts=50, base_delay_seconds=0.001, max_delay_seconds=0.01),
    )
    expected: dict[str, list[str]] = {}
    for t in range(12):
        thread = client.create_thread(thread_id=f"t{t}", user_id="u")
        for i in range(6):
            text = f"thread {t} message {i}"
            thread.add_messages([{"role": "user", "content": text}])
            expected.setdefault(f"t{t}", []).append(text)
    client.wait_for_memory_extraction(timeout=120)
    assert client.pending_extractions() == [] and client.failed_extractions() == []
    assert order == expected
    contents = [m.content for m in client.list_memories(user_id="u")]
    assert sorted(contents) == sorted(f"Fact: {text}" for texts in expected.values() for text in texts)


def test_a_full_queue_is_logged_once_when_it_fills_and_once_when_it_drains(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, every append while the queue was full logged its own warning."""
    gate = Gate()
    client, thread = _thread(make_client, gate, Behavior.DROP, timeout=0.0)
    texts = _fill(thread)
    extra = [f"extra {i}" for i in range(20)]
    with caplog.at_level(logging.INFO, logger="palimpsest"):
        for text in extra:
            thread.add_messages([{"role": "user", "content": text}])
        full = [r for r in caplog.records if "extraction queue full" in r.getMessage()]
        assert len(full) == 1 and full[0].levelno == logging.WARNING
        gate.open.set()
        client.wait_for_memory_extraction(timeout=60)
    assert gate.seen == [*texts, *extra]  # nothing lost, in order
    assert len([r for r in caplog.records if "extraction queue full" in r.getMessage()]) == 1
    drained = [r for r in caplog.records if "has room again" in r.getMessage()]
    assert len(drained) == 1
