"""Async twins, client configuration (embedder compatibility, strategies), inline extraction."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import AgentMemoryError, ConfigurationError, RecordType
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK, NO_EXTRACTION, snapshot


class _OtherModel(HashingEmbedder):
    """Same dimension, different model: its vectors must not be mixed with hashing-v1 ones."""

    @property
    def model_id(self) -> str:
        return "another-model-64"


# -- async twins -----------------------------------------------------------------------------


def test_async_twins_give_the_same_results_as_the_sync_methods(make_client: ClientFactory) -> None:
    client = make_client(summariser=ScriptedSummariser())
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    turns = [{"role": "user", "content": "I plan a trip to Rome."}, {"role": "assistant", "content": "Rome is lovely."}]
    ids = asyncio.run(thread.add_messages_async(turns))
    assert [m.id for m in thread.get_messages()] == ids
    asyncio.run(client.add_memory_async("The user likes Rome.", user_id="u", agent_id="a", memory_type="preference"))

    async def both() -> tuple[list[str], list[str], str, str]:
        client_hits = await client.search_async("Rome trip", user_id="u")
        thread_hits = await thread.search_async("Rome trip")
        card = await thread.get_context_card_async(max_recent_messages=1)
        summary = await thread.get_summary_async()
        return (
            [h.formatted_content for h in client_hits],
            [h.formatted_content for h in thread_hits],
            card.content,
            summary.content,
        )

    client_hits, thread_hits, card, summary = asyncio.run(both())
    assert client_hits == [h.formatted_content for h in client.search("Rome trip", user_id="u")]
    assert thread_hits == [h.formatted_content for h in thread.search("Rome trip")]
    assert card == thread.get_context_card(max_recent_messages=1).content
    assert summary == thread.get_summary().content
    assert "<preference>" in card


def test_async_twins_raise_the_same_errors(memory: AgentMemory) -> None:
    with pytest.raises(AgentMemoryError):
        asyncio.run(memory.search_async("x"))
    with pytest.raises(KeyError):
        asyncio.run(memory.get_thread_async("missing"))


def test_every_blocking_method_has_an_async_twin(memory: AgentMemory) -> None:
    thread = memory.create_thread()
    for name in ("create_thread", "get_thread", "update_thread", "delete_thread", "list_threads", "add_memory",
                 "update_memory", "delete_memory", "list_memories", "link_records", "update_record_link",
                 "delete_record_link", "search", "purge_expired", "close"):
        assert asyncio.iscoroutinefunction(getattr(memory, f"{name}_async")), name
    for name in ("add_messages", "get_messages", "get_message", "update_message", "delete_message", "get_summary",
                 "get_context_card", "search", "add_memory", "update_memory", "delete_memory", "link_records",
                 "update_record_link", "delete_record_link"):
        assert asyncio.iscoroutinefunction(getattr(thread, f"{name}_async")), name


# -- embedder compatibility ------------------------------------------------------------------


def test_an_embedder_of_another_dimension_than_the_store_is_refused(clock: ManualClock) -> None:
    store = InMemoryStore(dimension=32)
    with pytest.raises(ConfigurationError, match="32"):
        build_client(store, embedder=HashingEmbedder(64), clock=clock, memory_extraction_config=NO_EXTRACTION)
    assert snapshot(store)["settings"] == {"memory_retention_config": None, "embedding_model": None}
    build_client(store, embedder=HashingEmbedder(32), clock=clock, memory_extraction_config=NO_EXTRACTION)


def test_an_embedder_of_another_model_than_the_stores_vectors_is_refused(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    make_client().add_memory("made with hashing-v1-64")
    before = snapshot(store)
    with pytest.raises(ConfigurationError, match="another-model-64"):
        make_client(embedder=_OtherModel())
    with pytest.raises(ConfigurationError):
        make_client(embedder=HashingEmbedder(32))
    assert snapshot(store) == before
    assert before["settings"]["embedding_model"] == "hashing-v1-64"


def test_a_reopened_embedded_store_remembers_its_embedding_model(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "kept.db"
    options: dict[str, Any] = {"clock": clock, "memory_extraction_config": NO_EXTRACTION}
    with build_client(path=path, embedder=HashingEmbedder(), **options) as first:  # the root opens the file
        first.add_memory("x")
    with pytest.raises(ConfigurationError):
        build_client(path=path, embedder=_OtherModel(), **options)  # the root closes what it opened
    with build_client(path=path, embedder=HashingEmbedder(), **options) as client:
        assert [m.content for m in client.list_memories()] == ["x"]


@ARGUMENT_CHECK
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"search_strategy": "vector", "embedder": None}, "needs an embedder"),
        ({"search_strategy": "hybrid", "embedder": None}, "needs an embedder"),
        ({"search_strategy": "semantic"}, "search_strategy"),
        ({"memory_extraction_config": {"extract_memories": False}}, "MemoryExtractionConfig"),
        ({"memory_retention_config": {"default_ttl_days": 1}}, "MemoryRetentionConfig"),
    ],
)
def test_an_inconsistent_client_configuration_is_refused(
    make_client: ClientFactory, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make_client(**options)


def test_without_an_embedder_search_is_keyword_only(make_client: ClientFactory) -> None:
    client = make_client(embedder=None)
    client.add_memory("the user prefers sourdough pizza", user_id="u")
    client.add_memory("unrelated tax note", user_id="u")
    assert [r.content for r in client.search("sourdough", user_id="u")] == ["the user prefers sourdough pizza"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"extraction_mode": "SOMETIMES"},
        {"memory_link_extraction_mode": "ALWAYS"},
        {"background_extraction_queue_full_behavior": "EXPLODE"},
        {"memory_extraction_image_context": "memory"},
        {"memory_extraction_inherit_message_metadata": ["a", "a"]},
        {"memory_extraction_inherit_message_metadata": [""]},
        {"memory_extraction_inherit_message_metadata": "source"},
        {"memory_extraction_window": "3"},
        {"extract_memories": "yes"},
        {"background_extraction_queue_put_timeout_seconds": -1},
    ],
)
def test_extraction_configs_are_validated(arguments: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        MemoryExtractionConfig(**arguments)  # type: ignore[arg-type]


# -- inline extraction -----------------------------------------------------------------------


def _echo(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
    return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}", entities=("x",), importance=3) for m in request.target_messages]


@pytest.mark.parametrize("mode", [MemoryExtractionMode.INLINE, MemoryExtractionMode.BACKGROUND])
def test_extracted_memories_are_stored_in_the_thread_scope_before_add_messages_returns(
    make_client: ClientFactory, mode: MemoryExtractionMode
) -> None:
    extractor = ScriptedExtractor(_echo)
    config = MemoryExtractionConfig(extraction_mode=mode, memory_extraction_custom_instructions="Only facts.")
    client = make_client(extractor=extractor, memory_extraction_config=config)
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "I live in Rome.", "metadata": {"source": "chat"}}])
    thread.wait_for_memory_extraction()
    [record] = client.list_memories(thread_id="t")
    assert (record.record_type, record.content) == (RecordType.FACT, "Fact: I live in Rome.")
    assert (record.user_id, record.agent_id, record.thread_id) == ("u", "a", "t")
    assert record.metadata is not None and record.metadata["source"] == "chat"
    assert record.metadata["$agent_memory"]["importance"] == 3
    [request] = extractor.requests
    assert [m.content for m in request.target_messages] == ["I live in Rome."]
    assert request.custom_instructions == "Only facts."


def test_each_append_sends_only_the_new_messages_with_past_memories(make_client: ClientFactory) -> None:
    extractor = ScriptedExtractor([[ExtractedMemory(RecordType.PREFERENCE, "The user likes Rome.")], []])
    client = make_client(extractor=extractor, memory_extraction_config=None)
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "I like Rome."}])
    thread.add_messages([{"role": "user", "content": "Rome again, I really like it."}])
    thread.wait_for_memory_extraction()  # the default mode is BACKGROUND
    first, second = extractor.requests
    assert [m.content for m in second.target_messages] == ["Rome again, I really like it."]
    assert [m.content for m in second.past_memories] == ["The user likes Rome."]
    assert [m.content for m in first.past_memories] == []


def test_a_failing_extractor_never_loses_the_messages(make_client: ClientFactory, caplog: pytest.LogCaptureFixture) -> None:
    def broken(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        raise RuntimeError("model down")

    client = make_client(
        extractor=ScriptedExtractor(broken),
        memory_extraction_config=None,
        extraction_retry_policy=ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05),
    )
    thread = client.create_thread()
    ids = thread.add_messages([{"role": "user", "content": "still stored"}])
    assert [m.id for m in thread.get_messages()] == ids
    thread.wait_for_memory_extraction()
    assert "extraction failed" in caplog.text
