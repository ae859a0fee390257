"""A process with queued background extraction forks (``os.fork``, multiprocessing's fork start
method: pre-fork servers, worker pools).

Before, the child ran the parent's exit hook and waited the parent's whole ``exit_wait_seconds``
for jobs it had no worker to run; then it closed the SQLite connections it inherited (once in
three runs it hung there for good), and a store of 20,000+ rows wrote its index snapshot from
the child. Now the child inherits none of it: its copy of the client, runner and store is inert
(no exit wait, no thread joined, the parent's connections abandoned, never closed or used, no
snapshot written), and the parent's jobs stay the parent's: still queued and claimed by the
parent after the child ended, then run by it.

Each case runs a script in its own interpreter; the parent there gives its child a generous
bound (``CHILD_BOUND``) and reports a child still running then as hung. The script's exit wait is
far longer than that bound, so the old behaviour fails every time, whatever the machine's speed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CHILD_BOUND = 90  # seconds a child may take before the script calls it hung (it needs well under one)

_TESTS_READ_THE_STORE = "ignore:AgentMemory.store is deprecated:DeprecationWarning"
"""The child scripts write rows through the client's store, as tests may (ARCHITECTURE.md D36)."""

SCRIPT = """
    import multiprocessing, os, signal, sys, threading, time
    from datetime import UTC, datetime
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.adapters.embedded import EmbeddedStore
    from palimpsest.application import (
        ExtractedMemory, ExtractionRetryPolicy, MemoryExtractionConfig, MemoryExtractionMode,
    )
    from palimpsest.application.testing import ScriptedExtractor
    from palimpsest.domain import MemoryRecord, RecordType, StoreClosedError

    path, how, rows, bound = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    entered, gate = threading.Event(), threading.Event()
    if rows:  # the snapshot is due from ``rows`` rows on (20,000 by default: the same rule, fewer rows to write)
        EmbeddedStore.SNAPSHOT_MIN_ROWS = rows

    def gated(request):
        entered.set()
        assert gate.wait(600)
        return [ExtractedMemory(RecordType.FACT, "Fact: " + m.content) for m in request.target_messages]

    memory = open_memory(
        path,
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(gated),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
        ),
        extraction_retry_policy=ExtractionRetryPolicy(exit_wait_seconds=3600),
    )
    if rows:  # a store whose snapshot is due at close or exit
        now = datetime.now(UTC)
        with memory.store.unit_of_work() as uow:
            for i in range(rows):
                uow.records.add(MemoryRecord(
                    id=f"r{i}", record_type=RecordType.FACT, content=f"note {i} about topic {i % 97}",
                    created_at=now, updated_at=now, user_id="u2",
                ))
            uow.commit()
    one, two = memory.create_thread(thread_id="t1", user_id="u1"), memory.create_thread(thread_id="t2", user_id="u1")
    for text in ("I live in Oslo.", "I work as a baker.", "I have a dog called Rex."):
        one.add_messages([{"role": "user", "content": text}])
    two.add_messages([{"role": "user", "content": "I play the cello."}])
    assert entered.wait(60)
    memory.search("Oslo", user_id="u1")  # the main thread holds connections too
    pending = sorted(j.id for j in memory.pending_extractions())
    snapshot = path + ".index"
    assert len(pending) == 4 and not os.path.exists(snapshot)

    def child():
        # The inherited client is closed to the child; a store opened here works.
        try:
            memory.list_memories()
            raise SystemExit("the inherited store answered in the child")
        except StoreClosedError:
            pass
        if how == "fork-close":
            memory.close()  # hands nothing back, closes no inherited connection
        EmbeddedStore.SNAPSHOT_MIN_ROWS = 10**9  # the child's own store: no snapshot of its own
        with EmbeddedStore(path) as own, own.reading() as uow:
            assert len(uow.jobs.list()) == 4

    started = time.monotonic()
    if how.startswith("fork"):
        pid = os.fork()
        if pid == 0:
            child()
            sys.exit(0)  # the interpreter's whole exit path: threading's hooks, atexit, finalizers
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > bound:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                code = "hung"
                break
            time.sleep(0.05)
    else:
        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join(bound)
        if process.is_alive():
            process.kill()
            process.join()
            code = "hung"
        else:
            code = process.exitcode
    print("child", code, flush=True)
    try:  # the parent's jobs are still the parent's, and no snapshot was written by the child
        assert sorted(j.id for j in memory.pending_extractions()) == pending
        assert not os.path.exists(snapshot), "the child wrote the parent's snapshot"
    finally:
        gate.set()
    memory.wait_for_memory_extraction(timeout=120)
    print("memories", sorted(m.content for m in memory.list_memories(user_id="u1")), flush=True)
    assert memory.pending_extractions() == []
    memory.close()
    print("snapshot", os.path.exists(snapshot), flush=True)
"""


