"""Oracle unit of work, repositories and store on the recording fake connection: transactions,
connections, error translation, vectors and the dimension, and what each repository sends."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import oracledb
import pytest
from oracledb.errors import _Error
from palimpsest.adapters.oracle import SchemaPolicy
from palimpsest.adapters.oracle import store as store_module
from palimpsest.adapters.oracle.codec import MEMORY_COLUMNS
from palimpsest.adapters.oracle.connection import ConnectionSource
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.oracle.schema import SchemaManager, StoreConfig
from palimpsest.adapters.oracle.store import OracleStore
from palimpsest.adapters.oracle.unit_of_work import OracleUnitOfWork, StoreContext
from palimpsest.domain.errors import (
    ConfigurationError,
    ConflictError,
    DuplicateIdError,
    InvalidMetadataFilterError,
    LinkExistsError,
    MessageNotFoundError,
    ReadOnlyError,
    RecordNotFoundError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
    ThreadNotFoundError,
    ValidationError,
    VectorDimensionError,
)
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordType,
    Thread,
    ThreadSummary,
)
from palimpsest.domain.search import ScopeFilter, SearchQuery

from .fakes import Call, FakeConnection, FakePool

NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
E1 = (1.0, 0.0, 0.0, 0.0)


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


def driver_error(message: str, code: int = 0) -> oracledb.Error:
    """An exception exactly as python-oracledb raises it."""
    error = _Error(message, code=code)
    return error.exc_type(error)


def unique(constraint: str) -> oracledb.Error:
    return driver_error(f"ORA-00001: unique constraint (PAL.{constraint}) violated", 1)


def thread(thread_id: str = "t1", *, minutes: float = 0, metadata: dict | None = None) -> Thread:
    return Thread(id=thread_id, created_at=at(minutes), updated_at=at(minutes), metadata=metadata)


def message(message_id: str, seq: int = 1, thread_id: str = "t1") -> Message:
    return Message(
        id=message_id, thread_id=thread_id, role="user", content=f"text {message_id}", seq=seq, created_at=NOW
    )


def record(record_id: str, *, thread_id: str | None = None, user_id: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        record_type=RecordType.FACT,
        content=f"memory {record_id}",
        created_at=NOW,
        updated_at=NOW,
        thread_id=thread_id,
        user_id=user_id,
    )


def link(link_id: str, source: str = "a", target: str = "b") -> RecordLink:
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=RecordType.FACT,
        target_id=target,
        target_type=RecordType.FACT,
        relation_type="supports",
        opposite_relation_type="is_supported_by",
        created_at=NOW,
    )


def thread_row(t: Thread) -> tuple[Any, ...]:
    return (
        t.id,
        t.user_id,
        t.agent_id,
        json.dumps(t.metadata) if t.metadata is not None else None,
        "{}",
        "{}",
        t.created_at,
        t.updated_at,
    )


def record_row(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.id,
        r.record_type.value,
        r.content,
        r.user_id,
        r.agent_id,
        r.thread_id,
        None,
        r.status.value,
        None,
        None,
        None,
        None,
        r.created_at,
        r.updated_at,
    )


Answer = Any


@dataclass
class Database:
    """A scripted responder: the last rule whose fragment is in the SQL answers; otherwise the
    registry row answers its SELECT, DML counts one row and queries return nothing."""

    dimension: int | None = 4
    rules: list[tuple[str, Answer]] = field(default_factory=list)

    def on(self, fragment: str, answer: Answer) -> Database:
        self.rules.append((fragment, answer))
        return self

    def __call__(self, sql: str, binds: dict[str, Any]) -> Any:
        for fragment, answer in reversed(self.rules):
            if fragment in sql:
                if callable(answer) and not isinstance(answer, BaseException):
                    return answer(sql, binds)
                return answer
        if "PALIMPSEST_STORES" in sql and sql.lstrip().startswith("SELECT"):
            config = {"embedding_dimension": self.dimension, "vector_index": "hnsw"}
            return [(json.dumps(config), 1, "CREATED")]
        if sql.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE", "MERGE"):
            return 1
        return None


class DroppingPool(FakePool):
    """A fake pool that also records ``drop`` (python-oracledb's way to discard a dead session)."""

    def drop(self, connection: FakeConnection) -> None:
        self.log.append(Call("drop", connection.number))


@dataclass
class Harness:
    pool: FakePool
    db: Database
    context: StoreContext
    observed: list[int | None]
    committed: list[int | None]

    def uow(self) -> OracleUnitOfWork:
        return OracleUnitOfWork(self.context)

    def kinds(self) -> list[str]:
        return [c.kind for c in self.pool.log]

    def sql(self) -> list[str]:
        return [c.sql for c in self.pool.log if c.sql is not None]

    def calls(self, fragment: str) -> list[Call]:
        return [c for c in self.pool.log if c.sql is not None and fragment in c.sql]


def harness(
    db: Database | None = None, *, names: StoreNames | None = None, pool: FakePool | None = None
) -> Harness:
    db = db or Database()
    pool = pool or FakePool(db)
    pool.responder = db
    names = names or StoreNames("acme")
    observed: list[int | None] = []
    committed: list[int | None] = []
    context = StoreContext(
        names=names,
        source=ConnectionSource(pool),
        schema=SchemaManager(names),
        observed=observed.append,
        committed=committed.append,
    )
    return Harness(pool, db, context, observed, committed)


# --- transactions and connections ------------------------------------------------------------------


def test_a_committed_unit_of_work_acquires_once_commits_and_releases() -> None:
    h = harness()
    with h.uow() as uow:
        uow.threads.add(thread())
        uow.commit()
    assert h.kinds() == ["acquire", "execute", "commit", "release"]
    assert h.sql()[0].startswith('INSERT INTO "ACME_THREAD"')
    assert h.committed == [None]


def test_a_read_only_unit_of_work_opens_with_set_transaction_read_only_and_commits_nothing() -> None:
    h = harness()
    with OracleUnitOfWork(h.context, read_only=True) as uow:
        assert uow.threads.get("t1") is None
        uow.commit()  # ends the read-only transaction
    assert h.kinds() == ["acquire", "execute", "execute", "rollback", "release"]
    assert h.sql()[0] == "SET TRANSACTION READ ONLY"  # the transaction's first statement
    assert h.sql()[1].startswith("SELECT") and '"ACME_THREAD"' in h.sql()[1]
    assert h.pool.connections[0].session_statements  # the session setup came first (no transaction)
    assert h.committed == []


def test_a_read_only_unit_of_work_refuses_writes_without_sending_them() -> None:
    h = harness()
    with OracleUnitOfWork(h.context, read_only=True) as uow:
        with pytest.raises(ReadOnlyError):
            uow.threads.add(thread())
        with pytest.raises(ReadOnlyError):
            uow.records.update(record("r1"), embedding=E1)
    assert h.sql() == ["SET TRANSACTION READ ONLY"]
    assert h.kinds() == ["acquire", "execute", "rollback", "release"]


def test_a_read_only_transaction_the_database_refuses_is_translated_and_its_connection_released() -> None:
    db = Database().on(
        "SET TRANSACTION",
        driver_error("ORA-01453: SET TRANSACTION must be first statement of transaction", 1453),
    )
    h = harness(db)
    with pytest.raises(StorageError) as caught:
        OracleUnitOfWork(h.context, read_only=True).__enter__()
    assert isinstance(caught.value.__cause__, oracledb.DatabaseError)
    assert h.kinds() == ["acquire", "execute", "rollback", "release"]


def test_leaving_without_commit_rolls_back_and_releases() -> None:
    h = harness()
    with h.uow() as uow:
        uow.threads.add(thread())
    assert h.kinds() == ["acquire", "execute", "rollback", "release"]
    assert h.committed == []


def test_an_exception_rolls_back_releases_and_propagates() -> None:
    h = harness()

    class Boom(Exception):
        pass

    with pytest.raises(Boom), h.uow() as uow:
        uow.threads.add(thread())
        raise Boom
    assert h.kinds() == ["acquire", "execute", "rollback", "release"]


def test_a_finished_unit_of_work_refuses_its_repositories_and_sends_nothing() -> None:
    h = harness()
    with h.uow() as uow:
        uow.rollback()
        with pytest.raises(StorageError):
            uow.records.get("r1")
        uow.rollback()  # harmless
    with pytest.raises(StorageError):
        uow.threads.add(thread())
    with pytest.raises(StorageError):
        uow.__enter__()  # a unit of work is entered once
    assert h.kinds() == ["acquire", "rollback", "release"]


def test_each_unit_of_work_has_its_own_pooled_connection() -> None:
    h = harness()
    with h.uow() as first, h.uow() as second:
        assert first.connection() is not second.connection()
    assert h.kinds().count("acquire") == 2 and h.kinds().count("release") == 2


def test_a_failed_commit_is_translated_rolled_back_and_released() -> None:
    h = harness()

    class FailingCommit(FakeConnection):
        def commit(self) -> None:
            raise driver_error("ORA-02091: transaction rolled back", 2091)

    h.pool.acquire = lambda: FailingCommit(h.db, h.pool.log)  # type: ignore[method-assign]
    with h.uow() as uow:
        uow.threads.add(thread())
        with pytest.raises(StorageError) as caught:
            uow.commit()
    assert isinstance(caught.value.__cause__, oracledb.DatabaseError)
    assert h.kinds()[-2:] == ["rollback", "release"]
    assert h.committed == []


def test_a_lost_session_is_dropped_from_the_pool_not_rolled_back() -> None:
    db = Database().on(
        'INSERT INTO "ACME_THREAD"', driver_error("ORA-03113: end-of-file on communication channel", 3113)
    )
    h = harness(db, pool=DroppingPool())
    with pytest.raises(StorageError), h.uow() as uow:
        uow.threads.add(thread())
    assert h.kinds() == ["acquire", "execute", "drop"]


def test_lent_connections_fetch_clobs_as_text_and_get_their_handler_back() -> None:
    h = harness()
    with h.uow() as uow:
        connection = uow.connection()
        assert callable(connection.outputtypehandler)
    assert connection.outputtypehandler is None


def test_a_closed_source_refuses_new_and_running_units_of_work() -> None:
    h = harness()
    with h.uow() as uow:
        h.context.source.close()
        with pytest.raises(StoreClosedError):
            uow.threads.get("t1")
    with pytest.raises(StoreClosedError):
        h.uow().__enter__()


def test_a_single_connection_serialises_units_of_work() -> None:
    db = Database()
    connection = FakeConnection(db)
    names = StoreNames("acme")
    context = StoreContext(
        names=names, source=ConnectionSource(connection=connection), schema=SchemaManager(names)
    )
    events: list[str] = []

    def second() -> None:
        with OracleUnitOfWork(context) as uow:
            events.append("second entered")
            uow.threads.get("t2")

    with OracleUnitOfWork(context) as uow:
        worker = threading.Thread(target=second)
        worker.start()
        time.sleep(0.05)
        events.append("first still working")
        with pytest.raises(StorageError):  # the same thread would wait for itself
            OracleUnitOfWork(context).__enter__()
        uow.threads.get("t1")
    worker.join(timeout=5)
    assert events == ["first still working", "second entered"]
    assert [c.kind for c in connection.log] == ["execute", "rollback", "execute", "rollback"]
    assert connection.closed is False


# --- error translation -----------------------------------------------------------------------------


def test_a_taken_thread_id_is_a_duplicate_id_error_chaining_the_driver_error() -> None:
    db = Database().on('INSERT INTO "ACME_THREAD"', unique("ACME_THREAD_PK"))
    h = harness(db)
    with h.uow() as uow, pytest.raises(DuplicateIdError) as caught:
        uow.threads.add(thread())
    assert "'t1'" in str(caught.value)
    assert isinstance(caught.value.__cause__, oracledb.IntegrityError)


@pytest.mark.parametrize(
    ("constraint", "expected", "text"),
    [
        ("ACME_MESSAGE_PK", DuplicateIdError, "A message with id 'm1'"),
        ("ACME_MESSAGE_THREAD_ORDER_UQ", DuplicateIdError, "seq 1"),
    ],
)
def test_a_message_insert_names_the_key_it_violated(constraint: str, expected: type, text: str) -> None:
    db = Database().on('INSERT INTO "ACME_MESSAGE"', unique(constraint))
    h = harness(db)
    with h.uow() as uow, pytest.raises(expected, match=text):
        uow.messages.add(message("m1"))
    sql = h.sql()
    assert sql[0] == "SAVEPOINT PALIMPSEST_W1" and sql[-1] == "ROLLBACK TO SAVEPOINT PALIMPSEST_W1"
    assert not h.calls("RECORD_CHUNKS")


def test_an_unknown_thread_is_reported_by_its_foreign_key() -> None:
    missing = driver_error(
        "ORA-02291: integrity constraint (PAL.ACME_MEMORY_THREAD_FK) violated - parent key not found", 2291
    )
    db = Database().on('INSERT INTO "ACME_MEMORY"', missing)
    h = harness(db)
    with h.uow() as uow, pytest.raises(ThreadNotFoundError, match="'ghost'"):
        uow.records.add(record("r1", thread_id="ghost"))


def test_a_repeated_link_found_by_the_check_raises_before_writing() -> None:
    db = Database().on("AS link_taken", [(1, 1, 0, 1)])
    h = harness(db)
    with h.uow() as uow, pytest.raises(LinkExistsError):
        uow.links.add(link("l2"))
    assert not h.calls("INSERT")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ((0, 1, 0, 0), RecordNotFoundError),
        ((1, 0, 0, 0), RecordNotFoundError),
        ((1, 1, 1, 0), DuplicateIdError),
    ],
)
def test_a_link_check_names_a_missing_endpoint_or_a_taken_id(row: tuple[int, ...], expected: type) -> None:
    h = harness(Database().on("AS link_taken", [row]))
    with h.uow() as uow, pytest.raises(expected):
        uow.links.add(link("l1"))


