"""Automatic linking of extracted memories: POST_EXTRACTION (a resolver per batch of new
memories) and DURING_EXTRACTION (links proposed by the extractor), on both stores."""

from __future__ import annotations

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    LinkProposal,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)
from palimpsest.application.testing import ScriptedExtractor, ScriptedLinkResolver
from palimpsest.domain import RecordType
from palimpsest.domain.ports import MemoryStore

PREF = RecordType.PREFERENCE


def _client(
    store: MemoryStore,
    extractor: ScriptedExtractor,
    resolver: ScriptedLinkResolver | None,
    mode: str,
    **extraction: object,
) -> AgentMemory:
    return build_client(
        store=store,
        embedder=HashingEmbedder(),
        extractor=extractor,
        link_resolver=resolver,
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=mode,
            enable_context_summary=False,
            **extraction,  # type: ignore[arg-type]
        ),
    )


def _supersede_pizza(source, candidates):  # type: ignore[no-untyped-def]
    return [LinkProposal(c.id, "supersedes") for c in candidates if "thin crust" in c.content]


def test_post_extraction_links_a_new_preference_to_the_one_it_replaces(store: MemoryStore) -> None:
    extractor = ScriptedExtractor(
        [
            [ExtractedMemory(PREF, "The user's preferred pizza style is thin crust.")],
            [ExtractedMemory(PREF, "The user now prefers sourdough pizza.")],
        ]
    )
    resolver = ScriptedLinkResolver(_supersede_pizza)
    memory = _client(store, extractor, resolver, "POST_EXTRACTION")
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
    thread.add_messages([{"role": "user", "content": "I now prefer sourdough pizza."}])
    by_text = {m.content: m for m in memory.list_memories(user_id="u1")}
    old = by_text["The user's preferred pizza style is thin crust."]
    new = by_text["The user now prefers sourdough pizza."]
    assert not old.is_valid and old.invalidation_reason == "Superseded by another memory."
    assert new.is_valid
    results = memory.search(
        "pizza", user_id="u1", record_types=["preference"], num_hops=1, include_invalid_results=False
    )
    assert [(r.id, [(n.relation_label, n.record.id) for n in r.linked_records]) for r in results] == [
        (new.id, [("supersedes", old.id)])
    ]
    # The first memory had no candidates, so the resolver was only asked about the second.
    assert [source for source, _ in resolver.calls] == [new.id]


def test_a_proposal_to_a_memory_that_was_not_shown_is_ignored(store: MemoryStore) -> None:
    extractor = ScriptedExtractor([[ExtractedMemory(PREF, "Likes tea.")], [ExtractedMemory(PREF, "Likes green tea.")]])
    resolver = ScriptedLinkResolver(lambda source, candidates: [LinkProposal("not-a-candidate", "supersedes")])
    memory = _client(store, extractor, resolver, "POST_EXTRACTION")
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like tea."}])
    thread.add_messages([{"role": "user", "content": "I like green tea."}])
    assert all(m.is_valid for m in memory.list_memories(user_id="u1"))


def test_new_memories_of_one_pass_are_not_candidates_of_each_other(store: MemoryStore) -> None:
    extractor = ScriptedExtractor(
        [[ExtractedMemory(PREF, "Likes tea."), ExtractedMemory(PREF, "Likes green tea.")]]
    )
    resolver = ScriptedLinkResolver(lambda source, candidates: [LinkProposal(c.id, "duplicates") for c in candidates])
    memory = _client(store, extractor, resolver, "POST_EXTRACTION")
    memory.create_thread(user_id="u1").add_messages([{"role": "user", "content": "I like tea, green tea too."}])
    assert resolver.calls == []  # no older memory exists, so nobody had a candidate
    assert all(m.is_valid for m in memory.list_memories(user_id="u1"))


def test_during_extraction_uses_the_extractors_proposals_to_shown_candidates(store: MemoryStore) -> None:
    def extract(request):  # type: ignore[no-untyped-def]
        if not request.link_candidates:
            return [ExtractedMemory(PREF, "The user's preferred pizza style is thin crust.")]
        target = request.link_candidates[0]
        return [
            ExtractedMemory(
                PREF,
                "The user now prefers sourdough pizza.",
                links=(LinkProposal(target.id, "supersedes"), LinkProposal("invented-id", "refines")),
            )
        ]

    memory = _client(store, ScriptedExtractor(extract), None, "DURING_EXTRACTION")
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
    thread.add_messages([{"role": "user", "content": "Now I prefer sourdough pizza."}])
    statuses = {m.content: m.is_valid for m in memory.list_memories(user_id="u1")}
    assert statuses == {
        "The user's preferred pizza style is thin crust.": False,
        "The user now prefers sourdough pizza.": True,
    }


