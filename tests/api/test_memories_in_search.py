"""A search returns the memories it matched, with their statuses and linked trees, not only
the messages they were drawn from (issue 17, item 2): the pizza thread of seed 004, extracted
by open_memory's offline defaults and by a scripted extractor, on both stores."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from palimpsest.adapters.bootstrap import open_memory
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    MemoryExtractionConfig,
    MemoryExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import RecordStatus, RecordType
from palimpsest.domain.ports import MemoryStore

INLINE = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False)
THREAD = ("My favourite pizza is thin crust.", "I now prefer sourdough pizza.")
QUESTION = "What pizza should I recommend?"
SCRIPT = {
    THREAD[0]: "The user's favourite pizza is thin crust.",
    THREAD[1]: "The user now prefers sourdough pizza.",
}


def _scripted(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
    return [ExtractedMemory(RecordType.PREFERENCE, SCRIPT[m.content]) for m in request.target_messages]


def _told(client: AgentMemory) -> AgentMemory:
    thread = client.create_thread(user_id="u")
    for text in THREAD:
        thread.add_messages([{"role": "user", "content": text}])
    return client


@pytest.fixture(params=["heuristic", "scripted"])
def told(request: pytest.FixtureRequest, store: MemoryStore, clock: ManualClock) -> AgentMemory:
    """open_memory on ``store`` after the two messages, with its offline extractor or a scripted one."""
    extractor = ScriptedExtractor(_scripted) if request.param == "scripted" else None
    return _told(open_memory(store=store, clock=clock, extractor=extractor, memory_extraction_config=INLINE))


def test_the_search_returns_both_preferences_with_their_statuses_and_the_link_between_them(
    told: AgentMemory,
) -> None:
    preferences = [m for m in told.list_memories(user_id="u") if m.record_type is RecordType.PREFERENCE]
    assert len(preferences) == 2 and sorted(m.is_valid for m in preferences) == [False, True]
    (old,) = [m for m in preferences if not m.is_valid]
    (new,) = [m for m in preferences if m.is_valid]

    found = told.search(QUESTION, user_id="u", include_invalid_results=True, num_hops=1)
    memories = [r for r in found if r.record_type is not RecordType.MESSAGE]
    assert {r.id: r.status for r in memories} == {old.id: RecordStatus.INVALID, new.id: RecordStatus.VALID}
    # The current preference first, each with its real score and the other in its tree.
    assert [r.id for r in memories] == [new.id, old.id]
    assert all(0.0 < r.distance < 1.0 for r in memories)
    for result, other in ((memories[0], old), (memories[1], new)):
        assert [(linked.record.id, linked.link.relation_type) for linked in result.linked_records] == [
            (other.id, "supersedes")
        ]
    assert memories[0].linked_records[0].relation_label == "supersedes"
    assert memories[1].linked_records[0].relation_label == "is_superseded_by"


def test_without_invalid_results_the_current_preference_is_found(told: AgentMemory) -> None:
    (new,) = [m for m in told.list_memories(user_id="u") if m.record_type is RecordType.PREFERENCE and m.is_valid]
    found = told.search(QUESTION, user_id="u", include_invalid_results=False)
    assert [(r.id, r.status) for r in found if r.record_type is not RecordType.MESSAGE] == [
        (new.id, RecordStatus.VALID)
    ]
