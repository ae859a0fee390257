"""Writes while the embedder is unavailable, and the vector backfill (ARCHITECTURE.md D43).

The embedder here is the shipped hashing embedder behind a switch that raises
``ModelUnavailableError`` (what the OpenAI-compatible adapter raises once its retries are spent);
the end-to-end tests with a real local server are in ``tests/langgraph_integration``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.application.embedding import EmbedderHealth
from palimpsest.application.ports import Embedder
from palimpsest.application.vector_backfill import BACKFILL_BATCH
from palimpsest.domain.errors import ModelUnavailableError, VectorDimensionError

START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


class SwitchedEmbedder(Embedder):
    """The hashing embedder, unavailable while :attr:`down` is set; ``during`` runs inside
    each successful ``embed`` call (a write racing a backfill pass)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(32)
        self.down = False
        self.calls = 0
        self.during: Callable[[Sequence[str]], None] | None = None

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Sequence[Sequence[float]]:
        self.calls += 1
        if self.down:
            raise ModelUnavailableError("embed: the model server stayed unavailable after 4 attempt(s): HTTP 503.")
        during, self.during = self.during, None
        if during is not None:
            during(texts)
        return self._inner.embed(texts, is_query=is_query)


@pytest.fixture
def embedder() -> SwitchedEmbedder:
    return SwitchedEmbedder()


@pytest.fixture
def memory(embedder: SwitchedEmbedder) -> Iterator[AgentMemory]:
    client = open_memory(
        embedder=embedder,
        clock=ManualClock(START, tick=timedelta(milliseconds=1)),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    try:
        yield client
    finally:
        client.close()


def _vector_hits(memory: AgentMemory, query: str) -> list[str]:
    return [r.content for r in memory.search(query, user_id="u1", search_strategy="vector", max_results=10)]


def test_an_edit_while_down_drops_the_stale_vector_and_the_new_text_is_embedded_later(
    memory: AgentMemory, embedder: SwitchedEmbedder
) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    [message_id] = thread.add_messages([{"role": "user", "content": "The meeting is on Tuesday."}])
    embedder.down = True
    thread.update_message(message_id, content="The meeting moved to Thursday afternoon.")

    assert memory.admin.waiting_vectors().messages == 1  # not the old vector under the new text
    embedder.down = False
    memory.add_memory("The user likes jazz.", user_id="u1")  # any write that embeds runs a pass

    assert memory.admin.waiting_vectors().total == 0
    assert _vector_hits(memory, "The meeting moved to Thursday afternoon.")[0] == (
        "The meeting moved to Thursday afternoon."
    )


def test_a_pass_is_bounded_and_the_next_write_goes_on(memory: AgentMemory, embedder: SwitchedEmbedder) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    embedder.down = True
    total = BACKFILL_BATCH + 6
    thread.add_messages([{"role": "user", "content": f"note {i}"} for i in range(total)])
    assert memory.admin.waiting_vectors().messages == total

    embedder.down = False
    thread.add_messages([{"role": "user", "content": "the first answered write"}])
    assert memory.admin.waiting_vectors().messages == 6
    thread.add_messages([{"role": "user", "content": "the second"}])
    assert memory.admin.waiting_vectors().messages == 0
    calls = embedder.calls
    thread.add_messages([{"role": "user", "content": "the third"}])
    assert embedder.calls == calls + 1  # nothing waits any more: no pass, no extra model call


def test_memories_and_profiles_written_while_down_are_stored_and_embedded_later(
    memory: AgentMemory, embedder: SwitchedEmbedder
) -> None:
    embedder.down = True
    memory_id = memory.add_memory("The user's cat is called Miso.", user_id="u1")
    memory.add_user("u1", "Ann, a baker in Lyon.")
    assert memory.admin.get_record(memory_id).content == "The user's cat is called Miso."
    assert memory.admin.waiting_vectors().records == 2
    assert memory.search("cat Miso", user_id="u1")[0].content == "The user's cat is called Miso."

    embedder.down = False
    assert memory.embed_waiting() == 2
    assert "The user's cat is called Miso." in _vector_hits(memory, "cat called Miso")


def test_a_row_edited_while_a_pass_embeds_it_keeps_its_own_vector(
    memory: AgentMemory, embedder: SwitchedEmbedder
) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    embedder.down = True
    [first, second] = thread.add_messages(
        [{"role": "user", "content": "draft one"}, {"role": "user", "content": "draft two"}]
    )
    embedder.down = False

    def edit(_texts: Sequence[str]) -> None:  # runs while the pass embeds the old texts
        thread.update_message(first, content="the final wording of the plan")

    embedder.during = edit
    assert memory.embed_waiting() == 1  # the second; the first was re-embedded by its edit
    assert memory.admin.waiting_vectors().total == 0
    assert _vector_hits(memory, "the final wording of the plan")[0] == "the final wording of the plan"
    assert second in {m.id for m in thread.get_messages(start=0, end=None)}


def test_one_warning_when_it_goes_down_and_one_info_when_it_answers_again(
    memory: AgentMemory, embedder: SwitchedEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="palimpsest")
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    embedder.down = True
    for i in range(3):
        thread.add_messages([{"role": "user", "content": f"message {i}"}])
        memory.search(f"message {i}", user_id="u1")
    thread.get_context_card()
    embedder.down = False
    thread.add_messages([{"role": "user", "content": "back"}])
    thread.add_messages([{"role": "user", "content": "and again"}])

    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "palimpsest"]
    assert [level for level, _ in lines] == ["WARNING", "INFO"]
    assert "embedder is unavailable" in lines[0][1] and "keyword search" in lines[0][1]
    assert "HTTP 503" in lines[0][1]
    assert "answers again" in lines[1][1]


def test_bad_input_to_the_embedder_still_fails_the_write(memory: AgentMemory, embedder: SwitchedEmbedder) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1")

    def wrong(_texts: Sequence[str]) -> None:
        raise VectorDimensionError("the model answered 31-dimensional vectors")

    embedder.during = wrong
    with pytest.raises(VectorDimensionError):
        thread.add_messages([{"role": "user", "content": "hello"}])
    assert thread.get_messages(start=0, end=None) == []
    assert memory.admin.waiting_vectors().total == 0


def test_a_client_without_an_embedder_has_nothing_to_backfill() -> None:
    with open_memory(memory_extraction_config=MemoryExtractionConfig(extract_memories=False)) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "keyword only"}])
        assert memory.embed_waiting() == 0


def test_rows_stored_during_a_pass_that_found_none_keep_the_client_waiting() -> None:
    health = EmbedderHealth()
    assert health.waiting  # a store opened after an outage may hold rows without vectors
    started = health.generation
    health.stored_without_vectors()  # a write commits while the pass is reading
    health.caught_up(started)
    assert health.waiting
    health.caught_up(health.generation)
    assert not health.waiting


def test_concurrent_passes_of_one_client_do_not_embed_the_same_rows_twice(
    memory: AgentMemory, embedder: SwitchedEmbedder
) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1")
    embedder.down = True
    thread.add_messages([{"role": "user", "content": f"row {i}"} for i in range(4)])
    embedder.down = False
    results: list[int] = []
    entered, release = threading.Event(), threading.Event()

    def hold(_texts: Sequence[str]) -> None:
        entered.set()
        release.wait(10)

    embedder.during = hold
    first = threading.Thread(target=lambda: results.append(memory.embed_waiting()))
    first.start()
    assert entered.wait(10)
    results.append(memory.embed_waiting())  # the other pass holds the client's pass: nothing to do here
    release.set()
    first.join(10)
    assert sorted(results) == [0, 4]
