"""Messages of a thread: append, windows, read, edit, delete."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, ChatMessage, MemoryThread
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import MessageNotFoundError, RecordStatus, ThreadNotFoundError, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK, days, snapshot, stored_summaries


@pytest.fixture
def thread(memory: AgentMemory) -> MemoryThread:
    return memory.create_thread(thread_id="t", user_id="u1", agent_id="a1")


def _contents(thread: MemoryThread, **window: object) -> list[str]:
    return [m.content for m in thread.get_messages(**window)]  # type: ignore[arg-type]


def test_dicts_and_chat_messages_are_appended_in_order_and_their_ids_returned(thread: MemoryThread) -> None:
    ids = thread.add_messages(
        [
            {"role": "user", "content": "Hi, I am Maya.", "timestamp": "2026-01-02T10:00:00Z", "metadata": {"lang": "en"}},
            ChatMessage(role="assistant", content="Hello Maya!"),
            {"role": "tool", "content": "lookup done", "ignored_key": 1},
        ]
    )
    messages = thread.get_messages()
    assert [m.id for m in messages] == ids and len(set(ids)) == 3
    assert [(m.role, m.content) for m in messages] == [
        ("user", "Hi, I am Maya."),
        ("assistant", "Hello Maya!"),
        ("tool", "lookup done"),
    ]
    assert messages[0].timestamp == datetime(2026, 1, 2, 10, tzinfo=UTC)
    assert messages[0].metadata == {"lang": "en"}
    assert (messages[0].user_id, messages[0].agent_id, messages[0].thread_id) == ("u1", "a1", "t")
    assert [m.seq for m in messages] == sorted(m.seq for m in messages)


def test_message_ids_given_by_the_caller_are_kept(thread: MemoryThread) -> None:
    ids = thread.add_messages([{"id": "m1", "role": "user", "content": "a"}, ChatMessage("assistant", "b", id="m2")])
    assert ids == ["m1", "m2"]
    assert thread.get_message("m2").content == "b"


@ARGUMENT_CHECK
def test_message_ids_must_be_all_set_or_all_omitted(thread: MemoryThread, store: MemoryStore) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError):
        thread.add_messages([{"id": "m1", "role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert snapshot(store) == before


def test_text_content_parts_are_joined(thread: MemoryThread) -> None:
    [mid] = thread.add_messages(
        [{"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "world"}]}]
    )
    assert thread.get_message(mid).content == "Hello world"


@ARGUMENT_CHECK
@pytest.mark.parametrize(
    "content",
    [[], [{"type": "image", "bytes": b"..."}], [{"type": "text", "text": 5}], ["plain string part"], 42, None],
)
def test_content_must_be_text_or_a_non_empty_list_of_text_parts(
    thread: MemoryThread, store: MemoryStore, content: object
) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError):
        thread.add_messages([{"role": "user", "content": "fine"}, {"role": "user", "content": content}])
    assert snapshot(store) == before


def test_batch_metadata_and_ttl_can_be_given_per_message(thread: MemoryThread, clock: ManualClock) -> None:
    ids = thread.add_messages(
        [
            {"role": "user", "content": "first", "metadata": {"own": True, "k": "message wins"}},
            {"role": "user", "content": "second"},
        ],
        metadata=[{"k": "batch"}, {"k": "batch 2"}],
        ttl_days=[1, None],
    )
    first, second = (thread.get_message(i) for i in ids)
    assert first.metadata == {"k": "message wins", "own": True}
    assert second.metadata == {"k": "batch 2"}
    assert first.expires_at is not None and second.expires_at is None
    clock.advance(days(2))
    assert [m.id for m in thread.get_messages()] == [ids[1]]


def test_scalar_batch_metadata_applies_to_every_message(thread: MemoryThread) -> None:
    ids = thread.add_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], metadata={"src": "x"})
    assert [thread.get_message(i).metadata for i in ids] == [{"src": "x"}, {"src": "x"}]


@ARGUMENT_CHECK
@pytest.mark.parametrize("field", ["metadata", "ttl_days", "ttl_anchor"])
def test_per_message_lists_must_match_the_number_of_messages(thread: MemoryThread, store: MemoryStore, field: str) -> None:
    before = snapshot(store)
    values = {"metadata": [{"a": 1}], "ttl_days": [1], "ttl_anchor": ["created_at"]}
    with pytest.raises(ValidationError):
        thread.add_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], **{field: values[field]})
    assert snapshot(store) == before


def test_appending_to_a_deleted_thread_writes_nothing(memory: AgentMemory, thread: MemoryThread, store: MemoryStore) -> None:
    memory.delete_thread("t")
    before = snapshot(store)
    with pytest.raises(ThreadNotFoundError):
        thread.add_messages([{"role": "user", "content": "late"}])
    assert snapshot(store) == before


@pytest.fixture
def long_thread(thread: MemoryThread) -> MemoryThread:
    thread.add_messages([{"role": "user", "content": f"message {i}"} for i in range(120)])
    return thread


def test_get_messages_returns_the_newest_hundred_by_default(long_thread: MemoryThread) -> None:
    assert _contents(long_thread) == [f"message {i}" for i in range(20, 120)]


def test_a_thread_shorter_than_the_default_window_returns_all_its_messages(thread: MemoryThread) -> None:
    thread.add_messages([{"role": "user", "content": f"message {i}"} for i in range(60)])
    assert _contents(thread) == [f"message {i}" for i in range(60)]


def test_get_messages_windows_are_zero_based_with_an_exclusive_end(long_thread: MemoryThread) -> None:
    assert _contents(long_thread, start=0) == [f"message {i}" for i in range(100)]
    assert _contents(long_thread, start=10, end=13) == ["message 10", "message 11", "message 12"]
    assert _contents(long_thread, start=115, end=None) == [f"message {i}" for i in range(115, 120)]
    assert _contents(long_thread, start=115, end=-1) == [f"message {i}" for i in range(115, 120)]
    assert _contents(long_thread, start=0, end=None) == [f"message {i}" for i in range(120)]
    assert _contents(long_thread, end=2) == ["message 0", "message 1"]


def test_a_negative_start_counts_from_the_end(long_thread: MemoryThread) -> None:
    assert _contents(long_thread, start=-3) == ["message 117", "message 118", "message 119"]
    assert _contents(long_thread, start=-3, end=None) == ["message 117", "message 118", "message 119"]
    assert len(_contents(long_thread, start=-500, end=None)) == 120


@ARGUMENT_CHECK
def test_get_messages_rejects_non_integer_bounds(long_thread: MemoryThread) -> None:
    with pytest.raises(ValidationError):
        long_thread.get_messages(start="1")  # type: ignore[arg-type]


def test_get_message_only_sees_messages_of_its_own_thread(memory: AgentMemory, thread: MemoryThread) -> None:
    other = memory.create_thread(thread_id="other", user_id="u1", agent_id="a1")
    [mid] = other.add_messages([{"role": "user", "content": "elsewhere"}])
    with pytest.raises(MessageNotFoundError) as caught:
        thread.get_message(mid)
    assert isinstance(caught.value, KeyError)
    assert thread.delete_message(mid) == 0
    assert other.get_message(mid).content == "elsewhere"


def test_update_message_changes_content_and_metadata_but_not_role_or_time(thread: MemoryThread, memory: AgentMemory) -> None:
    [mid] = thread.add_messages([{"role": "user", "content": "I live in Paris", "timestamp": "2026-01-01T00:00:00Z"}])
    assert thread.update_message(mid, "I live in Rome", metadata={"edited": True}) == mid
    message = thread.get_message(mid)
    assert (message.role, message.content, message.metadata) == ("user", "I live in Rome", {"edited": True})
    assert message.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    hits = memory.search("Rome", user_id="u1", record_types=["message"])
    assert [h.content for h in hits] == ["I live in Rome"]


@ARGUMENT_CHECK
def test_update_message_rejects_none_content_and_unknown_arguments(thread: MemoryThread, store: MemoryStore) -> None:
    [mid] = thread.add_messages([{"role": "user", "content": "keep me"}])
    before = snapshot(store)
    with pytest.raises(ValidationError):
        thread.update_message(mid, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        thread.update_message(mid, "x", role="assistant")  # type: ignore[call-arg]
    assert snapshot(store) == before


def test_update_message_with_an_empty_string_clears_the_text(thread: MemoryThread) -> None:
    [mid] = thread.add_messages([{"role": "user", "content": "to be cleared"}])
    thread.update_message(mid, "")
    assert thread.get_message(mid).content == ""


def test_editing_a_message_invalidates_the_summaries_that_covered_it(make_client: ClientFactory, store: MemoryStore) -> None:
    client = make_client(summariser=ScriptedSummariser())
    thread = client.create_thread(thread_id="t")
    ids = thread.add_messages([{"role": "user", "content": "I live in Paris."}, {"role": "user", "content": "I like jazz."}])
    assert "Paris" in thread.get_summary().content
    covering = [s for s in stored_summaries(store, "t") if s.status is RecordStatus.VALID]
    assert covering
    thread.update_message(ids[0], "I live in Rome.")
    assert all(s.status is RecordStatus.INVALID for s in stored_summaries(store, "t"))
    summary = thread.get_summary().content
    assert "Rome" in summary and "Paris" not in summary


def test_deleting_a_message_removes_it_and_invalidates_covering_summaries(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    client = make_client(summariser=ScriptedSummariser())
    thread = client.create_thread(thread_id="t")
    ids = thread.add_messages([{"role": "user", "content": "Secret plan A."}, {"role": "user", "content": "Plan B."}])
    assert "Secret" in thread.get_summary().content
    assert thread.delete_message(ids[0]) == 1
    assert thread.delete_message(ids[0]) == 0
    with pytest.raises(MessageNotFoundError):
        thread.get_message(ids[0])
    assert [m.id for m in thread.get_messages()] == [ids[1]]
    assert "Secret" not in thread.get_summary().content


def test_the_async_twin_of_add_messages_returns_the_ids(thread: MemoryThread) -> None:
    import asyncio

    ids = asyncio.run(thread.add_messages_async([{"role": "user", "content": "async hello"}]))
    assert [m.id for m in thread.get_messages()] == ids
