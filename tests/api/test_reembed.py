"""Switching embedding models: refused by default, then re-embedding from stored text."""

from __future__ import annotations

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import MemoryExtractionConfig
from palimpsest.domain import ConfigurationError
from palimpsest.domain.ports import MemoryStore

NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


def test_a_new_model_is_refused_until_allowed_and_reembed_makes_vector_search_work_again(store: MemoryStore) -> None:
    old = build_client(store=store, embedder=HashingEmbedder(16), memory_extraction_config=NO_EXTRACTION)
    rid = old.add_memory("The user loves sourdough pizza.", user_id="u1")
    thread = old.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "Sourdough pizza tonight?"}, {"role": "assistant", "content": "Sure."}])

    with pytest.raises(ConfigurationError):
        build_client(store=store, embedder=HashingEmbedder(32), memory_extraction_config=NO_EXTRACTION)

    new = build_client(
        store=store,
        embedder=HashingEmbedder(32),
        memory_extraction_config=NO_EXTRACTION,
        allow_embedding_model_change=True,
    )
    seen: list[tuple[int, int]] = []
    assert new.reembed(batch_size=2, progress=lambda done, total: seen.append((done, total))) == 3
    assert seen == [(1, 3), (3, 3)]  # one batch of records, one of messages
    assert store.dimension == 32
    hits = new.search("sourdough pizza", user_id="u1", record_types=["memory"])
    assert [h.id for h in hits] == [rid]
    # The store now remembers the new model: a plain client with it opens without ceremony.
    build_client(store=store, embedder=HashingEmbedder(32), memory_extraction_config=NO_EXTRACTION)
    with pytest.raises(ConfigurationError):
        build_client(store=store, embedder=HashingEmbedder(16), memory_extraction_config=NO_EXTRACTION)
