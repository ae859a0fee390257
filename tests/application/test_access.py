"""Memory bound to a principal (ARCHITECTURE.md D44): requests forced into the caller's user
(and agent), anyone else's records, threads and links not found, scopes checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from palimpsest.application import AccessScope, AgentMemory, Principal
from palimpsest.application.paging import MAX_PAGE_SIZE, Page
from palimpsest.application.requests import (
    AddMemory,
    AppendMessages,
    CardRequest,
    CreateThread,
    DeleteRecordLink,
    LinkRecords,
    ListRecords,
    ListThreads,
    SearchRequest,
    UpdateMemory,
    UpdateRecordLink,
)
from palimpsest.domain.errors import (
    InvalidScopeError,
    InvalidSettingsError,
    PermissionDeniedError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
)

ALICE = Principal("alice", scope=AccessScope.WRITE)
BOB = Principal("bob", scope=AccessScope.WRITE)


@pytest.fixture
def memory(root_client: Callable[..., AgentMemory]) -> AgentMemory:
    return root_client()


def test_principal_values_and_scope_order() -> None:
    assert Principal("u", scope="admin").may(AccessScope.WRITE)
    assert Principal("u", scope="write").may(AccessScope.READ)
    assert not Principal("u", scope="read").may(AccessScope.WRITE)
    assert Principal("u").scope is AccessScope.READ  # least privilege by default
    with pytest.raises(ValidationError):
        Principal("")
    with pytest.raises(ValidationError):
        Principal("u", scope="owner")
    assert Principal("u", "a").owns("u", "a") and not Principal("u", "a").owns("u", "b")
    assert Principal("u").owns("u", "b") and Principal("u").owns("u", None) and not Principal("u").owns("v", None)


def test_a_memory_added_for_a_principal_is_its_users_whatever_the_request_omits(memory: AgentMemory) -> None:
    alice = memory.acting_for(ALICE)
    record_id = alice.add_memory(AddMemory.from_json({"content": "Alice likes tea"}))
    assert memory.admin.get_record(record_id).user_id == "alice"
    with pytest.raises(InvalidScopeError):
        alice.add_memory(AddMemory.from_json({"content": "x", "user_id": "bob"}))
    with pytest.raises(InvalidScopeError):
        alice.add_memory(AddMemory.from_json({"content": "x", "user_id": None}))  # never widened to unscoped
    assert [r.id for r in memory.admin.list_records()] == [record_id]


def test_a_principal_with_an_agent_writes_and_reads_that_agents_records_only(memory: AgentMemory) -> None:
    bot = memory.acting_for(Principal("alice", "bot", AccessScope.WRITE))
    mine = bot.add_memory(AddMemory("from the bot"))
    assert memory.admin.get_record(mine).agent_id == "bot"
    other = memory.add_memory("from another agent", user_id="alice", agent_id="other")
    with pytest.raises(InvalidScopeError):
        bot.add_memory(AddMemory("x", agent_id="other"))
    assert [r.id for r in bot.list_memories(ListRecords())] == [mine]
    with pytest.raises(RecordNotFoundError):
        bot.get_memory(other)
    assert bot.delete_memory(other) == 0
    # the user's principal without an agent sees both
    assert {r.id for r in memory.acting_for(ALICE).list_memories(ListRecords())} == {mine, other}


def test_another_users_records_are_not_found_exactly_as_absent_ones(memory: AgentMemory) -> None:
    bobs = memory.acting_for(BOB).add_memory(AddMemory("Bob's secret"))
    bobs2 = memory.acting_for(BOB).add_memory(AddMemory("Bob's other"))
    link = memory.link_records(bobs, "memory", bobs2, "memory", "related_to")
    alice = memory.acting_for(ALICE)
    mine = alice.add_memory(AddMemory("Alice's"))
    for record_id in (bobs, "absent-id"):
        with pytest.raises(RecordNotFoundError) as caught:
            alice.get_memory(record_id)
        assert str(caught.value) == f"No memory record with id {record_id!r}."
        with pytest.raises(RecordNotFoundError, match=f"No memory record with id {record_id!r}."):
            alice.update_memory(UpdateMemory(record_id, content="pwned"))
        with pytest.raises(RecordNotFoundError):
            alice.link_records(LinkRecords(mine, "memory", record_id, "memory", "related_to"))
        with pytest.raises(RecordNotFoundError):
            alice.add_memory(AddMemory("x", memory_id_to_link=record_id, link_type="related_to"))
        with pytest.raises(RecordNotFoundError):
            alice.memory_history(record_id)
        assert alice.delete_memory(record_id) == 0
    assert alice.update_record_link(UpdateRecordLink(link, relation_type="supports")) == 0
    assert alice.delete_record_link(DeleteRecordLink(relation_id=link)) == 0
    assert alice.delete_record_link(DeleteRecordLink(bobs, "memory", bobs2, "memory", "related_to")) == 0
    assert memory.admin.get_record(bobs).content == "Bob's secret"
    assert len(memory.admin.links_among([bobs, bobs2])) == 1
    with pytest.raises(InvalidScopeError):
        alice.list_memories(ListRecords(user_id="bob"))


def test_searches_keep_to_the_callers_user(memory: AgentMemory) -> None:
    memory.acting_for(BOB).add_memory(AddMemory("the launch code is 1234"))
    alice = memory.acting_for(ALICE)
    alice.add_memory(AddMemory("the garden needs water"))
    found = alice.search(alice.search_request({"query": "launch code"}))
    assert found and all(r.record.user_id == "alice" for r in found)
    for body in (
        {"query": "launch code", "user_id": "bob"},
        {"query": "launch code", "exact_user_match": False},
        {"query": "launch code", "scope": {"user_id": "bob"}},
    ):
        with pytest.raises(InvalidScopeError):
            alice.search(alice.search_request(body))
    with pytest.raises(InvalidScopeError):
        alice.search(SearchRequest("launch code", user_id=None))


def test_threads_messages_and_cards_of_another_user_are_not_found(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="bob-thread", user_id="bob")
    memory.create_thread(thread_id="alice-thread", user_id="alice")
    alice = memory.acting_for(ALICE)
    for thread_id in ("bob-thread", "no-such-thread"):
        with pytest.raises(ThreadNotFoundError, match=f"No thread found with id {thread_id!r}."):
            alice.add_messages(thread_id, AppendMessages([{"role": "user", "content": "hi"}]))
        with pytest.raises(ThreadNotFoundError, match=f"No thread found with id {thread_id!r}."):
            alice.context_card(thread_id, CardRequest())
        with pytest.raises(ThreadNotFoundError):
            alice.add_memory(AddMemory("x", thread_id=thread_id))
    assert memory.admin.list_threads(user_id="bob")[0].message_count == 0
    ids = alice.add_messages("alice-thread", AppendMessages.from_json({"messages": [{"role": "user", "content": "hello"}]}))
    assert len(ids) == 1
    assert alice.context_card("alice-thread", CardRequest()) is not None


def test_a_read_only_principal_cannot_write(memory: AgentMemory) -> None:
    record_id = memory.add_memory("kept", user_id="alice")
    memory.create_thread(thread_id="t", user_id="alice")
    reader = memory.acting_for(Principal("alice", scope=AccessScope.READ))
    assert [r.id for r in reader.list_memories(ListRecords())] == [record_id]
    writes: list[Callable[[], object]] = [
        lambda: reader.add_memory(AddMemory("x")),
        lambda: reader.update_memory(UpdateMemory(record_id, content="y")),
        lambda: reader.delete_memory(record_id),
        lambda: reader.link_records(LinkRecords(record_id, "memory", record_id, "memory", "related_to")),
        lambda: reader.update_record_link(UpdateRecordLink("l1", relation_type="supports")),
        lambda: reader.delete_record_link(DeleteRecordLink(relation_id="l1")),
        lambda: reader.add_messages("t", AppendMessages([{"role": "user", "content": "hi"}])),
    ]
    for write in writes:
        with pytest.raises(PermissionDeniedError):
            write()
    assert [r.content for r in memory.admin.list_records()] == ["kept"]


def test_a_memorys_history_holds_its_links_to_the_callers_memories_only(memory: AgentMemory) -> None:
    alice = memory.acting_for(ALICE)
    old = alice.add_memory(AddMemory("Alice lives in Paris"))
    new = alice.add_memory(AddMemory("Alice lives in Rome", memory_id_to_link=old, link_type="supersedes"))
    history = alice.memory_history(old)
    assert history.record.id == old and set(history.related) == {new}
    assert [(lk.source_id, lk.target_id, lk.relation_type) for lk in history.links] == [(new, old, "supersedes")]


def test_acting_for_needs_a_principal(memory: AgentMemory) -> None:
    with pytest.raises(ValidationError):
        memory.acting_for("alice")  # type: ignore[arg-type]


def test_threads_listed_and_summarised_are_the_callers_own(memory: AgentMemory) -> None:
    from palimpsest.application.requests import ListThreads

    memory.create_thread(thread_id="bob-thread", user_id="bob")
    memory.create_thread(thread_id="alice-bot", user_id="alice", agent_id="bot")
    memory.create_thread(thread_id="alice-other", user_id="alice", agent_id="other")
    alice = memory.acting_for(ALICE)
    assert [t.id for t in alice.list_threads(ListThreads("alice"))] == ["alice-bot", "alice-other"]
    bot = memory.acting_for(Principal("alice", "bot"))
    assert [t.id for t in bot.list_threads(ListThreads("alice"))] == ["alice-bot"]
    for body in ({"user_id": "bob"}, {"user_id": None}):
        with pytest.raises(InvalidScopeError):
            alice.list_threads(ListThreads.from_json(body))
    with pytest.raises(InvalidScopeError):
        bot.list_threads(ListThreads("alice", agent_id="other"))
    assert alice.thread_summary("alice-bot").content == ""
    for thread_id in ("bob-thread", "alice-other-absent"):
        with pytest.raises(ThreadNotFoundError, match=f"No thread found with id {thread_id!r}."):
            alice.thread_summary(thread_id)
    with pytest.raises(ThreadNotFoundError):
        bot.thread_summary("alice-other")  # another agent's thread of the same user


def test_threads_created_for_a_principal_are_its_users_and_only_its_own_are_read(memory: AgentMemory) -> None:
    from palimpsest.application.requests import CreateThread
    from palimpsest.domain.errors import DuplicateIdError

    alice, bob = memory.acting_for(ALICE), memory.acting_for(BOB)
    thread = alice.create_thread(CreateThread.from_json({"metadata": {"topic": "tea"}}))
    assert (thread.user_id, thread.agent_id) == ("alice", None)
    assert memory.get_thread(thread.id).user_id == "alice"
    with pytest.raises(InvalidScopeError):
        alice.create_thread(CreateThread.from_json({"user_id": "bob"}))
    alice.add_messages(thread.id, AppendMessages([{"role": "user", "content": "I like green tea"}]))
    assert [m.content for m in alice.get_messages(thread.id)] == ["I like green tea"]
    assert alice.get_thread(thread.id).id == thread.id
    for call in (
        lambda: bob.get_thread(thread.id),
        lambda: bob.get_messages(thread.id),
        lambda: bob.delete_thread(thread.id),
        lambda: bob.add_messages(thread.id, AppendMessages([{"role": "user", "content": "hi"}])),
    ):
        with pytest.raises(ThreadNotFoundError):
            call()
    # A caller-chosen id already taken is a conflict that names no owner.
    with pytest.raises(DuplicateIdError) as taken:
        bob.create_thread(CreateThread.from_json({"thread_id": thread.id}))
    assert "alice" not in str(taken.value)
    assert len(memory.get_thread(thread.id).get_messages()) == 1
    with pytest.raises(PermissionDeniedError):
        memory.acting_for(Principal("alice")).create_thread(CreateThread.from_json({}))
    assert alice.delete_thread(thread.id) >= 1
    with pytest.raises(ThreadNotFoundError):
        memory.get_thread(thread.id)


def test_an_append_to_a_thread_re_created_under_another_owner_is_refused_in_its_own_transaction(
    memory: AgentMemory,
) -> None:
    """The ownership a server checked holds when the messages are written: a thread deleted and
    created again with the same id by another user between the check and the append is not
    written to (the append re-reads the owner inside its unit of work)."""
    from palimpsest.application.requests import CreateThread

    alice, bob = memory.acting_for(ALICE), memory.acting_for(BOB)
    thread = alice.create_thread(CreateThread.from_json({"thread_id": "shared-id"}))
    opened = memory.get_thread(thread.id)  # the handle alice's check produced
    memory.delete_thread(thread.id)
    bob.create_thread(CreateThread.from_json({"thread_id": "shared-id"}))
    with pytest.raises(ThreadNotFoundError):
        opened.add_messages([{"role": "user", "content": "meant for alice's thread"}])
    assert bob.get_messages("shared-id") == []


# -- cursor pages (ARCHITECTURE.md D45) ---------------------------------------------------------


def _all_pages(read: Callable[[str | None], Page[Any]], between: Callable[[], None] = lambda: None) -> list[Any]:
    """Every page's items, calling ``between`` after the first page."""
    page = read(None)
    items = list(page.items)
    between()
    while page.next_cursor is not None:
        page = read(page.next_cursor)
        items.extend(page.items)
    return items


