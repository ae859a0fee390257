"""Reference features at the boundary: ``SearchStrategy`` as an enum (strings still accepted),
the ``token_budget < 1000`` warning, ``status=`` through a thread handle, and a thread's own
scope on the shared record methods."""

from __future__ import annotations

import warnings

import pytest
from palimpsest.application import AgentMemory, MemoryThread, SearchStrategy
from palimpsest.domain.errors import ConfigurationError, InvalidScopeError, InvalidSearchError
from palimpsest.domain.model import RecordStatus

from .conftest import ClientFactory
from .helpers import stored_record

SMALL = "token_budget below 1000 may return no search results."


@pytest.fixture
def thread(memory: AgentMemory) -> MemoryThread:
    thread = memory.create_thread(user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": "I like green tea and long walks."}])
    memory.add_memory("Likes green tea.", user_id="u", agent_id="a")
    return thread


def test_search_strategy_is_a_str_enum_and_strings_still_work(make_client: ClientFactory) -> None:
    assert [s.value for s in SearchStrategy] == ["vector", "hybrid", "keyword"]
    assert SearchStrategy.HYBRID == "hybrid"
    client = make_client(search_strategy=SearchStrategy.VECTOR)
    assert client.search_strategy is SearchStrategy.VECTOR
    assert make_client(search_strategy="keyword").search_strategy is SearchStrategy.KEYWORD
    assert make_client().search_strategy is SearchStrategy.HYBRID
    client.add_memory("Likes green tea.", user_id="u")
    for strategy in (SearchStrategy.KEYWORD, "keyword", SearchStrategy.HYBRID, "vector"):
        assert [r.content for r in client.search("green tea", user_id="u", search_strategy=strategy)] == ["Likes green tea."]
    with pytest.raises(InvalidSearchError, match="search_strategy must be"):
        client.search("tea", user_id="u", search_strategy="semantic")
    with pytest.raises(ConfigurationError, match="search_strategy must be"):
        make_client(search_strategy="semantic")


def test_a_small_token_budget_warns_once_per_search_and_card(memory: AgentMemory, thread: MemoryThread) -> None:
    with pytest.warns(UserWarning, match=SMALL) as caught:
        memory.search("tea", user_id="u", token_budget=999)
    assert len([w for w in caught if str(w.message) == SMALL]) == 1
    with pytest.warns(UserWarning, match=SMALL) as caught:
        thread.search("tea", token_budget=1)
    assert len([w for w in caught if str(w.message) == SMALL]) == 1
    with pytest.warns(UserWarning, match=SMALL) as caught:
        thread.get_context_card(token_budget=500)
    assert len([w for w in caught if str(w.message) == SMALL]) == 1


@pytest.mark.parametrize("budget", [1000, 5000, 0, -3, None])
def test_a_budget_of_1000_or_more_or_a_disabled_one_does_not_warn(
    memory: AgentMemory, thread: MemoryThread, budget: int | None
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.search("tea", user_id="u", token_budget=budget)
        thread.get_context_card(token_budget=budget)


def test_a_thread_sets_the_status_of_its_own_memories(memory: AgentMemory, thread: MemoryThread) -> None:
    mid = thread.add_memory("Prefers window seats.", status="invalid")
    record = stored_record(memory.store, mid)
    assert record is not None and record.status is RecordStatus.INVALID
    assert (record.user_id, record.agent_id, record.thread_id) == ("u", "a", thread.thread_id)
    thread.update_memory(mid, status=RecordStatus.VALID)
    record = stored_record(memory.store, mid)
    assert record is not None and record.status is RecordStatus.VALID


def test_a_thread_writes_only_into_its_own_scope(memory: AgentMemory, thread: MemoryThread) -> None:
    mid = thread.add_memory("Walks daily.", user_id="u", thread_id=thread.thread_id)
    record = stored_record(memory.store, mid)
    assert record is not None and record.thread_id == thread.thread_id
    for keywords in ({"user_id": "other"}, {"user_id": None}, {"agent_id": "b"}, {"thread_id": "elsewhere"}):
        with pytest.raises(InvalidScopeError, match="own scope"):
            thread.add_memory("Not here.", **keywords)  # type: ignore[arg-type]
    assert [r.content for r in memory.list_memories(user_id="u")] == ["Likes green tea.", "Walks daily."]
