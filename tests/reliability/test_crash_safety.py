"""Crash safety: a writer process killed with SIGKILL at random points loses no acknowledged batch
and leaves no partial one, on an embedded file and on PostgreSQL (a client killed mid-transaction:
the server rolls back what it had not committed).

The child (``crash_writer.py``) writes the deterministic batches of ``crash_batches`` (messages;
a memory with its link; a link between memories), each one public call, and prints ``ACK n``
only after the call returned. The parent kills it at a random moment (after a random number of
acknowledgements, plus a random delay; sometimes while it is still opening the store), then
audits the store (``reliability_audit``: SQLite integrity or PostgreSQL's keyword statistics, foreign keys, link endpoints, derived statuses, contiguous
seqs) and checks that every acknowledged batch is there in full, that the batch in flight is
there in full or not at all, and that nothing else is; then a new child resumes after the last
batch found.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from clients import build_client
from crash_batches import THREAD_IDS, USER_ID, batch, content
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import MemoryExtractionConfig
from reliability_audit import Snapshot, audit
from reliability_stores import location

NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

WRITER = Path(__file__).with_name("crash_writer.py")
READ_TIMEOUT = 120.0  # seconds without any output from the child before the test gives up


@dataclass
class CrashStats:
    kills: int = 0
    acknowledged: int = 0
    batches_checked: int = 0
    rows_checked: int = 0
    in_flight_found: int = 0  # a batch committed but killed before its ACK was printed


class Child:
    """The writer process and a line reader on its stdout that never blocks forever."""

    def __init__(self, spec: str, first: int, stderr: Path) -> None:
        self._err = stderr.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), spec, str(first)],
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=WRITER.parent,
        )
        self._buffer = b""
        self.lines: list[str] = []

    def _read(self, timeout: float) -> bool:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\n")
        self.lines.extend(line.decode() for line in complete)  # only whole lines count
        return True

    def wait_ready(self) -> None:
        self._wait(lambda: "READY" in self.lines, "READY")

    def wait_acks(self, count: int) -> None:
        self._wait(lambda: len(self.acks) >= count, f"{count} ACKs")

    def _wait(self, predicate: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + READ_TIMEOUT
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"the writer produced no {what} in {READ_TIMEOUT} s")
            if not self._read(1.0):
                raise AssertionError(f"the writer ended before {what}: exit {self.process.wait()}")

    def kill(self) -> list[int]:
        """SIGKILL, then every ACK it printed (also those not read yet)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
        while self._read(5.0):
            pass
        assert self.process.stdout is not None
        self.process.stdout.close()
        self._err.close()
        assert self.process.returncode == -signal.SIGKILL, (
            f"the writer died on its own: {self.process.returncode}"
        )
        return self.acks

    @property
    def acks(self) -> list[int]:
        return [int(line.split()[1]) for line in self.lines if line.startswith("ACK ")]


def _present(plan_n: int, snapshot: Snapshot) -> tuple[int, int]:
    """How many of batch ``plan_n``'s rows the snapshot holds, out of how many."""
    plan = batch(plan_n)
    found = 0
    if plan.message_ids:
        held = set(snapshot.messages.get(plan.thread_id or "", []))
        found += sum(mid in held for mid in plan.message_ids)
    if plan.record_id is not None:
        found += plan.record_id in snapshot.records
    if plan.link_id is not None:
        found += snapshot.links.get(plan.link_id) == (plan.link_source, plan.link_target, plan.link_type)
    return found, plan.size


