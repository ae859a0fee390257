"""Thread configuration the reference persists: ``message_shortening_input_token_limit``,
``search_config`` (its defaults feed the thread's searches and cards), the thread properties,
``llm`` (``None`` only), and the deprecated inline extraction keywords."""

from __future__ import annotations

import warnings

import pytest
from palimpsest.application import AgentMemory, MemoryExtractionConfig, TopKMemorySearchConfig
from palimpsest.application.config import MemorySearchConfig
from palimpsest.domain.errors import ConfigurationError, ValidationError

from .conftest import ClientFactory


def test_thread_properties_and_persisted_config(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u", max_message_token_length=900, message_shortening_input_token_limit=1200)
    assert (thread.max_message_token_length, thread.message_shortening_input_token_limit) == (900, 1200)
    reopened = memory.get_thread(thread.thread_id)
    assert (reopened.max_message_token_length, reopened.message_shortening_input_token_limit) == (900, 1200)
    assert memory.create_thread(user_id="u").message_shortening_input_token_limit == 30_000
    assert memory.create_thread(user_id="u", message_shortening_input_token_limit=0).message_shortening_input_token_limit == 0
    updated = memory.update_thread(thread.thread_id, message_shortening_input_token_limit=50)
    assert memory.get_thread(updated.thread_id).message_shortening_input_token_limit == 50
    with pytest.raises(ValidationError, match="message_shortening_input_token_limit must be an integer"):
        memory.create_thread(user_id="u", message_shortening_input_token_limit="many")  # type: ignore[arg-type]


def test_a_search_config_is_persisted_and_feeds_the_threads_searches(memory: AgentMemory) -> None:
    for i in range(5):
        memory.add_memory(f"Green tea note {i}.", user_id="u")
    thread = memory.create_thread(user_id="u", search_config=TopKMemorySearchConfig(max_results=2))
    assert len(thread.search("green tea")) == 2
    assert len(thread.search("green tea", max_results=4)) == 4, "an argument overrides the config"
    reopened = memory.get_thread(thread.thread_id)
    assert reopened.settings.search_config == TopKMemorySearchConfig(max_results=2)
    assert reopened.settings.to_json()["search_config"] == {"type": "top_k", "max_results": 2}
    assert len(reopened.search("green tea")) == 2
    memory.update_thread(thread.thread_id, search_config=None)
    assert len(memory.get_thread(thread.thread_id).search("green tea")) == 5
    # A budget in the config is the default of the thread's cards too.
    budgeted = memory.create_thread(user_id="u", search_config=MemorySearchConfig(token_budget=1))
    budgeted.add_messages([{"role": "user", "content": "green tea"}])
    with pytest.warns(UserWarning, match="token_budget below 1000"):
        assert budgeted.get_context_card().relevant_results == ()


def test_a_client_search_config_is_the_default_of_its_searches_and_threads(make_client: ClientFactory) -> None:
    client = make_client(search_config=TopKMemorySearchConfig(max_results=1))
    for i in range(3):
        client.add_memory(f"Green tea note {i}.", user_id="u")
    assert len(client.search("green tea", user_id="u")) == 1
    assert len(client.create_thread(user_id="u").search("green tea")) == 1
    with pytest.raises(ConfigurationError, match="search_config must be a MemorySearchConfig"):
        make_client(search_config={"max_results": 1})
    with pytest.raises(ConfigurationError, match="max_results exceeds"):
        TopKMemorySearchConfig(max_results=1001)


def test_llm_is_accepted_only_as_none(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u", llm=None)
    memory.get_thread(thread.thread_id, llm=None)
    with pytest.raises(ConfigurationError, match="llm= on a thread is accepted only as None"):
        memory.create_thread(user_id="u", llm=object())  # type: ignore[arg-type]


def test_deprecated_extraction_keywords_fold_into_the_config_with_a_warning(memory: AgentMemory) -> None:
    with pytest.warns(DeprecationWarning, match="memory_extraction_window"):
        thread = memory.create_thread(user_id="u", extract_memories=False, memory_extraction_window=7)
    assert thread.settings.extraction.memory_extraction_window == 7
    assert memory.get_thread(thread.thread_id).settings.extraction.memory_extraction_window == 7
    with pytest.warns(DeprecationWarning):
        updated = memory.update_thread(thread.thread_id, context_summary_update_frequency=3)
    assert updated.settings.extraction.context_summary_update_frequency == 3
    with pytest.warns(DeprecationWarning):
        assert memory.get_thread(thread.thread_id, enable_context_summary=False).settings.extraction.enable_context_summary is False
    with warnings.catch_warnings(), pytest.raises(ConfigurationError, match="not both"):
        warnings.simplefilter("error")
        memory.create_thread(
            user_id="u", extract_memories=False, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
        )
