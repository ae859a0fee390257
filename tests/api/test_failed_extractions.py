"""Extraction jobs that fail every allowed attempt are recorded as failed, listed, and retried."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from palimpsest.adapters.memory import ManualClock
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.extraction import JOB_LEASE, MAX_ATTEMPTS
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import ConfigurationError, RecordType, ValidationError

from .conftest import ClientFactory

BACKGROUND = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False)


class Flaky:
    """Fails with a message naming the attempt until ``healthy`` is set."""

    def __init__(self) -> None:
        self.healthy = False
        self.calls = 0

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        self.calls += 1
        if not self.healthy:
            raise RuntimeError(f"model down (call {self.calls})")
        return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}") for m in request.target_messages]


def _exhaust(make_client: ClientFactory, clock: ManualClock, flaky: Flaky) -> AgentMemory:
    """Run a job of thread t1 through every allowed attempt, each by a new client (as after a
    restart) once the previous attempt's lease has expired."""
    client = make_client(extractor=ScriptedExtractor(flaky), memory_extraction_config=BACKGROUND)
    client.create_thread(thread_id="t1", user_id="u")
    client.get_thread("t1").add_messages([{"role": "user", "content": "I live in Rome."}])
    client.wait_for_memory_extraction()
    for _ in range(MAX_ATTEMPTS - 1):
        client.close()
        clock.advance(JOB_LEASE)
        client = make_client(extractor=ScriptedExtractor(flaky), memory_extraction_config=BACKGROUND)
        client.wait_for_memory_extraction()
    return client


def test_a_job_failing_every_attempt_is_listed_with_the_last_reason_and_not_resumed(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, clock, flaky)
    assert flaky.calls == MAX_ATTEMPTS
    [failed] = client.failed_extractions()
    assert failed.thread_id == "t1" and failed.attempts == MAX_ATTEMPTS
    assert failed.failure_reason == f"RuntimeError: model down (call {MAX_ATTEMPTS})"
    assert client.failed_extractions(thread_id="t1") == [failed]
    assert client.failed_extractions(thread_id="t2") == []
    assert client.failed_extractions(limit=1) == [failed]
    # The messages are kept and searchable; a later client does not pick the job up again.
    assert [m.content for m in client.get_thread("t1").get_messages()] == ["I live in Rome."]
    clock.advance(JOB_LEASE)
    again = make_client(extractor=ScriptedExtractor(flaky), memory_extraction_config=BACKGROUND)
    again.wait_for_memory_extraction()
    assert flaky.calls == MAX_ATTEMPTS
    assert [j.id for j in again.failed_extractions()] == [failed.id]


@pytest.mark.parametrize("mode", [MemoryExtractionMode.BACKGROUND, MemoryExtractionMode.INLINE])
def test_retrying_runs_the_failed_jobs_again_in_the_threads_mode(
    make_client: ClientFactory, clock: ManualClock, mode: MemoryExtractionMode
) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, clock, flaky)
    client.update_thread("t1", memory_extraction_config=MemoryExtractionConfig(extraction_mode=mode))
    flaky.healthy = True
    assert client.retry_failed_extractions(thread_id="other") == 0
    assert client.retry_failed_extractions() == 1
    if mode is MemoryExtractionMode.BACKGROUND:
        client.wait_for_memory_extraction()
    assert client.failed_extractions() == []
    assert [m.content for m in client.list_memories(user_id="u")] == ["Fact: I live in Rome."]
    assert client.retry_failed_extractions() == 0


def test_a_retry_that_fails_again_is_recorded_again_with_a_fresh_budget(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, clock, flaky)
    assert client.retry_failed_extractions() == 1
    client.wait_for_memory_extraction()
    assert client.failed_extractions() == []  # one failed attempt of a fresh budget: pending
    assert flaky.calls == MAX_ATTEMPTS + 1


def test_retrying_needs_an_extractor_and_ids_are_checked(make_client: ClientFactory) -> None:
    client = make_client()
    with pytest.raises(ConfigurationError):
        client.retry_failed_extractions()
    with pytest.raises(ValidationError):
        client.failed_extractions(thread_id="")
    with pytest.raises(ValidationError):
        client.failed_extractions(limit=0)
