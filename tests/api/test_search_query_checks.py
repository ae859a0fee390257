"""A search checks every argument before it embeds its query; an embedder's error comes out as
raised, with nothing written and no vector kept, except an unavailable embedder's, which makes it
a keyword search (ARCHITECTURE.md D43)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.domain.errors import ConfigurationError, ModelUnavailableError, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import snapshot


class _Recording(HashingEmbedder):
    """The hashing embedder, recording the queries it embeds; ``fail``: raised instead."""

    def __init__(self, fail: Exception | None = None) -> None:
        super().__init__()
        self.fail = fail
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if is_query:
            self.queries.extend(texts)
            if self.fail is not None:
                raise self.fail
        return super().embed(texts, is_query=is_query)


@pytest.mark.parametrize("strategy", ["hybrid", "vector"])
@pytest.mark.parametrize(
    "bad",
    [
        {"num_hops": -1},
        {"max_linked_results": -1},
        {"record_types": ["no such type"]},
        {"metadata_filter": {"t": {"$regex": "a"}}},
    ],
)
def test_bad_arguments_are_refused_before_the_query_is_embedded(
    make_client: ClientFactory, strategy: str, bad: dict[str, Any]
) -> None:
    embedder = _Recording()
    client = make_client(embedder=embedder, search_strategy=strategy)
    with pytest.raises(ValidationError):
        client.search("pizza", user_id="u", **bad)
    with pytest.raises(ValidationError):
        client.create_thread(thread_id="t", user_id="u").search("pizza", **bad)
    assert embedder.queries == []


def test_an_embedder_error_comes_out_as_raised_and_nothing_is_written_or_kept(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    filler = make_client()
    filler.create_thread(thread_id="t1", user_id="u").add_messages([{"role": "user", "content": "pizza in Rome"}])
    filler.add_memory("The user likes sourdough pizza.", user_id="u")
    failing = _Recording(fail=ConfigurationError("the embedding model 'x' does not exist"))
    client = make_client(embedder=failing)
    before = snapshot(store)
    with pytest.raises(ConfigurationError, match="does not exist"):
        client.search("pizza in Rome", user_id="u")
    with pytest.raises(ConfigurationError):
        client.get_thread("t1").search("pizza in Rome")
    assert snapshot(store) == before
    failing.fail = None  # the failed query was not kept as a recent one: it is embedded again
    assert [r.content for r in client.search("pizza in Rome", user_id="u")]
    assert failing.queries == ["pizza in Rome"] * 3


def test_an_unavailable_embedder_makes_the_search_a_keyword_search_with_nothing_written_or_kept(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    """ARCHITECTURE.md D43: a model server that is down fails no search (it used to raise)."""
    filler = make_client()
    filler.create_thread(thread_id="t1", user_id="u").add_messages([{"role": "user", "content": "pizza in Rome"}])
    filler.add_memory("The user likes sourdough pizza.", user_id="u")
    failing = _Recording(fail=ModelUnavailableError("the embedding service is down"))
    client = make_client(embedder=failing)
    before = snapshot(store)
    assert "pizza in Rome" in [r.content for r in client.search("pizza in Rome", user_id="u")]
    assert "pizza in Rome" in [r.content for r in client.get_thread("t1").search("pizza in Rome")]
    assert snapshot(store) == before
    failing.fail = None  # the query's vector was not kept as a recent one: it is embedded again
    assert [r.content for r in client.search("pizza in Rome", user_id="u")]
    assert failing.queries == ["pizza in Rome"] * 3
