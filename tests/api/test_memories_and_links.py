"""Memories and typed links through the client and through thread handles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from palimpsest.application import AgentMemory, MemoryThread
from palimpsest.domain import (
    ConflictError,
    CrossScopeLinkError,
    DuplicateIdError,
    InvalidScopeError,
    LinkExistsError,
    LinkOrientationError,
    RecordLink,
    RecordNotFoundError,
    RecordStatus,
    RecordType,
    SelfLinkError,
    Thread,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.model import MemoryRecord
from palimpsest.domain.ports import MemoryStore

from .helpers import ARGUMENT_CHECK, START, snapshot, stored_link, stored_record


def _pizza(memory: AgentMemory) -> tuple[str, str, str]:
    thin = memory.add_memory("Preferred pizza: thin crust.", memory_id="thin", memory_type="preference", user_id="u")
    sour = memory.add_memory("Now prefers sourdough pizza.", memory_id="sour", memory_type="preference", user_id="u")
    neap = memory.add_memory("Prefers Neapolitan sourdough.", memory_id="neap", memory_type="preference", user_id="u")
    return thin, sour, neap


def _status(store: MemoryStore, record_id: str) -> RecordStatus:
    record = stored_record(store, record_id)
    assert record is not None
    return record.status


# -- memories --------------------------------------------------------------------------------


def test_add_memory_stores_a_memory_with_a_generated_id_by_default(memory: AgentMemory) -> None:
    memory_id = memory.add_memory("The user likes jazz.", user_id="u", agent_id="a", metadata={"src": "chat"})
    [record] = memory.list_memories(user_id="u")
    assert record.id == memory_id and len(memory_id) == 36
    assert record.record_type is RecordType.MEMORY
    assert (record.content, record.user_id, record.agent_id, record.thread_id) == ("The user likes jazz.", "u", "a", None)
    assert record.metadata == {"src": "chat"} and record.status is RecordStatus.VALID


@pytest.mark.parametrize("memory_type", ["memory", "fact", "guideline", "preference"])
def test_every_memory_like_type_can_be_added(memory: AgentMemory, memory_type: str) -> None:
    memory_id = memory.add_memory("something", memory_type=memory_type)
    assert memory.list_memories()[0].record_type.value == memory_type
    assert memory_id


@ARGUMENT_CHECK
@pytest.mark.parametrize("memory_type", ["message", "note", "", None, 3])
def test_an_unknown_memory_type_is_rejected(memory: AgentMemory, store: MemoryStore, memory_type: object) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="memory_type must be one of"):
        memory.add_memory("x", memory_type=memory_type)  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_a_taken_memory_id_is_a_conflict(memory: AgentMemory, store: MemoryStore) -> None:
    memory.add_memory("one", memory_id="m")
    before = snapshot(store)
    with pytest.raises(DuplicateIdError):
        memory.add_memory("two", memory_id="m")
    assert snapshot(store) == before


def test_list_memories_filters_by_scope_where_none_means_unscoped(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", user_id="u")
    memory.add_memory("u only", memory_id="1", user_id="u")
    memory.add_memory("u and a", memory_id="2", user_id="u", agent_id="a")
    memory.add_memory("unscoped", memory_id="3")
    memory.add_memory("in thread", memory_id="4", user_id="u", thread_id="t", metadata={"k": 1})
    def ids(records: list[Any]) -> list[str]:
        return [r.id for r in records]

    assert ids(memory.list_memories()) == ["1", "2", "3", "4"]
    assert ids(memory.list_memories(user_id="u")) == ["1", "2", "4"]
    assert ids(memory.list_memories(user_id=None)) == ["3"]
    assert ids(memory.list_memories(user_id="u", agent_id=None)) == ["1", "4"]
    assert ids(memory.list_memories(thread_id="t")) == ["4"]
    assert ids(memory.list_memories(metadata_filter={"k": 1})) == ["4"]
    assert ids(memory.list_memories(metadata_filter=None)) == ["1", "2", "3"]
    assert ids(memory.list_memories(limit=2)) == ["3", "4"]


def test_listings_without_a_limit_return_every_row_past_ten_thousand(
    memory: AgentMemory, store: MemoryStore
) -> None:
    """Omitting ``limit`` drops nothing (there used to be a silent cap of 10,000 rows)."""
    count = 10_003
    created = START + timedelta(seconds=1)
    with store.unit_of_work() as uow:
        for n in range(count):
            uow.threads.add(Thread(id=f"t{n:05}", created_at=created, updated_at=created, user_id="u"))
            uow.records.add(MemoryRecord(id=f"m{n:05}", record_type=RecordType.MEMORY, content=f"note {n}",
                                         created_at=created, updated_at=created, user_id="u"))
        uow.commit()

    listed = memory.list_memories(user_id="u")
    assert len(listed) == count and listed[0].id == "m00000" and listed[-1].id == f"m{count - 1:05}"
    assert len(memory.list_memories(user_id="u", limit=None)) == count
    assert [r.id for r in memory.list_memories(user_id="u", limit=2)] == ["m10001", "m10002"]
    assert len(memory.list_threads("u")) == count
    assert [t.id for t in memory.list_threads("u", limit=1)] == ["t10002"]

def test_update_memory_changes_content_metadata_and_time_but_never_scope(memory: AgentMemory, store: MemoryStore) -> None:
    memory_id = memory.add_memory("lives in Paris", user_id="u", metadata={"a": 1})
    memory.update_memory(memory_id, "lives in Rome", metadata={"b": 2}, timestamp="2026-02-02T00:00:00Z")
    record = stored_record(store, memory_id)
    assert record is not None
    assert (record.content, record.metadata, record.user_id) == ("lives in Rome", {"b": 2}, "u")
    assert record.timestamp == datetime(2026, 2, 2, tzinfo=UTC)
    assert [r.content for r in memory.search("Rome", user_id="u")] == ["lives in Rome"]
    memory.update_memory(memory_id, metadata=None)
    assert stored_record(store, memory_id).metadata is None  # type: ignore[union-attr]


@ARGUMENT_CHECK
def test_update_memory_rejects_none_content_no_fields_and_scope_changes(memory: AgentMemory, store: MemoryStore) -> None:
    memory_id = memory.add_memory("keep", user_id="u")
    before = snapshot(store)
    with pytest.raises(ValidationError):
        memory.update_memory(memory_id, None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.update_memory(memory_id)
    with pytest.raises(TypeError):
        memory.update_memory(memory_id, "x", user_id="other")  # type: ignore[call-arg]
    with pytest.raises(RecordNotFoundError):
        memory.update_memory("missing", "x")
    assert snapshot(store) == before


def test_delete_memory_removes_it_and_revalidates_what_it_superseded(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    memory.link_records(sour, "preference", thin, "preference", "supersedes")
    assert _status(store, thin) is RecordStatus.INVALID
    assert memory.delete_memory(sour) == 1
    assert memory.delete_memory(sour) == 0
    assert stored_record(store, sour) is None
    assert _status(store, thin) is RecordStatus.VALID
    assert snapshot(store)["links"] == []


# -- linking at creation ----------------------------------------------------------------------


def test_a_memory_linked_at_creation_inherits_the_targets_agent_and_thread(memory: AgentMemory, store: MemoryStore) -> None:
    memory.create_thread(thread_id="t", user_id="u", agent_id="a")
    old = memory.add_memory("old address", memory_type="fact", user_id="u", agent_id="a", thread_id="t")
    new = memory.add_memory(
        "new address",
        memory_type="fact",
        user_id="u",
        memory_id_to_link=old,
        link_type="supersedes",
        link_id="L1",
        link_metadata={"why": "moved"},
        link_timestamp="2026-01-05T00:00:00Z",
    )
    record = stored_record(store, new)
    assert record is not None and (record.user_id, record.agent_id, record.thread_id) == ("u", "a", "t")
    link = stored_link(store, "L1")
    assert link is not None
    assert (link.source_id, link.target_id, link.relation_type, link.opposite_relation_type) == (
        new,
        old,
        "supersedes",
        "is_superseded_by",
    )
    assert link.metadata == {"why": "moved"} and link.timestamp == datetime(2026, 1, 5, tzinfo=UTC)
    assert _status(store, old) is RecordStatus.INVALID


def test_explicit_scopes_win_over_the_inherited_ones(memory: AgentMemory, store: MemoryStore) -> None:
    old = memory.add_memory("shared fact", user_id="u", agent_id="a")
    new = memory.add_memory("agent-free note", user_id="u", agent_id=None, memory_id_to_link=old, link_type="supports")
    record = stored_record(store, new)
    assert record is not None and (record.user_id, record.agent_id) == ("u", None)


# -- links stay inside one user ----------------------------------------------------------------


@pytest.fixture
def tenants(memory: AgentMemory) -> dict[str, str]:
    """A record of user u, one of user v, one of u's agent a, one of u's agent b, and a global one."""
    return {
        "u": memory.add_memory("u lives in Paris", memory_id="u1", memory_type="fact", user_id="u"),
        "v": memory.add_memory("v lives in Oslo", memory_id="v1", memory_type="fact", user_id="v"),
        "ua": memory.add_memory("u's agent a note", memory_id="ua", memory_type="fact", user_id="u", agent_id="a"),
        "ub": memory.add_memory("u's agent b note", memory_id="ub", memory_type="fact", user_id="u", agent_id="b"),
        "global": memory.add_memory("Paris is in France", memory_id="g1", memory_type="fact"),
    }


@pytest.mark.parametrize("relation", ["supersedes", "duplicates", "supports", "mentions"])
@pytest.mark.parametrize(
    ("source", "target"),
    [("u", "v"), ("v", "u"), ("ua", "ub"), ("global", "u"), ("global", "ua")],
)
def test_a_link_between_two_users_or_agents_or_from_a_global_record_is_refused(
    memory: AgentMemory, store: MemoryStore, tenants: dict[str, str], source: str, target: str, relation: str
) -> None:
    before = snapshot(store)
    with pytest.raises(CrossScopeLinkError):
        memory.link_records(tenants[source], "fact", tenants[target], "fact", relation)
    assert snapshot(store) == before
    assert _status(store, tenants[target]) is RecordStatus.VALID


@pytest.mark.parametrize(("source", "target"), [("u", "global"), ("ua", "u"), ("u", "ub"), ("ua", "global")])
def test_a_user_s_record_links_inside_its_user_or_to_a_global_record(
    memory: AgentMemory, store: MemoryStore, tenants: dict[str, str], source: str, target: str
) -> None:
    link_id = memory.link_records(tenants[source], "fact", tenants[target], "fact", "supports")
    link = stored_link(store, link_id)
    assert link is not None and (link.source_id, link.target_id) == (tenants[source], tenants[target])


def test_a_memory_linked_at_creation_without_a_user_takes_the_target_s_user_agent_and_thread(
    memory: AgentMemory, store: MemoryStore
) -> None:
    """As the reference does: an omitted user (and agent, thread) is the link target's. Before,
    the call wrote an unscoped record and was refused with a ``CrossScopeLinkError`` naming
    the new memory's generated id, which the caller never saw."""
    memory.create_thread(thread_id="t", user_id="u", agent_id="a")
    target = memory.add_memory("u lives in Paris", memory_id="tg", memory_type="fact", user_id="u",
                               agent_id="a", thread_id="t")
    child = memory.add_memory("u moved to Rome", memory_type="fact", memory_id_to_link=target,
                              link_type="supersedes")
    record = stored_record(store, child)
    assert record is not None and (record.user_id, record.agent_id, record.thread_id) == ("u", "a", "t")
    [link] = snapshot(store)["links"]
    assert (link.source_id, link.target_id, link.relation_type) == (child, target, "supersedes")
    assert _status(store, target) is RecordStatus.INVALID


