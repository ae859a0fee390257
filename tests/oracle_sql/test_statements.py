"""Oracle CRUD statements: every builder rendered against golden files, binds equal placeholders,
identifiers quoted and prefixed, and values never in the SQL text."""

from __future__ import annotations

import array
import inspect
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from palimpsest.adapters.oracle import statements as st
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.oracle.sql import Statement, placeholders
from palimpsest.domain.checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint, TypedBytes
from palimpsest.domain.images import ImageMimeType, StoredImage
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

from .golden import assert_golden

NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(days=7)
VECTOR = array.array("f", [0.6, 0.8, 0.0, 0.0])
SENTINEL = "x'); DROP TABLE t; --"


def entities(value: str = "") -> dict[str, object]:
    """Sample entities; ``value`` is put into every id, text and metadata value."""
    tag = value or ""
    thread = Thread(
        id=f"t1{tag}",
        created_at=NOW,
        updated_at=LATER,
        user_id=f"u1{tag}",
        agent_id=None,
        metadata={"topic": f"tea{tag}"},
        config={"ttl_days": 3},
        state={"turns": 2},
    )
    message = Message(
        id=f"m1{tag}",
        thread_id=f"t1{tag}",
        role="user",
        content=f"hello{tag}",
        seq=3,
        created_at=NOW,
        timestamp=NOW - timedelta(hours=1),
        metadata={"lang": f"en{tag}"},
        user_id=f"u1{tag}",
        agent_id=None,
        expires_at=LATER,
    )
    record = MemoryRecord(
        id=f"r1{tag}",
        record_type=RecordType.FACT,
        content=f"Ann likes tea{tag}",
        created_at=NOW,
        updated_at=NOW,
        user_id=f"u1{tag}",
        agent_id=f"a1{tag}",
        thread_id=f"t1{tag}",
        metadata={"k": [1, f"v{tag}"]},
        status=RecordStatus.INVALID,
        invalidation_reason=f"superseded{tag}",
        invalidated_at=NOW,
        timestamp=NOW,
        expires_at=LATER,
    )
    link = RecordLink(
        id=f"l1{tag}",
        source_id=f"r2{tag}",
        source_type=RecordType.FACT,
        target_id=f"r1{tag}",
        target_type=RecordType.PREFERENCE,
        relation_type=f"supersedes{tag}",
        opposite_relation_type=f"is_superseded_by{tag}",
        created_at=NOW,
        metadata={"why": f"newer{tag}"},
        timestamp=NOW,
    )
    summary = ThreadSummary(
        id=f"s1{tag}",
        thread_id=f"t1{tag}",
        revision=2,
        text=f"summary{tag}",
        created_at=NOW,
        topics=(f"tea{tag}",),
        covered_through_seq=7,
        user_id=f"u1{tag}",
        metadata={"m": f"v{tag}"},
    )
    job = ExtractionJob(
        id=f"j1{tag}",
        thread_id=f"t1{tag}",
        first_seq=1,
        last_seq=4,
        created_at=NOW,
        attempts=1,
        claimed_by=f"w1{tag}",
        claimed_until=LATER,
    )
    failed_job = ExtractionJob(
        id=f"j2{tag}",
        thread_id=f"t1{tag}",
        first_seq=5,
        last_seq=6,
        created_at=NOW,
        attempts=3,
        failed_at=LATER,
        failure_reason=f"ModelOutputError: not JSON{tag}",
    )
    return {
        "thread": thread,
        "message": message,
        "record": record,
        "link": link,
        "summary": summary,
        "job": job,
        "failed_job": failed_job,
    }


def _checkpoint(v: str) -> StoredCheckpoint:
    return StoredCheckpoint(
        thread_id=f"t1{v}", checkpoint_ns="", checkpoint_id=f"c1{v}", parent_checkpoint_id=f"c0{v}",
        checkpoint=TypedBytes("msgpack", b"checkpoint"), metadata={"source": f"loop{v}"}, channel_versions={"c": "1"},
        run_id=f"r1{v}", created_at=NOW,
    )


