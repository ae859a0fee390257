"""Oversized messages are shortened for model prompts; the stored text stays whole."""

from __future__ import annotations

from clients import build_client
from palimpsest.application import MemoryExtractionConfig, MemoryExtractionMode
from palimpsest.application.budgets import OMISSION_MARKER, shorten_for_prompt
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain.ports import MemoryStore


def test_an_oversized_message_reaches_the_extractor_shortened_and_is_stored_whole(store: MemoryStore) -> None:
    extractor = ScriptedExtractor()
    memory = build_client(
        store=store,
        extractor=extractor,
        memory_extraction_config=MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE),
    )
    thread = memory.create_thread(user_id="u1", max_message_token_length=100)
    long_text = "BEGIN " + "word " * 2000 + " END"
    thread.add_messages([{"role": "user", "content": long_text}, {"role": "user", "content": "short"}])
    (request,) = extractor.requests
    sent = [m.content for m in request.target_messages]
    assert sent[1] == "short"
    assert OMISSION_MARKER in sent[0] and sent[0].startswith("BEGIN") and sent[0].endswith("END")
    assert len(sent[0]) <= 100 * 3.5
    assert [m.content for m in thread.get_messages()] == [long_text, "short"]


def test_shortening_is_off_without_a_positive_limit() -> None:
    class Text:
        def __init__(self, content: str) -> None:
            self.content = content

    items = [Text("x" * 10_000)]
    assert shorten_for_prompt(items, None) == items
    assert shorten_for_prompt(items, 0) == items
