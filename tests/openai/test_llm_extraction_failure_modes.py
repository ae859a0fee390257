"""The LLM extractor on conversations of named people, driven by a scripted model through the client.

Each test scripts the model's answers and asserts on what is stored: the memories, their
sources and inherited metadata, their links and validity, and what the prompt showed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.openai import LlmExtractor, LlmLinkResolver
from palimpsest.adapters.openai.prompts import (
    EXTRACTION_SYSTEM_PROMPT,
    SPEAKER_SECTION,
    UNTRUSTED_CONTENT_RULE,
)
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


def links(memory: AgentMemory) -> list[tuple[str, str, str]]:
    with memory.store.reading() as uow:
        return sorted((link.source_id, link.target_id, link.relation_type) for link in uow.links.list())


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


# -- speakers in the prompt -------------------------------------------------------------------------


def test_named_turns_reach_the_model_with_their_speakers_and_the_rule_to_name_them() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [
        {"memories": [{"text": "Caroline adopted a dog.", "record_type": "fact", "sources": [1]}]},
        {"memories": []},
    ]})
    with open_client(model) as memory:
        memory.create_thread(user_id="u1").add_messages([
            turn("Caroline", "I adopted a dog!"), turn("Mel <x>", "Congratulations!")
        ])
        memory.create_thread(user_id="u2").add_messages([{"role": "user", "content": "I adopted a dog!"}])
        stored = memories(memory)
    named, unnamed = model.requests_named("extract_memories")
    assert '<message index="1" role="user" speaker="Caroline"' in named.user
    assert 'speaker="Mel &lt;x&gt;"' in named.user  # a name is data, escaped like the text
    assert SPEAKER_SECTION in named.system and 'never as "the user"' in named.system
    assert "speaker=" not in unnamed.user and SPEAKER_SECTION not in unnamed.system  # unnamed: as before
    assert unnamed.system == EXTRACTION_SYSTEM_PROMPT
    for request in (named, unnamed):  # the untrusted-content rule stays in every prompt
        assert UNTRUSTED_CONTENT_RULE in request.system
    assert public(stored["Caroline adopted a dog."]) == {"speaker": "Caroline"}


# -- failure modes ----------------------------------------------------------------------------------


def test_a_fact_split_over_two_turns_cites_both_and_names_a_speaker_only_when_they_agree() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": [
        {"text": "Caroline adopted the greyhound from the harbour shelter.", "record_type": "fact",
         "sources": [1, 3]},
        {"text": "Melanie's kids love the beach.", "record_type": "fact", "sources": [2, 4]},
    ]}]})
    with open_client(model) as memory:
        ids = memory.create_thread(user_id="u1").add_messages([
            turn("Caroline", "I finally adopted him!"),
            turn("Melanie", "Adopted whom? Do my kids know? They love the beach and dogs."),
            turn("Caroline", "The greyhound from the harbour shelter."),
            turn("Caroline", "Yes, your kids already asked about him."),
        ])
        stored = memories(memory)
        assert memory.failed_extractions() == []
    greyhound = stored["Caroline adopted the greyhound from the harbour shelter."]
    beach = stored["Melanie's kids love the beach."]
    assert sources(greyhound) == [ids[0], ids[2]] and public(greyhound) == {"speaker": "Caroline"}
    assert sources(beach) == [ids[1], ids[3]] and public(beach) == {}  # two speakers' turns: no speaker claimed


def correction_answer() -> dict[str, object]:
    return {"memories": [
        {"text": "Caroline lived in Oslo until March.", "record_type": "fact", "sources": [1]},
        {"text": "Caroline lives in Bergen.", "record_type": "fact", "sources": [1, 3], "replaces": [1]},
    ]}


CORRECTED = [
    turn("Caroline", "I live in Oslo."),
    turn("Melanie", "Still in Oslo?"),
    turn("Caroline", "Sorry, no: I moved to Bergen in March."),
]


def test_a_fact_corrected_later_in_the_same_messages_supersedes_the_earlier_memory() -> None:
    """Before, both memories of one pass stayed valid: post-extraction linking never shows a
    memory its own pass's siblings, and the model had no way to say which one it corrects."""
    model = ScriptedChatModel(by_operation={"extract_memories": [correction_answer()]})
    with open_client(model, MemoryLinkExtractionMode.POST_EXTRACTION) as memory:
        ids = memory.create_thread(user_id="u1").add_messages(CORRECTED)
        stored = memories(memory)
        new, old = stored["Caroline lives in Bergen."], stored["Caroline lived in Oslo until March."]
        made = links(memory)
    assert new.is_valid and not old.is_valid
    assert made == [(new.id, old.id, "supersedes")]
    assert sources(new) == [ids[0], ids[2]] and public(new) == {"speaker": "Caroline"}
    [request] = model.requests_named("extract_memories")
    assert '"replaces"' in request.system and "Corrections" in request.system