def test_memory_pages_hold_each_of_the_callers_memories_once_while_more_are_added(memory: AgentMemory) -> None:
    alice, bob = memory.acting_for(ALICE), memory.acting_for(BOB)
    first = [alice.add_memory(AddMemory(content=f"alice {i}")) for i in range(5)]
    bob.add_memory(AddMemory(content="bob 0"))
    later: list[str] = []

    def add_more() -> None:
        later.extend(alice.add_memory(AddMemory(content=f"alice late {i}")) for i in range(2))
        bob.add_memory(AddMemory(content="bob late"))

    seen = _all_pages(lambda cursor: alice.memories_page(ListRecords(), limit=2, cursor=cursor), add_more)
    assert [r.id for r in seen] == first + later
    assert {r.user_id for r in seen} == {"alice"}


def test_thread_and_message_pages_hold_each_item_once_while_more_are_added(memory: AgentMemory) -> None:
    alice, bob = memory.acting_for(ALICE), memory.acting_for(BOB)
    threads = [alice.create_thread(CreateThread()).id for _ in range(3)]
    bob.create_thread(CreateThread())
    added: list[str] = []
    seen = _all_pages(
        lambda cursor: alice.threads_page(ListThreads(user_id="alice"), limit=2, cursor=cursor),
        lambda: added.append(alice.create_thread(CreateThread()).id),
    )
    assert [t.id for t in seen] == threads + added

    ids = alice.add_messages(threads[0], AppendMessages(messages=[{"role": "user", "content": f"m{i}"} for i in range(5)]))

    def append_more() -> None:
        ids.extend(alice.add_messages(threads[0], AppendMessages(messages=[{"role": "user", "content": "late"}])))

    seen = _all_pages(lambda cursor: alice.messages_page(threads[0], limit=2, cursor=cursor), append_more)
    assert [m.id for m in seen] == ids and len(ids) == 6
    with pytest.raises(ThreadNotFoundError):
        bob.messages_page(threads[0])