def test_a_link_racing_past_the_check_is_caught_by_its_unique_key() -> None:
    db = (
        Database()
        .on("AS link_taken", [(1, 1, 0, 0)])
        .on('INSERT INTO "ACME_MEMORY_LINK"', unique("ACME_MEMORY_LINK_UQ"))
    )
    h = harness(db)
    with h.uow() as uow, pytest.raises(LinkExistsError):
        uow.links.add(link("l1"))


def test_a_self_link_is_refused_without_a_round_trip() -> None:
    h = harness()
    with h.uow() as uow, pytest.raises(SelfLinkError):
        uow.links.add(link("l1", "a", "a"))
    assert h.sql() == []


def test_a_summary_revision_taken_concurrently_is_a_conflict() -> None:
    summary = ThreadSummary(id="s2", thread_id="t1", revision=2, text="two", created_at=NOW)
    db = (
        Database()
        .on("AS revision_taken", [(1, 0, 0)])
        .on('INSERT INTO "ACME_THREAD_SUMMARY"', unique("ACME_THREAD_SUMMARY_REVISION_UQ"))
    )
    h = harness(db)
    with h.uow() as uow, pytest.raises(ConflictError):
        uow.summaries.add(summary)
    h2 = harness(Database().on("AS revision_taken", [(1, 0, 1)]))
    with h2.uow() as uow, pytest.raises(ConflictError):
        uow.summaries.add(summary)
    assert not h2.calls("INSERT")


