"""Durable extraction: a process killed (SIGKILL) right after ``add_messages`` returned in
BACKGROUND mode loses nothing — the next client to open the store finishes the extraction (an
embedded file, or a PostgreSQL store whose server outlives the client)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clients import build_client
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import ExtractedMemory
from palimpsest.application.extraction import JOB_LEASE
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import RecordType
from reliability_stores import location

CHILD = textwrap.dedent(
    """
    import sys, time
    from reliability_stores import location
    from palimpsest.adapters.bootstrap import build_container, open_client
    from palimpsest.application.testing import ScriptedExtractor

    def slow(request):
        time.sleep(60)  # the model is slow; the parent kills us meanwhile
        return []

    ports = {"embedder": None, "summariser": None, "link_resolver": None, "memory_extraction_config": None}
    memory = open_client(build_container(location(sys.argv[1]), overrides={**ports, "extractor": ScriptedExtractor(slow)}))
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "My name is Maya and I love sourdough."}])
    print("ACK", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_killed_process_leaves_its_extraction_to_the_next_client(store_spec: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, store_spec], stdout=subprocess.PIPE, text=True, env={**os.environ},
        cwd=Path(__file__).parent,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ACK"  # add_messages returned: acknowledged
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()

    extractor = ScriptedExtractor([[ExtractedMemory(RecordType.FACT, "The user's name is Maya.")]])
    # Past the lease the dead process may have taken on the job.
    clock = ManualClock(datetime.now(UTC) + JOB_LEASE + timedelta(minutes=1))
    memory = build_client(path=location(store_spec), extractor=extractor, clock=clock)
    try:
        memory.wait_for_memory_extraction(timeout=30)
        assert [m.content for m in memory.list_memories(user_id="u1")] == ["The user's name is Maya."]
        assert [m.content for m in extractor.requests[0].target_messages] == [
            "My name is Maya and I love sourdough."
        ]
        with memory.store.unit_of_work() as uow:
            assert uow.jobs.pending(clock.now() + timedelta(days=1)) == []  # done, not pending
    finally:
        memory.close()
