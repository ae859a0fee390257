"""Application tests: ``AgentMemory.admin`` (StoreAdmin), the drivers' one way to a store (D36).

Everything it reads or stamps is judged by the client's clock, so a client on a manual clock
sees expiry exactly as its own searches do; ``AgentMemory.store`` still works but warns, and
``RecordService`` is no longer part of the package's public names.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import palimpsest.application as application
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, StoreAdmin
from palimpsest.domain import ConfigurationError, RecordNotFoundError
from palimpsest.domain.model import RecordStatus

START = datetime(2031, 5, 1, tzinfo=UTC)  # years away from the machine's clock, on purpose


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START, tick=timedelta(0))


@pytest.fixture
def memory(clock: ManualClock) -> Iterator[AgentMemory]:
    client = open_memory(
        embedder=HashingEmbedder(),
        clock=clock,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    yield client
    client.close()


def test_the_client_reaches_its_store_admin() -> None:
    client = open_memory(memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    try:
        assert isinstance(client.admin, StoreAdmin)
        assert client.admin is client.admin
    finally:
        client.close()


def test_the_store_property_warns_and_names_what_to_use() -> None:
    client = open_memory(memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    try:
        with pytest.warns(DeprecationWarning, match=r"AgentMemory\.store is deprecated: use AgentMemory\.admin"):
            store = client.store
        assert store.dimension is None or isinstance(store.dimension, int)
    finally:
        client.close()


def test_record_service_is_not_public() -> None:
    assert "RecordService" not in application.__all__
    assert not hasattr(application, "RecordService")
    assert "StoreAdmin" in application.__all__


def test_admin_listings_follow_the_clients_clock(memory: AgentMemory, clock: ManualClock) -> None:
    keep = memory.add_memory("Stays.", user_id="u1")
    going = memory.add_memory("Expires in a day.", user_id="u1", ttl_days=1)
    admin = memory.admin
    assert admin.now() == START
    assert {r.id for r in admin.list_records(user_id="u1")} == {keep, going}
    assert admin.get_record(going).id == going
    assert admin.count_rows().records == 2
    clock.advance(timedelta(days=2))  # the machine's clock has not moved: only the client's
    assert [r.id for r in admin.list_records(user_id="u1")] == [keep]
    assert [r.id for r in memory.list_memories(user_id="u1")] == [keep]
    with pytest.raises(RecordNotFoundError):
        admin.get_record(going)
    assert admin.count_rows().records == 1
    assert set(admin.records_by_id([keep, going])) == {keep, going}  # expired but not purged


def test_refresh_ttl_is_judged_and_stamped_on_the_clients_clock(memory: AgentMemory, clock: ManualClock) -> None:
    record_id = memory.add_memory("Renewed.", user_id="u1", ttl_days=1)
    before = memory.admin.get_record(record_id)
    refreshed = memory.admin.refresh_ttl({record_id: START + timedelta(days=10)})
    assert refreshed[record_id].expires_at == START + timedelta(days=10)
    assert refreshed[record_id].updated_at == before.updated_at
    clock.advance(timedelta(days=5))
    assert memory.admin.get_record(record_id).status is RecordStatus.VALID
    clock.advance(timedelta(days=6))
    assert memory.admin.refresh_ttl({record_id: START + timedelta(days=30)}) == {}  # expired now


def test_admin_exports_and_imports_on_the_clients_clock(memory: AgentMemory) -> None:
    old = memory.add_memory("Lives in Porto.", memory_type="fact", user_id="u1")
    memory.add_memory("Lives in Lisbon.", memory_type="fact", user_id="u1", memory_id_to_link=old, link_type="supersedes")
    out = io.StringIO()
    counts = memory.admin.export(out)
    assert counts == {"memory": 2, "link": 1}
    items = StoreAdmin.read_export(io.StringIO(out.getvalue()))
    target = open_memory(
        embedder=HashingEmbedder(),
        clock=ManualClock(START + timedelta(days=1), tick=timedelta(0)),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    try:
        assert target.admin.import_items(items, reembed=True) == {"memory": 2, "link": 1}
        assert target.admin.get_record(old).status is RecordStatus.INVALID
        assert [r.content for r in target.search("Lisbon", user_id="u1", search_strategy="vector")][:1] == [
            "Lives in Lisbon."
        ]
    finally:
        target.close()


def test_an_import_with_reembed_needs_an_embedder() -> None:
    client = AgentMemory(store=InMemoryStore(), close_store=True)
    try:
        with pytest.raises(ConfigurationError, match="embedder"):
            client.admin.import_items([], reembed=True)
    finally:
        client.close()


def test_the_drivers_do_not_warn_in_use(memory: AgentMemory) -> None:
    """The command line's graph and the LangGraph store go through ``admin``: no warning."""
    from palimpsest.adapters.cli.graph import collect_graph

    memory.add_memory("A node.", user_id="u1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        graph = collect_graph(memory, user_id="u1")
    assert len(graph.nodes) == 1