def _write(v: str, idx: int) -> CheckpointWrite:
    return CheckpointWrite(task_id=f"task{v}", task_path=f"~0{v}", idx=idx, channel=f"c{v}", value=TypedBytes("json", b"1"))


def _table_sample(builder: Callable[..., Statement], table: str) -> Callable[[StoreNames, dict[str, object], str], Statement]:
    if builder is st.checkpoint_copy:
        return lambda n, e, v: st.checkpoint_copy(n, table, f"t1{v}", f"t2{v}")
    return lambda n, e, v: st.checkpoint_delete_threads(n, table, [f"t1{v}", "t2"])


Sample = tuple[Callable[..., Statement], Callable[[StoreNames, dict[str, object], str], Statement]]


def _samples() -> dict[str, list[Sample]]:
    """Every builder, by golden file group, with a sample call (several for builders with shapes)."""

    def chunk(vector: object) -> Callable[[StoreNames, dict[str, object], str], Statement]:
        def build(n: StoreNames, e: dict[str, object], v: str) -> Statement:
            m = e["message"]
            return st.chunk_insert(
                n,
                source_id=m.id,
                record_type=RecordType.MESSAGE,
                content=m.content,
                thread_id=m.thread_id,
                user_id=m.user_id,
                agent_id=m.agent_id,
                status=RecordStatus.VALID,
                expires_at=m.expires_at,
                created_at=m.created_at,
                vector=vector,
            )

        return build

    def chunk_update(vector: object) -> Callable[[StoreNames, dict[str, object], str], Statement]:
        def build(n: StoreNames, e: dict[str, object], v: str) -> Statement:
            r = e["record"]
            return st.chunk_update(
                n,
                source_id=r.id,
                record_type=r.record_type,
                content=r.content,
                user_id=r.user_id,
                agent_id=r.agent_id,
                status=r.status,
                expires_at=r.expires_at,
                created_at=r.created_at,
                vector=vector,
            )

        return build

    after = st.Keyset(NOW, "r9")
    return {
        "transactions": [
            (st.savepoint, lambda n, e, v: st.savepoint(1)),
            (st.rollback_to_savepoint, lambda n, e, v: st.rollback_to_savepoint(2)),
            (st.read_only_transaction, lambda n, e, v: st.read_only_transaction()),
        ],
        "chunks": [
            (st.chunk_insert, chunk(VECTOR)),
            (st.chunk_insert, chunk(None)),
            (st.chunk_update, chunk_update(st.NOTSET)),
            (st.chunk_update, chunk_update(None)),
            (st.chunk_update, chunk_update(VECTOR)),
            (
                st.chunk_text_update,
                lambda n, e, v: st.chunk_text_update(n, f"m1{v}", f"Ann: hi{v}\nBob: hello{v}"),
            ),
            (st.chunk_delete, lambda n, e, v: st.chunk_delete(n, f"m1{v}", message=True)),
            (st.chunk_delete, lambda n, e, v: st.chunk_delete(n, f"r1{v}", message=False)),
            (st.chunks_delete_for_thread, lambda n, e, v: st.chunks_delete_for_thread(n, f"t1{v}")),
            (st.chunks_clear_vectors, lambda n, e, v: st.chunks_clear_vectors(n)),
        ],
        "threads": [
            (st.thread_insert, lambda n, e, v: st.thread_insert(n, e["thread"])),
            (st.thread_get, lambda n, e, v: st.thread_get(n, f"t1{v}")),
            (st.threads_existing, lambda n, e, v: st.threads_existing(n, [f"t1{v}", "t2"])),
            (st.thread_update, lambda n, e, v: st.thread_update(n, e["thread"])),
            (st.thread_delete, lambda n, e, v: st.thread_delete(n, f"t1{v}")),
            (st.thread_list, lambda n, e, v: st.thread_list(n)),
            (st.thread_list, lambda n, e, v: st.thread_list(n, user_id=f"u1{v}", agent_id=None, limit=10)),
            (st.thread_list, lambda n, e, v: st.thread_list(n, without_metadata=True, limit=None)),
            (st.thread_list, lambda n, e, v: st.thread_list(n, user_id=f"u1{v}", page=100, after=after)),
        ],
        "messages": [
            (st.message_insert, lambda n, e, v: st.message_insert(n, e["message"])),
            (st.message_get, lambda n, e, v: st.message_get(n, f"m1{v}", NOW)),
            (st.message_last_seq, lambda n, e, v: st.message_last_seq(n, f"t1{v}")),
            (st.message_list_for_thread, lambda n, e, v: st.message_list_for_thread(n, f"t1{v}", now=NOW)),
            (
                st.message_list_for_thread,
                lambda n, e, v: st.message_list_for_thread(
                    n, f"t1{v}", now=NOW, start_seq=2, end_seq=9, last_n=3
                ),
            ),
            (st.message_list, lambda n, e, v: st.message_list(n, now=NOW)),
            (
                st.message_list,
                lambda n, e, v: st.message_list(
                    n, now=NOW, user_id=f"u1{v}", agent_id=None, thread_id=f"t1{v}", without_metadata=True, limit=7
                ),
            ),
            (st.message_place, lambda n, e, v: st.message_place(n, f"m1{v}")),
            (st.message_place, lambda n, e, v: st.message_place(n, f"m1{v}", with_text=True)),
            (st.message_before, lambda n, e, v: st.message_before(n, f"t1{v}", 3)),
            (st.message_after, lambda n, e, v: st.message_after(n, f"t1{v}", 3)),
            (st.message_update, lambda n, e, v: st.message_update(n, e["message"])),
            (st.message_vectors, lambda n, e, v: st.message_vectors(n, f"t1{v}", [f"m1{v}", f"m2{v}"])),
            (st.message_delete, lambda n, e, v: st.message_delete(n, f"m1{v}")),
            (st.messages_expired, lambda n, e, v: st.messages_expired(n, NOW)),
            (st.messages_unembedded, lambda n, e, v: st.messages_unembedded(n, NOW)),
            (st.messages_unembedded, lambda n, e, v: st.messages_unembedded(n, NOW, limit=64)),
        ],
        "records": [
            (st.record_insert, lambda n, e, v: st.record_insert(n, e["record"])),
            (st.record_get, lambda n, e, v: st.record_get(n, f"r1{v}")),
            (st.record_get, lambda n, e, v: st.record_get(n, f"r1{v}", now=NOW)),
            (st.record_get_many, lambda n, e, v: st.record_get_many(n, [f"r1{v}", "r2"])),
            (st.record_scope, lambda n, e, v: st.record_scope(n, f"r1{v}")),
            (st.record_update, lambda n, e, v: st.record_update(n, e["record"])),
            (st.record_delete, lambda n, e, v: st.record_delete(n, f"r1{v}")),
            (st.record_expired_ids, lambda n, e, v: st.record_expired_ids(n, NOW)),
            (st.record_expired_ids, lambda n, e, v: st.record_expired_ids(n, NOW, limit=5)),
            (st.records_unembedded, lambda n, e, v: st.records_unembedded(n, NOW)),
            (st.records_unembedded, lambda n, e, v: st.records_unembedded(n, NOW, limit=64)),
            (st.record_list, lambda n, e, v: st.record_list(n, now=NOW)),
            (
                st.record_list,
                lambda n, e, v: st.record_list(
                    n,
                    now=NOW,
                    user_id=f"u1{v}",
                    agent_id=None,
                    thread_id=f"t1{v}",
                    record_types=[RecordType.GUIDELINE, RecordType.FACT],
                    without_metadata=True,
                    limit=2,
                ),
            ),
            (
                st.record_list,
                lambda n, e, v: st.record_list(n, now=NOW, thread_id=None, page=100, after=after),
            ),
            (
                st.record_list,
                lambda n, e, v: st.record_list(n, now=NOW, record_types=[RecordType.USER_PROFILE], limit=10),
            ),
        ],
        "links": [
            (st.link_check_add, lambda n, e, v: st.link_check_add(n, e["link"])),
            (st.link_insert, lambda n, e, v: st.link_insert(n, e["link"])),
            (st.link_get, lambda n, e, v: st.link_get(n, f"l1{v}")),
            (st.link_find, lambda n, e, v: st.link_find(n, f"r2{v}", f"r1{v}", f"supersedes{v}")),
            (st.link_find_id, lambda n, e, v: st.link_find_id(n, f"r2{v}", f"r1{v}", f"supersedes{v}")),
            (st.link_between, lambda n, e, v: st.link_between(n, f"r1{v}", f"r2{v}")),
            (st.link_touching, lambda n, e, v: st.link_touching(n, f"r1{v}")),
            (st.link_endpoints, lambda n, e, v: st.link_endpoints(n, f"l1{v}")),
            (st.link_update, lambda n, e, v: st.link_update(n, e["link"])),
            (st.link_delete, lambda n, e, v: st.link_delete(n, f"l1{v}")),
            (st.link_list, lambda n, e, v: st.link_list(n)),
            (
                st.link_list,
                lambda n, e, v: st.link_list(
                    n, source_id=f"r2{v}", target_id=f"r1{v}", relation_type=f"supersedes{v}", limit=3
                ),
            ),
        ],
        "summaries": [
            (st.summary_check_add, lambda n, e, v: st.summary_check_add(n, e["summary"])),
            (st.summary_insert, lambda n, e, v: st.summary_insert(n, e["summary"])),
            (st.summary_latest, lambda n, e, v: st.summary_latest(n, f"t1{v}")),
            (st.summary_latest, lambda n, e, v: st.summary_latest(n, f"t1{v}", valid_only=True)),
            (st.summary_list_for_thread, lambda n, e, v: st.summary_list_for_thread(n, f"t1{v}")),
            (st.summary_invalidate_covering, lambda n, e, v: st.summary_invalidate_covering(n, f"t1{v}", 5)),
            (st.summary_prune, lambda n, e, v: st.summary_prune(n, f"t1{v}", 50)),
        ],
        "jobs": [
            (st.job_insert, lambda n, e, v: st.job_insert(n, e["job"])),
            (st.job_get, lambda n, e, v: st.job_get(n, f"j1{v}")),
            (st.job_pending, lambda n, e, v: st.job_pending(n, NOW)),
            (st.job_pending, lambda n, e, v: st.job_pending(n, NOW, limit=20)),
            (st.job_claim, lambda n, e, v: st.job_claim(n, f"j1{v}", owner=f"w1{v}", until=LATER, now=NOW)),
            (st.job_insert, lambda n, e, v: st.job_insert(n, e["failed_job"])),
            (
                st.job_fail,
                lambda n, e, v: st.job_fail(n, f"j1{v}", reason=f"TimeoutError: slow{v}", at=LATER),
            ),
            (st.job_failed, lambda n, e, v: st.job_failed(n)),
            (st.job_failed, lambda n, e, v: st.job_failed(n, limit=5)),
            (st.job_failed, lambda n, e, v: st.job_failed(n, thread_id=f"t1{v}")),
            (st.job_failed, lambda n, e, v: st.job_failed(n, thread_id=f"t1{v}", limit=5)),
            (st.job_retry, lambda n, e, v: st.job_retry(n, f"j1{v}")),
            (st.job_list, lambda n, e, v: st.job_list(n)),
            (st.job_list, lambda n, e, v: st.job_list(n, limit=5)),
            (st.job_list, lambda n, e, v: st.job_list(n, thread_id=f"t1{v}")),
            (st.job_list, lambda n, e, v: st.job_list(n, thread_id=f"t1{v}", limit=5)),
            (
                st.job_postpone,
                lambda n, e, v: st.job_postpone(
                    n, f"j1{v}", owner=f"w1{v}", until=LATER, reason=f"TimeoutError: slow{v}", refund_attempt=False
                ),
            ),
            (
                st.job_postpone,
                lambda n, e, v: st.job_postpone(
                    n, f"j1{v}", owner=f"w1{v}", until=LATER, reason=f"StoreBusyError: busy{v}", refund_attempt=True
                ),
            ),
            (st.job_renew, lambda n, e, v: st.job_renew(n, f"j1{v}", owner=f"w1{v}", until=LATER)),
            (st.job_release, lambda n, e, v: st.job_release(n, f"j1{v}", owner=f"w1{v}", until=LATER)),
            (st.job_release, lambda n, e, v: st.job_release(n, f"j1{v}", owner=f"w1{v}", until=None)),
            (st.job_delete, lambda n, e, v: st.job_delete(n, f"j1{v}")),
        ],
        "images": [
            (st.image_insert, lambda n, e, v: st.image_insert(n, StoredImage(f"i1{v}", ImageMimeType.PNG, b"png"))),
            (
                st.image_insert,
                lambda n, e, v: st.image_insert(
                    n, StoredImage(f"i2{v}", ImageMimeType.JPEG, b"jpg", message_id=f"m1{v}", position=1)
                ),
            ),
            (st.image_replace, lambda n, e, v: st.image_replace(n, StoredImage(f"i1{v}", ImageMimeType.WEBP, b"w"))),
            (st.image_get_many, lambda n, e, v: st.image_get_many(n, [f"i1{v}", f"i2{v}"], include_bytes=True)),
            (st.image_get_many, lambda n, e, v: st.image_get_many(n, [f"i1{v}"], include_bytes=False)),
            (st.image_of_messages, lambda n, e, v: st.image_of_messages(n, [f"m1{v}", f"m2{v}"])),
        ],
        "checkpoints": [
            (st.checkpoint_put, lambda n, e, v: st.checkpoint_put(n, _checkpoint(v), f'{{"source":"loop{v}"}}', '{"c":"1"}')),
            (
                st.checkpoint_blob_insert,
                lambda n, e, v: st.checkpoint_blob_insert(n, f"t1{v}", "", ChannelBlob(f"c{v}", "1", TypedBytes("msgpack", b"v"))),
            ),
            (st.checkpoint_write_put, lambda n, e, v: st.checkpoint_write_put(n, f"t1{v}", "", "c1", _write(v, -1), replace=True)),
            (st.checkpoint_write_put, lambda n, e, v: st.checkpoint_write_put(n, f"t1{v}", f"sub{v}", "c1", _write(v, 0), replace=False)),
            (st.checkpoint_get, lambda n, e, v: st.checkpoint_get(n, f"t1{v}", "", None)),
            (st.checkpoint_get, lambda n, e, v: st.checkpoint_get(n, f"t1{v}", "", f"c1{v}")),
            (
                st.checkpoint_list,
                lambda n, e, v: st.checkpoint_list(n, thread_id=None, checkpoint_ns=None, checkpoint_id=None, before=None, limit=None),
            ),
            (
                st.checkpoint_list,
                lambda n, e, v: st.checkpoint_list(
                    n, thread_id=f"t1{v}", checkpoint_ns="", checkpoint_id=f"c1{v}", before=f"c9{v}", limit=3
                ),
            ),
            (st.checkpoint_blobs, lambda n, e, v: st.checkpoint_blobs(n, f"t1{v}", "", [(f"a{v}", "1"), ("b", f"2{v}")])),
            (st.checkpoint_blobs, lambda n, e, v: st.checkpoint_blobs(n, f"t1{v}", "", [])),
            (st.checkpoint_writes, lambda n, e, v: st.checkpoint_writes(n, f"t1{v}", "", f"c1{v}")),
            *[
                (st.checkpoint_delete_threads, _table_sample(st.checkpoint_delete_threads, table))
                for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints")
            ],
            (st.checkpoint_delete_runs, lambda n, e, v: st.checkpoint_delete_runs(n, [f"r1{v}", "r2"], writes=True)),
            (st.checkpoint_delete_runs, lambda n, e, v: st.checkpoint_delete_runs(n, [f"r1{v}", "r2"], writes=False)),
            (st.checkpoint_delete, lambda n, e, v: st.checkpoint_delete(n, "checkpoint_writes", f"t1{v}", "", [f"c1{v}"])),
            (st.checkpoint_delete, lambda n, e, v: st.checkpoint_delete(n, "checkpoints", f"t1{v}", "", [f"c1{v}", "c2"])),
            (st.checkpoint_blob_delete, lambda n, e, v: st.checkpoint_blob_delete(n, f"t1{v}", "", f"c{v}", "1")),
            *[
                (st.checkpoint_copy, _table_sample(st.checkpoint_copy, table))
                for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
            ],
        ],
        "settings": [
            (st.setting_get, lambda n, e, v: st.setting_get(n, f"retention{v}")),
            (
                st.setting_set,
                lambda n, e, v: st.setting_set(n, f"retention{v}", f'{{"default_ttl_days":30,"v":"{v}"}}'),
            ),
            (st.setting_delete, lambda n, e, v: st.setting_delete(n, f"retention{v}")),
        ],
    }


