"""Extraction faults in the running client: failed attempts are retried in process with backoff,
pending and retrying jobs are visible, and a job failing every allowed attempt is recorded as
failed, listed, and retried on request."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from doubles import fact_per_message
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.extraction import JOB_LEASE, MAX_ATTEMPTS
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import ConfigurationError, JobState, RecordType, ValidationError

from .conftest import ClientFactory

BACKGROUND = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False)
INLINE = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False)
FAST = ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05)


class Flaky:
    """Fails with a message naming the call for its first ``failures`` calls (all, if None)."""

    def __init__(self, failures: int | None = None) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            raise RuntimeError(f"model down (call {self.calls})")
        return fact_per_message(request)


def _client(make_client: ClientFactory, flaky: Flaky, config: MemoryExtractionConfig = BACKGROUND) -> AgentMemory:
    return make_client(extractor=ScriptedExtractor(flaky), memory_extraction_config=config, extraction_retry_policy=FAST)


def _exhaust(make_client: ClientFactory, flaky: Flaky) -> AgentMemory:
    """One client runs a job of thread t1 through every allowed attempt."""
    client = _client(make_client, flaky)
    client.create_thread(thread_id="t1", user_id="u")
    client.get_thread("t1").add_messages([{"role": "user", "content": "I live in Rome."}])
    client.wait_for_memory_extraction()
    return client


@pytest.mark.parametrize("config", [BACKGROUND, INLINE], ids=["background", "inline"])
def test_a_model_that_fails_once_yields_the_memories_in_the_running_client(
    make_client: ClientFactory, config: MemoryExtractionConfig
) -> None:
    flaky = Flaky(failures=1)
    client = _client(make_client, flaky, config)
    thread = client.create_thread(thread_id="t1", user_id="u")
    thread.add_messages([{"role": "user", "content": "I live in Rome."}])
    client.wait_for_memory_extraction()
    assert flaky.calls == 2
    assert [m.content for m in client.list_memories(user_id="u")] == ["Fact: I live in Rome."]
    assert client.pending_extractions() == [] and client.failed_extractions() == []


def test_a_job_failing_every_attempt_is_listed_with_the_last_reason_and_not_resumed(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, flaky)
    assert flaky.calls == MAX_ATTEMPTS
    [failed] = client.failed_extractions()
    assert failed.thread_id == "t1" and failed.attempts == MAX_ATTEMPTS
    assert failed.failure_reason == f"RuntimeError: model down (call {MAX_ATTEMPTS})"
    assert failed.state(clock.now()) is JobState.FAILED
    assert client.failed_extractions(thread_id="t1") == [failed]
    assert client.failed_extractions(thread_id="t2") == []
    assert client.failed_extractions(limit=1) == [failed]
    assert client.pending_extractions() == []
    # The messages are kept and searchable; a later client does not pick the job up again.
    assert [m.content for m in client.get_thread("t1").get_messages()] == ["I live in Rome."]
    client.close()
    clock.advance(JOB_LEASE)
    again = _client(make_client, flaky)
    again.wait_for_memory_extraction()
    assert flaky.calls == MAX_ATTEMPTS
    assert [j.id for j in again.failed_extractions()] == [failed.id]


def test_the_policy_bounds_the_attempts(make_client: ClientFactory) -> None:
    flaky = Flaky()
    client = make_client(
        extractor=ScriptedExtractor(flaky),
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=ExtractionRetryPolicy(max_attempts=2, base_delay_seconds=0, max_delay_seconds=0),
    )
    client.create_thread(thread_id="t1", user_id="u").add_messages([{"role": "user", "content": "I live in Rome."}])
    client.wait_for_memory_extraction()
    assert flaky.calls == 2
    [failed] = client.failed_extractions()
    assert failed.attempts == 2 and failed.failure_reason == "RuntimeError: model down (call 2)"


def test_a_retrying_job_is_visible_with_its_last_error_until_it_succeeds(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    started, release = threading.Event(), threading.Event()
    calls = 0

    def extract(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("model down")
        started.set()
        assert release.wait(30), "the test never released the second attempt"
        return [ExtractedMemory(RecordType.FACT, "The user lives in Rome.")]

    client = make_client(
        extractor=ScriptedExtractor(extract), memory_extraction_config=BACKGROUND, extraction_retry_policy=FAST
    )
    client.create_thread(thread_id="t1", user_id="u").add_messages([{"role": "user", "content": "I live in Rome."}])
    assert started.wait(30)
    try:
        [job] = client.pending_extractions()
        assert job.state(clock.now()) is JobState.RETRYING
        assert job.last_error == "RuntimeError: model down" and job.attempts == 2
        assert client.pending_extractions(thread_id="t1") == [job] and client.pending_extractions("t2") == []
        assert client.failed_extractions() == []
    finally:
        release.set()
    client.wait_for_memory_extraction()
    assert client.pending_extractions() == []
    assert [m.content for m in client.list_memories(user_id="u")] == ["The user lives in Rome."]


@pytest.mark.parametrize("mode", [MemoryExtractionMode.BACKGROUND, MemoryExtractionMode.INLINE])
def test_retrying_runs_the_failed_jobs_again_in_the_threads_mode(
    make_client: ClientFactory, mode: MemoryExtractionMode
) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, flaky)
    client.update_thread("t1", memory_extraction_config=MemoryExtractionConfig(extraction_mode=mode))
    flaky.failures = 0
    assert client.retry_failed_extractions(thread_id="other") == 0
    assert client.retry_failed_extractions() == 1
    if mode is MemoryExtractionMode.BACKGROUND:
        client.wait_for_memory_extraction()
    assert client.failed_extractions() == []
    assert [m.content for m in client.list_memories(user_id="u")] == ["Fact: I live in Rome."]
    assert client.retry_failed_extractions() == 0


def test_a_retry_that_fails_again_is_recorded_again_after_a_fresh_budget(make_client: ClientFactory) -> None:
    flaky = Flaky()
    client = _exhaust(make_client, flaky)
    assert client.retry_failed_extractions() == 1
    client.wait_for_memory_extraction()
    assert flaky.calls == 2 * MAX_ATTEMPTS
    [failed] = client.failed_extractions()
    assert failed.attempts == MAX_ATTEMPTS
    assert failed.failure_reason == f"RuntimeError: model down (call {2 * MAX_ATTEMPTS})"


def test_retrying_needs_an_extractor_and_ids_are_checked(make_client: ClientFactory) -> None:
    client = make_client()
    with pytest.raises(ConfigurationError):
        client.retry_failed_extractions()
    with pytest.raises(ValidationError):
        client.failed_extractions(thread_id="")
    with pytest.raises(ValidationError):
        client.failed_extractions(limit=0)
    with pytest.raises(ValidationError):
        client.pending_extractions(thread_id="")
    with pytest.raises(ConfigurationError):
        make_client(extraction_retry_policy={"max_attempts": 2})


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"max_attempts": True},
        {"base_delay_seconds": -1},
        {"max_delay_seconds": float("inf")},
        {"base_delay_seconds": 5, "max_delay_seconds": 1},
        {"exit_wait_seconds": "soon"},
    ],
)
def test_a_bad_retry_policy_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ExtractionRetryPolicy(**options)  # type: ignore[arg-type]


def test_backoff_doubles_is_jittered_by_at_most_a_quarter_and_is_capped() -> None:
    policy = ExtractionRetryPolicy(base_delay_seconds=1, max_delay_seconds=10)
    assert [policy.delay(n, 0.0) for n in (1, 2, 3, 4, 5, 6)] == [1, 2, 4, 8, 10, 10]
    assert policy.delay(2, 0.999) == pytest.approx(2 * 1.24975)
    assert policy.delay(4, 0.999) == pytest.approx(8 * 1.24975) and policy.delay(5, 0.999) == 10  # capped
