"""Extracted memories inherit the metadata of the messages they were drawn from.

Before, one pass merged its messages' metadata, the first message winning, and gave the result
to every memory: "The user lives in Rome.", said in an email, was tagged as said in a chat. Now
each memory takes its sources' metadata (the extractor's attribution: the heuristic extractor
draws each memory from one message). A memory drawn from messages that disagree keeps the
keys they agree on (the reference refuses the pass, and a job failed for good on one memory).
"""

from __future__ import annotations

from palimpsest.adapters.heuristic import HeuristicExtractor
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import RecordType

from .conftest import ClientFactory

CARLA = [
    {"role": "user", "content": "My name is Carla.", "metadata": {"source": "chat", "topic": "intro"}},
    {"role": "user", "content": "I live in Rome.", "metadata": {"source": "email", "topic": "intro"}},
]
INLINE = MemoryExtractionConfig(extraction_mode="inline", enable_context_summary=False)  # type: ignore[arg-type]
ONE_ATTEMPT = ExtractionRetryPolicy(max_attempts=1)


def sources_of(client) -> list[tuple[str, str | None, list[str]]]:  # type: ignore[no-untyped-def]
    return sorted(
        (r.content, r.metadata.get("source"), r.metadata["$agent_memory"]["source_message_ids"])
        for r in client.list_memories(user_id="u")
    )


def test_each_heuristic_memory_takes_the_metadata_of_the_message_it_came_from(make_client: ClientFactory) -> None:
    client = make_client(extractor=HeuristicExtractor(), memory_extraction_config=INLINE)
    ids = client.create_thread(user_id="u").add_messages(CARLA)
    assert sources_of(client) == [
        ("The user lives in Rome.", "email", [ids[1]]),
        ("The user's name is Carla.", "chat", [ids[0]]),
    ]


def test_a_subset_of_keys_is_inherited_per_source(make_client: ClientFactory) -> None:
    client = make_client(extractor=HeuristicExtractor(), memory_extraction_config=INLINE)
    thread = client.create_thread(
        user_id="u",
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode="inline",  # type: ignore[arg-type]
            enable_context_summary=False,
            memory_extraction_inherit_message_metadata=["topic"],
        ),
    )
    thread.add_messages(CARLA)
    assert sorted(r.metadata.get("topic") for r in client.list_memories(user_id="u")) == ["intro", "intro"]
    assert all("source" not in r.metadata for r in client.list_memories(user_id="u"))


def test_an_unattributed_memory_of_messages_that_disagree_keeps_what_they_agree_on(make_client: ClientFactory) -> None:
    def unattributed(request: ExtractionRequest) -> list[ExtractedMemory]:
        return [ExtractedMemory(RecordType.FACT, "The user is Carla, from Rome.")]

    client = make_client(
        extractor=ScriptedExtractor(unattributed), memory_extraction_config=INLINE, extraction_retry_policy=ONE_ATTEMPT
    )
    thread = client.create_thread(user_id="u")
    ids = thread.add_messages(CARLA)
    client.wait_for_memory_extraction(timeout=60)
    assert client.failed_extractions() == []
    [memory] = client.list_memories(user_id="u")
    assert memory.metadata["$agent_memory"]["source_message_ids"] == ids
    assert {k: v for k, v in memory.metadata.items() if not k.startswith("$")} == {"topic": "intro"}


def test_an_unattributed_memory_of_messages_that_agree_inherits_their_metadata(make_client: ClientFactory) -> None:
    def unattributed(request: ExtractionRequest) -> list[ExtractedMemory]:
        return [ExtractedMemory(RecordType.FACT, "The user is Carla, from Rome.")]

    client = make_client(extractor=ScriptedExtractor(unattributed), memory_extraction_config=INLINE)
    same = [{**message, "metadata": {"source": "chat"}} for message in CARLA]
    ids = client.create_thread(user_id="u").add_messages(same)
    assert sources_of(client) == [("The user is Carla, from Rome.", "chat", ids)]
