"""A context card's query vector is built from the vectors the store already has (ARCHITECTURE.md
D27): a summary's sentences quote its thread's messages, and the card reads those messages'
stored vectors instead of embedding the summary again. So the card a chat loop asks for after
each new message embeds nothing, nor does the first card of a thread in a new client; a sentence
that quotes no message (an abstractive summary's own words) is embedded, as before."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from doubles import CountingEmbedder
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.heuristic import TextRankSummariser
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, SummaryText
from palimpsest.application.searching import Searcher
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import Message
from palimpsest.domain.ports import MemoryStore

from .helpers import stored_summaries

CONFIG = MemoryExtractionConfig(extract_memories=False)
"""Summaries on (refreshed after every append, the default), extraction off."""

HISTORY = [
    ("user", "We grow tomatoes in the greenhouse. The seedlings need warmth at night."),
    ("assistant", "Tomato seedlings like a steady greenhouse temperature."),
    ("user", "The greenhouse heater broke last week; the tomatoes survived."),
    ("assistant", "Good that the tomatoes in the greenhouse made it through the cold."),
]
DIM = 512
CELLO = "My daughter started cello lessons with the city orchestra."


def _newest(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
    """A summary that is the newest message (a chat loop's card then asks about the last turn)."""
    return SummaryText(messages[-1].content)


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def _client(store: MemoryStore, embedder: Any, clock: ManualClock, summariser: Any, **options: Any) -> AgentMemory:
    return build_client(
        store, embedder=embedder, summariser=summariser, clock=clock, memory_extraction_config=CONFIG, **options
    )


def _card_vectors(monkeypatch: pytest.MonkeyPatch) -> list[Sequence[float] | None]:
    """The ``vector`` every search of a card is run with, as the cards are built."""
    seen: list[Sequence[float] | None] = []
    run = Searcher.run

    def spy(self: Searcher, query: str, **kwargs: Any) -> Any:
        seen.append(kwargs.get("vector"))
        return run(self, query, **kwargs)

    monkeypatch.setattr(Searcher, "run", spy)
    return seen


def test_the_card_after_a_new_message_embeds_nothing_and_asks_about_it(
    store: MemoryStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = CountingEmbedder(HashingEmbedder(DIM))
    client = _client(store, embedder, clock, ScriptedSummariser(_newest), search_strategy="vector")
    thread = client.create_thread(thread_id="t", user_id="u")
    thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    client.add_memory("The user grows tomatoes in a greenhouse.", memory_type="fact", user_id="u")
    client.add_memory("The user's daughter plays the cello in an orchestra.", memory_type="fact", user_id="u")
    before = thread.get_context_card(max_relevant_results=1)
    assert [r.content for r in before.relevant_results] == ["The user grows tomatoes in a greenhouse."]

    vectors = _card_vectors(monkeypatch)
    calls = len(embedder.calls)
    (cello_id,) = thread.add_messages([{"role": "user", "content": CELLO}])
    card = thread.get_context_card(max_relevant_results=1)

    assert embedder.calls[calls:] == [embedder.calls[calls]]  # one call: the new message, a document
    assert embedder.calls[calls].texts == (CELLO,) and not embedder.calls[calls].is_query
    assert card.summary == CELLO
    assert [r.content for r in card.relevant_results] == ["The user's daughter plays the cello in an orchestra."]
    # The query vector is the new message's stored vector (the summary quotes it whole).
    with store.reading() as uow:
        stored = uow.messages.vectors("t", [cello_id])[cello_id]
    assert vectors and all(v is not None and list(v) == pytest.approx(list(stored), abs=1e-6) for v in vectors)
    assert list(stored) == pytest.approx(_unit(HashingEmbedder(DIM).embed([CELLO])[0]), abs=1e-6)
    client.close()


def test_the_query_vector_is_the_length_weighted_mean_of_the_quoted_and_the_embedded_sentences(
    store: MemoryStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = "The household seems busy."  # the summariser's own words: in no message
    quoted_a = "The seedlings need warmth at night."  # the second sentence of message 0
    quoted_b = "The greenhouse heater broke last week;"  # cut short, from message 2

    def summarise(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
        return SummaryText(f"{quoted_a} {own} {quoted_b}", ("greenhouse",))

    embedder = CountingEmbedder(HashingEmbedder(DIM))
    client = _client(store, embedder, clock, ScriptedSummariser(summarise))
    thread = client.create_thread(thread_id="t", user_id="u")
    ids = thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    vectors = _card_vectors(monkeypatch)
    calls = len(embedder.calls)
    thread.get_context_card()

    # Only the sentence in no message is embedded (as a query); the summary and topics are not.
    assert [(c.texts, c.is_query) for c in embedder.calls[calls:]] == [((own,), True)]
    with store.reading() as uow:
        stored = uow.messages.vectors("t", ids)
    (own_vector,) = HashingEmbedder(DIM).embed([own], is_query=True)
    parts = [(quoted_a, stored[ids[0]]), (own, own_vector), (quoted_b, stored[ids[2]])]
    expected = _unit([sum(len(text) * v[i] for text, v in parts) for i in range(len(own_vector))])
    assert vectors and all(v is not None and list(v) == pytest.approx(expected, abs=1e-6) for v in vectors)
    # The stored revision keeps which message each sentence came from.
    (revision,) = [s for s in stored_summaries(store, "t") if s.is_valid]
    assert revision.metadata == {"quotes": [ids[0], None, ids[2]]}
    client.close()


def test_a_summary_in_its_own_words_is_embedded_as_before(store: MemoryStore, clock: ManualClock) -> None:
    summary = SummaryText("The household grows vegetables and looks after them.", ("garden",))
    embedder = CountingEmbedder(HashingEmbedder(DIM))
    client = _client(store, embedder, clock, ScriptedSummariser(lambda previous, new: summary))
    thread = client.create_thread(thread_id="t", user_id="u")
    thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    calls = len(embedder.calls)
    thread.get_context_card()
    assert [(c.texts, c.is_query) for c in embedder.calls[calls:]] == [((f"{summary.text}\ngarden",), True)]
    assert all(s.metadata is None for s in stored_summaries(store, "t"))
    client.close()


def test_the_first_card_in_a_new_client_embeds_nothing(tmp_path: Path, clock: ManualClock) -> None:
    """Nothing process-local is needed: the quotes are stored with the summary revision."""
    path = tmp_path / "m.db"
    first = _client(EmbeddedStore(path), HashingEmbedder(DIM), clock, TextRankSummariser(), close_store=True)
    thread = first.create_thread(thread_id="t", user_id="u")
    thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    thread.add_messages([{"role": "user", "content": CELLO}])
    card = thread.get_context_card()
    first.close()

    embedder = CountingEmbedder(HashingEmbedder(DIM))
    second = _client(EmbeddedStore(path), embedder, clock, TextRankSummariser(), close_store=True)
    again = second.get_thread("t").get_context_card()
    assert embedder.calls == []
    assert again.content == card.content
    second.close()


def test_a_card_without_a_summariser_quotes_its_transcript(store: MemoryStore, clock: ManualClock) -> None:
    embedder = CountingEmbedder(HashingEmbedder(DIM))
    client = _client(store, embedder, clock, None)
    thread = client.create_thread(thread_id="t", user_id="u")
    thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    thread.get_context_card()
    calls = len(embedder.calls)
    thread.add_messages([{"role": "user", "content": CELLO}])
    card = thread.get_context_card()
    assert [(c.texts, c.is_query) for c in embedder.calls[calls:]] == [((CELLO,), False)]
    assert CELLO in card.summary
    client.close()


def test_a_quoted_message_edited_or_deleted_is_not_read_stale(store: MemoryStore, clock: ManualClock) -> None:
    """An edit or deletion retires the revisions that quote the message (D13); the next card
    quotes the thread as it is."""
    embedder = CountingEmbedder(HashingEmbedder(DIM))
    client = _client(store, embedder, clock, ScriptedSummariser(_newest), search_strategy="vector")
    thread = client.create_thread(thread_id="t", user_id="u")
    ids = thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    client.add_memory("The user grows tomatoes in a greenhouse.", memory_type="fact", user_id="u")
    client.add_memory("The user's daughter plays the cello in an orchestra.", memory_type="fact", user_id="u")
    thread.update_message(ids[-1], content=CELLO)
    card = thread.get_context_card(max_relevant_results=1)
    assert card.summary == CELLO
    assert [r.content for r in card.relevant_results] == ["The user's daughter plays the cello in an orchestra."]
    thread.delete_message(ids[-1])
    card = thread.get_context_card(max_relevant_results=1)
    assert card.summary == HISTORY[-2][1]
    assert [r.content for r in card.relevant_results] == ["The user grows tomatoes in a greenhouse."]
    client.close()


def test_a_summary_that_did_not_change_reads_no_vectors_again(
    memory_store: MemoryStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh that leaves the summary as it was (a new revision, the same text and quotes)
    finds the card's vector kept from before: neither the model nor the store is asked again."""
    from palimpsest.adapters.inmemory.store import InMemoryMessageRepository

    reads: list[tuple[str, ...]] = []
    vectors = InMemoryMessageRepository.vectors

    def counting(self: InMemoryMessageRepository, thread_id: str, message_ids: Sequence[str]) -> Any:
        reads.append(tuple(message_ids))
        return vectors(self, thread_id, message_ids)

    monkeypatch.setattr(InMemoryMessageRepository, "vectors", counting)
    first_sentence = HISTORY[0][1].split(". ")[0] + "."
    embedder = CountingEmbedder(HashingEmbedder(DIM))
    summariser = ScriptedSummariser(lambda previous, new: SummaryText(first_sentence, ("tomatoes",)))
    client = _client(memory_store, embedder, clock, summariser)
    thread = client.create_thread(thread_id="t", user_id="u")
    ids = thread.add_messages([{"role": role, "content": text} for role, text in HISTORY])
    card = thread.get_context_card()
    assert reads == [(ids[0],)]
    thread.add_messages([{"role": "user", "content": CELLO}])
    calls = len(embedder.calls)
    again = thread.get_context_card()
    assert len([s for s in stored_summaries(memory_store, "t") if s.is_valid]) == 2  # a new revision
    assert reads == [(ids[0],)] and len(embedder.calls) == calls
    assert again.summary == card.summary
    client.close()
