"""How many units of work the two hot use cases open (the application-services issue reports these
before and after its restructure, and the bounds below keep them from growing).

A counting store wraps the in-memory fake: every ``unit_of_work()`` (read-write), ``reading()``
(read-only) and ``searching()`` (one search's read) is counted, with the client built as a user
would build it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    LinkProposal,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor, ScriptedLinkResolver
from palimpsest.domain import RecordType

# At the start of the restructure (0163b9e) one add_messages opened 8 units of work, all
# read-write (read-only units did not exist yet), and a search 1. Now the pass reads its inputs
# in one read: 5 read-write (append, claim, memories with their links, post-extraction links,
# finish) and 1 read-only.
ADD_MESSAGES_WRITES = 5
ADD_MESSAGES_READS = 1
# A search runs everything (the candidate searches, the refinements' link walks, the scoring of
# the records a refinement brings in) in one search session and opens no unit of work. Before
# (373d4dc), each of the two searches below opened 1 search session and 1 read-only unit (the
# current-first or version-history walk); a refinement that brought in a record opened one more
# session to score it, and one more unit for a record neither candidate list held.
SEARCH_READS = 0
SEARCH_SESSIONS = 1


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.reads = 0
        self.sessions = 0

    def unit_of_work(self) -> Any:
        self.writes += 1
        return super().unit_of_work()

    def reading(self) -> Any:
        self.reads += 1
        return super().reading()

    @contextmanager
    def searching(self) -> Iterator[Any]:
        self.sessions += 1
        with super().searching() as session:
            yield session

    def reset(self) -> None:
        self.writes = self.reads = self.sessions = 0


def _client(store: CountingStore) -> AgentMemory:
    def extract(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        return [ExtractedMemory(RecordType.PREFERENCE, f"The user {m.content.lower()}") for m in request.target_messages]

    resolver = ScriptedLinkResolver(lambda source, candidates: [LinkProposal(c.id, "supersedes") for c in candidates])
    return build_client(
        store=store,
        embedder=HashingEmbedder(),
        extractor=ScriptedExtractor(extract),
        link_resolver=resolver,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
            enable_context_summary=False,
        ),
    )


def test_one_add_messages_with_extraction_and_linking() -> None:
    store = CountingStore()
    memory = _client(store)
    memory.add_memory("The user prefers thin crust pizza.", memory_type="preference", user_id="u")
    thread = memory.create_thread(thread_id="t", user_id="u")
    store.reset()
    thread.add_messages([{"role": "user", "content": "Prefers sourdough pizza now."}])
    writes, reads = store.writes, store.reads
    print(f"add_messages: {writes} read-write, {reads} read-only units of work")
    assert sorted(m.is_valid for m in memory.list_memories(user_id="u")) == [False, True]  # extracted, linked
    assert writes <= ADD_MESSAGES_WRITES and reads <= ADD_MESSAGES_READS


def test_one_search_with_two_hops() -> None:
    store = CountingStore()
    memory = _client(store)
    first = memory.add_memory("The user prefers thin crust pizza.", memory_type="preference", user_id="u")
    second = memory.add_memory("The user prefers sourdough pizza.", memory_type="preference", user_id="u")
    memory.link_records(second, "preference", first, "preference", "supersedes")
    store.reset()
    found = memory.search("pizza", user_id="u", num_hops=2)
    print(f"search: {store.writes} read-write, {store.reads} read-only units of work, {store.sessions} sessions")
    assert {r.id for r in found} == {first, second}
    assert store.writes == 0 and store.reads == SEARCH_READS and store.sessions == SEARCH_SESSIONS


def test_one_question_across_versions_with_two_hops() -> None:
    """A question across versions runs the version-history refinement, which walks the link graph
    again after the candidates are found, in the same search session."""
    store = CountingStore()
    memory = _client(store)
    first = memory.add_memory("The user prefers thin crust pizza.", memory_type="preference", user_id="u")
    second = memory.add_memory("The user prefers sourdough pizza.", memory_type="preference", user_id="u")
    memory.link_records(second, "preference", first, "preference", "supersedes")
    store.reset()
    found = memory.search("Which pizza styles have I preferred before?", user_id="u", num_hops=2)
    print(f"question: {store.writes} read-write, {store.reads} read-only units of work, {store.sessions} sessions")
    assert {r.id for r in found} >= {first, second}
    assert store.writes == 0 and store.reads == SEARCH_READS and store.sessions == SEARCH_SESSIONS