@pytest.mark.parametrize(
    ("scope", "named"),
    [({"user_id": None}, "pass user_id='u'"), ({"user_id": "v"}, "pass user_id='u'"),
     ({"user_id": "u", "agent_id": "b"}, "pass agent_id='a'")],
)
def test_a_memory_linked_at_creation_with_another_scope_is_refused_naming_the_target_and_what_to_pass(
    memory: AgentMemory, store: MemoryStore, scope: dict[str, str | None], named: str
) -> None:
    """An explicit scope that conflicts with the target's is refused, and writes nothing; the
    error names the target (an id the caller gave) and the value to pass, never the new
    memory's generated id."""
    target = memory.add_memory("u lives in Paris", memory_id="tg", memory_type="fact", user_id="u", agent_id="a")
    before = snapshot(store)
    with pytest.raises(CrossScopeLinkError) as caught:
        memory.add_memory("u moved to Rome", memory_type="fact", memory_id_to_link=target,
                          link_type="supersedes", **scope)
    assert "'tg'" in str(caught.value) and named in str(caught.value)
    assert snapshot(store) == before
    assert _status(store, target) is RecordStatus.VALID


def test_a_memory_linked_at_creation_to_a_global_record_stays_unscoped(memory: AgentMemory, store: MemoryStore) -> None:
    target = memory.add_memory("Paris is in France", memory_type="fact")
    new = memory.add_memory("France is in Europe", memory_type="fact", memory_id_to_link=target,
                            link_type="supports")
    record = stored_record(store, new)
    assert record is not None and (record.user_id, record.agent_id, record.thread_id) == (None, None, None)


