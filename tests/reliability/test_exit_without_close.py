"""A script that adds messages with extraction on and exits without ``close()``.

Before, it printed ``RuntimeError: cannot schedule new futures after shutdown`` (the embedder's
thread pool was shut down under the background worker) and its memories were missing. Now the
exit waits, within a bound, for the queued extraction; what does not finish in time stays
durable and the next client runs it. Each script runs in its own interpreter, as a user's would,
on an embedded file and on PostgreSQL (whose pool's threads must not hold the exit either).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import MemoryExtractionConfig
from reliability_stores import location

NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


HERE = Path(__file__).parent
OPEN = "from reliability_stores import location\n"  # a script opens its store spec's location


def run_script(source: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", OPEN + textwrap.dedent(source), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
    )


def memories_in(spec: str) -> list[str]:
    with build_client(
        path=location(spec), embedder=HashingEmbedder(), memory_extraction_config=NO_EXTRACTION,
        allow_embedding_model_change=True,
    ) as memory:
        return sorted(r.content for r in memory.list_memories())


def test_the_default_client_exits_cleanly_and_keeps_its_memories(store_spec: str) -> None:
    """``open_memory`` as the README shows it (its default embedder and background extraction),
    never closed."""
    done = run_script(
        """
        import sys
        from palimpsest.adapters import open_memory

        memory = open_memory(location(sys.argv[1]))
        thread = memory.create_thread(user_id="u1", agent_id="assistant")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I live in Oslo. I love sourdough pizza."}])
        """,
        store_spec,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert memories_in(store_spec) == ["The user lives in Oslo.", "The user loves sourdough pizza.", "The user's name is Maya."]


SLOW_MODEL = """
    import sys, time
    from palimpsest.adapters import open_memory
    from palimpsest.application import ExtractedMemory, ExtractionRetryPolicy, MemoryExtractionConfig, MemoryExtractionMode
    from palimpsest.adapters import HashingEmbedder
    from palimpsest.application.testing import ScriptedExtractor
    from palimpsest.domain import RecordType

    def slow(request):
        time.sleep(float(sys.argv[2]))
        return [ExtractedMemory(RecordType.FACT, "Fact: " + m.content) for m in request.target_messages]

    memory = open_memory(
        location(sys.argv[1]),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(slow),
        memory_extraction_config=MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.BACKGROUND),
        extraction_retry_policy=ExtractionRetryPolicy(exit_wait_seconds=float(sys.argv[3])),
    )
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    for text in ("I live in Oslo.", "I work as a baker.", "I have a dog called Rex."):
        thread.add_messages([{"role": "user", "content": text}])
    print("appended", flush=True)
"""


@pytest.mark.parametrize("model_seconds", [0.2, 0.0])
def test_queued_jobs_finish_at_exit_within_the_wait(store_spec: str, model_seconds: float) -> None:
    done = run_script(SLOW_MODEL, store_spec, str(model_seconds), "30")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert memories_in(store_spec) == ["Fact: I have a dog called Rex.", "Fact: I live in Oslo.", "Fact: I work as a baker."]


def test_what_the_bounded_wait_leaves_stays_durable_for_the_next_client(store_spec: str) -> None:
    done = run_script(SLOW_MODEL, store_spec, "1.0", "0.5")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    left = memories_in(store_spec)
    assert len(left) < 3  # the exit did not wait for all three one-second passes
    with (
        build_client(path=location(store_spec), memory_extraction_config=NO_EXTRACTION) as memory,
        memory.store.unit_of_work() as uow,
    ):
        assert len(uow.jobs.list()) == 3 - len(left)  # what is missing is still a job
    from palimpsest.application import ExtractedMemory
    from palimpsest.application.testing import ScriptedExtractor
    from palimpsest.domain import RecordType

    def quick(request):  # type: ignore[no-untyped-def]
        return [ExtractedMemory(RecordType.FACT, "Fact: " + m.content) for m in request.target_messages]

    # The next client resumes them once their lease is over (a crash-free exit leaves at most
    # the lease of the one job under way).
    from datetime import UTC, datetime

    from palimpsest.adapters.inmemory import ManualClock
    from palimpsest.application.extraction import JOB_LEASE

    with open_memory(
        location(store_spec), embedder=HashingEmbedder(), extractor=ScriptedExtractor(quick), clock=ManualClock(datetime.now(UTC) + JOB_LEASE * 2)
    ) as memory:
        memory.wait_for_memory_extraction(timeout=60)
        assert memory.pending_extractions() == []
    assert memories_in(store_spec) == ["Fact: I have a dog called Rex.", "Fact: I live in Oslo.", "Fact: I work as a baker."]
