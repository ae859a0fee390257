"""Application tests: RecordService.refresh_ttl, the use case behind the LangGraph store's TTL refresh."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application.record_service import RecordService
from palimpsest.domain import RecordType, ValidationError
from palimpsest.domain.model import MemoryRecord

START = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START, tick=timedelta(0))


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def service(store: InMemoryStore, clock: ManualClock) -> RecordService:
    return RecordService(store, clock)


def _add(
    service: RecordService, clock: ManualClock, content: str, *, record_id: str, ttl_days: float, user_id: str | None = None
) -> MemoryRecord:
    """A memory that expires ``ttl_days`` after now, added through the product's add path."""
    return service.add_record_with_link(
        content=content,
        record_type=RecordType.MEMORY,
        record_id=record_id,
        scope={"user_id": user_id},
        metadata=None,
        timestamp=None,
        expires_at=clock.now() + timedelta(days=ttl_days),
        embedding=None,
        link=None,
    )


def _stored(store: InMemoryStore, record_id: str) -> MemoryRecord | None:
    with store.reading() as uow:
        return uow.records.get_many([record_id]).get(record_id)


def test_the_expiry_moves_and_nothing_else_does(
    service: RecordService, store: InMemoryStore, clock: ManualClock
) -> None:
    kept = _add(service, clock, "Likes tea.", record_id="tea", user_id="u", ttl_days=1)
    clock.advance(timedelta(hours=12))
    until = START + timedelta(days=3)

    refreshed = service.refresh_ttl({"tea": until})

    stored = _stored(store, "tea")
    assert stored is not None and stored.expires_at == until
    assert refreshed == {"tea": stored}
    assert (stored.updated_at, stored.content, stored.status) == (kept.updated_at, kept.content, kept.status)


def test_expired_and_unknown_records_are_left_alone(
    service: RecordService, store: InMemoryStore, clock: ManualClock
) -> None:
    _add(service, clock, "Short-lived.", record_id="gone", ttl_days=1)
    _add(service, clock, "Long-lived.", record_id="alive", ttl_days=10)
    clock.advance(timedelta(days=2))
    until = START + timedelta(days=30)

    refreshed = service.refresh_ttl({"gone": until, "alive": until, "never-stored": until})

    assert set(refreshed) == {"alive"}
    gone = _stored(store, "gone")
    assert gone is not None and gone.expires_at == START + timedelta(days=1)  # still expired, not revived
    assert _stored(store, "never-stored") is None


def test_a_naive_time_is_refused_before_anything_is_written(
    service: RecordService, store: InMemoryStore, clock: ManualClock
) -> None:
    _add(service, clock, "Likes tea.", record_id="tea", ttl_days=1)
    _add(service, clock, "Likes coffee.", record_id="coffee", ttl_days=1)

    with pytest.raises(ValidationError):
        service.refresh_ttl({"tea": START + timedelta(days=5), "coffee": datetime(2026, 4, 1)})

    for record_id in ("tea", "coffee"):
        stored = _stored(store, record_id)
        assert stored is not None and stored.expires_at == START + timedelta(days=1)


def test_nothing_to_refresh_is_an_empty_answer(service: RecordService) -> None:
    assert service.refresh_ttl({}) == {}
