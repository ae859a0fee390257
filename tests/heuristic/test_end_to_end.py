"""Tests of the heuristic adapters layer wired into the client: the pizza seed with no model at all."""

from __future__ import annotations

from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import open_memory
from palimpsest.adapters.heuristic import HeuristicExtractor, RuleLinkResolver, TextRankSummariser
from palimpsest.application import MemoryExtractionConfig, MemoryExtractionMode, MemoryLinkExtractionMode


def test_the_pizza_seed_builds_its_preference_graph_from_user_turns_alone() -> None:
    memory = open_memory(
        embedder=HashingEmbedder(),
        summariser=TextRankSummariser(),
        extractor=HeuristicExtractor(),
        link_resolver=RuleLinkResolver(),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_extraction_frequency=1,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
        ),
    )
    try:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "My preferred pizza style is thin crust."}])
        thread.add_messages([{"role": "user", "content": "I now prefer sourdough pizza."}])
        thread.add_messages(
            [{"role": "user", "content": "My preferred pizza style is sourdough, especially Neapolitan sourdough."}]
        )
        by_text = {m.content: m for m in memory.list_memories(user_id="u1")}
        thin = by_text["The user's preferred pizza style is thin crust."]
        sourdough = by_text["The user now prefers sourdough pizza."]
        neapolitan = by_text["The user's preferred pizza style is sourdough, especially Neapolitan sourdough."]
        assert thin.invalidation_reason == "Superseded by another memory."
        assert sourdough.invalidation_reason == "Refined by another memory."
        assert neapolitan.is_valid
    finally:
        memory.close()