def test_a_memory_linked_to_a_global_record_keeps_its_own_scope(
    memory: AgentMemory, store: MemoryStore
) -> None:
    memory.create_thread(thread_id="shared", agent_id="a")
    target = memory.add_memory("Office hours are 9 to 5", memory_type="fact", agent_id="a", thread_id="shared")
    new = memory.add_memory("u works late", memory_type="fact", user_id="u", memory_id_to_link=target,
                            link_type="contradicts")
    record = stored_record(store, new)
    assert record is not None and (record.user_id, record.agent_id, record.thread_id) == ("u", None, None)


def test_a_link_stored_across_users_before_the_rule_can_be_deleted_but_not_changed(
    memory: AgentMemory, store: MemoryStore, tenants: dict[str, str]
) -> None:
    """Stores written by older versions may hold such links: they are not retyped into a
    lifecycle link (which would retire the other user's record), only removed."""
    with store.unit_of_work() as uow:  # written as an older version did, past the service
        uow.links.add(RecordLink(id="legacy", source_id=tenants["u"], source_type=RecordType.FACT, target_id=tenants["v"],
                                 target_type=RecordType.FACT, relation_type="supports",
                                 opposite_relation_type="is_supported_by", created_at=START))
        uow.commit()
    before = snapshot(store)
    with pytest.raises(CrossScopeLinkError):
        memory.update_record_link("legacy", relation_type="supersedes")
    with pytest.raises(CrossScopeLinkError):
        memory.update_record_link("legacy", metadata={"note": "x"})
    assert snapshot(store) == before
    assert _status(store, tenants["v"]) is RecordStatus.VALID
    assert memory.delete_record_link(relation_id="legacy") == 1
    assert snapshot(store)["links"] == []