def test_contention_is_a_store_busy_error() -> None:
    db = Database().on('UPDATE "ACME_EXTRACTION_JOB"', driver_error("ORA-00060: deadlock detected", 60))
    h = harness(db)
    with h.uow() as uow, pytest.raises(StoreBusyError):
        uow.jobs.claim("j1", owner="w", until=at(10), now=NOW)


# --- batches -------------------------------------------------------------------------------------


def test_a_failed_batch_is_rolled_back_to_its_savepoint_and_sends_no_commit() -> None:
    db = Database().on('INSERT INTO "ACME_MESSAGE"', unique("ACME_MESSAGE_PK"))
    h = harness(db)
    with h.uow() as uow:
        with pytest.raises(DuplicateIdError):
            uow.messages.add_many([message("m1", 1), message("m2", 2)], [E1, None])
        uow.threads.get("t1")  # still usable
    kinds = [c.kind for c in h.pool.log]
    assert "commit" not in kinds
    statements = [c.sql.split("\n")[0] for c in h.pool.log if c.sql]
    assert statements[0].startswith("SELECT store_config")  # the vector is checked first
    assert statements[1] == "SAVEPOINT PALIMPSEST_W1"
    assert statements[-2] == "ROLLBACK TO SAVEPOINT PALIMPSEST_W1"
    assert kinds[-2:] == ["rollback", "release"]


