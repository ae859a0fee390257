"""Contract: a status set by the caller (``status=`` on ``add_memory``/``update_memory``), on
every store; a later link change touching the record derives its status from the links again
(ARCHITECTURE.md D2)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import ValidationError
from palimpsest.domain.links import CALLER_INVALIDATION_REASON
from palimpsest.domain.model import MemoryRecord, RecordStatus
from palimpsest.domain.ports import MemoryStore

from .builders import NOW, reading


@pytest.fixture
def client(store: MemoryStore) -> Iterator[AgentMemory]:
    memory = AgentMemory(store=store, clock=ManualClock(NOW))
    yield memory
    memory.close()


def _stored(store: MemoryStore, record_id: str) -> MemoryRecord:
    with reading(store) as uow:
        found = uow.records.get(record_id)
    assert found is not None
    return found


def test_a_memory_added_invalid_is_stored_invalid_with_the_callers_reason(store: MemoryStore, client: AgentMemory) -> None:
    client.add_memory("Old address: 1 Elm Street.", user_id="u", memory_id="m1", status="invalid")
    client.add_memory("Likes tea.", user_id="u", memory_id="m2", status=RecordStatus.VALID)
    stored = _stored(store, "m1")
    assert (stored.status, stored.invalidation_reason, stored.invalidated_at) == (
        RecordStatus.INVALID,
        CALLER_INVALIDATION_REASON,
        stored.created_at,
    )
    assert _stored(store, "m2").status is RecordStatus.VALID
    found = client.search("address", user_id="u", include_invalid_results=False)
    assert "m1" not in [r.id for r in found]
    assert "m1" in [r.id for r in client.search("address", user_id="u")]


def test_update_memory_sets_and_clears_the_status(store: MemoryStore, client: AgentMemory) -> None:
    client.add_memory("Works at Acme.", user_id="u", memory_id="m1")
    client.update_memory("m1", status=RecordStatus.INVALID)
    assert (_stored(store, "m1").status, _stored(store, "m1").invalidation_reason) == (
        RecordStatus.INVALID,
        CALLER_INVALIDATION_REASON,
    )
    client.update_memory("m1", status="valid")
    stored = _stored(store, "m1")
    assert (stored.status, stored.invalidation_reason, stored.invalidated_at) == (RecordStatus.VALID, None, None)
    assert stored.content == "Works at Acme."


def test_a_link_change_touching_the_record_derives_its_status_again(store: MemoryStore, client: AgentMemory) -> None:
    client.add_memory("Lives in Oslo.", user_id="u", memory_id="old")
    client.add_memory("Lives in Bergen.", user_id="u", memory_id="new")
    client.add_memory("Set invalid by hand.", user_id="u", memory_id="hand", status="invalid")
    # a supersedes link makes "old" invalid; the caller sets it valid again ...
    client.link_records("new", "memory", "old", "memory", "supersedes", relation_id="l1")
    client.update_memory("old", status="valid")
    assert _stored(store, "old").status is RecordStatus.VALID
    # ... until a link change touching it derives the status from its links: still superseded.
    client.update_record_link("l1", metadata={"checked": True})
    assert _stored(store, "old").status is RecordStatus.INVALID
    assert _stored(store, "old").invalidation_reason == "Superseded by another memory."
    # A record set invalid by hand that no lifecycle link targets becomes valid at a link change.
    client.link_records("new", "memory", "hand", "memory", "relates_to", relation_id="l2")
    assert _stored(store, "hand").status is RecordStatus.VALID


@pytest.mark.parametrize("status", ["Invalid", "", None, 1, "deleted"])
def test_a_bad_status_writes_nothing(store: MemoryStore, client: AgentMemory, status: object) -> None:
    with pytest.raises(ValidationError, match="status must be"):
        client.add_memory("x", user_id="u", memory_id="m1", status=status)  # type: ignore[arg-type]
    with reading(store) as uow:
        assert uow.records.get("m1") is None