@ARGUMENT_CHECK
@pytest.mark.parametrize("given", [{"memory_id_to_link": "x"}, {"link_type": "supports"}])
def test_link_target_and_link_type_go_together(memory: AgentMemory, store: MemoryStore, given: dict[str, str]) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="together"):
        memory.add_memory("x", **given)  # type: ignore[arg-type]
    assert snapshot(store) == before


@pytest.mark.parametrize("target", ["missing", "a-message"])
def test_a_memory_is_not_added_when_its_link_target_is_not_a_memory(
    memory: AgentMemory, store: MemoryStore, target: str
) -> None:
    memory.create_thread(thread_id="t", user_id="u").add_messages([{"id": "a-message", "role": "user", "content": "hi"}])
    before = snapshot(store)
    with pytest.raises(RecordNotFoundError):
        memory.add_memory("orphan", memory_id_to_link=target, link_type="supports")
    assert snapshot(store) == before


def test_an_invalid_link_type_at_creation_writes_neither_record_nor_link(memory: AgentMemory, store: MemoryStore) -> None:
    old = memory.add_memory("target")
    before = snapshot(store)
    with pytest.raises(ValidationError):
        memory.add_memory("new", memory_id_to_link=old, link_type="")
    assert snapshot(store) == before


# -- thread-scoped records --------------------------------------------------------------------


@pytest.fixture
def two_threads(memory: AgentMemory) -> tuple[MemoryThread, MemoryThread]:
    return (
        memory.create_thread(thread_id="mine", user_id="u", agent_id="a"),
        memory.create_thread(thread_id="theirs", user_id="u", agent_id="a"),
    )


