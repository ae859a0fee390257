"""The README's "Differences from the reference": every line that makes a claim, checked by running
code, in the order of the list. A line that stops being true fails here; fix the code or the line."""

from __future__ import annotations

import dataclasses
import inspect
import io
import tomllib
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import typer.main
from images_samples import png
from palimpsest import adapters, application
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.backends import parse_store_location
from palimpsest.adapters.cli.app import app
from palimpsest.adapters.heuristic import LexicalReranker
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.adapters.openai import LlmExtractor, LlmLinkResolver, LlmSummariser, OpenAIChatModel
from palimpsest.adapters.oracle import OracleStore, SchemaPolicy
from palimpsest.application import (
    AgentMemory,
    ApiOperationStartedEvent,
    Event,
    GenericEventListener,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OracleSearchResultFormatConfig,
    SearchResultFormatConfig,
    TopKMemorySearchConfig,
    register_event_listeners,
)
from palimpsest.application import observability as observability_module
from palimpsest.domain import MemoryRecord, Message, RecordLink
from palimpsest.domain.errors import ConfigurationError, DuplicateIdError, InvalidScopeError

README = Path(__file__).resolve().parents[1] / "README.md"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


@pytest.fixture
def memory() -> Iterator[AgentMemory]:
    with open_memory(":memory:", embedder=HashingEmbedder(), memory_extraction_config=NO_EXTRACTION) as client:
        yield client


def test_the_readme_has_the_list_and_names_this_module() -> None:
    text = README.read_text(encoding="utf-8")
    assert "## Differences from the reference" in text
    assert f"tests/{Path(__file__).name}" in text


def test_class_names_have_no_oracle_prefix_but_the_format_config_alias() -> None:
    for name in ("OracleAgentMemory", "OracleThread", "OracleContextCard", "OracleSearchResult", "OracleSummary"):
        assert not hasattr(application, name) and not hasattr(adapters, name)
    for name in ("AgentMemory", "MemoryThread", "ContextCard", "SearchResult", "Summary"):
        assert hasattr(application, name)
    assert OracleSearchResultFormatConfig is SearchResultFormatConfig


def test_models_are_ports_not_litellm_classes() -> None:
    parameters = inspect.signature(AgentMemory).parameters
    assert {"embedder", "summariser", "extractor", "link_resolver"} <= set(parameters)
    assert "llm" not in parameters
    assert not hasattr(adapters, "Llm") and not hasattr(application, "Llm")
    for adapter in (LlmExtractor, LlmSummariser, LlmLinkResolver):
        assert "model" in inspect.signature(adapter).parameters  # each takes the chat model
    assert {"client", "model"} <= set(inspect.signature(OpenAIChatModel).parameters)


def test_the_client_takes_a_store_and_a_url_carries_the_store_options() -> None:
    parameters = inspect.signature(AgentMemory).parameters
    assert "store" in parameters and "connection" not in parameters
    with pytest.raises(TypeError):
        AgentMemory(connection=object())  # type: ignore[call-arg]
    location = parse_store_location("oracle://scott:pw@db:1521/FREEPDB1?memory_store_id=ACME&schema_policy=require_existing")
    assert location.connection is not None
    assert (location.connection.memory_store_id, location.connection.schema_policy) == ("ACME", "require_existing")
    default = inspect.signature(OracleStore).parameters["schema_policy"].default
    assert default is SchemaPolicy.CREATE_IF_NECESSARY


def test_search_is_hybrid_by_default_with_an_embedder(memory: AgentMemory) -> None:
    assert memory.search_strategy == "hybrid"
    assert AgentMemory(store=InMemoryStore(), memory_extraction_config=NO_EXTRACTION).search_strategy == "keyword"


def test_a_link_names_its_ends_source_and_target_and_a_message_has_a_seq(memory: AgentMemory) -> None:
    names = {f.name for f in dataclasses.fields(RecordLink)}
    assert {"source_id", "source_type", "target_id", "target_type"} <= names
    assert not names & {"source_record_id", "source_record_type", "target_record_id", "target_record_type"}
    assert "seq" in {f.name for f in dataclasses.fields(Message)}
    memory.add_memory("The user likes tea.", memory_id="tea", user_id="u")
    memory.add_memory("The user likes green tea.", memory_id="green", user_id="u", memory_id_to_link="tea",
                      link_type="refines")
    [result] = [r for r in memory.search("green tea", user_id="u", num_hops=1) if r.id == "green"]
    link, _ = result.linked_results[0]
    assert isinstance(link, RecordLink) and (link.source_id, link.target_id) == ("green", "tea")


def test_timestamps_are_timezone_aware_datetimes(memory: AgentMemory) -> None:
    memory.add_memory("The user likes tea.", user_id="u", timestamp="2026-01-02T03:04:05Z")
    [record] = memory.list_memories(user_id="u")
    thread = memory.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "hello"}])
    [message] = thread.get_messages()
    [result] = memory.search("tea", user_id="u", record_types=["memory"])
    for value in (record.created_at, record.timestamp, message.created_at, result.timestamp):
        assert isinstance(value, datetime) and value.tzinfo is not None


def test_the_invalidation_reason_is_an_attribute_not_metadata(memory: AgentMemory) -> None:
    memory.add_memory("The user likes tea.", memory_id="old", user_id="u")
    memory.add_memory("The user now likes coffee.", user_id="u", memory_id_to_link="old", link_type="supersedes")
    [old] = [r for r in memory.list_memories(user_id="u") if r.id == "old"]
    assert isinstance(old, MemoryRecord)
    assert old.invalidation_reason == "Superseded by another memory." and old.invalidated_at is not None
    assert "$agent_memory" not in (old.metadata or {})