def _check_round(snapshot: Snapshot, acknowledged: set[int], confirmed: int, stats: CrashStats) -> int:
    """Assert the all-or-nothing property; return the number of the last batch in the store.

    ``confirmed`` is the last batch known to be stored before this round's child started (its
    ACK was read, or an earlier audit found it committed although its writer died first)."""
    assert snapshot.problems == [], snapshot.problems
    known = max(max(acknowledged, default=0), confirmed)
    present = []
    for n in range(1, known + 3):  # past the last known batch: at most the one in flight
        found, size = _present(n, snapshot)
        assert found in (0, size), f"batch {n} is partial: {found} of {size} rows ({batch(n)})"
        if found:
            present.append(n)
        elif n in acknowledged or n <= confirmed:
            raise AssertionError(f"acknowledged batch {n} is missing ({batch(n)})")
    expected_last = present[-1] if present else 0
    assert present == list(range(1, expected_last + 1)), "batches are written in order, without gaps"
    assert expected_last in (known, known + 1), (expected_last, known)
    stats.in_flight_found += expected_last == known + 1
    # Nothing but the plan's rows, and each thread's messages in plan order.
    plans = [batch(n) for n in present]
    for thread_id in THREAD_IDS:
        expected = [mid for p in plans if p.thread_id == thread_id for mid in p.message_ids]
        assert snapshot.messages.get(thread_id, []) == expected, (
            f"messages of {thread_id} are not in plan order"
        )
    assert set(snapshot.records) == {p.record_id for p in plans if p.record_id is not None}
    assert set(snapshot.links) == {p.link_id for p in plans if p.link_id is not None}
    stats.batches_checked += len(present)
    stats.rows_checked += snapshot.rows
    return expected_last


def run_crash_rounds(tmp_path: Path, spec: str, kills: int, seed: int) -> CrashStats:
    rng = random.Random(seed)
    with build_client(
        path=location(spec),
        embedder=HashingEmbedder(),
        memory_extraction_config=NO_EXTRACTION,
    ) as memory:
        for thread_id in THREAD_IDS:
            memory.create_thread(thread_id=thread_id, user_id=USER_ID)
    stats = CrashStats()
    acknowledged: set[int] = set()
    next_batch = 1
    for _ in range(kills):
        child = Child(spec, next_batch, tmp_path / "writer.stderr")
        if rng.random() < 0.15:
            time.sleep(rng.uniform(0.0, 0.4))  # often still importing or opening the store
        else:
            child.wait_ready()
            child.wait_acks(len(child.acks) + rng.randint(0, 12))
            time.sleep(rng.uniform(0.0, 0.02))
        acks = child.kill()
        assert acks == list(range(next_batch, next_batch + len(acks))), acks
        acknowledged.update(acks)
        stats.kills += 1
        next_batch = _check_round(audit(spec), acknowledged, next_batch - 1, stats) + 1
    stats.acknowledged = len(acknowledged)

    # The store is usable afterwards: caches rebuilt, messages readable, memories found.
    with build_client(
        path=location(spec),
        embedder=HashingEmbedder(),
        memory_extraction_config=NO_EXTRACTION,
    ) as memory:
        for thread_id in THREAD_IDS:
            messages = memory.get_thread(thread_id).get_messages()
            assert [m.content for m in messages] == [content(m.id) for m in messages]
        records = [batch(n).record_id for n in range(1, next_batch) if batch(n).record_id is not None]
        if records:
            found = memory.search(
                content(records[-1]), user_id=USER_ID, max_results=50, include_invalid_results=True
            )
            assert records[-1] in {r.record.id for r in found}
    return stats


def test_killed_writers_lose_no_acknowledged_batch_and_leave_no_partial_one(tmp_path: Path, store_spec: str) -> None:
    stats = run_crash_rounds(tmp_path, store_spec, kills=3, seed=20261201)
    assert stats.kills == 3


@pytest.mark.slow
def test_many_kills_at_random_points(tmp_path: Path, store_spec: str) -> None:
    started = time.monotonic()
    stats = run_crash_rounds(tmp_path, store_spec, kills=30, seed=int(os.environ.get("CRASH_SEED", "7")))
    assert stats.kills == 30 and stats.acknowledged > 0
    print(
        f"\ncrash safety: {stats.kills} SIGKILLs survived, {stats.acknowledged} acknowledged batches, "
        f"{stats.in_flight_found} in-flight batches found committed, {stats.batches_checked} batch checks, "
        f"{stats.rows_checked} row checks, {time.monotonic() - started:.1f} s"
    )
