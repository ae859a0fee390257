"""A retried extraction attempt logs one line; its traceback only at DEBUG, or at ERROR when
the job fails for good.

Before, one dropped model request that the client retried (and that then succeeded) printed a
14-line traceback in a script without logging set up: the retry's WARNING carried
``exc_info``, and logging's last-resort handler prints it whole.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
from clients import build_client
from doubles import fact_per_message
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import ModelUnavailableError

SCRIPT = """
    import sys
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.application import (
        ExtractedMemory, ExtractionRetryPolicy, MemoryExtractionConfig, MemoryExtractionMode,
    )
    from palimpsest.application.testing import ScriptedExtractor
    from palimpsest.domain import ModelUnavailableError, RecordType

    calls = []

    def once_dropped(request):
        calls.append(1)
        if len(calls) == 1:
            raise ModelUnavailableError("chat: the connection to the model server was dropped")
        return [ExtractedMemory(RecordType.FACT, "The user lives in Oslo.")]

    memory = open_memory(
        sys.argv[1],
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(once_dropped),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.%s, enable_context_summary=False
        ),
        extraction_retry_policy=ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05),
    )
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Oslo."}])
    memory.wait_for_memory_extraction(timeout=60)
    assert [m.content for m in memory.list_memories()] == ["The user lives in Oslo."]
    memory.close()
"""


@pytest.mark.parametrize("mode", ["INLINE", "BACKGROUND"])
def test_a_retried_attempt_prints_one_line_without_a_traceback(tmp_path: Path, mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT % mode), str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert "attempt 1 of 5" in lines[0] and "dropped" in lines[0] and "will be retried" in lines[0]


class Failing:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        self.calls += 1
        if self.calls <= self.failures:
            raise ModelUnavailableError(f"dropped\nrequest {self.calls}")
        return fact_per_message(request)


@pytest.mark.parametrize("failures", [1, 2])
def test_the_traceback_of_a_retried_attempt_is_logged_at_debug_only(
    caplog: pytest.LogCaptureFixture, failures: int
) -> None:
    memory = build_client(
        store=InMemoryStore(),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(Failing(failures)),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False
        ),
        extraction_retry_policy=ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05),
    )
    with caplog.at_level(logging.DEBUG, logger="palimpsest"), memory:
        memory.create_thread(thread_id="t1", user_id="u1").add_messages([{"role": "user", "content": "I live in Oslo."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert len(memory.list_memories()) == 1
    retried = [r for r in caplog.records if "will be retried" in r.getMessage()]
    assert [r.levelno for r in retried] == [logging.WARNING] * failures
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in retried)  # one line each
    traced = [r for r in caplog.records if r.exc_info is not None]
    assert [r.levelno for r in traced] == [logging.DEBUG] * failures


def test_a_job_that_fails_for_good_logs_one_error_line_and_its_traceback_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The job's end is one ERROR line naming its thread, its attempts, the reason and how to
    run it again; like a retried attempt's, its traceback is at DEBUG only."""
    memory = build_client(
        store=InMemoryStore(),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(Failing(10)),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False
        ),
        extraction_retry_policy=ExtractionRetryPolicy(max_attempts=2, base_delay_seconds=0.01, max_delay_seconds=0.05),
    )
    with caplog.at_level(logging.DEBUG, logger="palimpsest"), memory:
        memory.create_thread(thread_id="t1", user_id="u1").add_messages([{"role": "user", "content": "I live in Oslo."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert len(memory.failed_extractions()) == 1
    [final] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    text = final.getMessage()
    assert final.exc_info is None and "\n" not in text
    assert "thread t1" in text and "after 2 attempts" in text and "dropped request 2" in text
    assert "recorded as failed" in text and "retry_failed_extractions()" in text
    traced = [r for r in caplog.records if r.exc_info is not None]
    assert [r.levelno for r in traced] == [logging.DEBUG] * 2


class DownResolver:
    """A link resolver whose model server is down."""

    uses_model = True

    def resolve(self, sources, candidates, *, custom_instructions=None):  # type: ignore[no-untyped-def]
        raise ModelUnavailableError("resolve_links: the model server stayed unavailable after 4 attempt(s)")


class DownReranker:
    """A reranker whose model server is down."""

    model_id = "down"

    def rerank(self, query, candidates, *, now):  # type: ignore[no-untyped-def]
        raise ModelUnavailableError("rerank: the model server stayed unavailable after 4 attempt(s)")


def test_a_model_that_is_down_under_add_memory_and_search_costs_one_line_each_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Autonomous linking and reranking recover from a model that is down (the memory is stored,
    the fused order kept): each says so in one WARNING line, its traceback at DEBUG. Before, each
    call printed the whole traceback."""
    from palimpsest.application import RetrievalConfig

    memory = build_client(
        store=InMemoryStore(),
        embedder=HashingEmbedder(),
        link_resolver=DownResolver(),
        retrieval=RetrievalConfig(reranker=DownReranker()),  # type: ignore[arg-type]
    )
    with caplog.at_level(logging.DEBUG, logger="palimpsest"), memory:
        first = memory.add_memory("The user lives in Oslo.", user_id="u1")
        second = memory.add_memory("The user works in Bergen.", user_id="u1")
        assert len(memory.search("Where does the user live?", user_id="u1")) == 2
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    said = {r.getMessage().split(" (")[0] for r in warned}
    # The second memory's candidate lookup is a search too: its reranking fails as well.
    assert said == {f"autonomous linking failed for memory {second}", "reranking failed; the fused order is kept"}
    assert f"autonomous linking failed for memory {first}" not in said  # no candidates: no model call
    assert all(r.exc_info is None and "ModelUnavailableError" in r.getMessage() for r in warned)
    assert [r.levelno for r in caplog.records if r.exc_info is not None] == [logging.DEBUG] * len(warned)
