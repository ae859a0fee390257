"""Application tests: RecordService use cases on the shipped in-memory fake (state, not calls).

Records are added by ``add_record_with_link``, the path every product add takes."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory
from palimpsest.application.event_log import EVENT_LOGGER
from palimpsest.application.record_service import RecordService
from palimpsest.domain import (
    InvalidRecordTypeError,
    LinkCreated,
    LinkExistsError,
    LinkNotFoundError,
    LinkOrientationError,
    MemoryRecord,
    RecordInvalidated,
    RecordLink,
    RecordNotFoundError,
    RecordRevalidated,
    RecordStatus,
    ScopeFilter,
    SearchQuery,
    ValidationError,
)

START = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def events() -> list:
    return []


@pytest.fixture
def service(clock: ManualClock, events: list) -> RecordService:
    return RecordService(InMemoryStore(dimension=3), clock, event_sink=events.append)


def _add(
    service: RecordService,
    content: str,
    *,
    record_id: str | None = None,
    record_type: str = "memory",
    user_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    embedding: list[float] | None = None,
) -> MemoryRecord:
    return service.add_record_with_link(
        content=content,
        record_type=record_type,  # type: ignore[arg-type]  # the record parses its type
        record_id=record_id or f"r{len(service.list_records(limit=None)) + 1}",
        scope={"user_id": user_id},
        metadata=metadata,
        timestamp=None,
        expires_at=expires_at,
        embedding=embedding,
        link=None,
    )


def _links_of(service: RecordService, record_id: str) -> list[RecordLink]:
    with service.store.reading() as uow:
        return uow.links.touching(record_id)


def _pizza(service: RecordService) -> tuple[str, str, str]:
    thin = _add(service, "Preferred pizza: thin crust.", record_id="thin", record_type="preference", user_id="u")
    sour = _add(service, "Now prefers sourdough pizza.", record_id="sour", record_type="preference", user_id="u")
    neap = _add(service, "Prefers Neapolitan sourdough.", record_id="neap", record_type="preference", user_id="u")
    return thin.id, sour.id, neap.id


def test_superseding_a_memory_invalidates_it_and_keeps_it_as_history(service: RecordService) -> None:
    thin, sour, _ = _pizza(service)
    link = service.link(sour, thin, "supersedes")
    old = service.get_record(thin)
    assert old.status is RecordStatus.INVALID
    assert old.invalidation_reason == "Superseded by another memory."
    assert old.invalidated_at is not None and old.invalidated_at >= link.created_at
    assert old.content == "Preferred pizza: thin crust."
    assert service.get_record(sour).is_valid
    assert link.opposite_relation_type == "is_superseded_by"


def test_supports_and_contradicts_leave_both_memories_valid(service: RecordService) -> None:
    thin, sour, neap = _pizza(service)
    service.link(sour, thin, "contradicts")
    service.link(neap, sour, "supports")
    assert all(r.is_valid for r in service.list_records())


def test_retyping_a_lifecycle_link_to_supports_revalidates_the_target(service: RecordService, events: list) -> None:
    thin, sour, _ = _pizza(service)
    link = service.link(sour, thin, "supersedes")
    updated = service.update_link(link.id, relation_type="supports", metadata={"reviewed_by": "svc"})
    assert updated.opposite_relation_type == "is_supported_by"
    assert updated.metadata == {"reviewed_by": "svc"}
    record = service.get_record(thin)
    assert record.is_valid and record.invalidation_reason is None and record.invalidated_at is None
    assert any(isinstance(e, RecordRevalidated) and e.record_id == thin for e in events)


def test_deleting_a_link_by_its_directed_tuple_revalidates_the_target(service: RecordService) -> None:
    _, sour, neap = _pizza(service)
    service.link(neap, sour, "refines")
    assert not service.get_record(sour).is_valid
    assert service.delete_link_between(sour, neap, "refines") is False  # wrong orientation
    assert service.delete_link_between(neap, sour, "refines") is True
    assert service.get_record(sour).is_valid


def test_a_record_stays_invalid_while_another_lifecycle_link_still_targets_it(service: RecordService) -> None:
    thin, sour, neap = _pizza(service)
    first = service.link(sour, thin, "supersedes")
    service.link(neap, thin, "duplicates")
    invalidated_at = service.get_record(thin).invalidated_at
    service.delete_link(first.id)
    record = service.get_record(thin)
    assert record.status is RecordStatus.INVALID
    assert record.invalidation_reason == "Duplicated by another memory."
    assert record.invalidated_at == invalidated_at


def test_deleting_the_superseding_record_revalidates_the_superseded_one(service: RecordService) -> None:
    thin, sour, _ = _pizza(service)
    service.link(sour, thin, "supersedes")
    assert service.delete_record(sour) is True
    assert service.get_record(thin).is_valid
    assert _links_of(service, thin) == []


def test_a_pair_is_linked_in_one_orientation_only_and_a_rejected_link_writes_nothing(service: RecordService) -> None:
    thin, sour, _ = _pizza(service)
    service.link(sour, thin, "supports")
    with pytest.raises(LinkOrientationError):
        service.link(thin, sour, "supersedes")
    with pytest.raises(LinkExistsError):
        service.link(sour, thin, "supports")
    assert service.get_record(sour).is_valid
    assert len(_links_of(service, thin)) == 1


def test_custom_labels_read_the_same_both_ways_unless_an_opposite_is_given(service: RecordService) -> None:
    thin, sour, neap = _pizza(service)
    same = service.link(sour, thin, "mentions")
    given = service.link(neap, thin, "cites", opposite_relation_type="is_cited_by")
    assert same.opposite_relation_type == "mentions"
    assert given.opposite_relation_type == "is_cited_by"
    assert service.update_link(given.id, relation_type="supersedes").opposite_relation_type == "is_superseded_by"


def test_linking_to_a_missing_or_expired_record_is_a_not_found_error(service: RecordService, clock: ManualClock) -> None:
    thin, _, _ = _pizza(service)
    short = _add(service, "Short-lived note.", expires_at=START + timedelta(days=1), user_id="u")
    with pytest.raises(RecordNotFoundError):
        service.link(thin, "missing", "supports")
    clock.advance(timedelta(days=2))
    with pytest.raises(RecordNotFoundError):
        service.link(thin, short.id, "supports")
    with pytest.raises(RecordNotFoundError):
        service.get_record(short.id)


def test_events_are_published_only_for_committed_changes(service: RecordService, events: list) -> None:
    thin, sour, _ = _pizza(service)
    link = service.link(sour, thin, "supersedes")
    assert [type(e) for e in events] == [LinkCreated, RecordInvalidated]
    assert events[1].by_link_id == link.id
    with pytest.raises(LinkExistsError):
        service.link(sour, thin, "supersedes")
    assert len(events) == 2


def test_changing_content_without_a_new_vector_drops_the_stale_vector(service: RecordService) -> None:
    record = _add(service, "Likes tea.", user_id="u", embedding=[1, 0, 0])
    query = SearchQuery(k=5, now=START + timedelta(days=1), vector=(1.0, 0.0, 0.0), scope=ScopeFilter(user_id="u"))
    assert [h.id for h in service.store.search(query)] == [record.id]
    service.update_record(record.id, content="Likes coffee.")
    assert service.store.search(query) == []
    service.update_record(record.id, embedding=[1, 0, 0])
    assert [h.id for h in service.store.search(query)] == [record.id]


def test_update_record_changes_only_what_is_given(service: RecordService) -> None:
    record = _add(service, "Lives in Rome.", record_type="fact", user_id="u", metadata={"source": "chat"})
    updated = service.update_record(record.id, metadata=None)
    assert updated.metadata is None and updated.content == "Lives in Rome." and updated.record_type.value == "fact"
    assert updated.updated_at > record.updated_at


def test_bad_input_raises_a_typed_error_and_writes_nothing(service: RecordService, clock: ManualClock) -> None:
    with pytest.raises(InvalidRecordTypeError):
        _add(service, "x", record_type="opinion")
    with pytest.raises(ValidationError):
        _add(service, "   ")
    with pytest.raises(ValidationError):  # a TTL is parsed on the public path, before the service
        AgentMemory(store=service.store, clock=clock).add_memory("x", ttl_days=-1)
    with pytest.raises(LinkNotFoundError):
        service.update_link("nope", relation_type="supports")
    assert service.list_records() == []


def test_without_a_sink_committed_events_go_to_the_event_log(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    service = RecordService(InMemoryStore(dimension=3), clock)
    thin, sour, _ = _pizza(service)
    with caplog.at_level(logging.DEBUG, logger=EVENT_LOGGER):
        link = service.link(sour, thin, "supersedes")
        with pytest.raises(LinkExistsError):
            service.link(sour, thin, "supersedes")  # refused: nothing committed, nothing logged
        service.delete_link(link.id)
    lines = [r.getMessage() for r in caplog.records if r.name == EVENT_LOGGER]
    assert lines == [
        f"link {link.id} ({sour} supersedes {thin}) created",
        f"record {thin} invalidated by link {link.id}: Superseded by another memory.",
        f"link {link.id} ({sour} supersedes {thin}) deleted",
        f"record {thin} valid again",
    ]
