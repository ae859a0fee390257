"""Tests of the embedded adapter: entity builders, search shortcuts and the worker processes.

Workers live here (a module, not a test file) so that ``multiprocessing`` with the ``spawn``
start method can import them by name in a fresh interpreter.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint, TypedBytes
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordType, Thread
from palimpsest.domain.search import ScopeFilter, SearchHit, SearchQuery
from palimpsest.domain.sentinel import ANY

NOW = datetime(2025, 3, 14, 12, 0, 0, tzinfo=UTC)
DIMENSION = 4
E1 = (1.0, 0.0, 0.0, 0.0)
E2 = (0.0, 1.0, 0.0, 0.0)
NEAR_E1 = (0.9, 0.1, 0.0, 0.0)


def answers(
    store: EmbeddedStore, requests: list[SearchQuery]
) -> list[list[tuple[str, float, tuple[str, ...]]]]:
    """Each query's hits as (id, score to 9 places, ids of the linked records): two stores whose
    caches agree give equal lists."""
    return [
        [
            (hit.id, round(hit.score, 9), tuple(node.record.id for node in hit.linked))
            for hit in store.search(q)
        ]
        for q in requests
    ]


def at(minutes: float = 0) -> datetime:
    return NOW + timedelta(minutes=minutes)


def thread(thread_id: str = "t1", *, user_id: str | None = None) -> Thread:
    return Thread(id=thread_id, created_at=NOW, updated_at=NOW, user_id=user_id)


def message(
    message_id: str, thread_id: str = "t1", seq: int = 1, content: str = "hello there", **kw: Any
) -> Message:
    return Message(
        id=message_id, thread_id=thread_id, role="user", content=content, seq=seq, created_at=at(seq), **kw
    )


def record(
    record_id: str, content: str | None = None, *, created_at: datetime = NOW, **kw: Any
) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        record_type=kw.pop("record_type", RecordType.FACT),
        content=content if content is not None else f"memory {record_id}",
        created_at=created_at,
        updated_at=created_at,
        **kw,
    )


def link(
    link_id: str, source: str, target: str, relation: str = "supports", *, minutes: float = 0
) -> RecordLink:
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=RecordType.FACT,
        target_id=target,
        target_type=RecordType.FACT,
        relation_type=relation,
        opposite_relation_type=relation,
        created_at=at(minutes),
    )


def query(
    *,
    vector: Sequence[float] | None = None,
    text: str | None = None,
    k: int = 100,
    user_id: Any = ANY,
    agent_id: Any = ANY,
    thread_id: Any = ANY,
    **kw: Any,
) -> SearchQuery:
    return SearchQuery(
        k=k,
        now=kw.pop("now", NOW),
        vector=tuple(vector) if vector is not None else None,
        text=text,
        scope=ScopeFilter(user_id=user_id, agent_id=agent_id, thread_id=thread_id),
        **kw,
    )


def ids(hits: Sequence[SearchHit]) -> list[str]:
    return [hit.id for hit in hits]


def linked_ids(hits: Sequence[SearchHit]) -> set[str]:
    found: set[str] = set()

    def walk(nodes: Any) -> None:
        for node in nodes:
            found.add(node.record.id)
            walk(node.children)

    for hit in hits:
        walk(hit.linked)
    return found


def seed(
    store: EmbeddedStore,
    *,
    threads: Sequence[Thread] = (),
    messages: Sequence[tuple[Message, Sequence[float] | None]] = (),
    records: Sequence[tuple[MemoryRecord, Sequence[float] | None]] = (),
    links: Sequence[RecordLink] = (),
) -> None:
    with store.unit_of_work() as uow:
        for t in threads:
            uow.threads.add(t)
        for m, vector in messages:
            uow.messages.add(m, embedding=vector)
        for r, vector in records:
            uow.records.add(r, embedding=vector)
        for lk in links:
            uow.links.add(lk)
        uow.commit()


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to inspect or tamper with a store file; always closed."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


# --- worker processes (spawned) -------------------------------------------------------------------


def write_records_worker(path: str, prefix: str, count: int, pause: float) -> None:
    """Commit ``count`` records with vectors, one unit of work each."""
    with EmbeddedStore(path, dimension=DIMENSION) as store:
        for i in range(count):
            with store.unit_of_work() as uow:
                uow.records.add(record(f"{prefix}{i:04d}", f"written by {prefix}"), embedding=NEAR_E1)
                uow.commit()
            time.sleep(pause)


def write_records_threads(
    store: EmbeddedStore, prefix: str, threads: int, count: int, seconds: float | None = None
) -> tuple[list[str], int]:
    """``threads`` threads each committing ``count`` records, or as many as fit in ``seconds``.

    Returns the errors met and the number of records written per thread.
    """
    errors: list[str] = []
    lock = threading.Lock()
    deadline = None if seconds is None else time.monotonic() + seconds
    written: list[int] = [0] * threads

    def work(n: int) -> None:
        for i in range(count):
            if deadline is not None and time.monotonic() > deadline:
                return
            try:
                with store.unit_of_work() as uow:
                    uow.records.add(record(f"{prefix}-{n}-{i:04d}", "concurrent write"), embedding=E2)
                    uow.commit()
                written[n] = i + 1
            except Exception as exc:  # noqa: BLE001 - every failure is reported, none is retried
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return errors, min(written)


def concurrent_writer_process(
    path: str, prefix: str, threads: int, count: int, seconds: float | None, results: Any
) -> None:
    """A second process running several writer threads on its own store instance."""
    with EmbeddedStore(path, dimension=DIMENSION) as store:
        results.put(write_records_threads(store, prefix, threads, count, seconds))


def write_checkpoints_worker(path: str, prefix: str, count: int, results: Any) -> None:
    """Commit ``count`` checkpoints, one unit of work each, as a graph step does: read the
    thread's newest, put the next one (its parent) with a blob, and put a pending write. Each
    checkpoint goes to this process's thread and to one thread every process shares (ids of its
    own). Puts ``(acknowledged, errors)`` on ``results``: the ids whose commit returned, and every
    failure met (none is retried)."""
    acknowledged: list[str] = []
    errors: list[str] = []
    with EmbeddedStore(path, dimension=DIMENSION) as store:
        for i in range(count):
            checkpoint_id = f"{i:04d}-{prefix}"
            try:
                with store.unit_of_work() as uow:
                    checkpoints = store.checkpoints(uow)
                    for thread_id in (prefix, "shared"):
                        latest = checkpoints.get(thread_id, "")
                        stored = StoredCheckpoint(
                            thread_id=thread_id, checkpoint_ns="", checkpoint_id=checkpoint_id,
                            parent_checkpoint_id=None if latest is None else latest.checkpoint_id,
                            checkpoint=TypedBytes("msgpack", checkpoint_id.encode()),
                            metadata={"writer": prefix, "step": i}, channel_versions={"c": checkpoint_id},
                            run_id=prefix, created_at=NOW,
                        )
                        checkpoints.put(stored, [ChannelBlob("c", checkpoint_id, TypedBytes("json", b"%d" % i))])
                        checkpoints.put_writes(
                            thread_id, "", checkpoint_id,
                            [CheckpointWrite(prefix, "", 0, "c", TypedBytes("json", b"w"))],
                        )
                    uow.commit()
                acknowledged.append(checkpoint_id)
            except Exception as exc:  # noqa: BLE001 - every failure is reported
                errors.append(f"{type(exc).__name__}: {exc}")
    results.put((acknowledged, errors))