def test_a_batch_is_one_executemany_per_statement_with_vector_and_no_vector_chunks_apart() -> None:
    h = harness()
    with h.uow() as uow:
        uow.messages.add_many([message("m1", 1), message("m2", 2), message("m3", 3)], [E1, None, E1])
        uow.commit()
    many = [c for c in h.pool.log if c.kind == "executemany"]
    assert [len(c.binds) for c in many] == [3, 2, 1]
    assert "ACME_MESSAGE" in many[0].sql
    assert ":embedding" in many[1].sql and [b["source_id"] for b in many[1].binds] == ["m1", "m3"]
    assert "NULL)" in many[2].sql and [b["source_id"] for b in many[2].binds] == ["m2"]


def test_times_are_bound_as_timestamps_keeping_their_microseconds() -> None:
    # python-oracledb binds a datetime as DATE (whole seconds) unless declared a TIMESTAMP; the
    # fake sends undeclared datetimes the same way, so a lost fraction shows here.
    fine = NOW + timedelta(microseconds=123_456)
    h = harness()
    with h.uow() as uow:
        uow.records.add(dataclasses.replace(record("r1"), created_at=fine, expires_at=fine))
        uow.records.get("r1", now=fine)
        uow.messages.add_many([dataclasses.replace(message("m1", 1), created_at=fine), message("m2", 2)])
        uow.commit()
    timed = [c for c in h.pool.log if c.kind in ("execute", "executemany") and c.sizes]
    assert timed, "no statement declared its time binds"
    for call in (c for c in h.pool.log if c.kind in ("execute", "executemany")):
        for binds in call.binds if call.kind == "executemany" else [call.binds]:
            for name, value in binds.items():
                if isinstance(value, datetime):
                    assert call.sizes.get(name) is oracledb.DB_TYPE_TIMESTAMP, (call.sql, name)
    (insert,) = h.calls('INSERT INTO "ACME_MEMORY"')
    assert insert.binds["created_at"].microsecond == 123_456
    assert insert.binds["expires_at"].microsecond == 123_456
    (get,) = h.calls('FROM "ACME_MEMORY"')
    assert get.binds["now"].microsecond == 123_456
    batch = [c for c in h.calls('INSERT INTO "ACME_MESSAGE"') if c.kind == "executemany"]
    assert [b["created_at"].microsecond for b in batch[0].binds] == [123_456, 0]


def test_a_batch_checks_itself_before_sending_anything() -> None:
    h = harness()
    with h.uow() as uow:
        with pytest.raises(DuplicateIdError):
            uow.messages.add_many([message("m1", 1), message("m1", 2)])
        with pytest.raises(DuplicateIdError):
            uow.messages.add_many([message("m1", 1), message("m2", 1)])
        with pytest.raises(ValidationError):
            uow.messages.add_many([message("m1", 1)], [E1, E1])
        with pytest.raises(VectorDimensionError):
            uow.messages.add_many([message("m1", 1), message("m2", 2)], [E1, (1.0, 0.0)])
    assert h.calls("ACME_MESSAGE") == []


def test_a_batch_with_an_unknown_thread_names_it() -> None:
    missing = driver_error("ORA-02291: integrity constraint (PAL.ACME_MESSAGE_THREAD_FK) violated", 2291)
    db = Database().on('INSERT INTO "ACME_MESSAGE"', missing).on("JSON_TABLE", [("t1",)])
    h = harness(db)
    with h.uow() as uow, pytest.raises(ThreadNotFoundError, match="'nope'"):
        uow.messages.add_many([message("m1", 1), message("m2", 1, thread_id="nope")])


# --- vectors and the dimension -----------------------------------------------------------------------


def test_the_first_vector_fixes_the_dimension_inside_the_transaction_and_the_store_learns_it_after_commit() -> (
    None
):
    h = harness(Database(dimension=None))
    with h.uow() as uow:
        uow.records.add(record("r1"), embedding=(3.0, 4.0, 0.0))
        assert h.committed == []
        uow.commit()
    sql = [s.split("\n")[0] for s in h.sql()]
    assert sql[0].startswith("SELECT store_config")  # the registry, read once
    assert h.sql()[2].endswith("FOR UPDATE")  # then locked, inside the savepoint
    assert sql[3].startswith('UPDATE "PALIMPSEST_STORES"')
    set_dimension = h.calls('UPDATE "PALIMPSEST_STORES"')[0]
    assert set_dimension.binds["dimension"] == 3
    chunk = h.calls('INSERT INTO "ACME_RECORD_CHUNKS"')[0]
    assert list(chunk.binds["embedding"]) == pytest.approx([0.6, 0.8, 0.0])
    assert h.observed == [None] and h.committed == [3]


def test_a_vector_of_the_wrong_dimension_writes_nothing() -> None:
    h = harness(Database(dimension=4))
    with h.uow() as uow:
        with pytest.raises(VectorDimensionError):
            uow.records.add(record("r1"), embedding=(1.0, 0.0))
        with pytest.raises(VectorDimensionError):
            uow.messages.update(message("m1"), embedding=(float("nan"), 0.0, 0.0, 0.0))
    assert [s for s in h.sql() if not s.startswith("SELECT store_config")] == []
    assert h.observed == [4]


def test_a_dimension_fixed_by_another_writer_meanwhile_is_respected() -> None:
    db = Database(dimension=None)
    config = json.dumps({"embedding_dimension": 4, "vector_index": "hnsw"})
    db.on("FOR UPDATE", [(config, 1, "CREATED")])
    h = harness(db)
    with h.uow() as uow:
        with pytest.raises(VectorDimensionError):
            uow.records.add(record("r1"), embedding=(1.0, 0.0))
        assert uow.dimension() == 4
        uow.records.add(record("r2"), embedding=E1)
        uow.commit()
    assert not h.calls('UPDATE "PALIMPSEST_STORES"')
    assert h.committed == [None]


