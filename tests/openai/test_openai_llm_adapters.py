"""Tests of LlmExtractor, LlmSummariser and LlmLinkResolver: scripted answers become the right port DTOs."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from fake_openai_server import CHAT, chat_answer, json_answer
from palimpsest.adapters.openai import (
    LlmExtractor,
    LlmLinkResolver,
    LlmSummariser,
    ModelOutputError,
    OpenAIChatModel,
)
from palimpsest.application.ports import (
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    LinkProposal,
    LinkResolution,
    LinkResolver,
    Summariser,
    SummaryText,
)
from palimpsest.domain.model import MemoryRecord, Message, RecordType

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def message(content: str, seq: int = 1) -> Message:
    return Message(id=f"m{seq}", thread_id="t1", role="user", content=content, seq=seq, created_at=NOW)


def memory(record_id: str, content: str, record_type: RecordType = RecordType.FACT) -> MemoryRecord:
    return MemoryRecord(id=record_id, record_type=record_type, content=content, created_at=NOW, updated_at=NOW)


@pytest.fixture
def chat(client, sleeps) -> OpenAIChatModel:
    return OpenAIChatModel(client, "test-model", sleep=sleeps, max_retries=1)


def test_the_extractor_turns_an_answer_into_extracted_memories_linked_to_shown_candidates(server, chat) -> None:
    server.chat(json_answer({
        "thoughts": "the user moved",
        "memories": [
            {"text": "  Alice lives in   Lyon since March 2026. ", "record_type": "fact", "scope": "user",
             "entities": ["Alice", "Lyon", "Alice"], "importance": 9, "timestamp": "2026-03-01T00:00:00Z",
             "valid_to": None,
             "links": [{"candidate": 1, "link_type": "supersedes"}, {"candidate": 7, "link_type": "refines"},
                       {"candidate": 2, "link_type": "teleports"}, {"candidate": 1, "link_type": "supersedes"}]},
            {"text": "Alice prefers window seats.", "record_type": "Preference", "scope": "galaxy",
             "entities": None, "importance": None, "timestamp": "not a date", "valid_to": "2026-12-31"},
            {"text": "dropped: unknown type", "record_type": "opinion"},
        ],
    }))
    request = ExtractionRequest(
        target_messages=[message("I moved to Lyon in March; I always take the window seat.")],
        link_candidates=[memory("rec-paris", "Alice lives in Paris."), memory("rec-job", "Alice is a chef.")],
    )

    extracted = LlmExtractor(chat).extract(request)

    assert isinstance(LlmExtractor(chat), Extractor)
    assert extracted == [
        ExtractedMemory(
            record_type=RecordType.FACT, text="Alice lives in Lyon since March 2026.", entities=("Alice", "Lyon"),
            importance=5, scope="user", timestamp=datetime(2026, 3, 1, tzinfo=UTC), valid_to=None,
            links=(LinkProposal(target_id="rec-paris", link_type="supersedes"),),
            source_message_ids=("m1",),  # the one newest message is every memory's source
        ),
        ExtractedMemory(
            record_type=RecordType.PREFERENCE, text="Alice prefers window seats.", entities=(), importance=None,
            scope=None, timestamp=None, valid_to=datetime(2026, 12, 31, tzinfo=UTC), links=(),
            source_message_ids=("m1",),
        ),
    ]
    [sent] = server.requests_to(CHAT)
    assert sent["response_format"]["json_schema"]["name"] == "extract_memories"
    assert "<candidate index=\"1\"" in sent["messages"][1]["content"]
    assert chat.usage.for_operation("extract_memories").calls == 1


def test_the_extractor_reads_at_most_one_hundred_memories(server, chat) -> None:
    server.chat(json_answer({"memories": [{"text": f"Fact {i}.", "record_type": "fact"} for i in range(130)]}))

    extracted = LlmExtractor(chat).extract(ExtractionRequest(target_messages=[message("many facts")]))

    assert len(extracted) == 100 and extracted[-1].text == "Fact 99."


def test_a_malformed_extraction_answer_raises_so_the_job_is_retried(server, chat) -> None:
    """An unusable answer is a failed attempt (the job stays and is retried), not "no memories"."""
    server.chat(chat_answer("I could not find anything, sorry!"), json_answer({"memories": "none"}))
    extractor = LlmExtractor(chat)
    request = ExtractionRequest(target_messages=[message("hello")])

    with pytest.raises(ModelOutputError, match="not a JSON object"):
        extractor.extract(request)  # not JSON
    with pytest.raises(ModelOutputError, match="does not match the expected schema"):
        extractor.extract(request)  # JSON, wrong shape


def test_the_extractor_sends_nothing_without_target_messages(server, chat) -> None:
    assert LlmExtractor(chat).extract(ExtractionRequest(target_messages=[])) == []
    assert server.requests_to(CHAT) == []


def test_the_summariser_returns_the_summary_with_deduplicated_topics_capped_at_eight(server, chat) -> None:
    topics = ["Travel", "travel", " Japan  trip ", ""] + [f"topic {i}" for i in range(10)]
    server.chat(json_answer({"summary": "Alice plans a trip to Japan in May.", "topics": topics}))
    summariser = LlmSummariser(chat)

    summary = summariser.summarise(SummaryText("Alice likes travel.", ("travel",)), [message("Japan in May!")])

    assert isinstance(summariser, Summariser)
    assert summary.text == "Alice plans a trip to Japan in May."
    assert summary.topics == ("Travel", "Japan trip", "topic 0", "topic 1", "topic 2", "topic 3", "topic 4",
                              "topic 5")
    [sent] = server.requests_to(CHAT)
    assert "Alice likes travel." in sent["messages"][1]["content"]


def test_an_unusable_summary_answer_raises_so_the_application_keeps_its_transcript_fallback(server, chat) -> None:
    server.chat(json_answer({"topics": ["no summary key"]}), json_answer({"summary": "   ", "topics": []}))
    summariser = LlmSummariser(chat)

    with pytest.raises(ModelOutputError):
        summariser.summarise(None, [message("hi")])
    with pytest.raises(ModelOutputError):
        summariser.summarise(None, [message("hi")])


def test_the_link_resolver_maps_indexes_back_to_ids_and_drops_links_it_did_not_show(server, chat) -> None:
    sources = [memory("new-1", "Alice lives in Lyon."), memory("new-2", "Alice likes green tea.")]
    candidates = {
        "new-1": [memory("old-paris", "Alice lives in Paris."), memory("new-1", "itself")],
        "new-2": [memory("old-tea", "Alice likes tea.")],
    }
    server.chat(json_answer({"resolutions": [
        {"source": 1, "updated_text": None,
         "links": [{"candidate": 1, "link_type": "Supersedes"}, {"candidate": 2, "link_type": "duplicates"}]},
        {"source": 2, "updated_text": "Alice likes green tea, and tea in general.",
         "links": [{"candidate": 1, "link_type": "refines"}, {"candidate": 1, "link_type": "supports"}]},
        {"source": 3, "links": [{"candidate": 1, "link_type": "supports"}]},
    ]}))
    resolver = LlmLinkResolver(chat)

    resolutions = resolver.resolve(sources, candidates, custom_instructions="Never use supports.")

    assert isinstance(resolver, LinkResolver)
    assert resolutions == [
        LinkResolution("new-1", (LinkProposal("old-paris", "supersedes"),)),
        LinkResolution("new-2", (LinkProposal("old-tea", "refines"),), "Alice likes green tea, and tea in general."),
    ]
    [sent] = server.requests_to(CHAT)
    assert sent["messages"][0]["content"].endswith("Never use supports.")
    assert "itself" not in sent["messages"][1]["content"]  # a source is never its own candidate


def test_the_link_resolver_asks_in_batches_of_ten_and_skips_sources_without_candidates(server, chat) -> None:
    sources = [memory(f"new-{i}", f"Memory {i}.") for i in range(13)]
    candidates = {f"new-{i}": [memory(f"old-{i}", f"Old {i}.")] for i in range(12)}  # new-12 has none
    server.chat(
        json_answer({"resolutions": [{"source": 10, "links": [{"candidate": 1, "link_type": "supports"}]}]}),
        json_answer({"resolutions": [{"source": 2, "links": [{"candidate": 1, "link_type": "contradicts"}]}]}),
    )

    resolutions = LlmLinkResolver(chat).resolve(sources, candidates)

    assert resolutions == [
        LinkResolution("new-9", (LinkProposal("old-9", "supports"),)),
        LinkResolution("new-11", (LinkProposal("old-11", "contradicts"),)),
    ]
    first, second = server.requests_to(CHAT)
    assert first["messages"][1]["content"].count("<source ") == 10
    assert second["messages"][1]["content"].count("<source ") == 2


def test_a_malformed_link_answer_yields_no_links_for_that_batch_only(server, chat, caplog) -> None:
    sources = [memory(f"new-{i}", f"Memory {i}.") for i in range(11)]
    candidates = {s.id: [memory(f"old-{i}", f"Old {i}.")] for i, s in enumerate(sources)}
    server.chat(
        chat_answer("<think>hmm</think> no idea"),
        json_answer({"resolutions": [{"source": 1, "links": [{"candidate": 1, "link_type": "duplicates"}]}]}),
    )

    with caplog.at_level(logging.WARNING, logger="palimpsest.adapters.openai"):
        resolutions = LlmLinkResolver(chat).resolve(sources, candidates)

    assert resolutions == [LinkResolution("new-10", (LinkProposal("old-10", "duplicates"),))]
    assert any("no links for 10 memories" in r.getMessage() for r in caplog.records)
