"""User and agent profiles (``add_user`` ... ``list_agents``) and ``list_messages`` on the client."""

from __future__ import annotations

import asyncio
import io

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory
from palimpsest.domain import DuplicateIdError, RecordNotFoundError, RecordType, ValidationError
from palimpsest.domain.ports import MemoryStore

from .helpers import ARGUMENT_CHECK, START, days, snapshot, stored_record


def _ids(items: object) -> list[str]:
    return [item.id for item in items]  # type: ignore[attr-defined]


def _found(memory: AgentMemory, query: str, **scope: object) -> list[tuple[str, str]]:
    return [(r.record.record_type.value, r.id) for r in memory.search(query, **scope)]  # type: ignore[arg-type]


def test_add_user_inserts_then_extends_the_profile_and_re_embeds_it(memory: AgentMemory, clock: ManualClock) -> None:
    assert memory.add_user("ann", "Ann is a pastry chef in Lyon.", metadata={"tier": "gold"}) == "ann"
    clock.advance(days(1))
    assert memory.add_user("ann", "Ann grows tomatoes in Marseille.") == "ann"
    [profile] = memory.list_users()
    assert (profile.id, profile.record_type, profile.content) == ("ann", RecordType.USER_PROFILE, "Ann grows tomatoes in Marseille.")
    assert profile.metadata == {"tier": "gold"}  # omitted metadata is kept
    assert profile.updated_at > profile.created_at
    assert _found(memory, "tomatoes Marseille", user_id="ann") == [("user_profile", "ann")]
    assert _found(memory, "pastry Lyon", user_id="ann", search_strategy="keyword") == []
    memory.add_user("ann", "Ann grows tomatoes.", metadata=None)
    assert memory.list_users()[0].metadata is None


def test_profiles_are_searchable_by_their_owner_only_and_by_type(memory: AgentMemory) -> None:
    memory.add_user("ann", "Ann loves sourdough bread.")
    memory.add_user("bob", "Bob loves sourdough bread as well.")
    memory.add_agent("baker", "The baker agent knows sourdough bread.")
    memory.add_memory("Ann bakes sourdough bread on Sundays.", user_id="ann", agent_id="baker", memory_id="m1")
    assert sorted(_found(memory, "sourdough bread", user_id="ann")) == [("memory", "m1"), ("user_profile", "ann")]
    assert _found(memory, "sourdough bread", user_id="ann", record_types=["user_profile"]) == [("user_profile", "ann")]
    assert _found(memory, "sourdough bread", user_id="ann", record_types=["agent_profile"]) == []
    assert _found(memory, "sourdough bread", user_id=None, agent_id="baker") == [("agent_profile", "baker")]
    # the user profile has no agent: a search exact on an agent finds the memory only
    assert _found(memory, "sourdough bread", user_id="ann", agent_id="baker") == [("memory", "m1")]
    result = memory.search("sourdough bread", user_id="ann", record_types=["user_profile"])[0]
    assert result.formatted_content.startswith("<user_profile>")


def test_a_profile_is_not_a_memory(memory: AgentMemory) -> None:
    memory.add_user("ann", "Ann likes tea.")
    memory.add_memory("Ann likes green tea.", user_id="ann", memory_id="m1")
    assert _ids(memory.list_memories(user_id="ann")) == ["m1"]
    assert memory.delete_memory("ann") == 0
    with pytest.raises(RecordNotFoundError):
        memory.update_memory("ann", content="changed")
    with pytest.raises(RecordNotFoundError):
        memory.link_records("m1", "memory", "ann", "memory", "supports")
    with pytest.raises(ValidationError):
        memory.link_records("m1", "memory", "ann", "user_profile", "supports")
    assert memory.list_users()[0].content == "Ann likes tea."


def test_list_users_and_agents_filter_metadata_and_keep_the_newest(memory: AgentMemory, clock: ManualClock) -> None:
    for name in ("ann", "bob", "cid"):
        memory.add_user(name, f"{name} profile", metadata={"team": "red"} if name != "bob" else None)
        clock.advance(days(1))
    memory.add_agent("baker", "An agent")
    assert _ids(memory.list_users()) == ["ann", "bob", "cid"]
    assert _ids(memory.list_users(metadata_filter={"team": "red"})) == ["ann", "cid"]
    assert _ids(memory.list_users(metadata_filter=None)) == ["bob"]
    assert _ids(memory.list_users(limit=2)) == ["bob", "cid"]
    assert _ids(memory.list_users(limit=None)) == ["ann", "bob", "cid"]
    assert _ids(memory.list_agents()) == ["baker"]


