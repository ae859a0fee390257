"""Model faults: the OpenAI-compatible extractor, through the client, against a local HTTP server
answering with timeouts, 429, 500, truncated JSON and schema-violating JSON.

What holds (the assertions below):

* the raw messages are committed before any model call, so no fault loses one, and the thread
  stays usable (more messages, context cards, search) whatever the model does;
* 429 / 5xx / timeouts are retried by the chat model within one extraction attempt
  (``max_retries``); when they outlast it, the running client retries the job itself after a
  backoff (``ExtractionRetryPolicy``), so a model that fails once yields the memories in the same
  process;
* a malformed answer (truncated or schema-violating JSON) fails the extraction attempt, which is
  retried the same way;
* after ``MAX_ATTEMPTS`` failed attempts the job is recorded as failed with the reason of its
  last attempt (and an error log naming it): it leaves the queue, ``failed_extractions()`` and
  ``palimpsest doctor`` list it, and ``retry_failed_extractions()`` runs it again with a fresh
  budget of attempts.

Each test runs on an embedded file and on a PostgreSQL store (``store_spec``).
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from clients import build_client

openai = pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra")

_SERVER_FOLDER = str(Path(__file__).resolve().parents[1] / "openai")  # the scripted server lives there
if _SERVER_FOLDER not in sys.path:
    sys.path.insert(0, _SERVER_FOLDER)
from fake_openai_server import FakeOpenAIServer, Scripted, chat_answer, error, json_answer  # noqa: E402
from palimpsest.adapters import HashingEmbedder  # noqa: E402
from palimpsest.adapters.inmemory import ManualClock  # noqa: E402
from palimpsest.adapters.openai import LlmExtractor, OpenAIChatModel  # noqa: E402
from palimpsest.application import (  # noqa: E402
    AgentMemory,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.extraction import JOB_LEASE, MAX_ATTEMPTS  # noqa: E402
from reliability_stores import is_postgres, location  # noqa: E402

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
GOOD = json_answer({"memories": [{"text": "The user's name is Maya.", "record_type": "fact"}]})
TIMEOUT = 2.0  # the chat model's per-request timeout; a scripted delay beyond it is a timeout.
# Generous: at 0.5 s a good answer on a loaded machine (the full suite on two cores) once took
# longer than the timeout and was counted as a fault.


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """The scripted server on 127.0.0.1; any other address is refused (tests never leave the machine)."""
    import palimpsest.adapters.openai as adapters

    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    real_create_connection = socket.create_connection

    def loopback_only(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if address[0] not in _LOOPBACK:
            raise AssertionError(f"a test tried to reach {address[0]!r}; tests never leave the machine")
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", loopback_only)
    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)
    with FakeOpenAIServer() as fake:
        yield fake


class Harness:
    """Clients on one store (a file or a PostgreSQL schema), each like a new process, with a clock
    the test moves."""

    def __init__(self, server: FakeOpenAIServer, spec: str) -> None:
        self.server = server
        self.spec = spec
        self.clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
        self.sdk = openai.OpenAI(base_url=server.base_url, api_key="test-key")

    def client(self, *, max_retries: int = 3) -> AgentMemory:
        chat = OpenAIChatModel(
            self.sdk, "test-model", max_retries=max_retries, timeout=TIMEOUT, sleep=lambda _: None
        )
        return build_client(
            path=location(self.spec),
            embedder=HashingEmbedder(),
            extractor=LlmExtractor(chat),
            clock=self.clock,
            memory_extraction_config=MemoryExtractionConfig(
                extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False
            ),
            extraction_retry_policy=ExtractionRetryPolicy(base_delay_seconds=0.05, max_delay_seconds=0.2),
        )

    def pending(self, memory: AgentMemory) -> list[Any]:
        with memory.store.unit_of_work() as uow:
            return uow.jobs.pending(self.clock.now() + JOB_LEASE + timedelta(days=1))

    def past_the_lease(self) -> None:
        self.clock.advance(JOB_LEASE + timedelta(seconds=1))

    def close(self) -> None:
        self.sdk.close()


@pytest.fixture
def harness(server: FakeOpenAIServer, store_spec: str) -> Iterator[Harness]:
    h = Harness(server, store_spec)
    yield h
    h.close()


def timeout() -> Scripted:
    return Scripted(GOOD.body, delay=TIMEOUT * 3)


NOTHING = json_answer({"memories": []})


def assert_thread_usable(
    memory: AgentMemory, server: FakeOpenAIServer, thread_id: str, expected: list[str]
) -> None:
    """Raw messages intact, and the thread still takes messages (one more model call, answered
    with no memory), builds context cards and searches."""
    thread = memory.get_thread(thread_id)
    assert [m.content for m in thread.get_messages()] == expected
    server.chat(NOTHING)
    thread.add_messages([{"role": "user", "content": "One more thing: I walk to work."}])
    assert [m.content for m in thread.get_messages()] == [*expected, "One more thing: I walk to work."]
    card = thread.get_context_card(max_recent_messages=2)
    assert "I walk to work" in card.content
    found = memory.search("sourdough", user_id="u1", record_types=["message"])
    assert any("sourdough" in r.record.content for r in found)


def test_timeouts_429_and_500_are_retried_within_the_attempt(harness: Harness) -> None:
    harness.server.chat(timeout(), error(429, "slow down"), error(500, "boom"), GOOD)
    with harness.client(max_retries=3) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love sourdough."}])
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["The user's name is Maya."]
        assert harness.pending(memory) == []
        assert_thread_usable(memory, harness.server, "t1", ["My name is Maya and I love sourdough."])
    assert (
        len(harness.server.requests_to("/v1/chat/completions")) == 5
    )  # four for the first message, one for the usability check


def test_an_unavailable_model_is_retried_by_the_running_client(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """The first attempt (one request and two retries) fails; the same client tries again after
    its backoff and gets the memory. Before, the job waited for its 10-minute lease and a new
    client. Each retry is one log line, without a traceback (before, the job's retry carried
    one, which a script without logging set up printed whole)."""
    harness.server.chat(error(500), error(429), timeout(), GOOD)
    with caplog.at_level(logging.INFO), harness.client(max_retries=2) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love sourdough."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["The user's name is Maya."]
        assert harness.pending(memory) == [] and memory.pending_extractions() == []
        assert_thread_usable(memory, harness.server, "t1", ["My name is Maya and I love sourdough."])
    assert len(harness.server.requests_to("/v1/chat/completions")) == 5  # 3 + the retry + the usability check
    # The chat model's two request retries are INFO lines; the attempt that failed in the end
    # is the one WARNING line (by the job's runner).
    retries = [r for r in caplog.records if r.name.startswith("palimpsest") and r.levelno >= logging.INFO]
    assert [r.levelno for r in retries] == [logging.INFO, logging.INFO, logging.WARNING]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in retries)


def test_after_the_last_attempt_the_job_is_recorded_as_failed_with_its_reason(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    from palimpsest.adapters.cli.context import CliSettings
    from palimpsest.adapters.cli.doctor import run_checks

    faults = [error(500), error(429), timeout(), error(503), error(502, "bad gateway")]
    assert len(faults) == MAX_ATTEMPTS
    harness.server.chat(*faults)
    with caplog.at_level(logging.ERROR, logger="palimpsest"), harness.client(max_retries=0) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love sourdough."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert harness.pending(memory) == []  # out of the queue, but recorded
        [failed] = memory.failed_extractions()
        assert failed.thread_id == "t1" and failed.attempts == MAX_ATTEMPTS
        assert failed.failed_at is not None and failed.failed_at >= failed.created_at
        assert failed.failure_reason is not None and "502" in failed.failure_reason
        assert memory.failed_extractions("t1") == [failed]
        assert memory.failed_extractions("other") == []
    assert len(harness.server.requests_to("/v1/chat/completions")) == MAX_ATTEMPTS
    gave_up = [r for r in caplog.records if "recorded as failed" in r.getMessage()]
    assert len(gave_up) == 1 and failed.id in gave_up[0].getMessage()
    if not is_postgres(harness.spec):  # the command line takes no Unix-socket URL, the test server's
        checks = {c.name: c for c in run_checks(CliSettings(store=harness.spec))}
        assert checks["failed extractions"].status.value == "WARN" and "502" in checks["failed extractions"].detail

    harness.past_the_lease()
    with harness.client() as memory:  # a failed job is not resumed by the next client
        memory.wait_for_memory_extraction(timeout=60)
        assert [j.id for j in memory.failed_extractions()] == [failed.id]
    assert len(harness.server.requests_to("/v1/chat/completions")) == MAX_ATTEMPTS

    harness.server.chat(GOOD)
    with harness.client() as memory:  # retried on request, the thread and the store work on
        assert memory.retry_failed_extractions() == 1
        assert memory.failed_extractions() == []
        assert harness.pending(memory) == []  # inline: done before the call returned
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["The user's name is Maya."]
        assert memory.retry_failed_extractions() == 0
        assert_thread_usable(memory, harness.server, "t1", ["My name is Maya and I love sourdough."])


MALFORMED = {
    "truncated JSON": chat_answer('{"memories": [{"text": "The user\'s name is Ma'),
    "schema-violating JSON": json_answer({"memories": "Maya"}),
}


@pytest.mark.parametrize("answer", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_answer_loses_no_message_is_retried_and_leaves_the_thread_usable(
    harness: Harness, answer: Scripted
) -> None:
    harness.server.chat(answer, GOOD)
    with harness.client() as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love sourdough."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["The user's name is Maya."]
        assert harness.pending(memory) == []
        assert_thread_usable(memory, harness.server, "t1", ["My name is Maya and I love sourdough."])
    assert (
        len(harness.server.requests_to("/v1/chat/completions")) == 3
    )  # the failed attempt, its retry, then the usability check's own extraction
