"""Threads through the public client: create, reopen, update, delete, list."""

from __future__ import annotations

import uuid

import pytest
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import (
    AgentMemoryError,
    ConfigurationError,
    ConflictError,
    RecordStatus,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK, snapshot, stored_record


def test_a_thread_gets_a_generated_uuid_when_no_id_is_given(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u1", agent_id="a1", metadata={"topic": "pizza"})
    assert uuid.UUID(thread.thread_id)
    reopened = memory.get_thread(thread.thread_id)
    assert (reopened.thread_id, reopened.user_id, reopened.agent_id) == (thread.thread_id, "u1", "a1")
    assert reopened.metadata == {"topic": "pizza"}


def test_two_threads_get_different_generated_ids(memory: AgentMemory) -> None:
    assert memory.create_thread().thread_id != memory.create_thread().thread_id


def test_a_thread_keeps_the_id_it_was_given(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t-1", user_id="u1")
    assert memory.get_thread("t-1").user_id == "u1"


def test_creating_a_thread_with_a_taken_id_is_a_conflict_and_changes_nothing(
    memory: AgentMemory, store: MemoryStore
) -> None:
    memory.create_thread(thread_id="t-1", user_id="u1", metadata={"v": 1})
    before = snapshot(store)
    with pytest.raises(ConflictError):
        memory.create_thread(thread_id="t-1", user_id="u2", metadata={"v": 2})
    assert snapshot(store) == before


def test_reopening_an_unknown_thread_raises_a_key_error(memory: AgentMemory) -> None:
    with pytest.raises(ThreadNotFoundError) as caught:
        memory.get_thread("missing")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, AgentMemoryError)


def test_the_resolved_settings_are_persisted_with_the_thread(memory: AgentMemory) -> None:
    memory.create_thread(
        thread_id="t",
        context_card_token_limit=2_000,
        max_message_token_length=300,
        memory_extraction_config=MemoryExtractionConfig(context_summary_update_frequency=4),
    )
    settings = memory.get_thread("t").settings
    assert settings.context_card_token_limit == 2_000
    assert settings.max_message_token_length == 300
    assert settings.extraction.context_summary_update_frequency == 4
    assert settings.extraction.extract_memories is False  # inherited from the client


def test_overrides_on_get_thread_apply_to_that_handle_only(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", context_card_token_limit=2_000)
    handle = memory.get_thread(
        "t",
        context_card_token_limit=50,
        memory_extraction_config=MemoryExtractionConfig(context_summary_update_frequency=9),
    )
    assert handle.settings.context_card_token_limit == 50
    assert handle.settings.extraction.context_summary_update_frequency == 9
    again = memory.get_thread("t").settings
    assert again.context_card_token_limit == 2_000
    assert again.extraction.context_summary_update_frequency == -1


def test_the_type_search_concurrency_is_accepted_but_never_persisted(memory: AgentMemory, store: MemoryStore) -> None:
    created = memory.create_thread(thread_id="t", context_card_type_search_concurrency=2)
    assert created.settings.context_card_type_search_concurrency == 2
    assert memory.get_thread("t").settings.context_card_type_search_concurrency == 5
    assert memory.get_thread("t", context_card_type_search_concurrency=1).settings.context_card_type_search_concurrency == 1
    stored = snapshot(store)["threads"][0]
    assert "context_card_type_search_concurrency" not in repr(stored.config)


@ARGUMENT_CHECK
@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_the_type_search_concurrency_must_be_a_positive_integer(memory: AgentMemory, store: MemoryStore, bad: object) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError):
        memory.create_thread(thread_id="t", context_card_type_search_concurrency=bad)  # type: ignore[arg-type]
    assert snapshot(store) == before


@ARGUMENT_CHECK
def test_unknown_keyword_arguments_are_rejected_by_every_thread_method(memory: AgentMemory, store: MemoryStore) -> None:
    memory.create_thread(thread_id="t")
    before = snapshot(store)
    with pytest.raises(TypeError):
        memory.create_thread(thread_id="t2", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        memory.get_thread("t", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        memory.update_thread("t", colour="blue")  # type: ignore[call-arg]
    assert snapshot(store) == before


def test_update_thread_replaces_the_metadata_object_whole(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", metadata={"a": 1, "b": {"c": 2}})
    updated = memory.update_thread("t", {"z": 3})
    assert updated.metadata == {"z": 3}
    assert memory.get_thread("t").metadata == {"z": 3}


def test_update_thread_with_none_clears_the_metadata(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", metadata={"a": 1})
    memory.update_thread("t", None)
    assert memory.get_thread("t").metadata is None


def test_update_thread_without_metadata_keeps_it_and_persists_setting_overrides(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", metadata={"a": 1})
    memory.update_thread("t", context_card_token_limit=123)
    reopened = memory.get_thread("t")
    assert reopened.metadata == {"a": 1}
    assert reopened.settings.context_card_token_limit == 123


@ARGUMENT_CHECK
@pytest.mark.parametrize("field", ["user_id", "agent_id", "thread_id_new", "context_card_type_search_concurrency"])
def test_user_and_agent_of_a_thread_cannot_be_changed(memory: AgentMemory, store: MemoryStore, field: str) -> None:
    memory.create_thread(thread_id="t", user_id="u1", agent_id="a1")
    before = snapshot(store)
    with pytest.raises(TypeError):
        memory.update_thread("t", **{field: "other"})
    assert snapshot(store) == before
    assert (memory.get_thread("t").user_id, memory.get_thread("t").agent_id) == ("u1", "a1")


def test_updating_an_unknown_thread_raises_a_key_error(memory: AgentMemory) -> None:
    with pytest.raises(ThreadNotFoundError):
        memory.update_thread("missing", {"a": 1})


def test_deleting_a_thread_removes_its_messages_and_thread_scoped_memories(memory: AgentMemory, store: MemoryStore) -> None:
    thread = memory.create_thread(thread_id="t", user_id="u1")
    thread.add_messages([{"role": "user", "content": "hello"}])
    owned = thread.add_memory("thread note")
    kept = memory.add_memory("user note", user_id="u1")
    assert memory.delete_thread("t") == 1
    assert memory.delete_thread("t") == 0
    with pytest.raises(ThreadNotFoundError):
        memory.get_thread("t")
    assert stored_record(store, owned) is None
    assert stored_record(store, kept) is not None
    assert snapshot(store)["messages"] == {}


def test_deleting_a_thread_revalidates_a_memory_its_memories_had_superseded(memory: AgentMemory, store: MemoryStore) -> None:
    old = memory.add_memory("lives in Paris", user_id="u1", memory_type="fact")
    thread = memory.create_thread(thread_id="t", user_id="u1")
    newer = thread.add_memory("lives in Rome", memory_type="fact")
    memory.link_records(newer, "fact", old, "fact", "supersedes")
    assert stored_record(store, old).status is RecordStatus.INVALID
    memory.delete_thread("t")
    assert stored_record(store, old).status is RecordStatus.VALID


def test_list_threads_filters_by_user_and_returns_the_oldest_first(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    memory.create_thread(thread_id="t2", user_id="u2")
    memory.create_thread(thread_id="t3", user_id="u1", agent_id="a2", metadata={"k": "v"})
    memory.create_thread(thread_id="t4")
    assert [t.id for t in memory.list_threads("u1")] == ["t1", "t3"]
    assert [t.id for t in memory.list_threads(None)] == ["t4"]
    assert [t.id for t in memory.list_threads("u1", agent_id="a2")] == ["t3"]
    assert [t.id for t in memory.list_threads("u1", metadata_filter={"k": "v"})] == ["t3"]
    assert [t.id for t in memory.list_threads("u1", limit=1)] == ["t3"]


def test_a_thread_with_extraction_enabled_needs_an_extractor(make_client: ClientFactory, store: MemoryStore) -> None:
    client = make_client(memory_extraction_config=None)
    before = snapshot(store)
    with pytest.raises(ConfigurationError):
        client.create_thread(thread_id="t")
    with pytest.raises(ConfigurationError):
        client.create_thread(thread_id="t", memory_extraction_config=MemoryExtractionConfig(extract_memories=True))
    assert snapshot(store) == before
    client.create_thread(thread_id="t", memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    assert make_client(memory_extraction_config=None, extractor=ScriptedExtractor()).create_thread().thread_id


def test_reopening_an_extracting_thread_needs_an_extractor_too(make_client: ClientFactory) -> None:
    make_client(memory_extraction_config=None, extractor=ScriptedExtractor()).create_thread(thread_id="t")
    plain = make_client(memory_extraction_config=None)
    with pytest.raises(ConfigurationError):
        plain.get_thread("t")
    handle = plain.get_thread("t", memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    assert handle.settings.extraction.extract_memories is False


def _overwrite(store: MemoryStore, thread_id: str, **changes: object) -> None:
    from dataclasses import replace

    with store.unit_of_work() as uow:
        thread = uow.threads.get(thread_id)
        assert thread is not None
        uow.threads.update(replace(thread, **changes))  # type: ignore[arg-type]
        uow.commit()


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"max_message_token_length": "abc"}, "max_message_token_length must be an integer"),
        ({"context_card_token_limit": 1.5}, "context_card_token_limit must be an integer"),
        ({"memory_extraction_config": ["x"]}, "memory_extraction_config must be a JSON object"),
        ({"memory_extraction_config": {"memory_extraction_window": "7"}}, "memory_extraction_window must be an integer"),
    ],
    ids=repr,
)
def test_stored_thread_settings_that_do_not_parse_are_a_configuration_error_naming_them(
    memory: AgentMemory, store: MemoryStore, config: dict[str, object], named: str
) -> None:
    memory.create_thread(thread_id="t1", user_id="u1")
    _overwrite(store, "t1", config=config)
    before = snapshot(store)
    with pytest.raises(ConfigurationError, match=f"^thread config: {named}"):
        memory.get_thread("t1")
    with pytest.raises(ConfigurationError, match=f"^thread config: {named}"):
        memory.update_thread("t1", metadata={"k": 1})
    assert snapshot(store) == before


def test_a_stored_extraction_counter_that_does_not_parse_is_a_configuration_error(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    client = make_client(
        extractor=ScriptedExtractor(lambda request: []),
        memory_extraction_config=MemoryExtractionConfig(memory_extraction_frequency=2, extraction_mode="INLINE"),
    )
    thread = client.create_thread(thread_id="t1", user_id="u1")
    _overwrite(store, "t1", state={"memory_extraction_state": {"last_memory_extraction_counter": "abc"}})
    before = snapshot(store)
    with pytest.raises(ConfigurationError, match=r"^thread state: last_memory_extraction_counter must be"):
        thread.add_messages([{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
    assert snapshot(store) == before
