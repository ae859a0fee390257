"""Retention: TTLs, anchors, the store-wide retention policy, expiry and physical purge."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryRetentionConfig, MemoryThread, TimeToLiveAnchor
from palimpsest.domain import (
    ConfigurationError,
    MessageNotFoundError,
    RecordNotFoundError,
    RecordStatus,
    ValidationError,
)
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import START, days, snapshot, stored_record


def _expiry(store: MemoryStore, record_id: str) -> datetime | None:
    record = stored_record(store, record_id)
    assert record is not None
    return record.expires_at


def test_ttl_days_counts_from_creation_and_hides_the_memory_once_expired(
    memory: AgentMemory, store: MemoryStore, clock: ManualClock
) -> None:
    thread = memory.create_thread(thread_id="t", user_id="u")
    short = memory.add_memory("short lived pizza note", memory_id="short", user_id="u", ttl_days=1)
    memory.add_memory("lasting pizza note", memory_id="long", user_id="u")
    [mid] = thread.add_messages([{"role": "user", "content": "ephemeral pizza message"}], ttl_days=0.5)
    assert START < _expiry(store, short) <= START + days(1.01)  # type: ignore[operator]
    clock.advance(days(2))
    assert [r.id for r in memory.list_memories(user_id="u")] == ["long"]
    assert {r.id for r in memory.search("pizza", user_id="u")} == {"long"}
    assert thread.get_messages() == []
    with pytest.raises(MessageNotFoundError):
        thread.get_message(mid)
    with pytest.raises(RecordNotFoundError):
        memory.update_memory(short, "revived?")
    assert stored_record(store, short) is not None, "expired rows stay until purged"
    assert memory.purge_expired() == 2
    assert stored_record(store, short) is None
    assert snapshot(store)["messages"] == {"t": []}


_ZERO_TTL_WRITES: dict[str, Callable[[AgentMemory, MemoryThread], object]] = {
    "add_memory": lambda memory, thread: memory.add_memory("x", user_id="u", ttl_days=0),
    "add_memory, 0.0 days on the timestamp": lambda memory, thread: memory.add_memory(
        "x", user_id="u", ttl_days=0.0, ttl_anchor="timestamp", timestamp="2026-03-01T00:00:00Z"
    ),
    "update_memory": lambda memory, thread: memory.update_memory("kept", ttl_days=0),
    "add_messages": lambda memory, thread: thread.add_messages([{"role": "user", "content": "x"}], ttl_days=0),
    "add_messages, one of a batch": lambda memory, thread: thread.add_messages(
        [{"role": "user", "content": "x"}, {"role": "user", "content": "y"}], ttl_days=[1, 0]
    ),
    "update_message": lambda memory, thread: thread.update_message("m1", ttl_days=0),
    "the thread's add_memory": lambda memory, thread: thread.add_memory("x", ttl_days=0),
    "the thread's update_memory": lambda memory, thread: thread.update_memory("in-thread", ttl_days=0),
}


@pytest.mark.parametrize("write", list(_ZERO_TTL_WRITES))
def test_a_zero_ttl_is_refused_because_the_record_would_expire_at_once(
    memory: AgentMemory, store: MemoryStore, write: str
) -> None:
    thread = memory.create_thread(thread_id="t", user_id="u")
    thread.add_messages([{"id": "m1", "role": "user", "content": "a message"}])
    memory.add_memory("a memory", memory_id="kept", user_id="u")
    thread.add_memory("a thread memory", memory_id="in-thread")
    before = snapshot(store)
    with pytest.raises(ValidationError, match="expire at once"):
        _ZERO_TTL_WRITES[write](memory, thread)
    assert snapshot(store) == before


def test_the_timestamp_anchor_counts_from_the_event_time(memory: AgentMemory, store: MemoryStore) -> None:
    memory_id = memory.add_memory(
        "event memory", ttl_days=10, ttl_anchor=TimeToLiveAnchor.TIMESTAMP, timestamp="2026-02-01T00:00:00"
    )
    assert _expiry(store, memory_id) == datetime(2026, 2, 11, tzinfo=UTC), "naive timestamps are UTC"
    by_value = memory.add_memory("event memory", ttl_days=1, ttl_anchor="timestamp", timestamp="2026-02-01T12:00:00+02:00")
    assert _expiry(store, by_value) == datetime(2026, 2, 2, 10, tzinfo=UTC)


def test_the_timestamp_anchor_needs_a_timestamp(memory: AgentMemory, store: MemoryStore) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="timestamp"):
        memory.add_memory("no time", ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    thread = memory.create_thread(thread_id="t")
    after_thread = snapshot(store)
    with pytest.raises(ValidationError, match="timestamp"):
        thread.add_messages([{"role": "user", "content": "x"}], ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    assert snapshot(store) == after_thread
    assert before["records"] == after_thread["records"] == []


@pytest.mark.parametrize(("field", "bad"), [("ttl_days", -1), ("ttl_days", "3"), ("ttl_days", float("inf")), ("ttl_anchor", "updated_at")])
def test_ttl_arguments_are_validated(memory: AgentMemory, store: MemoryStore, field: str, bad: object) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError):
        memory.add_memory("x", **{field: bad})  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_updating_the_ttl_moves_the_expiry_and_omitting_it_keeps_it(
    memory: AgentMemory, store: MemoryStore, clock: ManualClock
) -> None:
    memory_id = memory.add_memory("note", ttl_days=1)
    first = _expiry(store, memory_id)
    memory.update_memory(memory_id, "edited note")
    assert _expiry(store, memory_id) == first
    clock.advance(days(0.5))
    memory.update_memory(memory_id, ttl_days=3)
    assert _expiry(store, memory_id) > first + days(2)  # type: ignore[operator]
    memory.update_memory(memory_id, ttl_days=None)
    assert _expiry(store, memory_id) is None


def test_the_retention_policy_supplies_a_default_and_caps_every_ttl(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    client = make_client(memory_retention_config=MemoryRetentionConfig(default_ttl_days=1, max_ttl_days=5))
    by_default = client.add_memory("default ttl")
    assert START < _expiry(store, by_default) <= START + days(1.001)  # type: ignore[operator]
    never = client.add_memory("asks for no expiry", ttl_days=None)
    assert START + days(4.99) < _expiry(store, never) <= START + days(5.001)  # type: ignore[operator]
    with pytest.warns(UserWarning, match="clamped"):
        clamped = client.add_memory("asks for too long", ttl_days=30)
    assert START + days(4.99) < _expiry(store, clamped) <= START + days(5.001)  # type: ignore[operator]
    thread = client.create_thread()
    with pytest.warns(UserWarning, match="clamped"):
        [mid] = thread.add_messages([{"role": "user", "content": "long message"}], ttl_days=99)
    assert thread.get_message(mid).expires_at <= START + days(5.001)  # type: ignore[operator]


def test_the_retention_policy_is_stored_with_the_store(make_client: ClientFactory, store: MemoryStore) -> None:
    make_client(memory_retention_config=MemoryRetentionConfig(default_ttl_days=2))
    later = make_client()
    memory_id = later.add_memory("inherits the stored default")
    assert START + days(1.99) < _expiry(store, memory_id) <= START + days(2.001)  # type: ignore[operator]


def test_without_a_policy_memories_never_expire(memory: AgentMemory, store: MemoryStore) -> None:
    assert _expiry(store, memory.add_memory("forever")) is None
    assert _expiry(store, memory.add_memory("forever too", ttl_days=None)) is None


@pytest.mark.parametrize(
    "arguments",
    [
        {"default_ttl_days": 5, "max_ttl_days": 1},
        {"default_ttl_days": -1},
        {"max_ttl_days": "10"},
        {"max_ttl_days": True},
        {"default_ttl_days": 0},  # every record written without a TTL would expire at once
        {"max_ttl_days": 0.0},  # every TTL would be clamped to expire at once
    ],
)
def test_an_inconsistent_retention_policy_is_a_configuration_error(arguments: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        MemoryRetentionConfig(**arguments)  # type: ignore[arg-type]


def test_purging_revalidates_a_memory_whose_superseding_memory_expired(
    memory: AgentMemory, store: MemoryStore, clock: ManualClock
) -> None:
    old = memory.add_memory("lives in Paris", memory_type="fact", user_id="u")
    memory.add_memory("lives in Rome (temporarily)", memory_type="fact", user_id="u", ttl_days=1,
                      memory_id_to_link=old, link_type="supersedes")
    assert stored_record(store, old).status is RecordStatus.INVALID  # type: ignore[union-attr]
    clock.advance(days(2))
    assert [r.id for r in memory.search("lives", user_id="u", max_results=5)] == [old]
    assert memory.purge_expired() == 1
    record = stored_record(store, old)
    assert record is not None and record.status is RecordStatus.VALID and record.invalidation_reason is None
    assert snapshot(store)["links"] == []
    assert memory.purge_expired() == 0


def test_expired_linked_records_are_not_shown_as_graph_context(
    memory: AgentMemory, clock: ManualClock
) -> None:
    root = memory.add_memory("alpha root", memory_id="root", user_id="u")
    memory.add_memory("temporary neighbour", memory_id="tmp", user_id="u", ttl_days=1,
                      memory_id_to_link=root, link_type="supports")
    [hit] = memory.search("alpha root", user_id="u", max_results=1, num_hops=1)
    assert [child.id for _, child in hit.linked_results] == ["tmp"]
    clock.advance(days(2))
    [hit] = memory.search("alpha root", user_id="u", max_results=1, num_hops=1)
    assert hit.linked_results == []


@pytest.mark.parametrize(
    "arguments", [{"default_ttl_days": float("nan")}, {"max_ttl_days": float("inf")}], ids=repr
)
def test_a_retention_policy_of_no_finite_number_is_a_configuration_error(arguments: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="finite"):
        MemoryRetentionConfig(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "saved",
    [{"default_ttl_days": "abc"}, {"max_ttl_days": -1}, ["not", "an", "object"], {"max_ttl_day": 3}],
    ids=repr,
)
def test_a_stored_retention_policy_that_does_not_parse_is_a_configuration_error_naming_it(
    make_client: ClientFactory, store: MemoryStore, saved: object
) -> None:
    with store.unit_of_work() as uow:
        uow.settings.set("memory_retention_config", saved)
        uow.commit()
    with pytest.raises(ConfigurationError, match="'memory_retention_config'"):
        make_client()
    make_client(memory_retention_config=MemoryRetentionConfig(default_ttl_days=3))  # a new policy replaces it
    assert make_client().add_memory("readable again")
