"""Seed 002, "Customize context card content", run offline on palimpsest.

The body of :func:`main` is the seed's complete code listing. Only the imports and the
client construction differ: instead of an Oracle connection pool, a remote embedding model
and an LLM, the client uses the embedded store in a folder of your choice, the hashing
embedder, the extractive summariser, and a scripted extractor that returns the memories the
seed's sample card shows (a restaurant preference, a response-style guideline and a note).

Run it with ``python examples/customize_context_card.py`` (a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.application import AgentMemory, ExtractedMemory, MemoryExtractionConfig, MemoryExtractionMode
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import RecordType

SAMPLE_EXTRACTION = [
    ExtractedMemory(RecordType.PREFERENCE, "User prefers vegetarian restaurants."),
    ExtractedMemory(RecordType.GUIDELINE, "Offer concise recommendations with clear tradeoffs."),
    ExtractedMemory(RecordType.MEMORY, "User is comparing pizza places for Friday."),
]
"""What a model would extract from the seed's two messages under its custom instructions."""


def main(folder: str | Path) -> dict[str, Any]:
    """Run the listing against a store in ``folder``; returns the listing's variables.

    The client owns the store (``close_store=True``): close both with ``names["memory"].close()``."""
    ##Reserve relevant results by record type

    extractor = ScriptedExtractor([SAMPLE_EXTRACTION])
    memory = AgentMemory(
        store=EmbeddedStore(Path(folder) / "card-memory.db"),
        close_store=True,
        embedder=HashingEmbedder(),
        summariser=ScriptedSummariser(),
        extractor=extractor,
        # Extract before add_messages returns, so the card below already sees the memories
        # (the default, BACKGROUND, would need wait_for_memory_extraction() first).
        memory_extraction_config=MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE),
    )

    thread = memory.create_thread(
        thread_id="context_card_customization_demo",
        user_id="user_123",
        agent_id="assistant_456",
        memory_extraction_config=MemoryExtractionConfig(
            memory_extraction_custom_instructions=(
                "Extract restaurant preferences as preference records and assistant "
                "response-style instructions as guideline records."
            )
        ),
    )
    thread.add_messages(
        [
            {
                "role": "user",
                "content": "I need vegetarian dinner recommendations for Friday.",
            },
            {
                "role": "assistant",
                "content": "I can compare concise options and tradeoffs.",
            },
        ]
    )

    card = thread.get_context_card(
        max_relevant_results=6,
        min_relevant_results_by_type={
            "preference": 1,
            "guideline": 1,
            "message": 1,
        },
    )

    prompt_context = card.content
    print(prompt_context)

    ##Tune type search concurrency

    thread = memory.get_thread(
        "context_card_customization_demo",
        context_card_type_search_concurrency=2,
    )

    card = thread.get_context_card(
        max_relevant_results=6,
        min_relevant_results_by_type={
            "preference": 1,
            "guideline": 1,
            "message": 1,
        },
    )

    return locals()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        names = main(folder)
        names["memory"].close()