def test_an_in_pass_correction_links_nothing_when_automatic_linking_is_off() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [correction_answer()]})
    with open_client(model, MemoryLinkExtractionMode.DISABLED) as memory:
        memory.create_thread(user_id="u1").add_messages(CORRECTED)
        stored = memories(memory)
        assert all(m.is_valid for m in stored.values()) and len(stored) == 2
        assert links(memory) == []


def test_a_fact_corrected_in_a_later_append_is_superseded_by_the_resolver() -> None:
    model = ScriptedChatModel(by_operation={
        "extract_memories": [
            {"memories": [{"text": "Caroline lives in Oslo.", "record_type": "fact"}]},
            {"memories": [{"text": "Caroline moved to Bergen in March.", "record_type": "fact"}]},
        ],
        "resolve_links": [{"resolutions": [{"source": 1, "links": [{"candidate": 1, "link_type": "supersedes"}]}]}],
    })
    with open_client(model, MemoryLinkExtractionMode.POST_EXTRACTION) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([turn("Caroline", "I live in Oslo.")])
        thread.add_messages([turn("Caroline", "Sorry, no: I moved to Bergen in March.")])
        stored = memories(memory)
    old, new = stored["Caroline lives in Oslo."], stored["Caroline moved to Bergen in March."]
    assert new.is_valid and not old.is_valid
    second = model.requests_named("extract_memories")[1]
    assert "Caroline lives in Oslo." in second.user  # the past memory was shown to the model
    [resolve] = model.requests_named("resolve_links")
    assert "Caroline lives in Oslo." in resolve.user


def test_we_and_they_are_resolved_by_the_model_and_any_answer_about_them_is_stored() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": [
        {"text": "Caroline and Melanie went camping in June.", "record_type": "memory",
         "entities": ["Caroline", "Melanie", "we", "  "], "sources": [1, 2]},
        {"text": "They moved to Lisbon.", "record_type": "fact", "entities": ["they"], "sources": [3],
         "replaces": [2, 9, 0, -1]},  # itself, later, unknown and out-of-range numbers are ignored
    ]}]})
    with open_client(model, MemoryLinkExtractionMode.POST_EXTRACTION) as memory:
        memory.create_thread(user_id="u1").add_messages([
            turn("Caroline", "We went camping in June!"),
            turn("Melanie", "Yes, we did."),
            turn("Caroline", "They moved to Lisbon, I heard."),
        ])
        stored = memories(memory)
        assert memory.failed_extractions() == []
        assert links(memory) == []
    camping, lisbon = stored["Caroline and Melanie went camping in June."], stored["They moved to Lisbon."]
    assert camping.is_valid and lisbon.is_valid
    assert camping.metadata["$agent_memory"]["entities"] == ["Caroline", "Melanie", "we"]
    assert public(camping) == {} and public(lisbon) == {"speaker": "Caroline"}
    [request] = model.requests_named("extract_memories")
    assert '"We", "they", "us": name the people meant' in request.system and "never guess names" in request.system


def test_without_a_model_resolver_the_offline_rules_supersede_a_named_fact_only_for_its_own_person() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [
        {"memories": [{"text": "Caroline lives in Oslo.", "record_type": "fact"}]},
        {"memories": [{"text": "Melanie lives in Bergen.", "record_type": "fact"}]},
        {"memories": [{"text": "Caroline moved to Bergen in March.", "record_type": "fact"}]},
    ]})
    config = MemoryExtractionConfig(
        extraction_mode=MemoryExtractionMode.INLINE,
        memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        enable_context_summary=False,
    )
    with open_memory(embedder=HashingEmbedder(), extractor=LlmExtractor(model), memory_extraction_config=config,
                     extraction_retry_policy=ONE_ATTEMPT) as memory:  # the default (rule-based) link resolver
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([turn("Caroline", "I live in Oslo.")])
        thread.add_messages([turn("Melanie", "I live in Bergen.")])
        thread.add_messages([turn("Caroline", "Sorry, no: I moved to Bergen in March.")])
        stored = memories(memory)
        made = links(memory)
    oslo, melanie, bergen = (stored[t] for t in
                             ("Caroline lives in Oslo.", "Melanie lives in Bergen.", "Caroline moved to Bergen in March."))
    assert made == [(bergen.id, oslo.id, "supersedes")]
    assert [oslo.is_valid, melanie.is_valid, bergen.is_valid] == [False, True, True]
