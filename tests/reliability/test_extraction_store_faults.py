"""Storage faults under background extraction: a busy store delays a job, never stops it.

Before, a ``StoreBusyError`` while a job was claimed or finished killed the thread's worker
silently: its queue entry stayed, later jobs of the thread queued behind a dead worker, and
``wait_for_memory_extraction()`` returned at once. Here the faults are injected where they hurt
(claim, finish, the pass's own write, the failure record), and a real second connection holds
the embedded file's write lock while a pass is stored.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from doubles import fact_per_message
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import StoreBusyError

BACKGROUND = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False)
FAST = ExtractionRetryPolicy(base_delay_seconds=0.02, max_delay_seconds=0.2)


class FaultyJobs:
    """A job repository whose named operations raise ``StoreBusyError`` the given number of times."""

    def __init__(self, inner: Any, faults: dict[str, int]) -> None:
        self._inner = inner
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        operation = getattr(self._inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._faults.get(name, 0) > 0:
                self._faults[name] -= 1
                raise StoreBusyError(f"the store stayed busy ({name})")
            return operation(*args, **kwargs)

        return call


class FaultyStore(InMemoryStore):
    """An in-memory store whose job operations fail as ``faults`` says (shared, counted down)."""

    def __init__(self, faults: dict[str, int]) -> None:
        super().__init__()
        self.faults = faults

    def unit_of_work(self) -> Any:
        uow = super().unit_of_work()
        uow.jobs = FaultyJobs(uow.jobs, self.faults)
        return uow


@pytest.mark.parametrize("operation", ["claim", "delete", "postpone", "fail"])
def test_a_busy_job_operation_delays_the_thread_but_never_stops_its_worker(operation: str) -> None:
    faults: dict[str, int] = {}
    store = FaultyStore(faults)
    calls = 0

    def first_fails(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        """For the failure records to be written at all, the model fails: three times (each
        failed attempt is postponed), or always on the first job (recorded as failed)."""
        nonlocal calls
        calls += 1
        rome = "Rome" in request.target_messages[0].content
        if (operation == "postpone" and calls <= 3) or (operation == "fail" and rome):
            raise RuntimeError("model down")
        return fact_per_message(request)

    policy = FAST if operation != "fail" else ExtractionRetryPolicy(max_attempts=1, base_delay_seconds=0.02)
    memory = build_client(
        store=store,
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(first_fails),
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=policy,
    )
    thread = memory.create_thread(thread_id="t1", user_id="u")
    faults[operation] = 3
    thread.add_messages([{"role": "user", "content": "I live in Rome."}])
    thread.add_messages([{"role": "user", "content": "I work as a baker."}])  # queued behind the first
    memory.wait_for_memory_extraction(timeout=60)
    assert faults[operation] == 0  # every injected fault was met
    contents = sorted(m.content for m in memory.list_memories(user_id="u"))
    if operation == "fail":
        # One attempt allowed: the first job is recorded as failed once the store answers;
        # the second runs after it all the same.
        [failed] = memory.failed_extractions()
        assert failed.failure_reason == "RuntimeError: model down"
        assert contents == ["Fact: I work as a baker."]
    else:
        # Each pass stored once: a retried finish finds its memories and does not extract again.
        assert contents == ["Fact: I live in Rome.", "Fact: I work as a baker."]
        assert memory.failed_extractions() == []
    assert memory.pending_extractions() == []
    memory.close()


def test_a_write_lock_held_by_another_connection_delays_the_pass_and_stores_it_once(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    holder: sqlite3.Connection | None = None
    released = threading.Event()
    calls = 0

    def grab_the_lock_then_answer(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        """The first call takes the file's write lock on another connection, as another process
        would, and lets it go after a second: the pass's own write meets a busy store."""
        nonlocal holder, calls
        calls += 1
        if calls == 1:
            holder = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")

            def release() -> None:
                assert holder is not None
                holder.execute("ROLLBACK")
                holder.close()
                released.set()

            threading.Timer(1.0, release).start()
        return fact_per_message(request)

    memory = build_client(
        store=EmbeddedStore(path, busy_timeout=0.1),
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(grab_the_lock_then_answer),
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=FAST,
        close_store=True,
    )
    with memory:
        thread = memory.create_thread(thread_id="t1", user_id="u")
        thread.add_messages([{"role": "user", "content": "I live in Rome."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert released.is_set()  # the wait outlasted the lock, rather than returning at once
        assert [m.content for m in memory.list_memories(user_id="u")] == ["Fact: I live in Rome."]
        assert memory.pending_extractions() == [] and memory.failed_extractions() == []
        # The pass's memories were stored whole, once, though its first write was refused.
        assert calls >= 1


# --- PostgreSQL: connections lost under a running extraction -------------------------------------


class LosingJobs:
    """A job repository whose named operations first have the server end their transaction's
    connection (``pg_terminate_backend``, as a restarted server or a network cut would), the
    given number of times; the operation then runs on the dead connection."""

    def __init__(self, uow: Any, url: str, faults: dict[str, int]) -> None:
        self._uow = uow
        self._inner = uow.jobs
        self._url = url
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        operation = getattr(self._inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._faults.get(name, 0) > 0:
                self._faults[name] -= 1
                terminate(self._url, [self._uow.connection().info.backend_pid])
            return operation(*args, **kwargs)

        return call


def terminate(url: str, pids: Sequence[int]) -> int:
    """End these server processes (their connections) and wait until they are gone."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        ended = [conn.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone() for pid in pids]
    return sum(bool(row and row[0]) for row in ended)


@pytest.fixture
def losing_store(postgres_target: Any) -> Iterator[Any]:
    """A PostgreSQL store whose job operations lose their connection as ``store.faults`` says."""
    from palimpsest.adapters.postgres.store import PostgresStore
    from reliability_stores import drop, postgres_spec

    class LosingStore(PostgresStore):
        faults: dict[str, int]

        def unit_of_work(self) -> Any:
            uow = super().unit_of_work()
            uow.jobs = LosingJobs(uow, postgres_target.url, self.faults)
            return uow

    spec = postgres_spec(postgres_target.url, f"lost{uuid.uuid4().hex[:12]}")
    store = LosingStore(postgres_target.url, memory_store_id=spec.rpartition("#")[2], max_connections=4)
    store.faults = {}
    try:
        yield store
    finally:
        store.close()
        drop(spec)


@pytest.mark.postgres
@pytest.mark.parametrize("operation", ["claim", "delete"])
def test_a_connection_lost_at_a_job_operation_delays_the_job_and_stores_its_pass_once(
    losing_store: Any, operation: str
) -> None:
    """The connection of the job's claim (or of its finish, after the pass was stored) is ended
    by the server: a typed ``StoreUnavailableError`` inside the runner, the broken connection is
    dropped from the pool, and the job is run again by the same client: its memories stored
    once, nothing failed, nothing left pending."""
    calls = 0

    def count(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        nonlocal calls
        calls += 1
        return fact_per_message(request)

    memory = build_client(
        store=losing_store,
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(count),
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=FAST,
    )
    with memory:
        thread = memory.create_thread(thread_id="t1", user_id="u")
        losing_store.faults[operation] = 1
        thread.add_messages([{"role": "user", "content": "I live in Rome."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert losing_store.faults[operation] == 0  # the connection was lost there
        assert [m.content for m in memory.list_memories(user_id="u")] == ["Fact: I live in Rome."]
        assert memory.pending_extractions() == [] and memory.failed_extractions() == []
        assert [m.content for m in thread.get_messages()] == ["I live in Rome."]  # the pool serves on
    assert calls == 1  # the model ran once: a claim is taken again, a stored pass is only finished


@pytest.mark.postgres
def test_connections_lost_while_the_model_runs_are_replaced_before_the_pass_is_stored(losing_store: Any) -> None:
    """Every pooled connection of the client is ended while the model call runs (a server
    restart under the client): the pass's write gets a fresh connection, no error surfaces."""
    pool = losing_store._core.database._pool
    ended: list[int] = []

    calls = 0

    def cut_then_answer(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        nonlocal calls
        calls += 1
        if not ended:
            idle = [conn.info.backend_pid for conn in list(pool._pool)]
            ended.append(terminate(losing_store_url, idle))
        return fact_per_message(request)

    losing_store_url = losing_store._core.database._url
    memory = build_client(
        store=losing_store,
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(cut_then_answer),
        memory_extraction_config=BACKGROUND,
        extraction_retry_policy=FAST,
    )
    with memory:
        thread = memory.create_thread(thread_id="t1", user_id="u")
        thread.add_messages([{"role": "user", "content": "I live in Rome."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert ended and ended[0] >= 1  # idle pooled connections were ended under the client
        assert [m.content for m in memory.list_memories(user_id="u")] == ["Fact: I live in Rome."]
        assert memory.pending_extractions() == [] and memory.failed_extractions() == []
    assert calls == 1  # the pass was stored at its first attempt: no dead connection was used