def test_a_thread_adds_memories_in_its_own_scope(two_threads: tuple[MemoryThread, MemoryThread], store: MemoryStore) -> None:
    mine, _ = two_threads
    memory_id = mine.add_memory("thread note", memory_type="guideline")
    record = stored_record(store, memory_id)
    assert record is not None
    assert (record.user_id, record.agent_id, record.thread_id, record.record_type) == ("u", "a", "mine", RecordType.GUIDELINE)


def test_a_thread_refuses_records_of_another_thread(
    two_threads: tuple[MemoryThread, MemoryThread], store: MemoryStore, memory: AgentMemory
) -> None:
    mine, theirs = two_threads
    own = mine.add_memory("mine", memory_type="fact")
    foreign = theirs.add_memory("theirs", memory_type="fact")
    client_level = memory.add_memory("user level", memory_type="fact", user_id="u", agent_id="a")
    foreign_link = theirs.link_records(foreign, "fact", theirs.add_memory("x", memory_type="fact"), "fact", "supports")
    before = snapshot(store)
    for other in (foreign, client_level):
        with pytest.raises(RecordNotFoundError):
            mine.add_memory("linked", memory_id_to_link=other, link_type="refines")
        with pytest.raises(RecordNotFoundError):
            mine.link_records(own, "fact", other, "fact", "supports")
        with pytest.raises(RecordNotFoundError):
            mine.link_records(other, "fact", own, "fact", "supports")
        with pytest.raises(RecordNotFoundError):
            mine.update_memory(other, "hijacked")
        assert mine.delete_memory(other) == 0
    assert mine.update_record_link(foreign_link, metadata={"x": 1}) == 0
    assert mine.delete_record_link(relation_id=foreign_link) == 0
    assert snapshot(store) == before
    assert theirs.delete_record_link(relation_id=foreign_link) == 1
    assert theirs.delete_memory(foreign) == 1


def test_a_thread_does_not_own_another_user_s_record_filed_under_it(
    two_threads: tuple[MemoryThread, MemoryThread], store: MemoryStore, memory: AgentMemory
) -> None:
    """A record of user v filed under u's thread (as a version before the thread-scope rule could
    store it): u's handle still cannot change it."""
    mine, _ = two_threads
    own = mine.add_memory("mine", memory_type="fact")
    with store.unit_of_work() as uow:
        for record_id, agent in (("filed", "a"), ("filed-other", None)):
            uow.records.add(MemoryRecord(id=record_id, record_type=RecordType.FACT, content=f"v's {record_id}",
                                         user_id="v", agent_id=agent, thread_id="mine", created_at=START,
                                         updated_at=START))
        uow.commit()
    filed = "filed"
    filed_link = memory.link_records(filed, "fact", "filed-other", "fact", "supports")
    before = snapshot(store)
    with pytest.raises(RecordNotFoundError):
        mine.update_memory(filed, "hijacked")
    assert mine.delete_memory(filed) == 0
    with pytest.raises(RecordNotFoundError):
        mine.add_memory("linked", memory_id_to_link=filed, link_type="supersedes")
    with pytest.raises(RecordNotFoundError):
        mine.link_records(own, "fact", filed, "fact", "supports")
    assert mine.update_record_link(filed_link, relation_type="supersedes") == 0
    assert mine.delete_record_link(relation_id=filed_link) == 0
    assert snapshot(store) == before


def test_a_memory_filed_under_a_thread_has_that_threads_user_and_agent(
    two_threads: tuple[MemoryThread, MemoryThread], store: MemoryStore, memory: AgentMemory
) -> None:
    """Before, the client filed user v's record under u's thread, where u's thread deletion took
    it along. Omitted scopes now come from the thread; other ones are refused and write nothing."""
    mine, _ = two_threads
    before = snapshot(store)
    for scope in ({"user_id": "v"}, {"user_id": "v", "agent_id": "a"}, {"user_id": None}, {"agent_id": "other"}):
        with pytest.raises(InvalidScopeError):
            memory.add_memory("v's note", memory_type="fact", thread_id="mine", **scope)
    with pytest.raises(ThreadNotFoundError):
        memory.add_memory("nowhere", thread_id="no-such-thread", user_id=mine.user_id)
    assert snapshot(store) == before
    inherited = memory.add_memory("the thread's", thread_id="mine")
    agent_taken = memory.add_memory("its user named", thread_id="mine", user_id=mine.user_id)
    for record_id in (inherited, agent_taken):
        stored = stored_record(store, record_id)
        assert stored is not None and (stored.user_id, stored.agent_id) == (mine.user_id, mine.agent_id)
        assert mine.delete_memory(record_id) == 1


