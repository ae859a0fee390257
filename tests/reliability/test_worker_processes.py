"""Extraction workers as processes (``palimpsest worker``, ARCHITECTURE.md D34), with real
processes and a real model over HTTP, on each backend a worker serves: one embedded store file,
and one store (its own ``memory_store_id``) on the session's real PostgreSQL server, where the
workers share the backlog through the job table's ``FOR UPDATE SKIP LOCKED`` claim as workers on
several machines would.

The model is :class:`~palimpsest.adapters.openai.testing.LoopbackExtractionServer`, an
OpenAI-compatible server in this test process that the workers reach through the ``OPENAI_*``
settings (``--extractor openai``). It answers one fact per newest message and records every
request, so a job run twice shows as its message sent twice, whichever process sent it; it can
also hold every request (a model that hangs) until the test lets it go.

What holds:

* a client with ``extraction_runs_in="workers"`` records its jobs and runs none; it exits, and
  ``palimpsest worker --store LOCATION --drain`` extracts them all, then exits 0;
* three workers on one store drain a backlog: every job runs exactly once (one model request per
  message, one memory per message), none is lost, none failed, the job table is empty;
* a worker killed with SIGKILL mid-job leaves its claim until the lease ends; another worker then
  takes the job over and finishes it (the model sees that message twice, every other once);
* a worker sent SIGTERM mid-job hands its claim back at once (the job is free, long before its
  lease would end) and exits 0.

Every process the test does not kill must exit 0, so a crash at interpreter exit (pool threads
still running, say) fails the test; ``PYTHONFAULTHANDLER`` prints its stacks. Every test runs once
per backend; a PostgreSQL store is dropped after its test. Leases are short (2 s; 600 s where the
test shows the hand-back comes first) and backlogs small (48 jobs at most).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the workers' model is the OpenAI-compatible extractor ('openai' extra)")

from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.adapters.openai.testing import LoopbackExtractionServer
from palimpsest.domain.model import ExtractionJob
from postgres_server import PostgresTarget

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals and process groups are POSIX")

BOUND = 120.0  # seconds any process of these tests may take, at most (a loaded machine is slow)
PALIMPSEST = str(Path(sys.executable).with_name("palimpsest"))

CLIENT = textwrap.dedent(
    """
    import sys
    from palimpsest.adapters import HashingEmbedder, open_memory

    location, threads, appends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    memory = open_memory(location, embedder=HashingEmbedder(), extraction_runs_in="workers")
    for t in range(threads):
        thread = memory.create_thread(thread_id=f"t{t}", user_id="u1")
        for i in range(appends):
            thread.add_messages([{"role": "user", "content": f"note-{t}-{i} is a thing to remember"}])
    print(len(memory.pending_extractions()), len(memory.list_memories(user_id="u1")), flush=True)
    """
)  # no close(): the client just exits; its jobs are durable, left to the workers


def texts(threads: int, appends: int) -> list[str]:
    return [f"note-{t}-{i} is a thing to remember" for t in range(threads) for i in range(appends)]


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the client and the workers meet (``--store``): a file, or a PostgreSQL URL naming a
    fresh ``memory_store_id`` on the session's server (dropped afterwards)."""
    if request.param == "embedded":
        yield str(tmp_path / "memory.db")
        return
    import psycopg

    target: PostgresTarget = request.getfixturevalue("postgres_target")
    store_id = f"w{uuid.uuid4().hex[:12]}"
    yield f"{target.url}{'&' if '?' in target.url else '?'}memory_store_id={store_id}"
    with psycopg.connect(target.url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "palimpsest_{store_id}" CASCADE')


@pytest.fixture
def model() -> Iterator[LoopbackExtractionServer]:
    with LoopbackExtractionServer() as server:
        yield server


def worker_env(model: LoopbackExtractionServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PALIMPSEST_"))}
    return env | {
        "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test-key", "OPENAI_MODEL": "test-model",
        "PYTHONFAULTHANDLER": "1",  # a crash prints its stacks
    }


def start_worker(path: str, model: LoopbackExtractionServer, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PALIMPSEST, "worker", "--store", path, "--extractor", "openai", "--poll", "0.1", *options],
        env=worker_env(model),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Wait (bounded) for a worker; its exit code and standard error."""
    try:
        _, err = process.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        raise AssertionError(f"the worker did not end within {BOUND} s:\n{err}") from None
    return process.returncode, err


def append_as_a_client(path: str, threads: int, appends: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, path, str(threads), str(appends)],
        capture_output=True,
        text=True,
        timeout=BOUND,
        env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
    )
    assert done.returncode == 0, done.stderr
    pending, memories = map(int, done.stdout.split())
    assert (pending, memories) == (threads * appends, 0)  # recorded, none run by the client


def state(path: str) -> tuple[list[ExtractionJob], list[ExtractionJob], list[str]]:
    """(jobs still to run, failed jobs, memory texts) of the store, read by a passive client."""
    memory = open_client(build_container(path, profile="inspect"))
    try:
        return (
            memory.pending_extractions(),
            memory.failed_extractions(),
            sorted(m.content for m in memory.list_memories(user_id="u1")),
        )
    finally:
        memory.close()


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def claimed(path: str) -> list[ExtractionJob]:
    jobs, _, _ = state(path)
    return [j for j in jobs if j.claimed_by is not None]


def test_a_worker_drains_the_jobs_a_client_left_to_workers(store: str, model: LoopbackExtractionServer) -> None:
    path = store
    append_as_a_client(path, threads=3, appends=2)
    assert model.calls == []

    code, err = finish(start_worker(path, model, "--drain"))

    assert code == 0, err
    assert sorted(model.targets()) == sorted(texts(3, 2))  # each job's messages sent once
    pending, failed, memories = state(path)
    assert pending == [] and failed == []
    assert memories == sorted(f"Fact: {t}" for t in texts(3, 2))
    assert err.count(": done in ") == 6  # one line per job


def test_three_workers_drain_one_backlog_with_no_job_run_twice_or_lost(
    store: str, model: LoopbackExtractionServer
) -> None:
    path = store
    append_as_a_client(path, threads=12, appends=4)
    model.delay = 0.02  # each request takes a while, so the workers overlap

    workers = [start_worker(path, model, "--drain", "--threads", "2") for _ in range(3)]
    results = [finish(w) for w in workers]

    assert all(code == 0 for code, _ in results), [err for _, err in results]
    sent = Counter(model.targets())
    assert sent == Counter(texts(12, 4))  # every job exactly once: none twice, none lost
    pending, failed, memories = state(path)
    assert pending == [] and failed == []
    assert memories == sorted(f"Fact: {t}" for t in texts(12, 4))
    assert sum(err.count(": done in ") for _, err in results) == 48


def test_the_job_of_a_worker_killed_mid_job_is_taken_over_when_its_lease_ends(
    store: str, model: LoopbackExtractionServer
) -> None:
    path = store
    append_as_a_client(path, threads=3, appends=1)
    model.open.clear()  # the model hangs: the first worker's job stays under way
    first = start_worker(path, model, "--threads", "1", "--lease", "2")
    try:
        assert model.entered.wait(BOUND), "the first worker never called the model"
        wait_until(lambda: claimed(path), "the first worker holds a claim")
        (held,) = claimed(path)
    finally:
        first.kill()  # SIGKILL: no hand-back, no clean-up
        first.communicate(timeout=BOUND)
    assert len(model.calls) == 1 and len(model.calls[0]) == 1  # one job under way when it died
    held_text = model.calls[0][0]
    jobs, _, _ = state(path)
    assert held.id in {j.id for j in jobs if j.claimed_by == held.claimed_by}  # still its, until the lease ends

    model.open.set()
    code, err = finish(start_worker(path, model, "--drain", "--lease", "2"))

    assert code == 0, err
    sent = Counter(model.targets())
    assert sent[held_text] == 2  # once by the killed worker, once by the one that took it over
    assert sent == Counter(texts(3, 1)) + Counter([held_text])
    pending, failed, memories = state(path)
    assert pending == [] and failed == []
    assert memories == sorted(f"Fact: {t}" for t in texts(3, 1))


def test_sigterm_hands_the_claims_back_and_exits_zero(store: str, model: LoopbackExtractionServer) -> None:
    path = store
    append_as_a_client(path, threads=1, appends=1)
    model.open.clear()
    worker = start_worker(path, model, "--lease", "600", "--grace", "0.2")
    try:
        assert model.entered.wait(BOUND), "the worker never called the model"
        wait_until(lambda: claimed(path), "the worker holds a claim")
        worker.send_signal(signal.SIGTERM)
        code, err = finish(worker)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert code == 0, err

    (job,) = state(path)[0]
    assert job.claimed_by is None and job.claimed_until is None  # handed back: free now, not in 600 s
    memory = open_client(build_container(path, profile="inspect"))
    try:
        with memory.store.reading() as uow:
            assert [j.id for j in uow.jobs.pending(datetime.now(UTC))] == [job.id]
    finally:
        memory.close()

    model.open.set()
    code, err = finish(start_worker(path, model, "--drain"))
    assert code == 0, err
    assert state(path)[2] == ["Fact: note-0-0 is a thing to remember"]
