"""Reference behaviours that were first missing: TTL inheritance of extracted memories,
summaries retired by the purge, and the extraction frequency."""

from __future__ import annotations

from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import ExtractedMemory, MemoryExtractionConfig
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import RecordType

from .conftest import ClientFactory
from .helpers import days


def test_memories_extracted_from_expiring_messages_expire_with_them(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    extractor = ScriptedExtractor([[ExtractedMemory(RecordType.FACT, "The user's door code is 1234.")]])
    client = make_client(extractor=extractor, memory_extraction_config=None)
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "My door code is 1234."}], ttl_days=1)
    clock.advance(days(2))
    assert client.list_memories(user_id="u") == []


def test_purging_an_expired_message_removes_it_from_the_summary(make_client: ClientFactory, clock: ManualClock) -> None:
    client = make_client(summariser=ScriptedSummariser())
    thread = client.create_thread()
    thread.add_messages([{"role": "user", "content": "My door code is 1234."}], ttl_days=1)
    thread.add_messages([{"role": "user", "content": "Let us plan dinner."}])
    assert "1234" in thread.get_summary().content
    clock.advance(days(2))
    client.purge_expired()
    assert "1234" not in thread.get_summary().content


def test_the_extraction_frequency_spaces_extraction_runs(make_client: ClientFactory) -> None:
    extractor = ScriptedExtractor()
    client = make_client(extractor=extractor, memory_extraction_config=None)
    thread = client.create_thread(memory_extraction_config=MemoryExtractionConfig(memory_extraction_frequency=2))
    for text in ("one", "two", "three", "four"):
        thread.add_messages([{"role": "user", "content": text}])
    thread.wait_for_memory_extraction()
    assert len(extractor.requests) == 2
