"""The LLM extractor on conversations of named people, driven by a scripted model through the client.

Each test scripts the model's answers and asserts on what is stored: the memories, their
sources and inherited metadata, their links and validity, and what the prompt showed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.openai import LlmExtractor, LlmLinkResolver
from palimpsest.adapters.openai.testing import ScriptedChatModel
from palimpsest.application import (
    AgentMemory,
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from palimpsest.domain import MemoryRecord

ONE_ATTEMPT = ExtractionRetryPolicy(max_attempts=1)


def open_client(model: ScriptedChatModel, mode: MemoryLinkExtractionMode = MemoryLinkExtractionMode.DISABLED):  # type: ignore[no-untyped-def]
    return open_memory(
        embedder=HashingEmbedder(),
        extractor=LlmExtractor(model),
        link_resolver=LlmLinkResolver(model),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=mode,
            enable_context_summary=False,
        ),
        extraction_retry_policy=ONE_ATTEMPT,
    )


def turn(speaker: str, text: str, **metadata: object) -> dict[str, object]:
    message: dict[str, object] = {"role": "user", "content": text, "name": speaker}
    if metadata:
        message["metadata"] = dict(metadata)
    return message


def memories(memory: AgentMemory, user_id: str = "u1") -> dict[str, MemoryRecord]:
    return {m.content: m for m in memory.list_memories(user_id=user_id)}


def public(record: MemoryRecord) -> dict[str, object]:
    """A memory's metadata without the library's own ``$agent_memory``."""
    return {k: v for k, v in (record.metadata or {}).items() if k != "$agent_memory"}


def sources(record: MemoryRecord) -> list[str]:
    return list((record.metadata or {})["$agent_memory"]["source_message_ids"])


# -- the defect: metadata that differs across a memory's sources never fails the job ---------------


def test_an_unattributed_memory_over_two_speakers_is_stored_without_a_speaker() -> None:
    """Before, the pass's two ``speaker`` values raised ValidationError outside the per-memory
    guard: the whole job failed, for good after its attempts, and no memory was stored."""
    model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": [
        {"text": "Caroline and Melanie went camping in June.", "record_type": "fact"},  # no "sources"
    ]}]})
    with open_client(model) as memory:
        thread = memory.create_thread(user_id="u1")
        ids = thread.add_messages([
            turn("Caroline", "We went camping in June!", session="s1"),
            turn("Melanie", "Yes, that trip was lovely.", session="s1"),
        ])
        memory.wait_for_memory_extraction(timeout=60)
        [stored] = memories(memory).values()
        failed = memory.failed_extractions()
    assert failed == []
    assert stored.content == "Caroline and Melanie went camping in June."
    assert sources(stored) == ids  # unattributed: all the pass's messages
    assert public(stored) == {"session": "s1"}  # the key both agree on; "speaker" differs, so it is left out


def test_a_memory_keeps_only_the_metadata_all_its_sources_agree_on() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": [
        {"text": "Carla lives in Rome.", "record_type": "fact", "sources": [1, 2]},
        {"text": "Carla's name is Carla.", "record_type": "fact", "sources": [1]},
    ]}]})
    with open_client(model) as memory:
        memory.create_thread(user_id="u1").add_messages([
            {"role": "user", "content": "My name is Carla.", "metadata": {"source": "chat", "topic": "intro"}},
            {"role": "user", "content": "I live in Rome.", "metadata": {"source": "email", "topic": "intro", "x": 1}},
        ])
        stored = memories(memory)
        assert memory.failed_extractions() == []
    assert public(stored["Carla lives in Rome."]) == {"topic": "intro"}  # "source" differs, "x" one lacks
    assert public(stored["Carla's name is Carla."]) == {"source": "chat", "topic": "intro"}
