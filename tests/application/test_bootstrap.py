"""The composition root: backend selection, fakes through provider overrides, store lifetime."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from palimpsest.adapters.bootstrap import Container, open_memory_service
from palimpsest.adapters.memory import InMemoryStore, ManualClock
from palimpsest.domain import ConfigurationError, StoreClosedError


def test_without_a_path_the_service_runs_on_the_in_memory_store() -> None:
    service, container = open_memory_service()
    record = service.add_record("Remember the milk.")
    assert isinstance(service.store, InMemoryStore)
    assert service.get_record(record.id).content == "Remember the milk."
    container.shutdown_resources()
    with pytest.raises(StoreClosedError):
        service.get_record(record.id)


def test_providers_can_be_overridden_with_fakes() -> None:
    container = Container()
    container.config.from_dict({"backend": "memory", "dimension": 2})
    start = datetime(2030, 5, 5, tzinfo=UTC)
    container.clock.override(ManualClock(start))
    record = container.memory_service().add_record("Fixed time.")
    assert record.created_at == start


def test_an_unknown_backend_or_a_missing_path_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        open_memory_service(backend="cloud")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        open_memory_service(backend="embedded")
