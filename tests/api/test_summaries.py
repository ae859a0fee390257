"""Thread summaries: durable revisions, transcript fallback, transient prefixes, budgets, races."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryThread, SummaryText
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import Message, RecordStatus, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK, snapshot, stored_summaries

QUIET = MemoryExtractionConfig(extract_memories=False, context_summary_update_frequency=1000)
"""Appends never refresh the summary, so only get_summary does."""


def _say(thread: MemoryThread, *texts: str) -> list[str]:
    return thread.add_messages([{"role": "user", "content": text} for text in texts])


def _valid(store: MemoryStore, thread_id: str) -> list[int]:
    return [s.revision for s in stored_summaries(store, thread_id) if s.status is RecordStatus.VALID]


def test_a_summary_is_stored_durably_and_each_refresh_adds_a_revision(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    summariser = ScriptedSummariser()
    thread = make_client(summariser=summariser, memory_extraction_config=QUIET).create_thread(thread_id="t")
    _say(thread, "I moved to Rome. It was sunny.", "I work on invoices.")
    assert thread.get_summary().content == "I moved to Rome.\nI work on invoices."
    assert [s.revision for s in stored_summaries(store, "t")] == [1]
    assert thread.get_summary().content == "I moved to Rome.\nI work on invoices."
    assert len(summariser.calls) == 1, "a summary covering every message is reused, not regenerated"
    _say(thread, "The ledger step fails.")
    assert thread.get_summary().content.endswith("The ledger step fails.")
    rows = stored_summaries(store, "t")
    assert [s.revision for s in rows] == [1, 2]
    assert rows[-1].covered_through_seq == thread.get_messages()[-1].seq
    assert summariser.calls[-1].previous == SummaryText(rows[0].text, rows[0].topics)
    assert [m.content for m in summariser.calls[-1].messages] == ["The ledger step fails."]


def test_appending_messages_refreshes_the_summary_by_default(make_client: ClientFactory, store: MemoryStore) -> None:
    thread = make_client(summariser=ScriptedSummariser()).create_thread(thread_id="t")
    _say(thread, "First fact.")
    _say(thread, "Second fact.")
    assert _valid(store, "t") == [1, 2]


def test_the_update_frequency_defers_refreshes_until_enough_messages_are_uncovered(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    config = MemoryExtractionConfig(extract_memories=False, context_summary_update_frequency=3)
    thread = make_client(summariser=ScriptedSummariser(), memory_extraction_config=config).create_thread(thread_id="t")
    _say(thread, "one.", "two.")
    assert stored_summaries(store, "t") == []
    _say(thread, "three.")
    assert _valid(store, "t") == [1]


def test_the_summary_topics_are_kept(make_client: ClientFactory) -> None:
    thread = make_client(summariser=ScriptedSummariser(), memory_extraction_config=QUIET).create_thread()
    _say(thread, "Pizza pizza pizza with basil.")
    assert thread.get_summary().topics[0] == "pizza"


def test_without_a_summariser_the_summary_is_a_transcript_of_the_last_five_messages(
    memory: AgentMemory, store: MemoryStore
) -> None:
    thread = memory.create_thread(thread_id="t")
    thread.add_messages(
        [{"role": "user", "content": "zero"}, {"role": "user", "content": "one", "timestamp": "2026-01-02T03:04:05Z"}]
        + [{"role": "assistant", "content": word} for word in ("two", "three", "four", "five")]
    )
    assert thread.get_summary().content == (
        "user (2026-01-02T03:04:05+00:00): one\n- assistant (-): two\n- assistant (-): three"
        "\n- assistant (-): four\n- assistant (-): five"
    )
    assert stored_summaries(store, "t") == []


def test_an_empty_thread_has_an_empty_summary(memory: AgentMemory) -> None:
    assert memory.create_thread().get_summary().content == ""


def test_except_last_summarises_the_prefix_without_touching_durable_rows(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    summariser = ScriptedSummariser()
    thread = make_client(summariser=summariser, memory_extraction_config=QUIET).create_thread(thread_id="t")
    _say(thread, "Alpha.", "Beta.")
    thread.get_summary()
    _say(thread, "Gamma.", "Delta.")
    durable = stored_summaries(store, "t")
    prefix = thread.get_summary(except_last=1)
    assert prefix.content == "Alpha.\nBeta.\nGamma."
    assert [m.content for m in summariser.calls[-1].messages] == ["Gamma."], "the prefix builds on the durable base"
    assert stored_summaries(store, "t") == durable
    assert thread.get_summary(except_last=4).content == ""
    assert thread.get_summary(except_last=9).content == ""


def test_except_last_without_a_summariser_is_a_transcript_of_the_prefix(memory: AgentMemory) -> None:
    thread = memory.create_thread()
    _say(thread, "a", "b", "c")
    assert thread.get_summary(except_last=1).content == "user (-): a\n- user (-): b"


def test_the_token_budget_truncates_long_summaries(make_client: ClientFactory) -> None:
    long_text = "word " * 2000
    summariser = ScriptedSummariser(lambda previous, messages: SummaryText(long_text.strip()))
    thread = make_client(summariser=summariser, memory_extraction_config=QUIET).create_thread()
    _say(thread, "anything")
    default = thread.get_summary().content
    assert default.startswith("(truncated)\n") and len(default) == len("(truncated)\n") + 3500
    small = thread.get_summary(token_budget=10).content
    assert small == "(truncated)\n" + long_text[:35]
    assert thread.get_summary(token_budget=0).content == long_text.strip()
    assert thread.get_summary(token_budget=None).content == long_text.strip()
    assert thread.get_summary(token_budget=5000).content == long_text.strip()


@ARGUMENT_CHECK
@pytest.mark.parametrize("kwargs", [{"except_last": -1}, {"except_last": 1.5}, {"token_budget": "10"}])
def test_get_summary_validates_its_arguments(memory: AgentMemory, kwargs: dict[str, object]) -> None:
    thread = memory.create_thread()
    with pytest.raises(ValidationError):
        thread.get_summary(**kwargs)  # type: ignore[arg-type]


@ARGUMENT_CHECK
def test_get_summary_rejects_unknown_keyword_arguments(memory: AgentMemory) -> None:
    with pytest.raises(TypeError):
        memory.create_thread().get_summary(style="short")


def test_two_refreshes_from_the_same_base_store_only_one_revision(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    both_inside = threading.Barrier(2, timeout=10)
    lock = threading.Lock()
    first_round: list[int] = []

    def summarise(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
        with lock:
            first_round.append(len(first_round))
            mine = first_round[-1]
        if mine < 2:
            both_inside.wait()  # both refreshes have read the same (empty) base
        return SummaryText(" / ".join(m.content for m in messages))

    client = make_client(summariser=ScriptedSummariser(summarise), memory_extraction_config=QUIET)
    client.create_thread(thread_id="t")
    _say(client.get_thread("t"), "one", "two")
    handles = [client.get_thread("t"), client.get_thread("t")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(lambda handle: handle.get_summary().content, handles))
    assert texts == ["one / two", "one / two"]
    rows = stored_summaries(store, "t")
    assert [(s.revision, s.status) for s in rows] == [(1, RecordStatus.VALID)]


def test_an_edit_during_a_refresh_is_not_lost_in_the_stored_summary(make_client: ClientFactory) -> None:
    edits: list[tuple[MemoryThread, str]] = []

    def summarise(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
        while edits:  # another writer edits a message the refresh has already read
            handle, message_id = edits.pop()
            handle.update_message(message_id, "I live in Rome.")
        base = [previous.text] if previous else []
        return SummaryText("\n".join(base + [m.content for m in messages]))

    client = make_client(summariser=ScriptedSummariser(summarise), memory_extraction_config=QUIET)
    thread = client.create_thread(thread_id="t")
    [mid] = _say(thread, "I live in Paris.")
    edits.append((client.get_thread("t"), mid))
    thread.get_summary()
    assert thread.get_summary().content == "I live in Rome."


def test_summaries_are_kept_per_thread(make_client: ClientFactory, store: MemoryStore) -> None:
    client = make_client(summariser=ScriptedSummariser(), memory_extraction_config=QUIET)
    a, b = client.create_thread(thread_id="a"), client.create_thread(thread_id="b")
    _say(a, "About apples.")
    _say(b, "About bananas.")
    assert a.get_summary().content == "About apples."
    assert b.get_summary().content == "About bananas."
    before = snapshot(store)
    a.get_summary()
    assert snapshot(store) == before


def test_a_failing_summariser_falls_back_to_a_transient_transcript(
    make_client: ClientFactory, store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
        raise RuntimeError("model down")

    thread = make_client(summariser=ScriptedSummariser(broken), memory_extraction_config=QUIET).create_thread(
        thread_id="t"
    )
    _say(thread, "Alpha.", "Beta.")
    assert thread.get_summary().content == "user (-): Alpha.\n- user (-): Beta."
    assert thread.get_summary(except_last=1).content == "user (-): Alpha."
    card = thread.get_context_card(except_last_messages=1, max_recent_messages=1)
    assert card.summary == "user (-): Alpha." and [m.content for m in card.recent_messages] == ["Beta."]
    assert stored_summaries(store, "t") == []
    assert "model down" in caplog.text