def test_disabled_link_mode_creates_no_links(store: MemoryStore) -> None:
    extractor = ScriptedExtractor([[ExtractedMemory(PREF, "Likes thin crust pizza.")], [ExtractedMemory(PREF, "Likes sourdough pizza.")]])
    resolver = ScriptedLinkResolver(_supersede_pizza)
    memory = _client(store, extractor, resolver, MemoryLinkExtractionMode.DISABLED)
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "thin crust"}])
    thread.add_messages([{"role": "user", "content": "sourdough"}])
    assert resolver.calls == [] and all(m.is_valid for m in memory.list_memories(user_id="u1"))


def test_add_memory_links_autonomously_when_a_model_backed_resolver_is_configured(store: MemoryStore) -> None:
    resolver = ScriptedLinkResolver(_supersede_pizza, uses_model=True)
    memory = _client(store, ScriptedExtractor(), resolver, "POST_EXTRACTION")
    old = memory.add_memory("Prefers thin crust pizza.", memory_type="preference", user_id="u1")
    new = memory.add_memory("Now prefers sourdough pizza over thin crust pizza.", memory_type="preference", user_id="u1")
    quiet = memory.add_memory("Pizza with friends on Fridays.", user_id="u1", autonomous_linking=False)
    statuses = {m.id: m.is_valid for m in memory.list_memories(user_id="u1")}
    assert statuses == {old: False, new: True, quiet: True}
    assert [source for source, _ in resolver.calls] == [new]


def _pizza_pass(store: MemoryStore, budget: int) -> tuple[AgentMemory, ScriptedLinkResolver]:
    extractor = ScriptedExtractor(
        [
            [ExtractedMemory(PREF, "The user's preferred pizza style is thin crust.")],
            [ExtractedMemory(PREF, "The user now prefers sourdough pizza.")],
        ]
    )
    resolver = ScriptedLinkResolver(_supersede_pizza)
    memory = _client(store, extractor, resolver, "POST_EXTRACTION", memory_link_extraction_token_limit=budget)
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
    thread.add_messages([{"role": "user", "content": "I now prefer sourdough pizza."}])
    return memory, resolver


@pytest.mark.parametrize(("budget", "asked"), [(0, 0), (5, 0), (100, 1)])
def test_the_link_token_limit_bounds_the_resolver_requests_of_a_pass(
    store: MemoryStore, budget: int, asked: int
) -> None:
    """``memory_link_extraction_token_limit`` was accepted and never read: a budget below one
    request's size leaves the new memory unlinked (stored, valid), below 1 disables; one source
    with one candidate fits in 100 tokens."""
    memory, resolver = _pizza_pass(store, budget)
    assert len(resolver.calls) == asked
    assert sorted(m.is_valid for m in memory.list_memories(user_id="u1")) == ([False, True] if asked else [True, True])


def _links(memory: AgentMemory) -> list[tuple[str, str, str]]:
    with memory.store.reading() as uow:
        return sorted((link.source_id, link.relation_type, link.target_id) for link in uow.links.list())


def test_add_memory_does_not_link_by_default_with_a_resolver_that_is_not_a_model(store: MemoryStore) -> None:
    """As in the reference, add_memory links on its own only when a model is configured: the
    offline rules (and doubles that do not say they are a model) wait for an explicit request."""
    resolver = ScriptedLinkResolver(_supersede_pizza)
    memory = _client(store, ScriptedExtractor(), resolver, "POST_EXTRACTION")
    old = memory.add_memory("Prefers thin crust pizza.", memory_type="preference", user_id="u1")
    new = memory.add_memory("Now prefers sourdough pizza over thin crust pizza.", memory_type="preference", user_id="u1")
    assert resolver.calls == [] and _links(memory) == []
    linked = memory.add_memory("Still prefers sourdough, thin crust never again.", memory_type="preference",
                               user_id="u1", autonomous_linking=True)
    assert [source for source, _ in resolver.calls] == [linked]
    assert _links(memory) == sorted([(linked, "supersedes", old), (linked, "supersedes", new)])
    assert {m.id: m.is_valid for m in memory.list_memories(user_id="u1")} == {old: False, new: False, linked: True}


