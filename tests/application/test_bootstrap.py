"""The composition root: backend selection, fakes through provider overrides, store lifetime."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from palimpsest.adapters.bootstrap import Container, open_memory_service
from palimpsest.adapters.memory import InMemoryStore, ManualClock
from palimpsest.application import MemoryService
from palimpsest.domain import ConfigurationError, MemoryRecord, RecordType, StoreClosedError


def _add(service: MemoryService, content: str) -> MemoryRecord:
    """A record added as the product adds one (``add_record_with_link``, no link)."""
    return service.add_record_with_link(
        content=content,
        record_type=RecordType.MEMORY,
        record_id="r1",
        scope={},
        metadata=None,
        timestamp=None,
        expires_at=None,
        embedding=None,
        link=None,
    )


def test_without_a_path_the_service_runs_on_the_in_memory_store() -> None:
    service, container = open_memory_service()
    record = _add(service, "Remember the milk.")
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
    record = _add(container.memory_service(), "Fixed time.")
    assert record.created_at == start


def test_an_unknown_backend_or_a_missing_path_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        open_memory_service(backend="cloud")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        open_memory_service(backend="embedded")


def test_open_memory_gives_a_client_on_the_embedded_store_that_closes_it(tmp_path) -> None:
    from palimpsest.adapters import open_memory

    path = tmp_path / "memory.db"
    with open_memory(path) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love hiking."}])
        memory.wait_for_memory_extraction()
        memory.add_memory("Prefers sourdough pizza.", memory_type="preference", user_id="u1")
        found = memory.search("pizza", user_id="u1", record_types=["preference"])
        assert found[0].content == "Prefers sourdough pizza."
        # The offline heuristic extractor drew memories from the message.
        extracted = [m.content for m in memory.list_memories(user_id="u1") if m.thread_id == thread.thread_id]
        assert any("Maya" in text for text in extracted)
        stored = len(memory.list_memories(user_id="u1"))
    assert path.exists()
    with pytest.raises(StoreClosedError):
        memory.search("pizza", user_id="u1")
    with open_memory(path) as reopened:  # everything acknowledged is still there
        assert len(reopened.list_memories(user_id="u1")) == stored


def test_open_memory_creates_the_folder_of_a_relative_store_path(tmp_path, monkeypatch) -> None:
    from palimpsest.adapters import open_memory

    monkeypatch.chdir(tmp_path)
    with open_memory("store/memory.db") as memory:
        memory.add_memory("Kept in a folder that did not exist.", user_id="u1")
    assert (tmp_path / "store" / "memory.db").is_file()
    with open_memory("store/memory.db") as reopened:
        stored = [m.content for m in reopened.list_memories(user_id="u1")]
    assert stored == ["Kept in a folder that did not exist."]


def test_open_memory_on_a_path_that_cannot_hold_a_store_names_it(tmp_path) -> None:
    from palimpsest.adapters import open_memory

    in_the_way = tmp_path / "store"
    in_the_way.write_text("a file, not a folder")
    with pytest.raises(ConfigurationError, match="cannot create the folder .*store"):
        open_memory(in_the_way / "memory.db")
    assert in_the_way.read_text() == "a file, not a folder"


def test_open_memory_accepts_overrides_for_its_ports() -> None:
    from palimpsest.adapters import open_memory

    store = InMemoryStore()
    start = datetime(2031, 1, 1, tzinfo=UTC)
    memory = open_memory(store=store, clock=ManualClock(start))
    memory.add_memory("Fixed time.", user_id="u")
    assert memory.list_memories(user_id="u")[0].created_at.year == start.year
    memory.close()
    memory.add_memory("The store passed in is not closed by the client.", user_id="u")
