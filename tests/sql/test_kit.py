"""The SQL-store kit's own parts: dialect encodings, the row codecs, and what the kit's repositories
do that the contract suite cannot see (the statements they send)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from palimpsest.adapters.sql import Dialect, Key, RowCodec, Sql
from palimpsest.adapters.sql.codec import COLUMN_ORDER
from palimpsest.adapters.sql.dialects import PostgresDialect, SqliteDialect
from palimpsest.adapters.sql.standard import StandardStatements
from palimpsest.adapters.sql.statements import Keyset
from palimpsest.domain.errors import (
    ConflictError,
    DuplicateIdError,
    LinkExistsError,
    StorageError,
    ThreadNotFoundError,
    VectorDimensionError,
)
from palimpsest.domain.model import (
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
    ThreadSummary,
)
from palimpsest.domain.sentinel import NOTSET

T0 = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))

DIALECTS = [Dialect(), SqliteDialect(), PostgresDialect()]


def _oracle() -> list[Dialect]:
    try:
        from palimpsest.adapters.oracle.dialect import OracleDialect
    except ImportError:  # pragma: no cover - the oracle extra is not installed
        return []
    return [OracleDialect()]


def _entities() -> list[tuple[str, object]]:
    thread = Thread(
        id="t1", user_id="u1", agent_id=None, metadata={"k": [1, 2.5, "é"]}, config={"a": 1}, state={},
        created_at=T0, updated_at=T0 + timedelta(seconds=1),
    )  # fmt: skip
    message = Message(
        id="m1", thread_id="t1", seq=3, role="user", content="héllo", timestamp=T0.astimezone(PLUS_TWO),
        metadata=None, user_id="u1", agent_id="a1", created_at=T0, expires_at=T0 + timedelta(days=1),
    )  # fmt: skip
    record = MemoryRecord(
        id="r1", record_type=RecordType.FACT, content="likes tea", user_id="u1", agent_id=None,
        thread_id="t1", metadata={"topic": "drinks"}, status=RecordStatus.INVALID,
        invalidation_reason="changed", invalidated_at=T0, timestamp=None, expires_at=None,
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    link = RecordLink(
        id="l1", source_id="r1", source_type=RecordType.FACT, target_id="r2",
        target_type=RecordType.PREFERENCE, relation_type="causes", opposite_relation_type="caused_by",
        metadata={"w": 0.5}, timestamp=T0, created_at=T0,
    )  # fmt: skip
    summary = ThreadSummary(
        id="s1", thread_id="t1", revision=2, text="a summary", topics=("tea", "work"),
        covered_through_seq=7, status=RecordStatus.VALID, user_id="u1", agent_id=None, metadata=None,
        created_at=T0,
    )  # fmt: skip
    job = ExtractionJob(
        id="j1", thread_id="t1", first_seq=1, last_seq=4, created_at=T0, attempts=2, claimed_by="w1",
        claimed_until=T0 + timedelta(minutes=5), failed_at=None, failure_reason="timeout",
    )  # fmt: skip
    return [
        ("thread", thread),
        ("message", message),
        ("record", record),
        ("link", link),
        ("summary", summary),
        ("job", job),
    ]


@pytest.mark.parametrize("dialect", DIALECTS + _oracle(), ids=lambda d: type(d).__name__)
@pytest.mark.parametrize(("entity", "value"), _entities(), ids=[name for name, _ in _entities()])
def test_every_entity_survives_its_encoder_and_decoder(dialect: Dialect, entity: str, value: object) -> None:
    codec = RowCodec(dialect)
    row = getattr(codec, f"{entity}_values")(value)
    assert len(row) == len(COLUMN_ORDER[entity])
    assert getattr(codec, entity)(row) == value


def test_sqlite_times_are_fixed_width_utc_text_that_sorts_as_time() -> None:
    dialect = SqliteDialect()
    early = dialect.encode_time(datetime(2024, 1, 1, 23, 0, tzinfo=PLUS_TWO))  # 21:00 UTC
    late = dialect.encode_time(datetime(2024, 1, 1, 22, 0, 0, 1, tzinfo=UTC))
    assert early == "2024-01-01T21:00:00.000000Z"
    assert early is not None and late is not None and len(early) == len(late) and early < late
    assert dialect.decode_time(early) == datetime(2024, 1, 1, 21, 0, tzinfo=UTC)


def test_postgres_values_bind_as_its_types_and_read_back() -> None:
    dialect = PostgresDialect()
    assert dialect.positional("a = ? AND b LIKE 'x%'") == "a = %s AND b LIKE 'x%%'"
    assert dialect.in_list("id", ["a", "b"]) == ("id = ANY(?)", (["a", "b"],))
    assert dialect.encode_time(T0.astimezone(PLUS_TWO)) == T0
    assert dialect.encode_time(T0.astimezone(PLUS_TWO)).tzinfo == UTC  # type: ignore[union-attr]
    assert dialect.decode_json({"already": "parsed"}) == {"already": "parsed"}  # jsonb arrives parsed
    assert json.loads(dialect.encode_json({"k": "é"})) == {"k": "é"}


@pytest.mark.parametrize("dialect", [SqliteDialect(), PostgresDialect()], ids=lambda d: type(d).__name__)
def test_a_vector_is_stored_as_a_unit_vector_and_reads_back_as_float32(dialect: Dialect) -> None:
    [unit] = dialect.unit_vectors([[3.0, 4.0, 0.0, 1e-9]], 4)
    stored = dialect.encode_vector(unit)
    if isinstance(dialect, PostgresDialect):
        assert isinstance(stored, str) and stored.startswith("[") and stored.endswith("]")
    else:
        assert isinstance(stored, bytes) and len(stored) == 16
    back = np.asarray(dialect.decode_vector(stored), dtype=np.float32)
    assert np.array_equal(back, np.asarray(unit, dtype=np.float32))
    assert back[:2].tolist() == pytest.approx([0.6, 0.8])


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: type(d).__name__)
def test_a_batch_without_a_dimension_must_agree_with_its_first_vector(dialect: Dialect) -> None:
    assert len(dialect.unit_vectors([[1.0, 0.0], [0.0, 2.0]], None)) == 2
    with pytest.raises(VectorDimensionError):
        dialect.unit_vectors([[1.0, 0.0], [0.0, 1.0, 0.0]], None)
    with pytest.raises(VectorDimensionError):
        dialect.unit_vectors([[1.0, 0.0]], 3)
    with pytest.raises(VectorDimensionError):
        dialect.unit_vectors([[0.0, 0.0]], None)


def test_the_upsert_inserts_then_replaces_on_sqlite() -> None:
    dialect = SqliteDialect()
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, w TEXT)")
    sql = dialect.upsert("kv", ("k",), ("k", "v", "w"))
    dialect.run(conn, Sql("put", sql, ("a", "1", "x")))
    dialect.run(conn, Sql("put", sql, ("a", "2", "y")))
    assert dialect.fetch_all(conn, Sql("all", "SELECT k, v, w FROM kv")) == [("a", "2", "y")]


def test_sqlite_errors_name_the_logical_key_they_violated() -> None:
    dialect = SqliteDialect(
        {"m.id": Key.MESSAGE_ID, "m.t, m.seq": Key.MESSAGE_SEQ, "l.s, l.t": Key.LINK_RELATION, "s.t, s.r": Key.SUMMARY_REVISION}
    )
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(
        "CREATE TABLE t (id TEXT PRIMARY KEY);"
        "CREATE TABLE m (id TEXT PRIMARY KEY, t TEXT REFERENCES t (id), seq INTEGER, UNIQUE (t, seq));"
        "CREATE TABLE l (s TEXT, t TEXT, UNIQUE (s, t));"
        "CREATE TABLE s (t TEXT, r INTEGER, UNIQUE (t, r));"
        "INSERT INTO t VALUES ('t1'); INSERT INTO m VALUES ('m1', 't1', 1);"
        "INSERT INTO l VALUES ('a', 'b'); INSERT INTO s VALUES ('t1', 1);"
    )

    def failure(sql: str, missing: type | None = None) -> tuple[Exception, str | None]:
        with pytest.raises(sqlite3.Error) as caught:
            conn.execute(sql)
        return dialect.translate(caught.value, missing), dialect.violated(caught.value)

    error, key = failure("INSERT INTO m VALUES ('m1', 't1', 2)")
    assert isinstance(error, DuplicateIdError) and key == Key.MESSAGE_ID
    error, key = failure("INSERT INTO m VALUES ('m2', 't1', 1)")
    assert isinstance(error, DuplicateIdError) and key == Key.MESSAGE_SEQ
    assert isinstance(failure("INSERT INTO l VALUES ('a', 'b')")[0], LinkExistsError)
    assert isinstance(failure("INSERT INTO s VALUES ('t1', 1)")[0], ConflictError)
    assert isinstance(failure("INSERT INTO m VALUES ('m3', 'nope', 1)", ThreadNotFoundError)[0], ThreadNotFoundError)
    assert isinstance(failure("SELECT * FROM missing_table")[0], StorageError)


def test_a_savepoint_undoes_only_its_own_write() -> None:
    dialect = SqliteDialect()
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE x (v INTEGER)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO x VALUES (1)")
    for statement in (dialect.savepoint(1), Sql("w", "INSERT INTO x VALUES (2)"), dialect.rollback_to(1), dialect.release(1)):
        assert statement is not None
        dialect.run(conn, statement)
    conn.execute("COMMIT")
    assert dialect.fetch_all(conn, Sql("all", "SELECT v FROM x")) == [(1,)]


def test_a_newest_first_statement_is_read_back_oldest_first() -> None:
    dialect = SqliteDialect()
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE x (v INTEGER); INSERT INTO x VALUES (1), (2), (3);")
    newest = Sql("newest", "SELECT v FROM x ORDER BY v DESC LIMIT 2", reverse=True)
    assert dialect.fetch_all(conn, newest) == [(2,), (3,)]
    assert Dialect().fetch_all(conn, newest) == [(2,), (3,)]


def _every_standard_statement(sql: StandardStatements) -> list[Sql]:
    """One statement of every builder of the standard statements (every optional branch)."""
    entities = dict(_entities())
    thread, message, record = entities["thread"], entities["message"], entities["record"]
    link, summary, job = entities["link"], entities["summary"], entities["job"]
    assert isinstance(thread, Thread) and isinstance(message, Message) and isinstance(record, MemoryRecord)
    assert isinstance(link, RecordLink) and isinstance(summary, ThreadSummary) and isinstance(job, ExtractionJob)
    after = Keyset(T0, "r9")
    return [
        sql.thread_insert(thread), sql.thread_get("t1"), sql.threads_existing(["t1", "t2"]),
        sql.thread_update(thread), sql.thread_delete("t1"), sql.thread_list(),
        sql.thread_list(user_id="u1", agent_id=None, without_metadata=True, limit=3),
        sql.thread_list(user_id="u1", page=50, after=after),
        sql.message_insert(message, b"v"), sql.message_get("m1", T0), sql.message_last_seq("t1"),
        sql.message_vectors("t1", ["m1", "m2"]), sql.message_list_for_thread("t1", now=T0),
        sql.message_list_for_thread("t1", now=T0, start_seq=1, end_seq=9, last_n=4),
        sql.message_place("m1"), sql.message_place("m1", with_text=True),
        sql.message_update(message, NOTSET), sql.message_update(message, b"v"), sql.message_delete("m1"),
        sql.messages_expired(T0),
        sql.record_insert(record, None), sql.record_get("r1"), sql.record_get("r1", now=T0),
        sql.record_get_many(["r1", "r2"]), sql.record_scope("r1"), sql.record_update(record, NOTSET),
        sql.record_update(record, b"v"), sql.record_delete("r1"), sql.record_expired_ids(T0),
        sql.record_expired_ids(T0, limit=5), sql.record_list(now=T0),
        sql.record_list(now=T0, user_id="u1", agent_id="a1", thread_id=None, record_types=[RecordType.FACT, RecordType.GUIDELINE], limit=2),
        sql.record_list(now=T0, without_metadata=True, page=20, after=after),
        sql.link_check_add(link), sql.link_insert(link), sql.link_get("l1"), sql.link_find("r1", "r2", "x"),
        sql.link_find_id("r1", "r2", "x"), sql.link_between("r1", "r2"), sql.link_touching("r1"),
        sql.link_endpoints("l1"), sql.link_update(link), sql.link_delete("l1"), sql.link_list(),
        sql.link_list(source_id="r1", target_id="r2", relation_type="x", limit=3),
        sql.summary_check_add(summary), sql.summary_insert(summary), sql.summary_latest("t1"),
        sql.summary_latest("t1", valid_only=True), sql.summary_list_for_thread("t1"),
        sql.summary_invalidate_covering("t1", 3), sql.summary_prune("t1", 2),
        sql.job_insert(job), sql.job_get("j1"), sql.job_pending(T0), sql.job_pending(T0, limit=3),
        sql.job_claim("j1", owner="w1", until=T0, now=T0), sql.job_list(), sql.job_list(thread_id="t1", limit=2),
        sql.job_failed(), sql.job_failed(thread_id="t1", limit=2),
        sql.job_postpone("j1", owner="w1", until=T0, reason="x", refund_attempt=True),
        sql.job_renew("j1", owner="w1", until=T0), sql.job_release("j1", owner="w1", until=None),
        sql.job_fail("j1", reason="x", at=T0), sql.job_retry("j1"), sql.job_delete("j1"),
        sql.setting_get("k"), sql.setting_set("k", "1"), sql.setting_delete("k"),
    ]  # fmt: skip


@pytest.mark.parametrize("dialect", [SqliteDialect(), PostgresDialect()], ids=lambda d: type(d).__name__)
def test_the_standard_statements_bind_one_value_per_placeholder_of_the_dialect(dialect: Dialect) -> None:
    mark, other = ("?", "%s") if dialect.paramstyle == "qmark" else ("%s", "?")
    for statement in _every_standard_statement(StandardStatements(RowCodec(dialect))):
        assert other not in statement.sql, statement.name
        assert statement.sql.count(mark) == len(statement.params), statement.name


def test_an_id_list_binds_as_one_value_where_the_dialect_can_and_one_by_one_otherwise() -> None:
    assert Dialect().in_list("id", ["a", "b"]) == ("id IN (?, ?)", ("a", "b"))
    assert SqliteDialect().in_list("id", ["a", "b"]) == ("id IN (SELECT value FROM json_each(?))", ('["a", "b"]',))
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("a",), ("b",), ("c",)])
    for dialect in (Dialect(), SqliteDialect()):
        clause, params = dialect.in_list("id", ["a", "c", "zz"])
        assert dialect.fetch_all(conn, Sql("ids", f"SELECT id FROM t WHERE {clause} ORDER BY id", params)) == [("a",), ("c",)]


def test_the_standard_postpone_refunds_an_attempt_but_never_below_zero() -> None:
    dialect = SqliteDialect()
    statements = StandardStatements(RowCodec(dialect))
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE extraction_jobs (id TEXT, attempts INTEGER, claimed_by TEXT, claimed_until TEXT, "
        "failed_at TEXT, failure_reason TEXT)"
    )
    conn.executemany("INSERT INTO extraction_jobs VALUES (?, ?, 'w1', NULL, NULL, NULL)", [("j0", 0), ("j2", 2)])
    for job_id in ("j0", "j2"):
        for refund in (True, False):
            dialect.run(conn, statements.job_postpone(job_id, owner="w1", until=T0, reason="x", refund_attempt=refund))
    assert dialect.fetch_all(conn, Sql("all", "SELECT id, attempts FROM extraction_jobs ORDER BY id")) == [("j0", 0), ("j2", 1)]