def test_a_failed_write_undoes_the_dimension_it_fixed() -> None:
    db = Database(dimension=None).on('INSERT INTO "ACME_MEMORY"', unique("ACME_MEMORY_PK"))
    h = harness(db)
    with h.uow() as uow:
        with pytest.raises(DuplicateIdError):
            uow.records.add(record("r1"), embedding=(1.0, 0.0))
        assert uow.dimension() is None
        uow.commit()
    assert h.committed == [None]
    assert h.sql()[-1] == "ROLLBACK TO SAVEPOINT PALIMPSEST_W1"


def test_an_unregistered_store_is_a_storage_error() -> None:
    h = harness(Database().on("PALIMPSEST_STORES", []))
    with h.uow() as uow, pytest.raises(StorageError, match="not registered"):
        uow.records.add(record("r1"), embedding=E1)


# --- repositories ------------------------------------------------------------------------------------


def test_updating_a_message_keeps_its_chunk_in_step_or_writes_a_missing_one() -> None:
    stored = ("t1", 1, "text m1", None)
    db = Database().on("SELECT m.thread_id, m.order_seq", [stored]).on('UPDATE "ACME_RECORD_CHUNKS"', 0)
    h = harness(db)
    with h.uow() as uow:
        uow.messages.update(message("m1"), embedding=None)
        uow.commit()
    chunk_update = h.calls('UPDATE "ACME_RECORD_CHUNKS"')[0]
    assert "embedding = NULL" in chunk_update.sql and chunk_update.binds["chunk_text"] == "text m1"
    assert h.calls('INSERT INTO "ACME_RECORD_CHUNKS"')  # the missing chunk was written


def test_updating_an_unknown_message_or_moving_it_is_refused() -> None:
    h = harness()
    with h.uow() as uow, pytest.raises(MessageNotFoundError):
        uow.messages.update(message("ghost"))
    h2 = harness(Database().on("SELECT m.thread_id, m.order_seq", [("t1", 2)]))
    with h2.uow() as uow, pytest.raises(ValidationError):
        uow.messages.update(message("m1", seq=1))
    assert not h2.calls("UPDATE")


def test_updating_a_record_refuses_a_scope_change_and_keeps_the_chunk_status_in_step() -> None:
    db = Database().on("SELECT r.memory_type, r.user_id", [("fact", "ann", None, None)])
    h = harness(db)
    with h.uow() as uow:
        with pytest.raises(ValidationError):
            uow.records.update(record("r1", user_id="bob"))
        assert not h.calls("UPDATE")
        uow.records.update(record("r1", user_id="ann"), embedding=E1)
    chunk = h.calls('UPDATE "ACME_RECORD_CHUNKS"')[0]
    assert chunk.binds["status"] == "valid" and "embedding = :embedding" in chunk.sql


def test_deleting_a_thread_deletes_its_chunks_first_in_one_write() -> None:
    h = harness()
    with h.uow() as uow:
        assert uow.threads.delete("t1") is True
    heads = [s.split("\n")[0] for s in h.sql()]
    assert heads == [
        "SAVEPOINT PALIMPSEST_W1",
        'DELETE FROM "ACME_RECORD_CHUNKS"',
        'DELETE FROM "ACME_THREAD"',
    ]
    assert h.calls('DELETE FROM "ACME_RECORD_CHUNKS"')[0].binds == {"thread_id": "t1"}


def test_deleting_an_absent_record_touches_no_chunk() -> None:
    h = harness(Database().on('DELETE FROM "ACME_MEMORY"', 0))
    with h.uow() as uow:
        assert uow.records.delete("r1") is False
    assert not h.calls("RECORD_CHUNKS")


def test_purging_deletes_the_locked_expired_messages_and_their_chunks_by_id() -> None:
    db = Database().on("FOR UPDATE", [("m9", "t2", 4), ("m1", "t1", 7)])
    h = harness(db)
    with h.uow() as uow:
        assert uow.messages.purge_expired(NOW) == [("t1", 7), ("t2", 4)]
    many = [c for c in h.pool.log if c.kind == "executemany"]
    assert "ACME_RECORD_CHUNKS" in many[0].sql and "ACME_MESSAGE" in many[1].sql
    assert [b["record_id"] for b in many[1].binds] == ["m9", "m1"]


def test_claiming_a_job_is_a_conditional_update_and_none_when_someone_holds_it() -> None:
    job_row = ("j1", "t1", 1, 3, NOW, 1, "w1", at(10), None, None)
    h = harness(Database().on('UPDATE "ACME_EXTRACTION_JOB"', 0))
    with h.uow() as uow:
        assert uow.jobs.claim("j1", owner="w1", until=at(10), now=NOW) is None
    assert not h.calls("SELECT")
    h2 = harness(Database().on('FROM "ACME_EXTRACTION_JOB" j\nWHERE j.job_id', [job_row]))
    with h2.uow() as uow:
        claimed = uow.jobs.claim("j1", owner="w1", until=at(10), now=NOW)
    assert claimed == ExtractionJob(
        id="j1",
        thread_id="t1",
        first_seq=1,
        last_seq=3,
        created_at=NOW,
        attempts=1,
        claimed_by="w1",
        claimed_until=at(10),
    )


def test_settings_are_json_text_and_none_deletes() -> None:
    db = Database().on("JSON_SERIALIZE", [('{"default_ttl_days":30}',)])
    h = harness(db)
    with h.uow() as uow:
        assert uow.settings.get("retention") == {"default_ttl_days": 30}
        uow.settings.set("model", "hashing-v1")
        uow.settings.set("model", None)
        with pytest.raises(ValidationError):
            uow.settings.set("", 1)
    merge = h.calls("MERGE INTO")[0]
    assert merge.binds == {"setting_key": "model", "setting_value": '"hashing-v1"'}
    assert h.calls('DELETE FROM "ACME_STORE_SETTING"')[0].binds == {"setting_key": "model"}


