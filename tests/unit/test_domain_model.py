"""Unit: entity validation (ids, times, metadata), derived properties and expiry_from_ttl."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from palimpsest.domain.errors import (
    InvalidMetadataError,
    InvalidRecordTypeError,
    InvalidScopeError,
    ValidationError,
)
from palimpsest.domain.model import (
    MAX_ID_LENGTH,
    MEMORY_RECORD_TYPES,
    ExtractionJob,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Scope,
    Thread,
    ThreadSummary,
    check_id,
    expiry_from_ttl,
    parse_record_type,
)

T0 = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
NAIVE = datetime(2025, 3, 14, 12, 0)


def rec(**kwargs) -> MemoryRecord:
    fields = {
        "id": "r1",
        "record_type": RecordType.FACT,
        "content": "Ann likes tea",
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(kwargs)
    return MemoryRecord(**fields)


def msg(**kwargs) -> Message:
    fields = {"id": "m1", "thread_id": "t1", "role": "user", "content": "hi", "seq": 1, "created_at": T0}
    fields.update(kwargs)
    return Message(**fields)


def thr(**kwargs) -> Thread:
    fields = {"id": "t1", "created_at": T0, "updated_at": T0}
    fields.update(kwargs)
    return Thread(**fields)


def lnk(**kwargs) -> RecordLink:
    fields = {
        "id": "l1",
        "source_id": "a",
        "source_type": "fact",
        "target_id": "b",
        "target_type": "guideline",
        "relation_type": "supersedes",
        "opposite_relation_type": "is_superseded_by",
        "created_at": T0,
    }
    fields.update(kwargs)
    return RecordLink(**fields)


# --- ids --------------------------------------------------------------------------------------


@pytest.mark.parametrize("good", ["a", "x" * MAX_ID_LENGTH, "ünïcode-✓", "with space", "a/b:c"])
def test_a_printable_id_of_at_most_128_characters_is_accepted(good: str) -> None:
    assert check_id(good, "id") == good


@pytest.mark.parametrize(
    "bad", ["", "   ", "x" * (MAX_ID_LENGTH + 1), "tab\t", "nl\n", "nul\x00", 5, None, b"id"]
)
def test_a_malformed_id_is_rejected(bad: object) -> None:
    with pytest.raises(ValidationError):
        check_id(bad, "id")
    with pytest.raises(ValidationError):
        rec(id=bad)
    with pytest.raises(ValidationError):
        thr(id=bad)


@pytest.mark.parametrize("field", ["user_id", "agent_id", "thread_id"])
def test_a_malformed_scope_id_is_an_invalid_scope_error(field: str) -> None:
    with pytest.raises(InvalidScopeError):
        rec(**{field: ""})
    with pytest.raises(InvalidScopeError):
        Scope(**{field: "x" * 129})
    assert getattr(rec(**{field: None}), field) is None


# --- times ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: rec(created_at=NAIVE),
        lambda: rec(updated_at=NAIVE),
        lambda: rec(expires_at=NAIVE),
        lambda: rec(timestamp=NAIVE),
        lambda: rec(status=RecordStatus.INVALID, invalidation_reason="x", invalidated_at=NAIVE),
        lambda: msg(created_at=NAIVE),
        lambda: msg(expires_at=NAIVE),
        lambda: thr(updated_at=NAIVE),
        lambda: lnk(created_at=NAIVE),
        lambda: rec(created_at="2025-03-14T12:00:00Z"),
    ],
)
def test_naive_or_non_datetime_times_are_rejected(build) -> None:
    with pytest.raises(ValidationError):
        build()


def test_any_timezone_is_accepted() -> None:
    tz = timezone(timedelta(hours=9))
    assert rec(created_at=T0.astimezone(tz)).created_at == T0


# --- metadata ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        ["a list"],
        "a string",
        {1: "non-string key"},
        {"a": {2: "nested non-string key"}},
        {"a": float("nan")},
        {"a": [float("inf")]},
        {"a": {1, 2}},
        {"a": object()},
        {"a": T0},
        {"a": b"bytes"},
    ],
    ids=repr,
)
def test_metadata_must_be_a_json_object(bad: object) -> None:
    with pytest.raises(InvalidMetadataError):
        rec(metadata=bad)
    with pytest.raises(InvalidMetadataError):
        thr(metadata=bad)
    with pytest.raises(InvalidMetadataError):
        msg(metadata=bad)


def test_metadata_nested_too_deeply_is_rejected() -> None:
    value: object = 1
    for _ in range(40):
        value = [value]
    with pytest.raises(InvalidMetadataError):
        rec(metadata={"deep": value})


def test_metadata_is_a_private_plain_copy() -> None:
    source = {"tags": ("a", "b"), "nested": {"n": [1]}}
    record = rec(metadata=source)
    assert record.metadata == {"tags": ["a", "b"], "nested": {"n": [1]}}
    source["nested"]["n"].append(2)  # type: ignore[index]
    assert record.metadata == {"tags": ["a", "b"], "nested": {"n": [1]}}


def test_thread_config_and_state_default_to_empty_objects() -> None:
    t = thr()
    assert (t.metadata, t.config, t.state) == (None, {}, {})
    with pytest.raises(InvalidMetadataError):
        thr(config={"bad": float("nan")})


# --- records ----------------------------------------------------------------------------------


def test_record_type_and_status_are_coerced_from_strings() -> None:
    record = rec(record_type="guideline", status="valid")
    assert record.record_type is RecordType.GUIDELINE
    assert record.status is RecordStatus.VALID
    assert str(RecordType.FACT) == "fact" and str(RecordStatus.INVALID) == "invalid"


@pytest.mark.parametrize("bad", ["message", RecordType.MESSAGE, "episode", None, 3])
def test_a_memory_record_must_have_a_memory_like_type(bad: object) -> None:
    with pytest.raises(InvalidRecordTypeError):
        rec(record_type=bad)


def test_an_unknown_status_is_rejected() -> None:
    with pytest.raises(ValidationError):
        rec(status="archived")


@pytest.mark.parametrize("content", ["", "   ", None])
def test_a_memory_needs_content(content: object) -> None:
    with pytest.raises(ValidationError):
        rec(content=content)


@pytest.mark.parametrize(
    "extra", [{"invalidation_reason": "Superseded by another memory."}, {"invalidated_at": T0}]
)
def test_a_valid_record_carries_no_invalidation_reason_or_time(extra: dict) -> None:
    with pytest.raises(ValidationError):
        rec(**extra)
    invalid = rec(status=RecordStatus.INVALID, **extra)
    assert not invalid.is_valid


def test_valid_from_falls_back_to_the_creation_time() -> None:
    assert rec().valid_from == T0
    assert rec(timestamp=T0 - timedelta(days=3)).valid_from == T0 - timedelta(days=3)


def test_expiry_is_inclusive_of_its_instant() -> None:
    record = rec(expires_at=T0)
    assert record.is_expired(T0)
    assert not record.is_expired(T0 - timedelta(microseconds=1))
    assert not rec().is_expired(T0 + timedelta(days=10_000))
    assert msg(expires_at=T0).is_expired(T0)


def test_entities_are_immutable() -> None:
    with pytest.raises(FrozenInstanceError):
        rec().content = "changed"  # type: ignore[misc]
    assert replace(rec(), content="changed").content == "changed"


def test_scope_gathers_the_three_dimensions() -> None:
    assert rec(user_id="u", agent_id="a", thread_id="t").scope == Scope("u", "a", "t")
    assert msg(user_id="u").scope == Scope("u", None, "t1")


# --- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"seq": 0},
        {"seq": -1},
        {"seq": True},
        {"seq": 1.0},
        {"role": ""},
        {"role": "r" * 31},
        {"content": None},
        {"thread_id": ""},
    ],
    ids=repr,
)
def test_a_malformed_message_is_rejected(bad: dict) -> None:
    with pytest.raises(ValidationError):
        msg(**bad)


def test_a_message_is_a_message_record_and_may_be_empty() -> None:
    m = msg(content="")
    assert m.record_type is RecordType.MESSAGE
    assert not m.record_type.is_memory_like
    assert all(t.is_memory_like for t in MEMORY_RECORD_TYPES)


# --- links ------------------------------------------------------------------------------------


def test_a_link_reads_its_label_from_either_end() -> None:
    link = lnk()
    assert link.source_type is RecordType.FACT and link.target_type is RecordType.GUIDELINE
    assert link.label_from("a") == "supersedes"
    assert link.label_from("b") == "is_superseded_by"
    assert link.other_end("a") == "b" and link.other_end("b") == "a"
    assert link.endpoints == frozenset({"a", "b"})


@pytest.mark.parametrize(
    "bad",
    [{"source_type": "message"}, {"target_type": "episode"}],
)
def test_a_link_joins_memory_like_records_only(bad: dict) -> None:
    with pytest.raises(InvalidRecordTypeError):
        lnk(**bad)


@pytest.mark.parametrize(
    "bad", [{"relation_type": ""}, {"opposite_relation_type": "x" * 129}, {"source_id": ""}]
)
def test_a_link_needs_well_formed_ids_and_labels(bad: dict) -> None:
    with pytest.raises(ValidationError):
        lnk(**bad)


# --- parse_record_type and expiry_from_ttl ----------------------------------------------------


def test_parse_record_type_accepts_names_and_members() -> None:
    assert parse_record_type("message") is RecordType.MESSAGE
    assert parse_record_type(RecordType.FACT, memory_only=True) is RecordType.FACT
    with pytest.raises(InvalidRecordTypeError):
        parse_record_type("message", memory_only=True)
    with pytest.raises(InvalidRecordTypeError):
        parse_record_type("FACT")


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [
        (None, None),
        (1e-6, T0 + timedelta(days=1e-6)),
        (1, T0 + timedelta(days=1)),
        (1.5, T0 + timedelta(days=1.5)),
        (365, T0 + timedelta(days=365)),
    ],
)
def test_expiry_from_ttl_counts_days_from_now(ttl: float | None, expected: datetime | None) -> None:
    assert expiry_from_ttl(T0, ttl) == expected


@pytest.mark.parametrize("bad", [-1, -0.5, 0, 0.0, True, False, float("nan"), float("inf"), "3", [1]])
def test_expiry_from_ttl_rejects_zero_negative_and_non_numeric_values(bad: object) -> None:
    with pytest.raises(ValidationError):
        expiry_from_ttl(T0, bad)  # type: ignore[arg-type]


# --- what every backend can store -------------------------------------------------------------


def test_a_time_that_cannot_be_expressed_in_utc_is_rejected() -> None:
    early = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))  # 0000-12-31 in UTC
    late = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-12)))
    for bad in (early, late):
        with pytest.raises(ValidationError, match="representable range in UTC"):
            rec(created_at=bad)
        with pytest.raises(ValidationError, match="representable range in UTC"):
            msg(timestamp=bad)
    assert rec(created_at=datetime(1, 1, 1, tzinfo=UTC)).created_at.year == 1


def test_metadata_integers_of_more_than_4300_digits_are_rejected() -> None:
    widest = 10**4300 - 1  # 4300 digits: what json.dumps and str() still write
    assert rec(metadata={"n": -widest}).metadata == {"n": -widest}
    for bad in ({"n": 10**4300}, {"n": [-(10**5000)]}, {"a": {"b": 10**4300}}):
        with pytest.raises(InvalidMetadataError, match="4300 digits"):
            rec(metadata=bad)
        with pytest.raises(InvalidMetadataError, match="4300 digits"):
            thr(config=bad)


@pytest.mark.parametrize(
    "build",
    [
        lambda: msg(seq=2**63),
        lambda: ThreadSummary(id="s", thread_id="t", revision=2**63, text="x", created_at=T0),
        lambda: ThreadSummary(id="s", thread_id="t", revision=1, text="x", created_at=T0, covered_through_seq=2**63),
        lambda: ExtractionJob(id="j", thread_id="t", first_seq=1, last_seq=2**63, created_at=T0),
    ],
)
def test_counters_beyond_a_signed_64_bit_integer_are_rejected(build) -> None:
    with pytest.raises(ValidationError, match="below 2\\*\\*63"):
        build()
    assert msg(seq=2**63 - 1).seq == 2**63 - 1


@pytest.mark.parametrize(("field", "value"), [("text", "a\ud800"), ("topics", ("ok", "\udfff"))])
def test_summary_text_and_topics_must_be_valid_unicode(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match="valid Unicode"):
        ThreadSummary(**{"id": "s", "thread_id": "t", "revision": 1, "text": "x", "created_at": T0, field: value})


def test_an_unknown_summary_status_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="summary status must be 'valid' or 'invalid'"):
        ThreadSummary(id="s", thread_id="t", revision=1, text="x", created_at=T0, status="deleted")  # type: ignore[arg-type]