def test_open_memory_with_extraction_off_leaves_linking_to_the_caller(store: MemoryStore) -> None:
    """Seed 004's client: ``open_memory`` wires the offline link rules, which keep serving
    extraction, but its three add_memory calls create no link, so its link_records calls succeed."""
    from palimpsest.adapters import open_memory

    memory = open_memory(store=store, embedder=HashingEmbedder(),
                         memory_extraction_config=MemoryExtractionConfig(extract_memories=False))
    thin = memory.add_memory("The user's preferred pizza style is thin crust.", memory_id="pizza-thin-crust",
                             memory_type="preference", user_id="u1")
    sourdough = memory.add_memory("The user now prefers sourdough pizza.", memory_id="pizza-sourdough",
                                  memory_type="preference", user_id="u1")
    neapolitan = memory.add_memory("The user's preferred pizza style is sourdough, especially Neapolitan sourdough.",
                                   memory_id="pizza-neapolitan-sourdough", memory_type="preference", user_id="u1")
    assert _links(memory) == []
    assert all(m.is_valid for m in memory.list_memories(user_id="u1"))
    memory.link_records(sourdough, "preference", thin, "preference", "supersedes")
    memory.link_records(neapolitan, "preference", sourdough, "preference", "refines")
    assert _links(memory) == [(neapolitan, "refines", sourdough), (sourdough, "supersedes", thin)]
    # Asked explicitly, add_memory uses the wired rules all the same (against valid memories).
    again = memory.add_memory("The user's preferred pizza style is thin crust.", memory_type="preference",
                              user_id="u1", autonomous_linking=True)
    assert (again, "supersedes", neapolitan) in _links(memory)



def _link_a_pass_larger_than_the_search_bound(
    store: MemoryStore, caplog: pytest.LogCaptureFixture, bound: int
) -> None:
    """A model answer of ``bound + 2`` memories, after one earlier memory: every memory is
    stored, post-extraction linking asks for candidates within the search's bound (it asked for
    ``7 + answer size`` results and failed the job on every attempt, and on
    ``retry_failed_extractions()``), says once that it capped, and links the pass."""
    import logging

    earlier = ExtractedMemory(PREF, "The user's preferred pizza style is thin crust.")
    answer = [ExtractedMemory(PREF, f"The user likes pizza topping number {i}.") for i in range(bound + 1)]
    answer.append(ExtractedMemory(PREF, "The user now prefers sourdough pizza."))
    resolver = ScriptedLinkResolver(_supersede_pizza)
    memory = _client(store, ScriptedExtractor([[earlier], answer]), resolver, "POST_EXTRACTION")
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
    with caplog.at_level(logging.INFO, logger="palimpsest"):
        thread.add_messages([{"role": "user", "content": "I now like sourdough and every topping there is."}])
    assert memory.pending_extractions() == [] and memory.failed_extractions() == []
    memories = memory.list_memories(user_id="u1")
    assert len(memories) == len(answer) + 1
    old = next(m for m in memories if m.content == earlier.text)
    assert not old.is_valid  # linked: the new preference supersedes it
    capped = [r for r in caplog.records if "capped" in r.getMessage()]
    assert len(capped) == 1 and f"a pass of {len(answer)} memories" in capped[0].getMessage()
    # Every source was shown candidates from before the pass only (never a sibling).
    assert all(set(shown) <= {old.id} for _, shown in resolver.calls)
    assert {source for source, _ in resolver.calls} <= {m.id for m in memories} - {old.id}


def test_a_pass_larger_than_the_search_bound_is_linked_and_its_job_finishes(
    store: MemoryStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search's bound lowered to 40 (the real one, 1,000, below, in the slow run)."""
    import palimpsest.application.linking as linking
    import palimpsest.application.searching as searching

    monkeypatch.setattr(searching, "MAX_SEARCH_K", 40)
    monkeypatch.setattr(linking, "MAX_SEARCH_K", 40)
    _link_a_pass_larger_than_the_search_bound(store, caplog, 40)


@pytest.mark.slow
def test_a_model_answer_of_more_than_a_thousand_memories_is_linked_and_its_job_finishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.domain.search import MAX_SEARCH_K

    _link_a_pass_larger_than_the_search_bound(InMemoryStore(), caplog, MAX_SEARCH_K)
