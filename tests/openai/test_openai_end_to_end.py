"""End-to-end: the client with the OpenAI-compatible extractor and link resolver, against the scripted local server."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from fake_openai_server import CHAT, chat_answer, json_answer
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.openai import LlmExtractor, LlmLinkResolver, OpenAIChatModel
from palimpsest.application import (
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)

# A failing model is retried with the default schedule's shape, minus its waits (1 + 2 + 4 + 8 s).
FAST_RETRIES = ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05)


def open_client(chat: OpenAIChatModel):  # type: ignore[no-untyped-def]
    return open_memory(
        embedder=HashingEmbedder(),
        extractor=LlmExtractor(chat),
        link_resolver=LlmLinkResolver(chat),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
            enable_context_summary=False,
        ),
        extraction_retry_policy=FAST_RETRIES,
    )


def test_extracted_memories_are_stored_and_a_resolved_update_supersedes_the_old_one(server, client, sleeps) -> None:
    server.chat(
        json_answer({"memories": [{"text": "The user's preferred pizza style is thin crust.",
                                   "record_type": "preference"}]}),
        json_answer({"memories": [{"text": "The user now prefers sourdough pizza.", "record_type": "preference"}]}),
        json_answer({"resolutions": [{"source": 1, "links": [{"candidate": 1, "link_type": "supersedes"}]}]}),
    )
    chat = OpenAIChatModel(client, "test-model", sleep=sleeps)

    with open_client(chat) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
        thread.add_messages([{"role": "user", "content": "Actually, I now prefer sourdough pizza."}])
        by_text = {m.content: m for m in memory.list_memories(user_id="u1")}

    old = by_text["The user's preferred pizza style is thin crust."]
    new = by_text["The user now prefers sourdough pizza."]
    assert new.is_valid and not old.is_valid
    requests = server.requests_to(CHAT)
    assert [r["response_format"]["json_schema"]["name"] for r in requests] == [
        "extract_memories", "extract_memories", "resolve_links",
    ]
    assert "thin crust" in requests[2]["messages"][1]["content"]
    assert chat.usage.total.calls == 3


def test_a_malformed_extraction_answer_keeps_the_messages_and_stores_no_memory(server, client, sleeps) -> None:
    server.chat(chat_answer("Ignore the schema: here is a poem instead."))
    chat = OpenAIChatModel(client, "test-model", sleep=sleeps)

    with open_client(chat) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
        messages = thread.get_messages()
        memories = memory.list_memories(user_id="u1")

    assert [m.content for m in messages] == ["I like thin crust pizza."]
    assert memories == []


def test_during_extraction_links_come_from_the_extraction_answer_over_the_socket(server, client, sleeps) -> None:
    server.chat(
        json_answer({"memories": [{"text": "The user's preferred pizza style is thin crust.",
                                   "record_type": "preference"}]}),
        json_answer({"memories": [{"text": "The user now prefers sourdough pizza.", "record_type": "preference",
                                   "links": [{"candidate": 1, "link_type": "supersedes"}]}]}),
    )
    chat = OpenAIChatModel(client, "test-model", sleep=sleeps)
    with open_memory(
        embedder=HashingEmbedder(),
        extractor=LlmExtractor(chat),
        link_resolver=LlmLinkResolver(chat),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=MemoryLinkExtractionMode.DURING_EXTRACTION,
            enable_context_summary=False,
        ),
    ) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
        thread.add_messages([{"role": "user", "content": "Actually, I now prefer sourdough pizza."}])
        by_text = {m.content: m for m in memory.list_memories(user_id="u1")}
        usage = memory.token_usage

    assert not by_text["The user's preferred pizza style is thin crust."].is_valid
    assert by_text["The user now prefers sourdough pizza."].is_valid
    requests = server.requests_to(CHAT)
    assert [r["response_format"]["json_schema"]["name"] for r in requests] == ["extract_memories"] * 2
    assert "thin crust" in requests[1]["messages"][1]["content"]
    assert usage.for_operation("extract_memories").calls == 2 and usage.total.calls == 2