SAMPLES = _samples()
STORES = {"default": StoreNames(), "acme": StoreNames("acme")}


def _statements(names: StoreNames, value: str = "") -> list[Statement]:
    e = entities(value)
    return [build(names, e, value) for group in SAMPLES.values() for _, build in group]


@pytest.mark.parametrize("group", sorted(SAMPLES))
def test_statements_render_as_their_golden_file(group: str) -> None:
    parts = []
    for label, names in STORES.items():
        e = entities()
        parts.append(f"-- ===== store: {label} =====\n")
        parts.extend(build(names, e, "").render() + "\n" for _, build in SAMPLES[group])
    assert_golden(f"statements_{group}", "".join(parts))


def test_every_builder_has_a_sample() -> None:
    builders = {
        name
        for name in st.__all__
        if inspect.isfunction(getattr(st, name))
        and inspect.signature(getattr(st, name)).return_annotation in ("Statement", Statement)
    }
    sampled = {builder.__name__ for group in SAMPLES.values() for builder, _ in group}
    assert builders == sampled


def test_each_statement_name_belongs_to_one_builder() -> None:
    owner: dict[str, str] = {}
    e = entities()
    for group in SAMPLES.values():
        for builder, build in group:
            name = build(StoreNames("acme"), e, "").name
            assert owner.setdefault(name, builder.__name__) == builder.__name__, name


