"""Contract: MemoryStore.reading() — a read-only unit of work: committed data, one snapshot, no writes."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from palimpsest.domain.errors import ReadOnlyError, StorageError
from palimpsest.domain.model import ExtractionJob, ThreadSummary
from palimpsest.domain.ports import READ_METHODS, MemoryStore, UnitOfWork

from .builders import E1, NOW, at, committing, ids, link, message, query, record, seed, thread


def job(job_id: str) -> ExtractionJob:
    return ExtractionJob(id=job_id, thread_id="t1", first_seq=1, last_seq=2, created_at=NOW)


def summary(revision: int) -> ThreadSummary:
    return ThreadSummary(
        id=f"s{revision}", thread_id="t1", revision=revision, text=f"summary {revision}", created_at=NOW
    )


def _seed_everything(store: MemoryStore) -> None:
    """A thread with two messages, two linked records, a summary, a setting and a failed job."""
    seed(
        store,
        threads=[thread("t1", user_id="u1")],
        messages=[(message("m1", "t1", 1), E1), message("m2", "t1", 2)],
        records=[(record("a", user_id="u1"), E1), record("b", user_id="u1")],
        links=[link("l1", "a", "b")],
    )
    with committing(store) as uow:
        uow.summaries.add(summary(1))
        uow.settings.set("policy", {"days": 3})
        uow.jobs.add(job("j1"))
        uow.jobs.add(job("j2"))
        uow.jobs.fail("j2", reason="the model was down", at=NOW)


def test_a_read_only_unit_of_work_reads_everything_committed(store: MemoryStore) -> None:
    _seed_everything(store)
    with store.reading() as uow:
        assert uow.threads.get("t1") == thread("t1", user_id="u1")
        assert [t.id for t in uow.threads.list()] == ["t1"]
        assert uow.messages.get("m1", now=NOW) == message("m1", "t1", 1)
        assert uow.messages.last_seq("t1") == 2
        assert [m.id for m in uow.messages.list_for_thread("t1", now=NOW)] == ["m1", "m2"]
        assert uow.records.get("a") == record("a", user_id="u1")
        assert sorted(uow.records.get_many(["a", "b", "zz"])) == ["a", "b"]
        assert [r.id for r in uow.records.list(now=NOW)] == ["a", "b"]
        assert uow.records.expired_ids(at(60)) == []
        assert uow.links.get("l1") == link("l1", "a", "b")
        assert uow.links.find("a", "b", "supports") == link("l1", "a", "b")
        assert [l.id for l in uow.links.between("b", "a")] == ["l1"]
        assert [l.id for l in uow.links.touching("b")] == ["l1"]
        assert [l.id for l in uow.links.list()] == ["l1"]
        latest = uow.summaries.latest("t1")
        assert latest is not None and latest.text == "summary 1"
        assert [s.revision for s in uow.summaries.list_for_thread("t1")] == [1]
        assert uow.settings.get("policy") == {"days": 3}
        assert [j.id for j in uow.jobs.pending(NOW)] == ["j1"]
        assert [j.id for j in uow.jobs.list()] == ["j1"]
        assert [j.id for j in uow.jobs.failed()] == ["j2"]
        assert sorted(ids(store.search(query(vector=E1)))) == ["a", "m1"]  # search works inside it


WRITES: list[tuple[str, Callable[[UnitOfWork], object]]] = [
    ("threads.add", lambda uow: uow.threads.add(thread("t2"))),
    ("threads.update", lambda uow: uow.threads.update(thread("t1", metadata={"k": 1}))),
    ("threads.delete", lambda uow: uow.threads.delete("t1")),
    ("messages.add", lambda uow: uow.messages.add(message("m3", "t1", 3))),
    ("messages.add_many", lambda uow: uow.messages.add_many([message("m3", "t1", 3)])),
    ("messages.update", lambda uow: uow.messages.update(message("m1", "t1", 1, "changed"))),
    ("messages.delete", lambda uow: uow.messages.delete("m1")),
    ("messages.purge_expired", lambda uow: uow.messages.purge_expired(at(60))),
    ("records.add", lambda uow: uow.records.add(record("c"), embedding=E1)),
    ("records.update", lambda uow: uow.records.update(record("a", "changed", user_id="u1"))),
    ("records.delete", lambda uow: uow.records.delete("a")),
    ("links.add", lambda uow: uow.links.add(link("l2", "b", "a", "refines"))),
    ("links.update", lambda uow: uow.links.update(link("l1", "a", "b", "refines"))),
    ("links.delete", lambda uow: uow.links.delete("l1")),
    ("summaries.add", lambda uow: uow.summaries.add(summary(2))),
    ("summaries.invalidate_covering", lambda uow: uow.summaries.invalidate_covering("t1", 0)),
    ("summaries.prune", lambda uow: uow.summaries.prune("t1", keep=0)),
    ("settings.set", lambda uow: uow.settings.set("policy", None)),
    ("jobs.add", lambda uow: uow.jobs.add(job("j3"))),
    ("jobs.claim", lambda uow: uow.jobs.claim("j1", owner="w", until=at(10), now=NOW)),
    ("jobs.fail", lambda uow: uow.jobs.fail("j1", reason="no", at=NOW)),
    ("jobs.postpone", lambda uow: uow.jobs.postpone("j1", owner="w", until=at(10), reason="no")),
    ("jobs.retry", lambda uow: uow.jobs.retry("j2")),
    ("jobs.renew", lambda uow: uow.jobs.renew("j1", owner="w", until=at(10))),
    ("jobs.release", lambda uow: uow.jobs.release("j1", owner="w")),
    ("jobs.delete", lambda uow: uow.jobs.delete("j1")),
]


def test_every_repository_method_is_either_a_listed_read_or_a_tested_write() -> None:
    from palimpsest.domain import ports

    protocols = {
        "threads": ports.ThreadRepository,
        "messages": ports.MessageRepository,
        "records": ports.RecordRepository,
        "links": ports.LinkRepository,
        "summaries": ports.SummaryRepository,
        "settings": ports.SettingsRepository,
        "jobs": ports.JobRepository,
    }
    written = {name for name, _ in WRITES}
    for attribute, protocol in protocols.items():
        methods = {m for m in vars(protocol) if not m.startswith("_") and callable(getattr(protocol, m))}
        assert READ_METHODS[attribute] <= methods, attribute
        assert {f"{attribute}.{m}" for m in methods - READ_METHODS[attribute]} <= written, attribute


@pytest.mark.parametrize("write", [w for _, w in WRITES], ids=[name for name, _ in WRITES])
def test_a_read_only_unit_of_work_refuses_every_write_and_changes_nothing(
    store: MemoryStore, write: Callable[[UnitOfWork], object]
) -> None:
    _seed_everything(store)
    with store.reading() as uow:
        with pytest.raises(ReadOnlyError):
            write(uow)
        uow.commit()  # harmless, and commits nothing
    with store.reading() as uow:
        assert [t.id for t in uow.threads.list()] == ["t1"]
        assert [(m.id, m.content) for m in uow.messages.list_for_thread("t1", now=NOW)] == [
            ("m1", "hello there"),
            ("m2", "hello there"),
        ]
        assert [(r.id, r.content) for r in uow.records.list(now=NOW)] == [("a", "memory a"), ("b", "memory b")]
        assert uow.links.list() == [link("l1", "a", "b")]
        assert [(s.revision, s.is_valid) for s in uow.summaries.list_for_thread("t1")] == [(1, True)]
        assert uow.settings.get("policy") == {"days": 3}
        assert [(j.id, j.attempts) for j in uow.jobs.pending(NOW)] == [("j1", 0)]
        assert [j.id for j in uow.jobs.failed()] == ["j2"]


def test_commit_or_rollback_finishes_a_read_only_unit_of_work(store: MemoryStore) -> None:
    seed(store, threads=[thread("t1")])
    for finish in ("commit", "rollback"):
        with store.reading() as uow:
            assert uow.threads.get("t1") is not None
            getattr(uow, finish)()
            with pytest.raises(StorageError):
                uow.threads.get("t1")
    with store.reading() as uow:
        assert uow.threads.get("t1") is not None


def test_a_read_only_unit_of_work_reads_one_snapshot_and_never_sees_uncommitted_writes(
    store: MemoryStore,
) -> None:
    seed(store, records=[record("a")])
    with store.reading() as uow:
        assert [r.id for r in uow.records.list(now=NOW)] == ["a"]
        with store.unit_of_work() as writer:
            writer.records.add(record("b"))
            assert uow.records.get("b") is None  # not committed yet
            writer.commit()
        assert [r.id for r in uow.records.list(now=NOW)] == ["a"]  # committed after its snapshot
    with store.reading() as uow:
        assert [r.id for r in uow.records.list(now=NOW)] == ["a", "b"]


def test_a_read_only_unit_of_work_does_not_wait_for_a_writer_of_another_thread(store: MemoryStore) -> None:
    seed(store, records=[record("a")])
    holding, release = threading.Event(), threading.Event()
    released: list[bool] = []

    def writer() -> None:
        with store.unit_of_work() as uow:
            uow.records.add(record("b"))
            holding.set()
            release.wait(timeout=60)
            released.append(True)
            uow.commit()

    worker = threading.Thread(target=writer)
    worker.start()
    try:
        assert holding.wait(timeout=60)
        with store.reading() as uow:
            seen = [r.id for r in uow.records.list(now=NOW)]
        assert released == []  # the read returned while the writer still held its unit of work
        assert seen == ["a"]
    finally:
        release.set()
        worker.join(timeout=60)
    with store.reading() as uow:
        assert [r.id for r in uow.records.list(now=NOW)] == ["a", "b"]