def test_a_setting_inserted_concurrently_is_merged_again() -> None:
    answers = iter([unique("ACME_STORE_SETTING_PK"), 1])
    h = harness(Database().on("MERGE INTO", lambda sql, binds: next(answers)))
    with h.uow() as uow:
        uow.settings.set("model", "m")
    assert len(h.calls("MERGE INTO")) == 2


def test_lists_with_a_limit_read_the_newest_rows_re_sorted_in_sql() -> None:
    rows = [thread_row(thread("t-old", minutes=1)), thread_row(thread("t-new", minutes=2))]
    h = harness(Database().on('FROM "ACME_THREAD"', rows))
    with h.uow() as uow:
        assert [t.id for t in uow.threads.list(user_id=None, limit=2)] == ["t-old", "t-new"]
    statement = h.calls("ACME_THREAD")[0]
    assert "FETCH FIRST :limit ROWS ONLY" in statement.sql and statement.binds["limit"] == 2
    assert "t.user_id IS NULL" in statement.sql


def test_a_metadata_filter_pages_newest_first_with_a_keyset_until_the_limit_is_met() -> None:
    page_size = 100
    first = [
        thread_row(thread(f"n{i:03d}", minutes=-i, metadata={"topic": "coffee"})) for i in range(page_size)
    ]
    second = [
        thread_row(thread("hit-new", minutes=-200, metadata={"topic": "tea"})),
        thread_row(thread("hit-old", minutes=-201, metadata={"topic": "tea"})),
        thread_row(thread("hit-older", minutes=-202, metadata={"topic": "tea"})),
    ]
    pages = iter([first, second])
    h = harness(Database().on('FROM "ACME_THREAD"', lambda sql, binds: next(pages)))
    with h.uow() as uow:
        found = uow.threads.list(metadata_filter={"topic": "tea"}, limit=2)
        assert [t.id for t in found] == ["hit-old", "hit-new"]
        with pytest.raises(InvalidMetadataFilterError):
            uow.threads.list(metadata_filter={"topic": {"$regex": "t"}})
    calls = h.calls("ACME_THREAD")
    assert len(calls) == 2
    assert "WHERE" not in calls[0].sql  # no metadata predicate in SQL: the domain evaluates it
    assert calls[0].binds == {"page_size": page_size}
    assert calls[1].binds["after_id"] == "n099" and calls[1].binds["after_created_at"] == at(-99).replace(
        tzinfo=None
    )


def test_metadata_filter_none_is_sql_is_null() -> None:
    h = harness(Database().on('FROM "ACME_MEMORY"', [record_row(record("r1"))]))
    with h.uow() as uow:
        assert [r.id for r in uow.records.list(now=NOW, metadata_filter=None, limit=None)] == ["r1"]
        assert uow.records.list(now=NOW, record_types=frozenset()) == []
    statement = h.calls("ACME_MEMORY")[0]
    assert "r.metadata IS NULL" in statement.sql and "FETCH" not in statement.sql


