"""Reference behaviours not implemented yet, pinned as strict xfails so a fix shows up.

Each test states the reference behaviour; ``strict=True`` turns the test red the day the
behaviour lands, as a reminder to drop the marker.
"""

from __future__ import annotations

import pytest
from palimpsest.adapters.memory import ManualClock
from palimpsest.application import ExtractedMemory, MemoryExtractionConfig
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import RecordType

from .conftest import ClientFactory
from .helpers import days


@pytest.mark.xfail(
    strict=True,
    reason="reference §7.3/§10: extracted memories inherit their source messages' expiration; "
    "MemoryThread._extract stores them with the store's default TTL instead",
)
def test_memories_extracted_from_expiring_messages_expire_with_them(
    make_client: ClientFactory, clock: ManualClock
) -> None:
    extractor = ScriptedExtractor([[ExtractedMemory(RecordType.FACT, "The user's door code is 1234.")]])
    client = make_client(extractor=extractor, memory_extraction_config=None)
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "My door code is 1234."}], ttl_days=1)
    clock.advance(days(2))
    assert client.list_memories(user_id="u") == []


@pytest.mark.xfail(
    strict=True,
    reason="reference §9/§10: expiry (and the purge) invalidates the summaries covering the expired "
    "messages; purge_expired only deletes rows, so the durable summary keeps their text",
)
def test_purging_an_expired_message_removes_it_from_the_summary(make_client: ClientFactory, clock: ManualClock) -> None:
    client = make_client(summariser=ScriptedSummariser())
    thread = client.create_thread()
    thread.add_messages([{"role": "user", "content": "My door code is 1234."}], ttl_days=1)
    thread.add_messages([{"role": "user", "content": "Let us plan dinner."}])
    assert "1234" in thread.get_summary().content
    clock.advance(days(2))
    client.purge_expired()
    assert "1234" not in thread.get_summary().content


@pytest.mark.xfail(
    strict=True,
    reason="reference §7.1: memory_extraction_frequency=N extracts once per N appended messages; "
    "the client extracts after every append whatever the frequency",
)
def test_the_extraction_frequency_spaces_extraction_runs(make_client: ClientFactory) -> None:
    extractor = ScriptedExtractor()
    client = make_client(extractor=extractor, memory_extraction_config=None)
    thread = client.create_thread(memory_extraction_config=MemoryExtractionConfig(memory_extraction_frequency=2))
    for text in ("one", "two", "three", "four"):
        thread.add_messages([{"role": "user", "content": text}])
    assert len(extractor.requests) == 2