def test_a_thread_links_and_edits_its_own_records(two_threads: tuple[MemoryThread, MemoryThread], store: MemoryStore) -> None:
    mine, _ = two_threads
    old = mine.add_memory("old plan", memory_type="fact")
    new = mine.add_memory("new plan", memory_type="fact", memory_id_to_link=old, link_type="supersedes")
    assert _status(store, old) is RecordStatus.INVALID
    [link] = snapshot(store)["links"]
    assert mine.update_record_link(link.id, relation_type="supports") == 1
    assert _status(store, old) is RecordStatus.VALID
    assert mine.update_memory(new, "newer plan") == new
    assert mine.delete_record_link(new, "fact", old, "fact", "supports") == 1
    assert mine.delete_memory(old) == 1


# -- links -----------------------------------------------------------------------------------


def test_link_records_accepts_the_positional_form_and_returns_the_relation_id(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(sour, "preference", thin, "preference", "supersedes")
    link = stored_link(store, relation_id)
    assert link is not None and (link.source_id, link.target_id) == (sour, thin)
    assert _status(store, thin) is RecordStatus.INVALID
    assert _status(store, sour) is RecordStatus.VALID


@pytest.mark.parametrize(
    ("relation", "opposite", "target_status"),
    [
        ("supersedes", "is_superseded_by", RecordStatus.INVALID),
        ("refines", "is_refined_by", RecordStatus.INVALID),
        ("duplicates", "duplicates", RecordStatus.INVALID),
        ("contradicts", "contradicts", RecordStatus.VALID),
        ("supports", "is_supported_by", RecordStatus.VALID),
        ("inspired_by", "inspired_by", RecordStatus.VALID),
    ],
)
def test_each_relation_type_has_its_inverse_label_and_lifecycle_effect(
    memory: AgentMemory, store: MemoryStore, relation: str, opposite: str, target_status: RecordStatus
) -> None:
    thin, sour, _ = _pizza(memory)
    link = stored_link(store, memory.link_records(sour, "preference", thin, "preference", relation))
    assert link is not None and link.opposite_relation_type == opposite
    assert _status(store, thin) is target_status
    assert _status(store, sour) is RecordStatus.VALID


def test_a_custom_relation_may_name_its_inverse(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(
        sour, "preference", thin, "preference", "replaces_on_weekends", opposite_relation_type="replaced_on_weekends",
        relation_id="R", timestamp="2026-01-01T00:00:00Z", metadata={"by": "test"},
    )
    link = stored_link(store, relation_id)
    assert relation_id == "R" and link is not None
    assert (link.opposite_relation_type, link.metadata) == ("replaced_on_weekends", {"by": "test"})


def test_invalid_links_are_refused_and_write_nothing(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, neap = _pizza(memory)
    memory.link_records(sour, "preference", thin, "preference", "supersedes", relation_id="taken")
    before = snapshot(store)
    with pytest.raises(SelfLinkError):
        memory.link_records(thin, "preference", thin, "preference", "supports")
    with pytest.raises(RecordNotFoundError):
        memory.link_records(thin, "preference", "missing", "preference", "supports")
    with pytest.raises(LinkExistsError):
        memory.link_records(sour, "preference", thin, "preference", "supersedes")
    with pytest.raises(LinkOrientationError):
        memory.link_records(thin, "preference", sour, "preference", "supports")
    with pytest.raises(ConflictError):
        memory.link_records(neap, "preference", thin, "preference", "supports", relation_id="taken")
    with pytest.raises(ValidationError):
        memory.link_records(neap, "fact", thin, "preference", "supports")
    with pytest.raises(ValidationError):
        memory.link_records(neap, "message", thin, "preference", "supports")
    with pytest.raises(ValidationError):
        memory.link_records(neap, "preference", thin, "preference", "supports", opposite_relation_type=None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.link_records(neap, "preference", thin, "preference", "")
    with pytest.raises(ValidationError):
        memory.link_records(neap, 3, thin, "preference", "supports")  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_update_record_link_leaves_omitted_fields_unchanged(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(
        sour, "preference", thin, "preference", "supersedes", timestamp="2026-01-01T00:00:00Z", metadata={"v": 1}
    )
    assert memory.update_record_link(relation_id, metadata={"reviewed_by": "svc"}) == 1
    link = stored_link(store, relation_id)
    assert link is not None
    assert (link.relation_type, link.opposite_relation_type, link.metadata) == (
        "supersedes",
        "is_superseded_by",
        {"reviewed_by": "svc"},
    )
    assert link.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert memory.update_record_link(relation_id, timestamp=None, metadata=None) == 1
    cleared = stored_link(store, relation_id)
    assert cleared is not None and (cleared.timestamp, cleared.metadata, cleared.relation_type) == (None, None, "supersedes")


def test_retyping_a_link_recomputes_the_lifecycle_of_both_ends(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(sour, "preference", thin, "preference", "supersedes")
    memory.update_record_link(relation_id, relation_type="supports")
    link = stored_link(store, relation_id)
    assert link is not None and link.opposite_relation_type == "is_supported_by"
    assert _status(store, thin) is RecordStatus.VALID
    memory.update_record_link(relation_id, relation_type="refines")
    assert _status(store, thin) is RecordStatus.INVALID
    assert stored_record(store, thin).invalidation_reason == "Refined by another memory."  # type: ignore[union-attr]


def test_update_record_link_reports_zero_for_an_unknown_link_and_validates_its_input(
    memory: AgentMemory, store: MemoryStore
) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(sour, "preference", thin, "preference", "supports")
    before = snapshot(store)
    assert memory.update_record_link("missing", relation_type="supports") == 0
    with pytest.raises(ValidationError):
        memory.update_record_link(relation_id)
    with pytest.raises(ValidationError):
        memory.update_record_link(relation_id, opposite_relation_type=None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.update_record_link(relation_id, timestamp="not a date")
    assert snapshot(store) == before


def test_delete_record_link_by_relation_id_revalidates_the_target(memory: AgentMemory, store: MemoryStore) -> None:
    thin, sour, _ = _pizza(memory)
    relation_id = memory.link_records(sour, "preference", thin, "preference", "supersedes")
    assert memory.delete_record_link(relation_id=relation_id) == 1
    assert memory.delete_record_link(relation_id=relation_id) == 0
    assert _status(store, thin) is RecordStatus.VALID


def test_delete_record_link_by_the_complete_directed_tuple(memory: AgentMemory, store: MemoryStore) -> None:
    _, sour, neap = _pizza(memory)
    memory.link_records(neap, "preference", sour, "preference", "refines")
    assert memory.delete_record_link(sour, "preference", neap, "preference", "refines") == 0, "orientation matters"
    assert memory.delete_record_link(neap, "preference", sour, "preference", "supports") == 0, "type matters"
    assert memory.delete_record_link(neap, "fact", sour, "preference", "refines") == 0, "endpoint types matter"
    assert _status(store, sour) is RecordStatus.INVALID
    assert memory.delete_record_link(
        source_record_id=neap,
        source_record_type="preference",
        target_record_id=sour,
        target_record_type="preference",
        relation_type="refines",
    ) == 1
    assert _status(store, sour) is RecordStatus.VALID


@ARGUMENT_CHECK
@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"source_record_id": "neap", "target_record_id": "sour", "relation_type": "refines"},
        {"source_record_id": "neap", "source_record_type": "preference", "target_record_id": "sour", "target_record_type": "preference"},
        {"relation_id": "R", "relation_type": "refines"},
    ],
)
def test_delete_record_link_needs_the_relation_id_alone_or_the_full_tuple(
    memory: AgentMemory, store: MemoryStore, arguments: dict[str, str]
) -> None:
    _pizza(memory)
    memory.link_records("neap", "preference", "sour", "preference", "refines", relation_id="R")
    before = snapshot(store)
    with pytest.raises(ValidationError, match="relation_id alone or a complete"):
        memory.delete_record_link(**arguments)  # type: ignore[arg-type]
    assert snapshot(store) == before
