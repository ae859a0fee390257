"""Embedded store under the searcher: a hybrid search refined over a candidate pool may load a
shorter pool first, and must return exactly what the whole pool gives.

The refinements that drop hits (provenance, duplicates) decide hit by hit in the fused order,
except that a retired memory kept for its words gives its slot to a later valid copy; so the
searcher may stop at a shorter pool only when its best hits hold no retired memory. These tests
compare every answer with the searcher's answer from the whole pool.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.application import AgentMemory, MemoryExtractionConfig, RetrievalConfig
from palimpsest.application.searching import Searcher
from palimpsest.domain.search import SearchQuery

WORDS = ("tea", "garden", "rome", "pizza", "coffee", "music")


class WordsEmbedder:
    """Vectors that count the query words, "!" marks (which push a text away from every query)
    and a small per-text component: rankings a test can arrange."""

    dimension = len(WORDS) + 2
    model_id = "test-words"

    def embed(self, texts: list[str], *, is_query: bool = False) -> list[list[float]]:
        out = []
        for text in texts:
            lowered = text.lower()
            counts = [float(lowered.count(word)) for word in WORDS]
            out.append([*counts, 3.0 * text.count("!"), 0.01 + (zlib.crc32(text.encode()) % 100) / 1000])
        return out


class _CountingSession:
    """A search session that records the candidate pool (``k``) of every search run on it (a
    search asks for its dense and keyword candidates with one query: counted once)."""

    def __init__(self, session: Any, pools: list[int]) -> None:
        self._session = session
        self._pools = pools
        self._last: SearchQuery | None = None

    def _count(self, query: SearchQuery) -> None:
        if query is not self._last:
            self._last = query
            self._pools.append(query.k)

    def dense_candidates(self, query: SearchQuery, depth: int) -> Any:
        self._count(query)
        return self._session.dense_candidates(query, depth)

    def keyword_candidates(self, query: SearchQuery, depth: int) -> Any:
        self._count(query)
        return self._session.keyword_candidates(query, depth)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class CountingStore(EmbeddedStore):
    """Records the candidate pool (``k``) of every search."""

    pools: list[int]

    @contextmanager
    def searching(self) -> Iterator[Any]:
        with super().searching() as session:
            yield _CountingSession(session, self.pools)


def _open(path: Path, retrieval: RetrievalConfig) -> AgentMemory:
    """A client on a counting store, without extraction."""
    store = CountingStore(path)
    store.pools = []
    return build_client(
        store=store,
        embedder=WordsEmbedder(),  # type: ignore[arg-type]
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False, enable_context_summary=False),
        retrieval=retrieval,
        close_store=True,
    )


@pytest.fixture
def client(tmp_path: Path) -> Iterator[AgentMemory]:
    # provenance merging, duplicate collapsing and third-party demotion, a pool of 50
    memory = _open(tmp_path / "staged.db", RetrievalConfig())
    yield memory
    memory.close()


def _pools(client: AgentMemory) -> list[int]:
    return client._services.store.pools  # type: ignore[attr-defined,no-any-return]


def _answers(client: AgentMemory, query: str, k: int, **kw: Any) -> list[tuple[str, float, float]]:
    return [(r.id, r.relevance, r.distance) for r in client.search(query, user_id="u", max_results=k, **kw)]


def _whole_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Searcher, "_first_pool", lambda self, query, k, stages: None)


def test_a_retired_memory_among_the_first_hits_sends_the_search_to_the_whole_pool(
    client: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    retired = client.add_memory("tea garden", user_id="u", memory_type="fact")
    newer = client.add_memory("rome pizza", user_id="u", memory_type="fact")
    client.link_records(newer, "fact", retired, "fact", "supersedes")
    for i in range(30):
        client.add_memory(f"tea garden note {i}", user_id="u", memory_type="fact")
    # The same words, far from the query's vector: ranked below the first pool of 11.
    copy = client.add_memory("Tea, garden" + "!" * 20, user_id="u", memory_type="fact")
    _pools(client).clear()
    staged = _answers(client, "tea garden", 1)
    assert [i for i, *_ in staged] == [copy]  # the valid copy takes the retired one's slot
    assert _pools(client) == [11, 50]  # the first pool's best hit was retired: the whole pool
    _whole_pool(monkeypatch)
    assert _answers(client, "tea garden", 1) == staged


def test_staged_and_whole_pool_searches_agree(client: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = []
    for i in range(60):
        words = " ".join(WORDS[j] for j in range(len(WORDS)) if (i >> j) & 1) or "nothing"
        ids.append(client.add_memory(f"{words} {i % 7}", user_id="u", memory_type="fact"))
    for i in range(12):  # repeated lines, some with a retired first copy
        first = client.add_memory("tea and rome", user_id="u", memory_type="fact")
        client.add_memory("Tea and Rome!" + "!" * (i % 4), user_id="u", memory_type="preference")
        if i % 3 == 0:
            client.link_records(ids[i], "fact", first, "fact", "supersedes")
    queries = ["tea rome", "garden pizza", "coffee", "music tea garden", "rome", "nothing at all"]
    cases = [(q, k, invalid) for q in queries for k in (1, 3, 5, 10, 20, 40) for invalid in (True, False)]
    _pools(client).clear()
    staged = [_answers(client, q, k, include_invalid_results=invalid) for q, k, invalid in cases]
    pools = list(_pools(client))
    assert pools.count(50) < len(cases)  # some searches were settled by their first pool ...
    assert any(p == 50 for p in pools)  # ... and some needed the whole one
    _whole_pool(monkeypatch)
    whole = [_answers(client, q, k, include_invalid_results=invalid) for q, k, invalid in cases]
    assert staged == whole


def test_keyword_and_vector_searches_and_reordering_options_use_the_whole_pool(
    tmp_path: Path,
) -> None:
    client = _open(tmp_path / "whole.db", RetrievalConfig(latest_weight=0.5))
    try:
        for i in range(5):
            client.add_memory(f"tea garden {i}", user_id="u", memory_type="fact")
        for strategy in ("keyword", "vector"):
            client.search("tea", user_id="u", max_results=3, search_strategy=strategy)
        client.search("what is the latest tea", user_id="u", max_results=3)  # the recency blend
        client.search("tea", user_id="u", max_results=3)  # no blend: a first pool
        assert _pools(client) == [50, 50, 50, 13]
    finally:
        client.close()


def test_staged_and_whole_pool_searches_agree_when_third_parties_are_demoted(
    client: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(80):
        words = " ".join(WORDS[j] for j in range(len(WORDS)) if (i >> j) & 1) or "nothing"
        speaker = ("My sister likes", "My brother says", "My cousin likes", "I like", "My manager likes")[
            i % 5
        ]
        client.add_memory(f"{speaker} {words}{'!' * (i % 3)} {i}", user_id="u", memory_type="fact")
    queries = [
        "do I like tea",
        "what does my sister like, tea or rome",
        "tea rome",
        "my garden pizza",
        "I coffee",
    ]
    cases = [(q, k) for q in queries for k in (1, 3, 5, 10, 20)]
    _pools(client).clear()
    staged = [_answers(client, q, k) for q, k in cases]
    pools = list(_pools(client))
    assert any(p == 50 for p in pools) and pools.count(50) < len(cases)
    _whole_pool(monkeypatch)
    assert staged == [_answers(client, q, k) for q, k in cases]
    # The demotion acted: for a question about the speaker, the speaker's own statements lead.
    first = [r.content for r in client.search("do I like tea", user_id="u", max_results=5)]
    assert all(not c.startswith(("My sister", "My brother", "My cousin")) for c in first)