@pytest.mark.parametrize("rows", [0, 2_000], ids=["small", "snapshot-due"])
@pytest.mark.parametrize("how", ["fork", "fork-close", "multiprocessing"])
def test_a_forked_child_leaves_the_parents_jobs_connections_and_snapshot_alone(
    tmp_path: Path, how: str, rows: int
) -> None:
    path = tmp_path / "memory.db"
    done = subprocess.run(
        [sys.executable, "-W", _TESTS_READ_THE_STORE, "-c", textwrap.dedent(SCRIPT), str(path), how, str(rows), str(CHILD_BOUND)],
        capture_output=True,
        text=True,
        timeout=CHILD_BOUND + 300,
    )
    assert "child 0\n" in done.stdout, (done.stdout, done.stderr)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert (
        "memories ['Fact: I have a dog called Rex.', 'Fact: I live in Oslo.', 'Fact: I play the cello.', "
        "'Fact: I work as a baker.']" in done.stdout
    )
    assert f"snapshot {rows > 0}" in done.stdout  # written by the parent, at its close
    import sqlite3

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


BARRIER = """
    import os, sys, threading, time
    from palimpsest.adapters.embedded import EmbeddedStore

    store = EmbeddedStore(sys.argv[1])
    entered, ended = threading.Event(), threading.Event()

    def reader():
        with store.reading() as uow:  # a use of the store in progress, as an SQLite call is
            uow.jobs.list()
            entered.set()
            time.sleep(0.5)
            ended.set()

    worker = threading.Thread(target=reader)
    worker.start()
    assert entered.wait(60)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if ended.is_set() else 1)
    print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
    worker.join()
    store.close()
"""


def test_a_fork_waits_for_other_threads_uses_of_a_store_to_end(tmp_path: Path) -> None:
    """SQLite's mutexes have no fork handler: a child forked while a parent's thread was inside
    an SQLite call hung at its own first one (opening its own store: in about one run in ten
    above). The fork now waits (bounded) until no other thread is inside a use of a store."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(BARRIER), str(tmp_path / "barrier.db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout == "child 0\n"  # the child was forked after the reader's use ended


POSTGRES = """
    import os, signal, sys, time
    import psycopg
    from reliability_stores import location
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.application import MemoryExtractionConfig
    from palimpsest.domain import StoreClosedError

    spec, how, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
    url = spec.rpartition("#")[0]
    PARENT = "palimpsest-fork-parent"
    options = dict(embedder=HashingEmbedder(), memory_extraction_config=MemoryExtractionConfig(extract_memories=False))

    def sessions():  # the server processes of the parent's pooled connections
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (PARENT,))
            return {row[0] for row in rows}

    memory = open_memory(location(spec.replace("#", f"&application_name={PARENT}#")), **options)
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Oslo."}])
    memory.search("Oslo", user_id="u1")
    before = sessions()
    assert before, "the parent holds no pooled connection"

    def child():
        try:  # the inherited client is closed to the child; a store opened here works
            memory.list_memories()
            raise SystemExit("the inherited store answered in the child")
        except StoreClosedError:
            pass
        if how == "fork-close":
            memory.close()
            memory.store.close()  # abandons the parent's connections: none is closed
        with open_memory(location(spec), **options) as own:
            assert [m.content for m in own.get_thread("t1").get_messages()] == ["I live in Oslo."]

    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child()
        sys.exit(0)  # the interpreter's whole exit path: threading's hooks, atexit, finalizers
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() - started > bound:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = "hung"
            break
        time.sleep(0.05)
    print("child", code, flush=True)
    assert sessions() >= before, "the child ended sessions of the parent"
    thread.add_messages([{"role": "user", "content": "I work as a baker."}])
    print("messages", [m.content for m in thread.get_messages()], flush=True)
    memory.close()
"""


@pytest.mark.postgres
@pytest.mark.parametrize("how", ["fork", "fork-close"])
def test_a_forked_child_neither_uses_nor_closes_the_parents_postgres_connections(
    postgres_store_spec: str, how: str
) -> None:
    """PostgreSQL: a child shares its parent's sockets. The inherited client is closed to it
    (``StoreClosedError``, as for an embedded file), closing it there ends none of the parent's
    sessions, and the parent's client works on."""
    done = subprocess.run(
        [sys.executable, "-W", _TESTS_READ_THE_STORE, "-c", textwrap.dedent(POSTGRES), postgres_store_spec, how, str(CHILD_BOUND)],
        capture_output=True,
        text=True,
        timeout=CHILD_BOUND + 300,
        cwd=Path(__file__).parent,
    )
    assert "child 0\n" in done.stdout, (done.stdout, done.stderr)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "messages ['I live in Oslo.', 'I work as a baker.']" in done.stdout
