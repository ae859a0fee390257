"""Concurrency: 4 processes × 4 threads writing messages, memories and links to one store, an
embedded file or a PostgreSQL schema.

Contention must be absorbed inside the library (embedded, D4: ``BEGIN IMMEDIATE``, busy timeout,
jittered retries; PostgreSQL: row locks, and a retry of what the server aborts): no call may fail, nothing acknowledged may be lost, and afterwards the file passes the
audit (integrity or keyword statistics, link endpoints, statuses derived from the lifecycle links, contiguous seqs).
Every worker links new memories to the same eight root memories, so lifecycle links to one
record race between processes; the shared conversation takes appends from all sixteen writers.
The work is a bounded number of rounds, not a duration.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from concurrency_worker import ROOT_TYPE, ROOTS, SHARED_THREAD, USER_ID, conversation
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import MemoryExtractionConfig
from reliability_audit import audit
from reliability_stores import location

WORKER = Path(__file__).with_name("concurrency_worker.py")
PROCESSES = 4
THREADS = 4


def run_writers(spec: str, rounds: int) -> dict[str, Any]:
    with build_client(
        path=location(spec),
        embedder=HashingEmbedder(),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    ) as memory:
        memory.create_thread(thread_id=SHARED_THREAD, user_id=USER_ID)
        for root in ROOTS:
            memory.add_memory(
                f"{root}: the user lives near the sea", memory_type=ROOT_TYPE, user_id=USER_ID, memory_id=root
            )
    started = time.monotonic()
    children = [
        subprocess.Popen(
            [sys.executable, str(WORKER), spec, str(p), str(THREADS), str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent,
        )
        for p in range(PROCESSES)
    ]
    reports: dict[str, Any] = {}
    for child in children:
        out, err = child.communicate(timeout=1800)
        assert child.returncode == 0, err[-3000:]
        reports.update(json.loads(out))
    elapsed = time.monotonic() - started

    errors = [e for report in reports.values() for e in report["errors"]]
    assert errors == [], f"{len(errors)} error(s) surfaced under contention; the first:\n{errors[0]}"
    assert len(reports) == PROCESSES * THREADS

    snapshot = audit(spec)
    assert snapshot.problems == [], snapshot.problems
    shared = snapshot.messages[SHARED_THREAD]
    links = records = messages = 0
    for p in range(PROCESSES):
        for t in range(THREADS):
            me = conversation(p, t)
            acked = reports[me]["acked"]
            assert snapshot.messages[me] == acked["own"], f"{me}: own messages lost or reordered"
            mine = [mid for mid in shared if mid.startswith(f"{me}-")]
            assert mine == acked["shared"], f"{me}: shared messages lost or out of order"
            for record in acked["records"]:
                assert record in snapshot.records, f"acknowledged memory {record} is missing"
            for link_id, source, target, relation in acked["links"]:
                assert snapshot.links.get(link_id) == (source, target, relation), f"link {link_id} is missing"
            messages += len(acked["own"]) + len(acked["shared"])
            records += len(acked["records"])
            links += len(acked["links"])
    assert len(shared) == sum(len(reports[c]["acked"]["shared"]) for c in reports)
    assert set(snapshot.records) == set(ROOTS) | {r for c in reports for r in reports[c]["acked"]["records"]}
    assert len(snapshot.links) == links
    return {
        "messages": messages,
        "records": records,
        "links": links,
        "elapsed": elapsed,
        "invalid": sum(status == "invalid" for status in snapshot.records.values()),
    }


def test_four_processes_of_four_threads_lose_nothing_and_surface_no_error(store_spec: str) -> None:
    figures = run_writers(store_spec, rounds=2)
    assert figures["records"] == PROCESSES * THREADS * 2
    assert figures["invalid"] > 0  # lifecycle links raced onto the roots


@pytest.mark.slow
def test_sixteen_writers_for_many_rounds(store_spec: str) -> None:
    rounds = 60
    figures = run_writers(store_spec, rounds=rounds)
    writes = figures["messages"] + figures["records"] + figures["links"]
    print(
        f"\nconcurrency: {PROCESSES} processes x {THREADS} threads x {rounds} rounds, 0 errors, "
        f"{writes} acknowledged writes checked ({figures['messages']} messages, {figures['records']} memories, "
        f"{figures['links']} links), {figures['invalid']} records invalidated by lifecycle links, "
        f"{figures['elapsed']:.1f} s"
    )
