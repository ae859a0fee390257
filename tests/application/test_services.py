"""The application services built directly from their collaborators, without a facade.

Each test wires only what the service under test needs (the in-memory store, a manual clock,
the scripted model doubles) and asserts on what the service returns and what the store holds.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import (
    ExtractedMemory,
    ExtractionRequest,
    LinkProposal,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    MemoryRetentionConfig,
)
from palimpsest.application.config import ThreadSettings
from palimpsest.application.context_cards import ContextCardService
from palimpsest.application.embedding import EmbeddingHelper
from palimpsest.application.extraction import ExtractionRunner, ExtractionService
from palimpsest.application.linking import Linker
from palimpsest.application.messages import MessageService, NewMessage
from palimpsest.application.record_service import RecordService
from palimpsest.application.requests import CardRequest
from palimpsest.application.searching import Searcher
from palimpsest.application.summaries import SummaryService
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import MemoryRecord, Message, RecordLink, RecordType, Thread

START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
OLD_PIZZA = "The user prefers thin crust pizza."
NEW_PIZZA = "The user now prefers sourdough pizza."


class _World:
    """One store and clock with the services extraction and cards are built from."""

    def __init__(self, extractor: ScriptedExtractor | None = None) -> None:
        self.requests = extractor.requests if extractor is not None else []
        self.store = InMemoryStore()
        self.clock = ManualClock(START)
        embedder = HashingEmbedder()
        self.embeddings = EmbeddingHelper(embedder)
        self.searcher = Searcher(self.store, embedder, "hybrid")
        self.memory = RecordService(self.store, self.clock, id_factory=self._ids())
        self.summaries = SummaryService(self.store, self.clock, ScriptedSummariser())
        self.extractor = extractor
        self.extraction = ExtractionService(
            store=self.store,
            clock=self.clock,
            extractor=extractor,
            searcher=self.searcher,
            memory=self.memory,
            linker=Linker(
                searcher=self.searcher, clock=self.clock, memory=self.memory, embeddings=self.embeddings, resolver=None
            ),
            embeddings=self.embeddings,
            retention=MemoryRetentionConfig(),
            new_id=self._ids(),
        )
        self.thread = Thread(
            id="t1", user_id="u1", agent_id=None, config={}, state={}, created_at=START, updated_at=START
        )
        with self.store.unit_of_work() as uow:
            uow.threads.add(self.thread)
            uow.commit()

    @staticmethod
    def _ids() -> Callable[[], str]:
        counter = iter(range(1, 10_000))
        return lambda: f"id-{next(counter)}"

    def add_past_memory(self, text: str) -> str:
        record = self.memory.add_record_with_link(
            content=text,
            record_type=RecordType.PREFERENCE,
            record_id="old",
            scope={"user_id": "u1"},
            metadata=None,
            timestamp=None,
            expires_at=None,
            embedding=self.embeddings.documents([text])[0],
            link=None,
        )
        return record.id

    def add_messages(self, *texts: str) -> list[Message]:
        with self.store.unit_of_work() as uow:
            seq = uow.messages.last_seq("t1")
            messages = [
                Message(id=f"m{seq + i}", thread_id="t1", role="user", content=text, seq=seq + i, created_at=START)
                for i, text in enumerate(texts, start=1)
            ]
            uow.messages.add_many(messages, self.embeddings.messages(messages))
            uow.commit()
        return messages

    def records(self) -> dict[str, MemoryRecord]:
        with self.store.reading() as uow:
            return {r.id: r for r in uow.records.list(now=self.clock.now(), limit=None)}

    def links(self) -> list[RecordLink]:
        with self.store.reading() as uow:
            return uow.links.list(limit=None)


def _superseding_extractor() -> ScriptedExtractor:
    """One memory per pass, proposing to supersede every candidate it is shown."""

    def extract(request: ExtractionRequest) -> list[ExtractedMemory]:
        proposals = tuple(LinkProposal(c.id, "supersedes") for c in request.link_candidates)
        return [ExtractedMemory(RecordType.PREFERENCE, NEW_PIZZA, links=proposals)]

    return ScriptedExtractor(extract)


def _settings(**extraction: object) -> ThreadSettings:
    config = MemoryExtractionConfig(
        memory_link_extraction_mode=MemoryLinkExtractionMode.DURING_EXTRACTION,
        **extraction,
    )
    return ThreadSettings.create(client_config=config, thread_config=None)


# -- extraction ------------------------------------------------------------------------------------


def test_a_pass_stores_its_memories_with_the_links_proposed_during_extraction() -> None:
    world = _World(_superseding_extractor())
    old = world.add_past_memory(OLD_PIZZA)
    targets = world.add_messages("I have switched to sourdough pizza.")

    stored = world.extraction.extract(world.thread, _settings(), targets, pass_id="pass-1")

    assert [r.content for r in stored] == [NEW_PIZZA]
    new = stored[0]
    assert (new.user_id, new.thread_id, new.record_type) == ("u1", "t1", RecordType.PREFERENCE)
    assert new.metadata["$agent_memory"]["source_message_ids"] == ["m1"]
    records = world.records()
    assert set(records) == {old, new.id}
    assert not records[old].is_valid and records[new.id].is_valid
    assert [(l.source_id, l.target_id, l.relation_type) for l in world.links()] == [(new.id, old, "supersedes")]
    request = world.requests[0]
    assert [m.id for m in request.target_messages] == ["m1"]
    assert [r.id for r in request.link_candidates] == [old]


def test_a_retried_pass_stores_nothing_twice() -> None:
    world = _World(_superseding_extractor())
    world.add_past_memory(OLD_PIZZA)
    targets = world.add_messages("I have switched to sourdough pizza.")
    first = world.extraction.extract(world.thread, _settings(), targets, pass_id="pass-1")
    records, links = world.records(), world.links()

    again = world.extraction.extract(world.thread, _settings(), targets, pass_id="pass-1")

    assert [r.id for r in again] == [r.id for r in first]
    assert world.records() == records and world.links() == links
    assert len(world.requests) == 1  # the model was not asked again


def test_without_an_extractor_a_pass_does_nothing() -> None:
    world = _World(extractor=None)
    targets = world.add_messages("I have switched to sourdough pizza.")
    assert world.extraction.extract(world.thread, _settings(), targets, pass_id="pass-1") == []
    assert world.records() == {}


def test_planning_records_a_job_once_the_frequency_is_reached() -> None:
    world = _World(_superseding_extractor())
    settings = _settings(memory_extraction_frequency=2)
    first = world.add_messages("One.")
    with world.store.unit_of_work() as uow:
        assert world.extraction.plan(uow, world.thread, settings, first, world.clock.now()) is None
        uow.commit()
    second = world.add_messages("Two.")
    with world.store.unit_of_work() as uow:
        job = world.extraction.plan(uow, world.thread, settings, second, world.clock.now())
        uow.commit()
    assert job is not None and (job.thread_id, job.first_seq, job.last_seq) == ("t1", 1, 2)
    with world.store.reading() as uow:
        assert [j.id for j in uow.jobs.list(thread_id="t1", limit=None)] == [job.id]
        state = uow.threads.get("t1").state
    assert state["memory_extraction_state"]["last_memory_extraction_counter"] == 2


def test_an_append_through_the_message_service_runs_its_job_inline() -> None:
    world = _World(_superseding_extractor())
    old = world.add_past_memory(OLD_PIZZA)
    runner = ExtractionRunner(world.store, world.clock, world.extraction.run_job)
    messages = MessageService(
        store=world.store,
        clock=world.clock,
        embeddings=world.embeddings,
        retention=MemoryRetentionConfig(),
        extraction=world.extraction,
        runner=runner,
        summaries=world.summaries,
    )
    settings = _settings(extraction_mode=MemoryExtractionMode.INLINE)
    world.thread = Thread(
        id="t1", user_id="u1", agent_id=None, config=settings.to_json(), state={}, created_at=START, updated_at=START
    )
    with world.store.unit_of_work() as uow:
        uow.threads.update(world.thread)
        uow.commit()
    try:
        stored = messages.append(
            world.thread, settings, [NewMessage("a1", "user", "I have switched to sourdough pizza.", None, None)]
        )
    finally:
        runner.close(5.0)
    assert [(m.id, m.seq, m.user_id) for m in stored] == [("a1", 1, "u1")]
    contents = {r.content: r for r in world.records().values()}
    assert set(contents) == {OLD_PIZZA, NEW_PIZZA}
    assert not world.records()[old].is_valid
    with world.store.reading() as uow:
        assert uow.jobs.list(thread_id="t1", limit=None) == []  # the job finished
        assert uow.summaries.latest("t1", valid_only=True) is not None  # summary upkeep ran


# -- context cards ---------------------------------------------------------------------------------


def _cards(world: _World) -> ContextCardService:
    return ContextCardService(store=world.store, clock=world.clock, searcher=world.searcher, summaries=world.summaries)


def _plan() -> CardRequest:
    return CardRequest()


def test_a_card_holds_the_summary_and_the_relevant_memories() -> None:
    world = _World()
    old = world.add_past_memory(OLD_PIZZA)
    world.add_messages("Let us talk about pizza tonight.", "Which pizza should I order?")
    cards = _cards(world)
    try:
        card = cards.card(world.thread, _settings(), _plan())
    finally:
        cards.close()
    assert "Let us talk about pizza tonight." in card.summary
    assert "pizza" in card.topics
    assert old in [r.id for r in card.relevant_results]
    assert card.recent_messages == ()
    with world.store.reading() as uow:  # the summary it started from is the durable one
        assert uow.summaries.latest("t1", valid_only=True).text == card.summary


def test_a_card_of_a_thread_without_messages_is_empty() -> None:
    world = _World()
    world.add_past_memory(OLD_PIZZA)
    cards = _cards(world)
    card = cards.card(world.thread, _settings(), _plan())
    assert (card.summary, card.relevant_results) == ("", ())
    assert not cards.pool_open  # no search ran, so no worker threads were started


def test_the_card_service_owns_its_search_pool_and_close_shuts_it() -> None:
    world = _World()
    world.add_past_memory(OLD_PIZZA)
    world.add_messages("Pizza tonight?")
    cards = _cards(world)
    assert not cards.pool_open  # created on first use only
    cards.card(world.thread, _settings(), _plan())  # concurrency 5: the pool runs
    assert cards.pool_open
    pool = cards._search_pool()
    cards.close()
    assert not cards.pool_open
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    cards.close()  # idempotent
    sequential = ThreadSettings.create(
        client_config=None, thread_config=None, context_card_type_search_concurrency=1
    )
    cards.card(world.thread, sequential, _plan())
    assert not cards.pool_open  # one search at a time needs no pool
