"""The LangGraph store keeps time by its client's clock (D36): an item's TTL runs out, and a
read restarts it, on the clock the client was given, not on the machine's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

pytest.importorskip("langgraph.store.base", reason="needs the optional 'langgraph' extra")

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.adapters.langgraph import PalimpsestStore
from palimpsest.application import AgentMemory, MemoryExtractionConfig

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
    try:
        yield client
    finally:
        client.close()


def test_an_item_expires_when_the_clients_clock_passes_its_ttl(memory: AgentMemory, clock: ManualClock) -> None:
    store = PalimpsestStore(memory)
    store.put(("u1", "a"), "short", {"text": "soon gone"}, ttl=1.0)
    item = store.get(("u1", "a"), "short", refresh_ttl=False)
    assert item is not None
    clock.advance(timedelta(minutes=2))
    assert store.get(("u1", "a"), "short") is None


def test_a_read_restarts_the_ttl_from_the_clients_now(memory: AgentMemory, clock: ManualClock) -> None:
    store = PalimpsestStore(memory)
    store.put(("u1", "a"), "k", {"text": "kept alive"}, ttl=10.0)
    clock.advance(timedelta(minutes=8))
    assert store.get(("u1", "a"), "k") is not None  # refreshes: now expires at START + 18 min
    [record] = memory.list_memories(user_id="u1")
    assert record.expires_at == START + timedelta(minutes=18)
    clock.advance(timedelta(minutes=9))
    assert store.get(("u1", "a"), "k", refresh_ttl=False) is not None
    clock.advance(timedelta(minutes=2))
    assert store.get(("u1", "a"), "k") is None
