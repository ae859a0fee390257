"""Retrieval refinements after fusion (RetrievalConfig, ARCHITECTURE.md D20): provenance
merging, current memories before the history they retired, and diverse context-card slots."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    RetrievalConfig,
)
from palimpsest.application.retrieval import (
    asks_across_versions,
    asks_for_history,
    maximal_marginal_relevance,
)
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import ConfigurationError, RecordType, ValidationError
from palimpsest.domain.search import Fusion

from .conftest import ClientFactory

INLINE = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE, enable_context_summary=False)


def _echo(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
    return [ExtractedMemory(RecordType.FACT, f"The user said: {m.content}") for m in request.target_messages]


def _kinds(results: Sequence[object]) -> list[str]:
    return [r.record_type.value for r in results]  # type: ignore[attr-defined]


SHORTER = {
    "I moved to Rome last spring with my two cats.": "The user moved to Rome.",
    "Rome has great coffee, I told my friends there.": "Rome has great coffee.",
}


def _shorter(request: ExtractionRequest) -> Sequence[ExtractedMemory]:
    return [ExtractedMemory(RecordType.FACT, SHORTER[m.content]) for m in request.target_messages]


def _rome(make_client: ClientFactory, extract, merge: bool) -> list[str]:  # type: ignore[no-untyped-def]
    client = make_client(
        extractor=ScriptedExtractor(extract),
        memory_extraction_config=INLINE,
        search_strategy="keyword",
        retrieval=RetrievalConfig(merge_provenance=merge),
    )
    thread = client.create_thread(user_id="u")
    for text in SHORTER:
        thread.add_messages([{"role": "user", "content": text}])
    return _kinds(client.search("Rome", user_id="u", max_results=10))


@pytest.mark.parametrize("merge", [False, True])
def test_a_message_its_memory_outranks_gives_up_its_slot_when_merged(make_client: ClientFactory, merge: bool) -> None:
    # The shorter memories rank above their messages: merged, each piece of evidence is its memory.
    assert _rome(make_client, _shorter, merge) == (["fact", "fact"] if merge else ["fact", "fact", "message", "message"])


@pytest.mark.parametrize("merge", [False, True])
def test_merging_never_drops_a_memory_that_matched(make_client: ClientFactory, merge: bool) -> None:
    # Longer memories rank below their messages: both stay, in the fused order.
    assert _rome(make_client, _echo, merge) == ["message", "message", "fact", "fact"]


def _moves(make_client: ClientFactory, **retrieval: object):  # type: ignore[no-untyped-def]
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(**retrieval))
    lisbon = client.add_memory("The user lives in Lisbon.", user_id="u", memory_type="fact")
    porto = client.add_memory("The user lives in Porto now.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", lisbon, "fact", "supersedes")
    return client, lisbon, porto


def test_a_superseded_memory_gives_its_rank_to_its_successor_by_default(
    make_client: ClientFactory,
) -> None:
    client, lisbon, porto = _moves(make_client)
    # The successor shares the question's subject ("user lives", a third of the old memory's
    # score): it takes the old memory's rank, and the old one follows it.
    found = client.search("the user lives in Lisbon", user_id="u")
    assert [r.id for r in found] == [porto, lisbon]
    assert found[0].record.is_valid and not found[1].record.is_valid
    # Asked about the past, the history keeps its own rank.
    assert next(r.id for r in client.search("Where did I live previously, Lisbon?", user_id="u")) == lisbon
    # Without invalid results, nothing changes: the old memory is simply absent.
    assert [r.id for r in client.search("Lisbon", user_id="u", include_invalid_results=False)] == []


def test_without_current_first_the_superseded_memory_ranks_alone(make_client: ClientFactory) -> None:
    client, lisbon, _porto = _moves(make_client, current_first=False)
    assert [r.id for r in client.search("Lisbon", user_id="u")] == [lisbon]


def test_current_first_follows_a_chain_and_respects_the_search_filters(make_client: ClientFactory) -> None:
    client, lisbon, porto = _moves(make_client, current_first=True)
    braga = client.add_memory("The user lives in Braga these days, no longer in Lisbon.", user_id="u",
                              memory_type="preference")
    client.link_records(braga, "preference", porto, "fact", "supersedes")
    question = "the user lives in Lisbon"
    # Porto, retired too, matches as well: it follows, after the first hit and its successor.
    assert [r.id for r in client.search(question, user_id="u")] == [braga, lisbon, porto]
    # A successor of a type the search excludes is not brought in.
    assert [r.id for r in client.search(question, user_id="u", record_types=["fact"])] == [lisbon, porto]
    # max_results still caps the answer.
    assert [r.id for r in client.search(question, user_id="u", max_results=1)] == [braga]


def test_an_unrelated_successor_outranks_nothing_and_is_carried_by_the_hit_it_retired(
    make_client: ClientFactory,
) -> None:
    """Before, a successor took a retired hit's rank whatever its own relevance: an unrelated
    text (distance 0.998) came before the best match (0.09). Now the best match keeps its rank
    and carries its successor, through the chain of links that retired it, in its linked
    records, even without hops: the result says what replaced it."""
    client, lisbon, porto = _moves(make_client)
    braga = client.add_memory("Moved again: Braga.", user_id="u", memory_type="fact")
    client.link_records(braga, "fact", porto, "fact", "supersedes")
    unrelated = client.add_memory("Quarterly taxes are due in April.", user_id="u", memory_type="fact")
    client.link_records(unrelated, "fact", braga, "fact", "supersedes")  # a wrong link, or a bad model's
    [found] = client.search("Lisbon", user_id="u")
    assert found.id == lisbon and not found.record.is_valid
    [(link, first)] = found.linked_results
    assert (first.id, link.relation_type) == (porto, "supersedes")
    [(_, second)] = first.linked_results
    [(_, third)] = second.linked_results
    assert (second.id, third.id) == (braga, unrelated) and third.record.is_valid


def _three_homes(make_client: ClientFactory, **retrieval: object):  # type: ignore[no-untyped-def]
    client, lisbon, porto = _moves(make_client, **retrieval)
    braga = client.add_memory("The user lives in Braga these days.", user_id="u", memory_type="fact")
    client.link_records(braga, "fact", porto, "fact", "supersedes")
    return client, lisbon, porto, braga


# Only "Braga" is a word of the question that a memory holds (keyword search, no stemming).
ACROSS = "Which towns have I lived in besides Braga?"


def _linked_ids(result: object) -> list[str]:
    return [linked.record.id for linked in result.linked_records]  # type: ignore[attr-defined]


def test_a_successor_the_search_did_not_return_comes_with_its_own_score_and_linked_tree(
    make_client: ClientFactory,
) -> None:
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(candidates=2))
    lisbon = client.add_memory("The user lives in Lisbon.", user_id="u", memory_type="fact")
    porto = client.add_memory("The user takes the tram in Porto now.", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", lisbon, "fact", "supersedes")
    filler = client.add_memory("The Lisbon tram is yellow.", user_id="u", memory_type="fact")
    # The store's own hit for the successor, from a search that returns it.
    plain = make_client(search_strategy="keyword", retrieval=RetrievalConfig(current_first=False))
    ranked = plain.search("Lisbon tram", user_id="u", num_hops=1)
    assert [r.id for r in ranked] == [filler, lisbon, porto]
    own = ranked[2]
    assert 0.0 < own.distance < 1.0
    # In a pool of two the successor is not among the store's hits: current_first brings it in.
    found = client.search("Lisbon tram", user_id="u", max_results=2, num_hops=1)
    assert [r.id for r in found] == [filler, porto]
    assert found[1].distance == pytest.approx(own.distance)
    assert found[1].relevance == pytest.approx(own.relevance)
    assert _linked_ids(found[1]) == _linked_ids(own) == [lisbon]
    # Without hops it has no tree, like any hit.
    bare = client.search("Lisbon tram", user_id="u", max_results=2)[1]
    assert bare.distance == pytest.approx(own.distance) and bare.linked_records == ()


def test_a_version_the_search_did_not_return_comes_with_its_own_score_and_linked_tree(
    make_client: ClientFactory,
) -> None:
    # Keyword ranks for ACROSS: the current home (two words), the filler (one rarer word), then
    # the old home, which only version history brings into a pool of two.
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(candidates=2))
    lisbon = client.add_memory("The user lived in Lisbon.", user_id="u", memory_type="fact")
    braga = client.add_memory("The user lived in Braga.", user_id="u", memory_type="fact")
    client.link_records(braga, "fact", lisbon, "fact", "supersedes")
    filler = client.add_memory("The towns are far.", user_id="u", memory_type="fact")
    plain = make_client(search_strategy="keyword", retrieval=RetrievalConfig(version_history=False))
    ranked = plain.search(ACROSS, user_id="u", num_hops=1)
    assert [r.id for r in ranked] == [braga, filler, lisbon]
    own = ranked[2]
    found = client.search(ACROSS, user_id="u", max_results=2, num_hops=1)
    assert [r.id for r in found] == [braga, lisbon]
    assert 0.0 < own.distance < 1.0
    assert found[1].distance == pytest.approx(own.distance)
    assert _linked_ids(found[1]) == _linked_ids(own) == [braga]


def test_a_question_across_versions_gets_the_version_history_after_the_current_one(
    make_client: ClientFactory,
) -> None:
    client, lisbon, porto, braga = _three_homes(make_client)
    found = client.search(ACROSS, user_id="u")
    assert [r.id for r in found] == [braga, porto, lisbon]
    assert found[0].record.is_valid and not found[1].record.is_valid and not found[2].record.is_valid
    # A question about the present gets what it matched, and so does one without invalid results.
    assert [r.id for r in client.search("Where do I live, Braga?", user_id="u")] == [braga]
    assert [r.id for r in client.search(ACROSS, user_id="u", include_invalid_results=False)] == [braga]
    assert [r.id for r in client.search(ACROSS, user_id="u", max_results=2)] == [braga, porto]


def test_a_context_card_for_a_question_across_versions_holds_the_history(make_client: ClientFactory) -> None:
    client, lisbon, porto, braga = _three_homes(make_client)
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": ACROSS}])
    card = thread.get_context_card()
    memories = [r.id for r in card.relevant_results if r.record_type is not RecordType.MESSAGE]
    assert memories == [braga, porto, lisbon]
    assert "Lisbon" in card.content and "Porto" in card.content


def test_version_history_can_be_turned_off(make_client: ClientFactory) -> None:
    client, _lisbon, _porto, braga = _three_homes(make_client, version_history=False)
    assert [r.id for r in client.search(ACROSS, user_id="u")] == [braga]


def test_a_found_old_version_brings_the_newer_ones(make_client: ClientFactory) -> None:
    client, lisbon, porto, braga = _three_homes(make_client)
    found = client.search("Which towns have I lived in besides Lisbon?", user_id="u")
    assert [r.id for r in found] == [lisbon, braga, porto]  # the others newest first


def test_a_version_the_filters_exclude_is_skipped_but_the_chain_is_followed_past_it(
    make_client: ClientFactory,
) -> None:
    client, lisbon, porto = _moves(make_client)
    braga = client.add_memory("The user lives in Braga these days.", user_id="u", memory_type="fact")
    client.link_records(braga, "fact", porto, "fact", "supersedes")
    evora = client.add_memory("The user moved to Evora.", user_id="u", memory_type="memory")
    client.link_records(evora, "memory", braga, "fact", "supersedes")
    faro = client.add_memory("The user settled in Faro.", user_id="u", memory_type="fact")
    client.link_records(faro, "fact", evora, "memory", "supersedes")
    assert [r.id for r in client.search(ACROSS, user_id="u")] == [braga, faro, evora, porto, lisbon]
    assert [r.id for r in client.search(ACROSS, user_id="u", record_types=["fact"])] == [braga, faro, porto, lisbon]
    assert [r.id for r in client.search(ACROSS, user_id="u", max_results=3)] == [braga, faro, evora]


def test_a_message_hit_brings_the_version_history_of_the_memory_drawn_from_it(make_client: ClientFactory) -> None:
    client = make_client(
        extractor=ScriptedExtractor(_echo),
        memory_extraction_config=INLINE,
        search_strategy="keyword",
    )
    lisbon = client.add_memory("The user lives in Lisbon.", user_id="u", memory_type="fact")
    thread = client.create_thread(user_id="u")
    (said,) = thread.add_messages([{"role": "user", "content": "I moved to Braga."}])
    (braga,) = [m for m in client.list_memories(user_id="u") if "Braga" in m.content]
    client.link_records(braga.id, "fact", lisbon, "fact", "supersedes")
    found = client.search(ACROSS, user_id="u")
    # The message outranks the memory drawn from it, so both stay (a memory is never dropped),
    # and the memory's earlier version follows the message.
    assert [r.id for r in found] == [said, lisbon, braga.id]


def test_questions_across_versions() -> None:
    for question in (
        "What jobs have I had?",
        "Who have my managers been?",
        "Which sports have been my favourite?",
        "Where I've lived?",
        "Where did I live before?",
        "How has my diet changed?",
    ):
        assert asks_across_versions(question), question
    for question in ("Where do I live?", "Do I have a dog?", "What do I have to do today?", "Who is my manager?"):
        assert not asks_across_versions(question), question


def test_card_slots_skip_paraphrases_when_diversity_is_on(make_client: ClientFactory) -> None:
    def build(diversity: float | None) -> list[str]:
        client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(card_diversity=diversity))
        for i in range(5):
            client.add_memory(
                f"The user likes pizza with olives, version {i}.", user_id="u", memory_type="preference"
            )
        client.add_memory(
            "The user likes pizza on Fridays with friends.", user_id="u", memory_type="preference"
        )
        client.add_memory("Pizza nights are for the family.", user_id="u", memory_type="memory")
        thread = client.create_thread(user_id="u")
        thread.add_messages([{"role": "user", "content": "pizza with olives tonight?"}])
        card = thread.get_context_card(max_relevant_results=3)
        return [r.record.content for r in card.relevant_results if r.record_type is not RecordType.MESSAGE]

    plain = build(None)
    diverse = build(0.3)
    assert sum("olives" in text for text in plain) == 3
    assert sum("olives" in text for text in diverse) == 1
    assert len(diverse) == 3


def test_maximal_marginal_relevance_with_full_balance_keeps_the_order() -> None:
    candidates = [("a", "red apple"), ("b", "red apple pie"), ("c", "green pear")]
    assert maximal_marginal_relevance(candidates, 3, balance=1.0) == ["a", "b", "c"]
    assert maximal_marginal_relevance(candidates, 2, balance=0.5) == ["a", "c"]
    assert maximal_marginal_relevance(candidates, 0, balance=0.5) == []


def test_history_words() -> None:
    assert asks_for_history("Where did I live before?")
    assert asks_for_history("What was my original plan")
    assert not asks_for_history("Where do I live?")


@pytest.mark.parametrize(
    "options",
    [
        {"merge_provenance": 1},
        {"current_first": "yes"},
        {"version_history": None},
        {"card_diversity": 1.5},
        {"card_diversity": True},
        {"latest_weight": 2},
        {"candidates": 0},
        {"candidates": 5000},
        {"fusion": "borda"},
        {"dense_weight": -1},
        {"rrf_k": 0},
    ],
)
def test_bad_retrieval_options_are_configuration_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetrievalConfig(**options)  # type: ignore[arg-type]


def test_the_retrieval_option_must_be_a_retrieval_config(make_client: ClientFactory) -> None:
    with pytest.raises(ConfigurationError):
        make_client(retrieval={"fusion": "score"})


def test_a_question_about_the_latest_state_prefers_newer_records_when_weighted(
    make_client: ClientFactory,
) -> None:
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(latest_weight=0.6))
    old = client.add_memory(
        "The user's phone plan is the basic plan, phone plan basic.",
        user_id="u",
        memory_type="fact",
        timestamp="2025-01-01T00:00:00+00:00",
    )
    new = client.add_memory(
        "The user's phone plan is unlimited.",
        user_id="u",
        memory_type="fact",
        timestamp="2026-06-01T00:00:00+00:00",
    )
    assert [r.id for r in client.search("phone plan basic", user_id="u")] == [old, new]
    assert [r.id for r in client.search("What is my current phone plan basic?", user_id="u")] == [new, old]
    # A question about the past is not a question about the latest state.
    assert [r.id for r in client.search("What was my phone plan basic before, currently?", user_id="u")] == [
        old,
        new,
    ]


class _ByLength:
    """Prefers shorter texts; records what it was shown."""

    model_id = "by-length"

    def __init__(self, answer: str = "ok") -> None:
        self.answer = answer
        self.shown: list[list[str]] = []

    def rerank(self, query: str, candidates: Sequence[object], *, now: object) -> list[float]:
        self.shown.append([c.id for c in candidates])  # type: ignore[attr-defined]
        if self.answer == "raise":
            raise RuntimeError("reranker down")
        scores = [-float(len(c.text)) for c in candidates]  # type: ignore[attr-defined]
        return scores[:-1] if self.answer == "short" else scores


def _pizzas(make_client: ClientFactory, reranker: object, count: int = 20):  # type: ignore[no-untyped-def]
    """A client with the reranker, the fused order of a client without one (same store), and
    the ids (long, middle, short)."""
    client = make_client(
        search_strategy="keyword", retrieval=RetrievalConfig(reranker=reranker, rerank_candidates=count)
    )
    ids = [
        client.add_memory("pizza " + "pizza " * 3 + "x" * 40, user_id="u", memory_type="fact"),
        client.add_memory("pizza " * 2 + "y" * 20, user_id="u", memory_type="fact"),
        client.add_memory("pizza z", user_id="u", memory_type="fact"),
    ]
    fused = [r.id for r in make_client(search_strategy="keyword").search("pizza", user_id="u")]
    return client, fused, ids


def test_a_reranker_reorders_the_best_candidates(make_client: ClientFactory) -> None:
    reranker = _ByLength()
    client, fused, (long, middle, short) = _pizzas(make_client, reranker)
    assert fused[0] != short
    found = client.search("pizza", user_id="u", max_results=2)
    assert [r.id for r in found] == [short, middle]
    assert sorted(reranker.shown[-1]) == sorted([long, middle, short])  # the pool, not just max_results


def test_only_the_first_rerank_candidates_are_reranked(make_client: ClientFactory) -> None:
    reranker = _ByLength()
    client, fused, _ids = _pizzas(make_client, reranker, count=2)
    found = [r.id for r in client.search("pizza", user_id="u")]
    assert len(reranker.shown[-1]) == 2
    assert found[2:] == fused[2:]
    assert sorted(found[:2]) == sorted(fused[:2])


@pytest.mark.parametrize("answer", ["raise", "short"])
def test_a_failing_reranker_leaves_the_fused_order(make_client: ClientFactory, answer: str) -> None:
    client, fused, _ids = _pizzas(make_client, _ByLength(answer))
    assert [r.id for r in client.search("pizza", user_id="u")] == fused


def test_the_offline_lexical_reranker_plugs_in(make_client: ClientFactory) -> None:
    from palimpsest.adapters.heuristic import LexicalReranker

    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(reranker=LexicalReranker()))
    attended = client.add_memory("The user attended a play called Hamlet.", user_id="u", memory_type="fact")
    client.add_memory("The user likes plays.", user_id="u", memory_type="fact")
    assert client.search("Which play did I attend?", user_id="u")[0].id == attended


def test_a_reranker_must_implement_the_port() -> None:
    with pytest.raises(ConfigurationError):
        RetrievalConfig(reranker=object())  # type: ignore[arg-type]


def test_the_default_strategy_with_an_embedder_is_hybrid_and_a_call_may_override_it(
    make_client: ClientFactory,
) -> None:
    client = make_client()
    assert client.search_strategy == "hybrid"
    assert client.retrieval.fusion is Fusion.ABSOLUTE
    assert make_client(search_strategy="vector").search_strategy == "vector"
    memory_id = client.add_memory("The user plays the cello.", user_id="u", memory_type="fact")
    dense = client.search("cello", user_id="u", search_strategy="vector")
    keyword = client.search("cello", user_id="u", search_strategy="keyword")
    assert [r.id for r in dense] == [memory_id] == [r.id for r in keyword]
    assert dense[0].relevance != keyword[0].relevance  # cosine vs BM25-derived scores
    with pytest.raises(ValidationError):
        client.search("cello", user_id="u", search_strategy="semantic")  # type: ignore[arg-type]
    no_vectors = make_client(embedder=None)
    assert no_vectors.search_strategy == "keyword"
    with pytest.raises(ValidationError):
        no_vectors.search("cello", user_id="u", search_strategy="vector")
    assert [r.id for r in no_vectors.search("cello", user_id="u")] == [memory_id]


def test_link_candidates_are_not_reordered_by_words_of_the_new_memory(make_client: ClientFactory) -> None:
    """A new memory saying "now" is not a question about the latest state: its link candidates
    keep their similarity order even with latest_weight on."""
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(latest_weight=1.0))
    old = client.add_memory(
        "The user lives in Lisbon, Lisbon city.",
        user_id="u",
        memory_type="fact",
        timestamp="2025-01-01T00:00:00+00:00",
    )
    other = client.add_memory(
        "The user visited Lisbon once.",
        user_id="u",
        memory_type="fact",
        timestamp="2026-06-01T00:00:00+00:00",
    )
    new_id = client.add_memory(
        "The user now lives in Porto, not Lisbon city.", user_id="u", memory_type="fact"
    )
    services = client._services
    with services.store.unit_of_work() as uow:
        new = uow.records.get(new_id)
    assert new is not None
    assert [r.id for r in services.linker.candidates_for(new, [new_id])] == [old, other]


@pytest.mark.parametrize("collapse", [False, True])
def test_repeated_texts_take_one_slot_when_collapsed(make_client: ClientFactory, collapse: bool) -> None:
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(collapse_duplicates=collapse))
    ids = []
    for session in range(3):
        thread = client.create_thread(user_id="u", thread_id=f"t{session}")
        ids.append(thread.add_messages([{"role": "user", "content": "Can you suggest a board game?"}])[0])
    other = client.create_thread(user_id="u", thread_id="t9").add_messages(
        [{"role": "user", "content": "My favourite board game is Go."}]
    )[0]
    found = [r.id for r in client.search("board game", user_id="u", max_results=3)]
    if collapse:
        # Case and punctuation aside, the three copies are one text: one slot, and room for more.
        assert len(found) == 2 and other in found and len(set(found) & set(ids)) == 1
    else:
        assert len(found) == 3


def test_a_retired_copy_never_hides_a_valid_memory_with_the_same_text(make_client: ClientFactory) -> None:
    client = make_client(search_strategy="keyword")
    old = client.add_memory("The user lives in Lisbon.", user_id="u", memory_type="fact")
    porto = client.add_memory("The user lives in Porto.", user_id="u", memory_type="fact")
    again = client.add_memory("the user lives in lisbon", user_id="u", memory_type="fact")
    client.link_records(porto, "fact", old, "fact", "supersedes")
    client.link_records(again, "fact", porto, "fact", "supersedes")
    found = client.search("Lisbon", user_id="u")
    assert [r.id for r in found] == [again]
    assert found[0].record.is_valid


@pytest.mark.parametrize("penalty", [0.0, 0.5, 1.0])
def test_a_first_person_question_ranks_the_speakers_fact_before_a_third_partys(
    make_client: ClientFactory, penalty: float
) -> None:
    client = make_client(search_strategy="keyword", retrieval=RetrievalConfig(third_party_penalty=penalty))
    thread = client.create_thread(user_id="u")
    thread.add_messages(
        [
            {"role": "user", "content": "My sister wants to live, live in Oslo."},
            {"role": "user", "content": "I live in Porto."},
        ]
    )
    found = [r.content for r in client.search("Where do I live?", user_id="u")]
    assert len(found) == 2
    sister_first = found[0].startswith("My sister")
    # More of the query's words: first by keyword score, unless demoted (by half it drops below).
    assert sister_first is (penalty == 0.0)
    # A question that names the relation keeps that relation's statements where they rank.
    named = [r.content for r in client.search("Where does my sister live?", user_id="u")]
    assert named[0].startswith("My sister")
    # Not a first-person question: no demotion.
    assert client.search("live", user_id="u")[0].content.startswith("My sister")


def test_third_party_penalty_is_on_by_default_and_validated() -> None:
    assert RetrievalConfig().third_party_penalty == 1.0
    for bad in (-0.1, 1.5, True, "high", float("nan")):
        with pytest.raises(ConfigurationError):
            RetrievalConfig(third_party_penalty=bad)  # type: ignore[arg-type]


def test_a_search_looks_deeper_when_demoted_third_parties_fill_the_candidate_pool(
    make_client: ClientFactory,
) -> None:
    client = make_client(search_strategy="keyword")  # a pool of 50 candidates by default
    for i in range(70):
        client.add_memory(f"My friend would work, work at company {i}.", user_id="u", memory_type="fact")
    own = client.add_memory(
        "I work at Hooli, a place where many people spend a long time every single day of the year.",
        user_id="u",
        memory_type="fact",
    )
    # Every friend's line outscores the speaker's (more "work", shorter): the speaker's is 71st.
    unrefined = client.search("work", user_id="u", max_results=71)
    assert unrefined[-1].id == own
    found = client.search("Where do I work?", user_id="u", max_results=5)
    assert found[0].id == own
    assert len(found) == 5  # the demoted lines still fill the slots after it


def test_a_relative_named_in_the_question_is_not_demoted(make_client: ClientFactory) -> None:
    client = make_client(search_strategy="keyword")
    thread = client.create_thread(user_id="u")
    thread.add_messages(
        [
            {"role": "user", "content": "My sister Anna wants a scarf, a red scarf."},
            {"role": "user", "content": "I bought a scarf."},
        ]
    )
    # "scarf" twice: the sister's line leads by keyword score, and the question names her.
    assert client.search("Which scarf did I buy for Anna?", user_id="u")[0].content.startswith(
        "My sister Anna"
    )
    # Without the name she is a third party, and the user's own line comes first.
    assert client.search("Which scarf did I buy?", user_id="u")[0].content == "I bought a scarf."