def test_a_card_without_a_model_gives_no_deprecation_warning(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": f"message {i}"} for i in range(3)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        card = thread.get_context_card()
    assert "<summary>" in card.content  # a transcript of recent messages stands in for the summary
    assert [w for w in caught if issubclass(w.category, DeprecationWarning)] == []


def test_show_metadata_sorts_the_keys_and_falls_back_for_keys_that_are_not_free_names(memory: AgentMemory) -> None:
    memory.add_memory("The user likes tea.", memory_id="m", user_id="u",
                      metadata={"source": "chat", "content": "x", "a b": "y", "channel": "sms"})
    [result] = memory.search("tea", user_id="u")
    element = ET.fromstring(result.format_content(SearchResultFormatConfig(show_metadata=True)))
    shown = [(child.tag, child.get("key"), child.text) for child in element if child.tag not in
             ("record_id", "timestamp", "status", "content")]
    assert shown == [
        ("metadata", "a b", "y"),
        ("channel", None, "sms"),
        ("metadata", "content", "x"),
        ("source", None, "chat"),
    ]


def test_events_come_from_the_facades_and_models_not_the_stores(memory: AgentMemory) -> None:
    assert not any(name.startswith("MemoryStore") for name in observability_module.__all__)
    events: list[Event] = []
    with register_event_listeners([GenericEventListener(ApiOperationStartedEvent, events.append)]):
        thread = memory.create_thread(user_id="u")
        thread.add_messages([{"role": "user", "content": "hello"}])
    assert [(e.component, e.api_class) for e in events] == [  # type: ignore[attr-defined]
        ("agent_memory", "AgentMemory"),
        ("thread", "MemoryThread"),
        ("embedder", "Embedder"),  # the message's vector
    ]


def test_the_command_line_is_palimpsest_with_its_oracle_commands() -> None:
    scripts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]
    assert set(scripts) == {"palimpsest"}
    command = typer.main.get_command(app)
    oracle = command.commands["oracle"]  # type: ignore[attr-defined]
    assert set(oracle.commands) == {"install", "check", "upgrade"}


def test_a_threads_llm_is_only_none_and_the_shortening_limit_is_stored() -> None:
    with open_memory(":memory:", embedder=HashingEmbedder(), memory_extraction_config=NO_EXTRACTION) as memory:
        thread = memory.create_thread(user_id="u", llm=None, message_shortening_input_token_limit=500)
        assert memory.get_thread(thread.thread_id).message_shortening_input_token_limit == 500
        with pytest.raises(ConfigurationError):
            memory.create_thread(user_id="u", llm=object())


def test_a_top_k_search_config_takes_no_reranker() -> None:
    with pytest.raises(ConfigurationError):
        TopKMemorySearchConfig(reranker=LexicalReranker())


def test_a_threads_record_commands_refuse_another_scope(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u", agent_id="a")
    for scope in ({"user_id": "v"}, {"agent_id": "b"}, {"thread_id": "elsewhere"}):
        with pytest.raises(InvalidScopeError):
            thread.add_memory("The user likes tea.", **scope)
    assert memory.list_memories(user_id="v") == [] and memory.list_memories(user_id="u") == []


def test_each_extracted_memory_takes_the_metadata_of_its_own_message() -> None:
    config = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)
    with open_memory(":memory:", embedder=HashingEmbedder(), memory_extraction_config=config) as memory:
        thread = memory.create_thread(user_id="u")
        thread.add_messages(
            [
                {"role": "user", "content": "My name is Carla.", "metadata": {"source": "chat"}},
                {"role": "user", "content": "I live in Rome.", "metadata": {"source": "email"}},
            ]
        )
        tagged = {m.content: (m.metadata or {}).get("source") for m in memory.list_memories(user_id="u")}
    assert {source for content, source in tagged.items() if "Rome" in content} == {"email"}
    assert {source for content, source in tagged.items() if "Carla" in content} == {"chat"}


def test_a_profile_id_shares_the_memory_namespace_and_a_thread_exact_search_leaves_profiles_out(
    memory: AgentMemory,
) -> None:
    memory.add_memory("The user likes tea.", user_id="u", memory_id="shared-id")
    with pytest.raises(DuplicateIdError):
        memory.add_user("shared-id", "A user whose id is taken.")
    memory.add_user("u", "Ursula, a tea merchant in Bergen.")
    thread = memory.create_thread(user_id="u")
    found = memory.search("tea merchant Bergen", user_id="u", record_types=["user_profile"])
    assert [r.record.id for r in found] == ["u"]
    exact = thread.search("tea merchant Bergen", exact_thread_match=True, record_types=["user_profile"])
    assert exact == []


def test_images_are_captioned_inline_left_out_of_exports_and_text_parts_come_back_joined(
    memory: AgentMemory,
) -> None:
    assert not inspect.iscoroutinefunction(memory.add_image)  # the caption is written before it returns
    memory.add_image(png(), "a red bicycle", user_id="u")
    out = io.StringIO()
    memory.admin.export(out)
    assert '"image"' not in out.getvalue()
    thread = memory.create_thread(user_id="u")
    thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look "},
                    {"type": "image", "bytes": png(seed=1), "description": "a cat"},
                    {"type": "text", "text": "at this."},
                ],
            }
        ]
    )
    (message,) = thread.get_messages()
    assert message.content == "Look at this."


def test_llm_pruning_and_deep_data_security_are_not_built() -> None:
    for name in ("PruningMemorySearchConfig", "PruningEvaluationMode", "DeepDataSecurityPolicy"):
        assert not hasattr(application, name) and not hasattr(adapters, name)
    assert "pruner_llm" not in inspect.signature(AgentMemory).parameters