def test_a_page_refuses_a_bad_limit_and_a_cursor_it_did_not_give(memory: AgentMemory) -> None:
    alice = memory.acting_for(ALICE)
    thread = alice.create_thread(CreateThread())
    for i in range(3):
        alice.add_memory(AddMemory(content=f"m{i}"))
    alice.add_messages(thread.id, AppendMessages(messages=[{"role": "user", "content": f"m{i}"} for i in range(3)]))
    memory_cursor = alice.memories_page(ListRecords(), limit=1).next_cursor
    message_cursor = alice.messages_page(thread.id, limit=1).next_cursor
    assert memory_cursor is not None and message_cursor is not None
    for limit in (0, -1, MAX_PAGE_SIZE + 1, True, "2"):
        with pytest.raises(ValidationError, match="limit"):
            alice.memories_page(ListRecords(), limit=limit)  # type: ignore[arg-type]
    for cursor in ("", "not a cursor", "%%%", "W10", message_cursor, memory_cursor[:-2]):
        with pytest.raises(ValidationError, match="cursor"):
            alice.memories_page(ListRecords(), cursor=cursor)
    with pytest.raises(ValidationError, match="cursor"):
        alice.threads_page(ListThreads(user_id="alice"), cursor=memory_cursor)  # another listing's
    with pytest.raises(ValidationError, match="cursor"):
        alice.messages_page(thread.id, cursor=memory_cursor)
    assert len(alice.memories_page(ListRecords()).items) == 3  # the default page holds them all
    assert alice.memories_page(ListRecords()).next_cursor is None


def test_thread_settings_a_client_cannot_honour_are_invalid_settings(memory: AgentMemory) -> None:
    alice = memory.acting_for(ALICE)
    with pytest.raises(InvalidSettingsError, match="no extractor"):  # this client has none
        alice.create_thread(CreateThread.from_json({"memory_extraction_config": {"extract_memories": True}}))
    assert alice.list_threads(ListThreads(user_id="alice")) == []