@pytest.mark.parametrize("label", sorted(STORES))
def test_bind_names_equal_placeholders(label: str) -> None:
    for statement in _statements(STORES[label]):
        assert placeholders(statement.sql) == set(statement.binds), statement.name


def test_identifiers_are_quoted_and_carry_the_store_prefix() -> None:
    for statement in _statements(StoreNames("acme")):
        quoted = re.findall(r'"([^"]*)"', statement.sql)
        if statement.name.startswith("uow."):
            assert quoted == []
            continue
        assert quoted, statement.name
        assert all(name.startswith("ACME_") for name in quoted), (statement.name, quoted)
    for statement in _statements(StoreNames()):
        assert "ACME" not in statement.sql


def test_values_travel_only_as_binds() -> None:
    for statement in _statements(StoreNames("acme"), SENTINEL):
        assert SENTINEL not in statement.sql, statement.name
        assert "DROP" not in statement.sql.upper(), statement.name
    binds = " ".join(repr(b) for s in _statements(StoreNames("acme"), SENTINEL) for b in s.binds.values())
    assert "DROP TABLE t" in binds  # the sentinel is there, as data


def test_timestamps_are_bound_as_naive_utc_wall_times() -> None:
    """python-oracledb drops a datetime's zone; the session zone is UTC, so UTC wall time is sent."""
    from zoneinfo import ZoneInfo

    local = NOW.astimezone(ZoneInfo("Europe/Paris"))
    statement = st.message_get(StoreNames(), "m1", local)
    assert statement.binds["now"] == NOW.replace(tzinfo=None)
    assert statement.binds["now"].tzinfo is None


def test_savepoint_depth_is_validated() -> None:
    with pytest.raises(ValueError):
        st.savepoint(0)
    with pytest.raises(ValueError):
        st.rollback_to_savepoint(True)  # type: ignore[arg-type]


def test_an_empty_record_type_filter_is_refused_by_the_builder() -> None:
    with pytest.raises(ValueError):
        st.record_list(StoreNames(), now=NOW, record_types=[])