def test_a_profile_id_taken_by_another_record_is_refused_and_nothing_is_written(
    memory: AgentMemory, store: MemoryStore
) -> None:
    memory.add_memory("a memory", memory_id="shared")
    memory.add_agent("bot", "An agent")
    before = snapshot(store)
    with pytest.raises(DuplicateIdError):
        memory.add_user("shared", "A user")
    with pytest.raises(DuplicateIdError):
        memory.add_user("bot", "A user named like the agent")
    assert snapshot(store) == before


@ARGUMENT_CHECK
def test_bad_profile_arguments_write_nothing(memory: AgentMemory, store: MemoryStore) -> None:
    before = snapshot(store)
    for call in (
        lambda: memory.add_user("", "x"),
        lambda: memory.add_user("ann", None),  # type: ignore[arg-type]
        lambda: memory.add_user("ann", "   "),
        lambda: memory.add_user("ann", "x", metadata=[1]),  # type: ignore[arg-type]
        lambda: memory.add_agent(None, "x"),  # type: ignore[arg-type]
        lambda: memory.delete_user("ann", cascade="yes"),  # type: ignore[arg-type]
        lambda: memory.list_users(limit=0),
        lambda: memory.list_messages(user_id=""),
    ):
        with pytest.raises(ValidationError):
            call()
    assert snapshot(store) == before


def _populate(memory: AgentMemory, user: str, agent: str) -> None:
    memory.add_user(user, f"{user} profile")
    thread = memory.create_thread(thread_id=f"{user}-{agent}", user_id=user, agent_id=agent)
    thread.add_messages([{"role": "user", "content": f"I am {user}."}])
    thread.add_memory(f"{user} lives somewhere.", memory_id=f"{user}-{agent}-thread-memory")
    memory.add_memory(f"{user} likes tea.", user_id=user, agent_id=agent, memory_id=f"{user}-{agent}-memory")
    memory.add_memory(f"{user} likes coffee.", user_id=user, memory_id=f"{user}-plain-memory")


def test_delete_user_cascades_over_that_users_data_only(
    memory: AgentMemory, store: MemoryStore, clock: ManualClock
) -> None:
    _populate(memory, "ann", "barista")
    _populate(memory, "bob", "barista")
    memory.add_memory("Ann's expiring note.", user_id="ann", memory_id="ann-expiring", ttl_days=1)
    memory.add_memory("Bob's expiring note.", user_id="bob", memory_id="bob-expiring", ttl_days=1)
    clock.advance(days(2))  # both expired, neither purged: still stored
    bob_before = (
        _ids(memory.list_users()[1:]),
        _ids(memory.list_threads("bob")),
        _ids(memory.list_messages(user_id="bob")),
        _ids(memory.list_memories(user_id="bob")),
    )
    assert memory.delete_user("ann") == 1
    assert _ids(memory.list_users()) == ["bob"]
    assert memory.list_threads("ann") == []
    assert memory.list_messages(user_id="ann") == []
    assert memory.list_memories(user_id="ann") == []
    assert _found(memory, "ann", user_id="ann") == []
    bob_after = (
        _ids(memory.list_users()),
        _ids(memory.list_threads("bob")),
        _ids(memory.list_messages(user_id="bob")),
        _ids(memory.list_memories(user_id="bob")),
    )
    assert bob_after == bob_before
    assert stored_record(store, "ann-expiring") is None  # an expired row not yet purged goes too
    assert stored_record(store, "bob-expiring") is not None
    assert memory.delete_user("ann") == 0


def test_delete_user_cascades_without_a_profile_and_not_without_cascade(memory: AgentMemory) -> None:
    _populate(memory, "ann", "barista")
    assert memory.delete_user("ann", cascade=False) == 1
    assert memory.list_users() == [] and len(memory.list_memories(user_id="ann")) == 3
    assert memory.delete_user("ann") == 0  # no profile left, the data goes all the same
    assert memory.list_memories(user_id="ann") == [] and memory.list_threads("ann") == []


