"""The default offline extractor through the public API: what a chat turn says about its
speaker becomes a memory about that speaker (ARCHITECTURE.md D47)."""

from __future__ import annotations

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.domain import RecordType


def _memories(messages: list[dict[str, str]]) -> list[tuple[RecordType, str]]:
    with open_memory(backend="memory", embedder=HashingEmbedder(dimension=64)) as memory:
        thread = memory.create_thread(user_id="u")
        thread.add_messages(messages)
        thread.wait_for_memory_extraction()
        return sorted((r.record_type, r.content) for r in memory.list_memories(user_id="u"))


def test_seed_002s_own_message_yields_a_memory_offline() -> None:
    assert _memories([{"role": "user", "content": "I need vegetarian dinner recommendations for Friday."}]) == [
        (RecordType.MEMORY, "The user needs vegetarian dinner recommendations for Friday.")
    ]


def test_a_named_speakers_statements_are_about_them_and_questions_and_greetings_are_skipped() -> None:
    found = _memories(
        [
            {"role": "user", "name": "Caroline", "content": "Hey Mel! I went to a LGBTQ support group yesterday."},
            {"role": "user", "name": "Melanie", "content": "Wow, that's cool! What happened? I prefer painting."},
            {"role": "user", "name": "Caroline", "content": "Thanks, Melanie! My mom gave me her old guitar last week."},
        ]
    )
    assert found == [
        (RecordType.MEMORY, "Caroline went to a LGBTQ support group yesterday."),
        (RecordType.MEMORY, "Caroline's mom gave Caroline her old guitar last week."),
        (RecordType.PREFERENCE, "Melanie prefers painting."),
    ]


def test_a_message_in_another_language_yields_no_english_rewrite() -> None:
    assert _memories(
        [
            {"role": "user", "name": "Camille", "content": "Je suis allée à un groupe de soutien hier, c'était très fort."},
            {"role": "user", "content": "Ich bin gestern mit meiner Schwester nach Berlin gefahren."},
            {"role": "user", "content": "Me gusta mucho la comida vegetariana de mi madre."},
        ]
    ) == []