def test_get_many_sends_ids_as_json_batches_and_keeps_the_asked_order() -> None:
    def answer(sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [record_row(record(i)) for i in json.loads(binds["ids"]) if i != "missing"]

    h = harness(Database().on("JSON_TABLE", answer))
    ids = [f"r{i:05d}" + "x" * 100 for i in range(400)]
    with h.uow() as uow:
        found = uow.records.get_many([*ids, "missing", ids[0]])
        assert uow.records.get_many([]) == {}
        with pytest.raises(ValidationError):
            uow.records.get_many("r1")
    assert list(found) == ids
    batches = h.calls("JSON_TABLE")
    # A VARCHAR2 bind in a SQL expression holds 4000 bytes on a database with standard string sizes.
    assert len(batches) > 1 and all(len(c.binds["ids"].encode()) <= 4_000 for c in batches)
    long_ids = ["✓" * 125 + f"{i:03d}" for i in range(40)]  # 3 bytes a character, in UTF-8
    with h.uow() as uow:
        uow.records.get_many(long_ids)
    assert all(len(c.binds["ids"].encode()) <= 4_000 for c in h.calls("JSON_TABLE"))


def test_list_limits_and_last_n_are_validated_and_zero_reads_nothing() -> None:
    h = harness()
    with h.uow() as uow:
        with pytest.raises(ValidationError):
            uow.threads.list(limit=0)
        with pytest.raises(ValidationError):
            uow.links.list(limit=True)  # type: ignore[arg-type]
        assert uow.messages.list_for_thread("t1", now=NOW, last_n=0) == []
        assert uow.records.expired_ids(NOW, limit=0) == []
        with pytest.raises(ValidationError):
            uow.summaries.prune("t1", keep=-1)
    assert h.sql() == []


# --- the store -----------------------------------------------------------------------------------------


class RecordingSchema(SchemaManager):
    """The real statement builders, with the DDL steps recorded instead of run."""

    instances: ClassVar[list[RecordingSchema]] = []
    stored_dimension: int | None = None
    fail_index = False

    def __init__(self, names: StoreNames, **kwargs: Any) -> None:
        super().__init__(names, **kwargs)
        self.calls: list[tuple[str, Any]] = []
        RecordingSchema.instances.append(self)

    def ensure(self, connection: Any, policy: SchemaPolicy, *, dimension: int | None) -> StoreConfig:
        self.calls.append(("ensure", (policy, dimension)))
        return StoreConfig(
            dimension=dimension or self.stored_dimension, vector_index="hnsw", schema_version=1
        )

    def ensure_vector_index(self, connection: Any, dimension: int) -> bool:
        self.calls.append(("ensure_vector_index", dimension))
        if self.fail_index:
            raise driver_error("ORA-51962: the vector memory area is out of space", 51962)
        return True

    def drop_vector_index(self, connection: Any) -> None:
        self.calls.append(("drop_vector_index", None))


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> type[RecordingSchema]:
    RecordingSchema.instances = []
    RecordingSchema.stored_dimension = None
    RecordingSchema.fail_index = False
    monkeypatch.setattr(store_module, "SchemaManager", RecordingSchema)
    return RecordingSchema


def query(vector: tuple[float, ...] | None = E1) -> SearchQuery:
    return SearchQuery(k=5, now=NOW, vector=vector, text=None if vector else "tea", scope=ScopeFilter())


def test_a_store_needs_exactly_one_of_a_pool_or_a_connection(recording: type[RecordingSchema]) -> None:
    with pytest.raises(ConfigurationError):
        OracleStore()
    with pytest.raises(ConfigurationError):
        OracleStore(FakePool(), connection=FakeConnection())
    with pytest.raises(ConfigurationError):
        OracleStore(FakePool(), dimension=0)
    with pytest.raises(ConfigurationError):
        OracleStore(FakePool(), schema_policy="sometimes")


def test_opening_a_store_applies_the_schema_policy_on_one_lent_connection(
    recording: type[RecordingSchema],
) -> None:
    pool = FakePool(Database())
    store = OracleStore(pool, memory_store_id="acme", dimension=4, schema_policy="require_existing")
    (schema,) = recording.instances
    assert schema.calls == [("ensure", (SchemaPolicy.REQUIRE_EXISTING, 4))]
    assert pool.kinds() == ["acquire", "commit", "rollback", "release"]
    assert store.dimension == 4 and store.memory_store_id == "ACME"


def test_opening_with_no_check_lends_no_connection_and_no_commit_builds_an_index(
    recording: type[RecordingSchema],
) -> None:
    pool = FakePool(Database(dimension=None))
    store = OracleStore(pool, memory_store_id="acme", schema_policy="no_check")
    assert pool.kinds() == []  # nothing sent, not even a connection taken
    (schema,) = recording.instances
    assert schema.calls == [("ensure", (SchemaPolicy.NO_CHECK, None))]
    with store.unit_of_work() as uow:
        uow.records.add(record("r1"), embedding=(1.0, 0.0, 0.0))
        uow.commit()
    assert store.dimension == 3  # learnt from the commit that fixed it
    assert [c for c in schema.calls if c[0] != "ensure"] == []  # no vector index DDL
    assert pool.kinds()[-2:] == ["commit", "release"]  # no connection lent for an index after it


def test_a_commit_that_fixes_the_dimension_teaches_the_store_and_builds_the_index(
    recording: type[RecordingSchema],
) -> None:
    pool = FakePool(Database(dimension=None))
    store = OracleStore(pool, memory_store_id="acme")
    assert store.dimension is None
    with store.unit_of_work() as uow:
        uow.records.add(record("r1"), embedding=(1.0, 0.0, 0.0))
        uow.commit()
    assert store.dimension == 3
    assert recording.instances[0].calls[-1] == ("ensure_vector_index", 3)
    assert pool.kinds()[-3:] == ["acquire", "rollback", "release"]  # the index step's own connection


def test_a_failed_index_build_is_logged_not_raised(
    recording: type[RecordingSchema], caplog: pytest.LogCaptureFixture
) -> None:
    recording.fail_index = True
    store = OracleStore(FakePool(Database(dimension=None)), memory_store_id="acme")
    with caplog.at_level(logging.WARNING), store.unit_of_work() as uow:
        uow.records.add(record("r1"), embedding=E1)
        uow.commit()
    assert store.dimension == 4
    assert "vector index could not be built" in caplog.text


def test_clearing_vectors_is_one_transaction_then_the_index_goes(recording: type[RecordingSchema]) -> None:
    pool = FakePool(Database(dimension=4))
    store = OracleStore(pool, memory_store_id="acme", dimension=4)
    pool.log.clear()
    store.clear_vectors()
    heads = [c.sql.split("\n")[0] if c.sql else c.kind for c in pool.log]
    assert heads == [
        "acquire",
        "SELECT store_config, schema_version, lifecycle_state",
        'UPDATE "ACME_RECORD_CHUNKS"',
        'UPDATE "PALIMPSEST_STORES"',
        "commit",
        "release",
        "acquire",
        "rollback",
        "release",
    ]
    assert [c.binds for c in pool.log if c.sql and "PALIMPSEST_STORES" in c.sql][1]["dimension"] is None
    assert recording.instances[0].calls[-1] == ("drop_vector_index", None)
    assert store.dimension is None


def executed(pool: FakePool, fragment: str) -> list[Call]:
    return [c for c in pool.log if c.kind == "execute" and c.sql is not None and fragment in c.sql]


def test_search_runs_on_a_lent_connection_and_rolls_back(recording: type[RecordingSchema]) -> None:
    pool = FakePool(Database(dimension=4))
    store = OracleStore(pool, memory_store_id="acme", dimension=4, approximate=True)
    pool.log.clear()
    assert store.search(query()) == []
    # one read-only transaction: the registry's dimension, then the vector candidates, on one lent connection
    assert pool.kinds() == ["acquire", "execute", "execute", "execute", "rollback", "release"]
    assert pool.log[1].sql == "SET TRANSACTION READ ONLY"
    assert len(executed(pool, "PALIMPSEST_STORES")) == 1
    (candidates,) = executed(pool, "VECTOR_DISTANCE")
    assert "FETCH APPROX FIRST" in candidates.sql  # type: ignore[operator]
    assert len(candidates.binds["query_vector"]) == 4
    pool.log.clear()
    assert store.search(query(None)) == []
    assert pool.kinds() == ["acquire", "execute", "execute", "rollback", "release"]  # no registry read: no dimension needed
    assert len(executed(pool, "CONTAINS")) == 1
    pool.log.clear()
    with pytest.raises(VectorDimensionError):
        store.search(query((1.0, 0.0)))
    assert pool.kinds() == ["acquire", "execute", "execute", "rollback", "release"]  # no candidate SQL


def test_a_search_session_is_one_lent_connection_rolled_back_after_it(
    recording: type[RecordingSchema],
) -> None:
    pool = FakePool(Database(dimension=4))
    store = OracleStore(pool, memory_store_id="acme", dimension=4)
    pool.log.clear()
    with store.searching() as session:
        assert session.load([(False, "r1"), (True, "m1")]) == {}
        assert session.links_around(["r1"], query()) == {}
        assert list(session.keyword_candidates(query(None), 5).ranked) == []
        assert pool.kinds() == ["acquire", "execute", "execute", "execute", "execute", "execute"]
        assert pool.log[1].sql == "SET TRANSACTION READ ONLY"  # one snapshot for every primitive
    assert pool.kinds()[-2:] == ["rollback", "release"]
    assert {c.connection for c in pool.log} == {pool.connections[-1].number}
    store.close()
    with pytest.raises(StoreClosedError), store.searching():
        pass


def test_search_of_a_store_without_dimension_asks_the_registry(recording: type[RecordingSchema]) -> None:
    db = Database(dimension=None)
    store = OracleStore(FakePool(db), memory_store_id="acme")
    db.dimension = 4  # another process stored the first vector
    store.search(query())
    assert store.dimension == 4
    store.search(query(None))


def test_a_vector_search_follows_a_dimension_changed_by_another_process(
    recording: type[RecordingSchema],
) -> None:
    db = Database(dimension=4)
    pool = FakePool(db)
    store = OracleStore(pool, memory_store_id="acme", dimension=4)
    db.dimension = None  # another process cleared the vectors
    assert store.search(query((1.0, 0.0))) == []
    assert store.dimension is None
    db.dimension = 2  # ... and stored 2-dimensional ones
    store.search(query((1.0, 0.0)))
    assert store.dimension == 2
    assert len(executed(pool, "VECTOR_DISTANCE")[-1].binds["query_vector"]) == 2
    with pytest.raises(VectorDimensionError):
        store.search(query(E1))


def test_the_store_reads_in_a_read_only_transaction(recording: type[RecordingSchema]) -> None:
    pool = FakePool(Database())
    store = OracleStore(pool, memory_store_id="acme", dimension=4)
    start = len(pool.log)
    with store.reading() as uow:
        assert uow.records.get("r1") is None
        with pytest.raises(ReadOnlyError):
            uow.records.delete("r1")
    assert next(c.sql for c in pool.log[start:] if c.sql is not None) == "SET TRANSACTION READ ONLY"
    assert "commit" not in [c.kind for c in pool.log[start:]]


def test_a_closed_store_refuses_work_but_leaves_the_pool_open(recording: type[RecordingSchema]) -> None:
    pool = FakePool(Database())
    store = OracleStore(pool, memory_store_id="acme", dimension=4)
    store.close()
    store.close()
    with pytest.raises(StoreClosedError):
        store.unit_of_work()
    with pytest.raises(StoreClosedError):
        store.search(query())
    with pytest.raises(StoreClosedError):
        store.clear_vectors()
    assert pool.closed is False
    assert "closed" in repr(store)


def test_a_store_on_one_connection_never_closes_it(recording: type[RecordingSchema]) -> None:
    connection = FakeConnection(Database())
    with OracleStore(connection=connection, dimension=4) as store, store.unit_of_work() as uow:
        uow.threads.get("t1")
    assert connection.closed is False


def test_importing_the_package_imports_no_store_module() -> None:
    import subprocess
    import sys

    code = (
        "import sys, palimpsest.adapters.oracle as o; "
        "print(any(m.startswith('palimpsest.adapters.oracle.') for m in sys.modules)); "
        "print(o.OracleStore.__name__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "OracleStore"]


def test_record_columns_are_the_codecs() -> None:
    h = harness(Database().on('FROM "ACME_MEMORY"', [record_row(record("r1"))]))
    with h.uow() as uow:
        assert uow.records.get("r1") == record("r1")
    assert MEMORY_COLUMNS.split(", ")[0] in h.sql()[0]


def test_metadata_paging_stops_when_a_page_brings_nothing_new() -> None:
    same_page = [
        thread_row(thread(f"n{i:03d}", minutes=-i, metadata={"topic": "coffee"})) for i in range(100)
    ]
    h = harness(Database().on('FROM "ACME_THREAD"', lambda sql, binds: list(same_page)))
    with h.uow() as uow:
        assert uow.threads.list(metadata_filter={"topic": "tea"}, limit=5) == []
    assert len(h.calls("ACME_THREAD")) == 2


def test_every_lease_sets_the_session_to_utc_and_binary_ordering() -> None:
    from palimpsest.adapters.oracle.connection import SESSION_SETUP, ConnectionSource

    from .fakes import FakeConnection, FakePool

    pool = FakePool()
    source = ConnectionSource(pool)
    for _ in range(2):
        with source.lease():
            pass
    assert [c.session_statements for c in pool.connections] == [[SESSION_SETUP.sql], [SESSION_SETUP.sql]]
    assert "TIME_ZONE = 'UTC'" in SESSION_SETUP.sql and "NLS_SORT = BINARY" in SESSION_SETUP.sql

    single = FakeConnection()
    with ConnectionSource(connection=single).lease():
        pass
    assert single.session_statements == [SESSION_SETUP.sql]