def test_delete_agent_cascades_over_that_agents_data_only(memory: AgentMemory) -> None:
    _populate(memory, "ann", "barista")
    _populate(memory, "bob", "baker")
    memory.add_agent("barista", "Makes coffee.")
    memory.add_agent("baker", "Bakes bread.")
    assert memory.delete_agent("barista") == 1
    assert _ids(memory.list_agents()) == ["baker"]
    assert memory.list_messages(agent_id="barista") == []
    assert memory.list_memories(agent_id="barista") == []
    assert _ids(memory.list_threads("ann")) == []
    assert _ids(memory.list_threads("bob")) == ["bob-baker"]
    # ann's records outside the agent's scope stay: her profile and her agentless memory
    assert _ids(memory.list_users()) == ["ann", "bob"]
    assert _ids(memory.list_memories(user_id="ann")) == ["ann-plain-memory"]
    assert len(memory.list_memories(user_id="bob")) == 3


def test_list_messages_scopes_filters_and_limits(memory: AgentMemory, clock: ManualClock) -> None:
    t1 = memory.create_thread(thread_id="t1", user_id="ann", agent_id="barista")
    t2 = memory.create_thread(thread_id="t2", user_id="bob", agent_id="barista")
    t3 = memory.create_thread(thread_id="t3")
    t1.add_messages([{"id": "a1", "role": "user", "content": "one"}, {"id": "a2", "role": "assistant", "content": "two", "metadata": {"k": 1}}])
    clock.advance(days(1))
    t2.add_messages([{"id": "b1", "role": "user", "content": "bob here"}])
    clock.advance(days(1))
    t3.add_messages([{"id": "n1", "role": "user", "content": "nobody"}])
    assert _ids(memory.list_messages()) == ["a1", "a2", "b1", "n1"]
    assert _ids(memory.list_messages(user_id="ann")) == ["a1", "a2"]
    assert _ids(memory.list_messages(agent_id="barista", limit=2)) == ["a2", "b1"]
    assert _ids(memory.list_messages(thread_id="t2")) == ["b1"]
    assert _ids(memory.list_messages(user_id=None)) == ["n1"]
    assert _ids(memory.list_messages(metadata_filter={"k": 1})) == ["a2"]
    assert _ids(memory.list_messages(metadata_filter=None)) == ["a1", "b1", "n1"]
    assert _ids(memory.list_messages(include_image_bytes=True)) == ["a1", "a2", "b1", "n1"]  # no images: as without


def test_the_async_twins_run(memory: AgentMemory) -> None:
    async def run() -> tuple[object, ...]:
        return (
            await memory.add_user_async("ann", "Ann"),
            await memory.add_agent_async("bot", "Bot"),
            _ids(await memory.list_users_async()),
            _ids(await memory.list_agents_async()),
            await memory.list_messages_async(),
            await memory.delete_user_async("ann"),
            await memory.delete_agent_async("bot", cascade=False),
        )

    assert asyncio.run(run()) == ("ann", "bot", ["ann"], ["bot"], [], 1, 1)


def test_a_context_card_shows_no_profile(memory: AgentMemory) -> None:
    """Profiles are search hits only (as in the reference): a card's relevant information holds
    the thread's memories and messages, never its user's or agent's profile."""
    memory.add_user("ann", "Ann is allergic to peanuts and loves baking.")
    memory.add_agent("baker", "The baker agent knows peanuts and baking.")
    thread = memory.create_thread(thread_id="t", user_id="ann", agent_id="baker")
    thread.add_messages([{"role": "user", "content": "Any baking ideas without peanuts?"}])
    thread.add_memory("Ann bakes with almonds instead of peanuts.")
    card = thread.get_context_card().content
    assert "almonds" in card
    assert "allergic" not in card and "baker agent" not in card


def test_an_export_carries_the_profiles_and_an_import_restores_them(memory: AgentMemory, store: MemoryStore) -> None:
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.transfer import export_store, import_items, read_items

    memory.add_user("ann", "Ann, a pastry chef.", metadata={"tier": "gold"})
    memory.add_agent("baker", "A baking assistant.")
    out = io.StringIO()
    export_store(store, out)
    target = InMemoryStore()
    import_items(target, read_items(out.getvalue().splitlines()))
    with target.reading() as uow:
        restored = uow.records.list(now=START, limit=None)
    assert [(r.id, r.record_type, r.content, r.metadata) for r in restored] == [
        ("ann", RecordType.USER_PROFILE, "Ann, a pastry chef.", {"tier": "gold"}),
        ("baker", RecordType.AGENT_PROFILE, "A baking assistant.", None),
    ]
