"""Contract: profiles stored as records (``user_profile``, ``agent_profile``) and
``MessageRepository.list``, the listing of messages across threads, on every store."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import pytest
from palimpsest.domain.errors import InvalidScopeError, ValidationError
from palimpsest.domain.model import MEMORY_RECORD_TYPES, MemoryRecord, Message, RecordType
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.sentinel import NOTSET

from .builders import E1, E2, E3, at, committing, ids, message, query, reading, record, seed, thread


def _profile(
    profile_id: str, content: str, kind: RecordType = RecordType.USER_PROFILE, metadata: dict[str, Any] | None = None
) -> MemoryRecord:
    if kind is RecordType.USER_PROFILE:
        return record(profile_id, content, record_type=kind, user_id=profile_id, metadata=metadata)
    return record(profile_id, content, record_type=kind, agent_id=profile_id, metadata=metadata)


def test_a_profile_is_stored_and_read_back_as_a_record_of_its_type(store: MemoryStore) -> None:
    ann = _profile("ann", "Ann is a pastry chef in Lyon", metadata={"tier": "gold"})
    bot = _profile("barista", "A coffee assistant", RecordType.AGENT_PROFILE)
    seed(store, records=[(ann, E1), (bot, E2)])
    with reading(store) as uow:
        assert uow.records.get("ann") == ann
        assert uow.records.get("barista") == bot
        assert ids_of(uow.records.list(now=at(), record_types=frozenset({RecordType.USER_PROFILE}))) == ["ann"]
        assert ids_of(uow.records.list(now=at(), record_types=frozenset({RecordType.AGENT_PROFILE}))) == ["barista"]
        assert ids_of(uow.records.list(now=at(), record_types=MEMORY_RECORD_TYPES)) == []


def ids_of(items: Iterable[MemoryRecord | Message]) -> list[str]:
    return [item.id for item in items]


def test_a_profile_is_updated_and_re_embedded_in_place(store: MemoryStore) -> None:
    ann = _profile("ann", "Ann bakes bread")
    seed(store, records=[(ann, E1)])
    changed = replace(ann, content="Ann grows tomatoes", metadata={"v": 2}, updated_at=at(5))
    with committing(store) as uow:
        uow.records.update(changed, embedding=E3)
    with reading(store) as uow:
        assert uow.records.get("ann") == changed
    assert ids(store.search(query(vector=E3, k=1, user_id="ann"))) == ["ann"]
    assert ids(store.search(query(text="tomatoes", user_id="ann"))) == ["ann"]
    assert ids(store.search(query(text="bread", user_id="ann"))) == []


def test_a_user_profile_is_found_only_by_a_search_scoped_to_that_user(store: MemoryStore) -> None:
    seed(
        store,
        threads=[thread("t1", user_id="ann", agent_id="barista")],
        records=[
            (_profile("ann", "Ann likes oolong tea"), E1),
            (_profile("bob", "Bob likes oolong tea too"), E1),
            (_profile("barista", "The barista knows oolong tea", RecordType.AGENT_PROFILE), E1),
            (record("m1", "Ann orders oolong tea", user_id="ann", agent_id="barista", thread_id="t1"), E1),
        ],
    )
    only = frozenset({RecordType.USER_PROFILE})
    kinds: list[dict[str, Any]] = [{"vector": E1}, {"text": "oolong tea"}, {"vector": E1, "text": "oolong tea"}]
    for kwargs in kinds:
        assert sorted(ids(store.search(query(user_id="ann", **kwargs)))) == ["ann", "m1"]
        # the profile's agent and thread are none: a search exact on an agent leaves it out
        assert ids(store.search(query(user_id="ann", agent_id="barista", **kwargs))) == ["m1"]
        assert ids(store.search(query(user_id=None, agent_id="barista", **kwargs))) == ["barista"]
        assert ids(store.search(query(user_id="ann", record_types=only, **kwargs))) == ["ann"]
        assert ids(store.search(query(user_id="ann", record_types=MEMORY_RECORD_TYPES, **kwargs))) == ["m1"]


def test_deleting_a_profile_removes_it_from_search(store: MemoryStore) -> None:
    seed(store, records=[(_profile("ann", "Ann likes oolong tea"), E1)])
    with committing(store) as uow:
        assert uow.records.delete("ann") is True
    assert ids(store.search(query(vector=E1, text="oolong", user_id="ann"))) == []


def test_a_profile_record_must_be_scoped_to_its_own_id_only() -> None:
    with pytest.raises(InvalidScopeError):
        record("ann", "x", record_type=RecordType.USER_PROFILE, user_id="bob")
    with pytest.raises(InvalidScopeError):
        record("ann", "x", record_type=RecordType.USER_PROFILE, user_id="ann", agent_id="a")
    with pytest.raises(InvalidScopeError):
        record("bot", "x", record_type=RecordType.AGENT_PROFILE, agent_id="bot", user_id="ann")
    with pytest.raises(ValidationError):
        record("ann", "x", record_type=RecordType.USER_PROFILE, user_id="ann", expires_at=at(days=1))


# --- MessageRepository.list ------------------------------------------------------------------------


def _conversations(store: MemoryStore) -> None:
    seed(
        store,
        threads=[
            thread("t1", user_id="ann", agent_id="barista"),
            thread("t2", user_id="bob", agent_id="barista"),
            thread("t3", user_id="ann", agent_id="baker"),
            thread("t4"),
        ],
        messages=[
            (message("a1", "t1", 1, "one", user_id="ann", agent_id="barista", created_at=at(1)), E1),
            (message("a2", "t1", 2, "two", user_id="ann", agent_id="barista", created_at=at(1), metadata={"k": 1}), E1),
            (message("b1", "t2", 1, "bob", user_id="bob", agent_id="barista", created_at=at(2)), E1),
            (message("c1", "t3", 1, "bake", user_id="ann", agent_id="baker", created_at=at(3), metadata={"k": 2}), E1),
            (message("u1", "t4", 1, "nobody", created_at=at(4)), E1),
            (message("x1", "t1", 3, "gone", user_id="ann", agent_id="barista", created_at=at(5), expires_at=at(6)), E1),
        ],
    )


def test_listing_messages_filters_by_scope_with_three_values(store: MemoryStore) -> None:
    _conversations(store)
    now = at(10)
    with reading(store) as uow:
        assert ids_of(uow.messages.list(now=now)) == ["a1", "a2", "b1", "c1", "u1"]
        assert ids_of(uow.messages.list(now=at(5))) == ["a1", "a2", "b1", "c1", "u1", "x1"]
        assert ids_of(uow.messages.list(now=now, user_id="ann")) == ["a1", "a2", "c1"]
        assert ids_of(uow.messages.list(now=now, user_id="ann", agent_id="baker")) == ["c1"]
        assert ids_of(uow.messages.list(now=now, agent_id="barista")) == ["a1", "a2", "b1"]
        assert ids_of(uow.messages.list(now=now, thread_id="t2")) == ["b1"]
        assert ids_of(uow.messages.list(now=now, user_id=None)) == ["u1"]
        assert ids_of(uow.messages.list(now=now, user_id=NOTSET, agent_id=None)) == ["u1"]
        assert ids_of(uow.messages.list(now=now, user_id="nobody")) == []


def test_listing_messages_filters_metadata_and_keeps_the_newest(store: MemoryStore) -> None:
    _conversations(store)
    now = at(10)
    with reading(store) as uow:
        assert ids_of(uow.messages.list(now=now, metadata_filter={"k": 2})) == ["c1"]
        assert ids_of(uow.messages.list(now=now, metadata_filter={"k": {"$not": 2}}, limit=2)) == ["b1", "u1"]
        assert ids_of(uow.messages.list(now=now, metadata_filter=None)) == ["a1", "b1", "u1"]
        assert ids_of(uow.messages.list(now=now, user_id="ann", limit=2)) == ["a2", "c1"]
        assert ids_of(uow.messages.list(now=now, limit=None)) == ["a1", "a2", "b1", "c1", "u1"]
        with pytest.raises(ValidationError):
            uow.messages.list(now=now, limit=0)
