"""A long thread's rolling summary (the heuristic TextRank summariser behind the summary service):
bounded in size, free of repeated sentences, bounded work per append, and current."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from palimpsest.adapters.heuristic import TextRankSummariser
from palimpsest.application import AgentMemory, MemoryThread, SummaryText
from palimpsest.domain.model import Message
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import stored_summaries

SUMMARY_CHARS = 3500
"""The 1,000 tokens ``get_summary`` returns by default, at 3.5 characters a token."""

TOPICS = ["invoice", "garden", "piano", "marathon", "kitchen", "landlord", "museum", "bicycle", "camera", "salary"]


class CountingSummariser:
    """The TextRank summariser, recording the size of what each refresh folds: the previous
    summary's characters and the number of new messages."""

    def __init__(self) -> None:
        self._inner = TextRankSummariser()
        self.folds: list[tuple[int, int]] = []

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        self.folds.append((len(previous.text) if previous is not None else 0, len(messages)))
        return self._inner.summarise(previous, messages, token_limit=token_limit)


def _turn(i: int) -> str:
    a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
    return f"On day {i} we talked about the {a} and then about the {b} for a while."


def _sentence_keys(text: str) -> list[str]:
    """The summary's sentences with every number set aside (so near-identical notes compare equal)."""
    return [re.sub(r"\d+", "#", s.lower()) for s in re.split(r"(?<=[.!?])\s+", text) if s]


def _notes_thread(memory: AgentMemory, count: int) -> MemoryThread:
    thread = memory.create_thread(thread_id="notes")
    for i in range(count):
        thread.add_messages([{"role": "user", "content": f"Note {i}: remember to water the plants."}])
    return thread


def test_the_summary_of_600_near_identical_notes_is_bounded_and_repeats_no_sentence(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    thread = _notes_thread(make_client(summariser=TextRankSummariser()), 600)
    summary = thread.get_summary(token_budget=None).content
    assert 0 < len(summary) <= SUMMARY_CHARS
    keys = _sentence_keys(summary)
    assert keys and max(Counter(keys).values()) == 1, "a near-identical note is said once"
    assert "Note 599: remember to water the plants." in summary, "the newest wording is the one kept"
    assert len(thread.get_context_card().content) < 2 * SUMMARY_CHARS
    assert all(len(s.text) <= SUMMARY_CHARS for s in stored_summaries(store, "notes"))


def test_what_a_refresh_folds_does_not_grow_with_the_thread(make_client: ClientFactory) -> None:
    summariser = CountingSummariser()
    thread = make_client(summariser=summariser).create_thread(thread_id="long")
    for i in range(400):
        thread.add_messages([{"role": "user", "content": _turn(i)}])
    assert len(summariser.folds) == 400, "one refresh per append (the default cadence)"
    assert all(new == 1 for _, new in summariser.folds), "a refresh folds only the uncovered message"
    early = max(previous for previous, _ in summariser.folds[:100])
    late = max(previous for previous, _ in summariser.folds[300:])
    assert late <= SUMMARY_CHARS and early <= SUMMARY_CHARS
    assert late <= early + 400, "the summary a refresh starts from stops growing with the thread"


def test_a_fact_in_the_newest_message_reaches_the_bounded_summary(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    thread = make_client(summariser=TextRankSummariser()).create_thread(thread_id="long")
    for i in range(300):
        thread.add_messages([{"role": "user", "content": _turn(i)}])
    thread.add_messages([{"role": "user", "content": "My new passport number ends in 4417 and expires in June."}])
    newest = stored_summaries(store, "long")[-1]
    assert newest.covered_through_seq == thread.get_messages()[-1].seq, "refreshed by the append itself"
    assert "passport number ends in 4417" in newest.text
    assert len(newest.text) <= SUMMARY_CHARS
    assert "passport number ends in 4417" in thread.get_summary().content


def test_a_large_batch_is_folded_whole_and_stays_bounded(make_client: ClientFactory) -> None:
    thread = make_client(summariser=TextRankSummariser()).create_thread(thread_id="batch")
    thread.add_messages([{"role": "user", "content": _turn(i)} for i in range(1000)])
    thread.add_messages([{"role": "user", "content": "Finally, the boiler was repaired on Friday."}])
    summary = thread.get_summary(token_budget=None).content
    assert 0 < len(summary) <= SUMMARY_CHARS
    assert "boiler was repaired" in summary
