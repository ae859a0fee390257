"""The refinements as pipeline stages (application/retrieval.py ``Stage``, ARCHITECTURE.md D20): a
record a stage brings in gets its real score and its linked tree from the same search, and every
stage is held to its declared effect."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from palimpsest.application import RetrievalConfig
from palimpsest.application.retrieval import (
    COLLAPSE_DUPLICATES,
    CURRENT_FIRST,
    Effect,
    Stage,
    StageContext,
    StageEffectError,
    record_by_record,
    run_stage,
)
from palimpsest.domain.model import MemoryRecord, RecordType
from palimpsest.domain.search import SearchHit, SearchQuery

from .conftest import ClientFactory

T0 = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


def _linked_ids(result: object) -> list[str]:
    return [linked.record.id for linked in result.linked_records]  # type: ignore[attr-defined]


def test_a_successor_current_first_brings_in_has_its_real_hybrid_score_and_linked_results(
    make_client: ClientFactory,
) -> None:
    # A pool of two: the fillers and the old home outrank the successor, which only current_first
    # brings in; the hybrid search scores every record with a vector, so it has a real score.
    client = make_client(retrieval=RetrievalConfig(candidates=2, current_first=True))
    lisbon = client.add_memory("Lisbon", user_id="u", memory_type="fact")
    porto = client.add_memory("The user takes the ferry across the river in Porto now.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", lisbon, "fact", "supersedes")
    work = client.add_memory("The user works at a bakery.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", work, "fact", "supports")
    filler = client.add_memory("Lisbon Lisbon", user_id="u", memory_type="fact")
    plain = make_client(retrieval=RetrievalConfig(current_first=False))
    ranked = plain.search("Lisbon ferry", user_id="u", num_hops=2)
    assert [r.id for r in ranked[:2]] in ([lisbon, filler], [filler, lisbon])
    own = next(r for r in ranked if r.id == porto)
    assert 0.0 < own.distance < 1.0
    found = client.search("Lisbon ferry", user_id="u", max_results=2, num_hops=2)
    # The successor takes the old home's rank, ahead of it; the cut to two keeps it.
    assert porto in [r.id for r in found] and porto not in [r.id for r in ranked[:2]]
    brought = next(r for r in found if r.id == porto)
    assert brought.distance == pytest.approx(own.distance) != 1.0
    assert brought.relevance == pytest.approx(own.relevance)
    assert sorted(_linked_ids(brought)) == sorted(_linked_ids(own)) == sorted([lisbon, work])


def test_a_successor_matching_neither_list_is_not_brought_in_but_linked_from_the_hit_it_retired(
    make_client: ClientFactory,
) -> None:
    """Before, a successor scoring 0 (neither a keyword nor a vector match) was brought in first."""
    client = make_client(search_strategy="keyword")
    lisbon = client.add_memory("The user lives in Lisbon.", user_id="u", memory_type="fact")
    porto = client.add_memory("The user moved to Porto.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", lisbon, "fact", "supersedes")
    work = client.add_memory("The user works at a bakery.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", work, "fact", "supports")
    for hops in (0, 1, 2):
        found = client.search("Lisbon", user_id="u", num_hops=hops)
        assert [r.id for r in found] == [lisbon]
        assert _linked_ids(found[0]) == [porto]  # with or without hops
    [deep] = client.search("Lisbon", user_id="u", num_hops=2)
    assert [c.record.id for c in deep.linked_records[0].children] == [work]  # the grafted successor keeps the tree's own branches


def _memory(i: int, *, valid: bool = True) -> SearchHit:
    record = MemoryRecord(
        id=f"r{i}",
        record_type=RecordType.FACT,
        content=f"memory {i}",
        created_at=T0,
        updated_at=T0,
        user_id="u",
        status="valid" if valid else "invalid",  # type: ignore[arg-type]
    )
    return SearchHit(record, 1.0 - i / 10, i / 10)


def _context(pool: list[SearchHit]) -> StageContext:
    query = SearchQuery(k=10, now=T0, text="memory")
    return StageContext(text="memory", query=query, k=10, pool=pool, graph=record_by_record(lambda _id: (), lambda _id: None))


@pytest.mark.parametrize(
    ("effect", "change", "allowed"),
    [
        (Effect.REORDER, lambda hits: hits[::-1], True),
        (Effect.REORDER, lambda hits: hits[1:], False),
        (Effect.REORDER, lambda hits: [*hits, _memory(9)], False),
        (Effect.DROP, lambda hits: hits[1:], True),
        (Effect.DROP, lambda hits: [hits[2], hits[0]], True),  # a copy may move up into a slot
        (Effect.DROP, lambda hits: [*hits[1:], _memory(9)], False),
        (Effect.ADD, lambda hits: [_memory(9), *hits], True),
        (Effect.ADD, lambda hits: [_memory(9), *hits[1:]], False),
        (Effect.ADD, lambda hits: [*hits, hits[0]], False),
        (Effect.DROP, lambda hits: [hits[0], hits[0]], False),
    ],
)
def test_a_stage_is_held_to_its_declared_effect(effect: Effect, change, allowed: bool) -> None:  # type: ignore[no-untyped-def]
    hits = [_memory(i) for i in range(3)]
    stage = Stage("under test", effect, lambda given, context: change(given))
    if allowed:
        assert [h.id for h in run_stage(stage, hits, _context(hits))] == [h.id for h in change(hits)]
    else:
        with pytest.raises(StageEffectError):
            run_stage(stage, hits, _context(hits))


def test_the_built_in_stages_declare_what_they_do() -> None:
    retired, valid = _memory(1, valid=False), _memory(2)
    copy = SearchHit(
        MemoryRecord(
            id="r3", record_type=RecordType.FACT, content="Memory 1!", created_at=T0, updated_at=T0, user_id="u"
        ),
        0.5,
        0.5,
    )
    hits = [retired, valid, copy]
    # The valid copy takes its retired twin's slot: a drop that is not a subsequence.
    assert [h.id for h in run_stage(COLLAPSE_DUPLICATES, hits, _context(hits))] == ["r3", "r2"]
    assert COLLAPSE_DUPLICATES.effect is Effect.DROP and CURRENT_FIRST.effect is Effect.ADD
    # With no link to follow, current_first keeps every hit where it is.
    assert run_stage(CURRENT_FIRST, hits, _context(hits)) == hits
