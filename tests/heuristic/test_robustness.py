"""Tests of the heuristic adapters layer: any text goes in without errors and the port bounds hold."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from palimpsest.adapters.heuristic import HeuristicExtractor, RuleLinkResolver, TextRankSummariser
from palimpsest.adapters.heuristic.extractor import MAX_PER_PASS
from palimpsest.application.ports import ExtractionRequest, SummaryText
from palimpsest.domain.model import MemoryRecord, Message, RecordType

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = st.sampled_from(
    ["I", "I'm", "my", "me", "prefer", "like", "love", "hate", "now", "never", "always", "please", "don't", "next", "time", "from", "on", "is", "the", "pizza", "sourdough", "Maya", "Lisbon", "live", "work", "at", "as", "in", "a", ",", ".", "!", "?", ";", "and", "but", "if"]
)
TEXTS = st.one_of(st.text(max_size=300), st.lists(WORDS, max_size=60).map(" ".join))


def _message(content: str, seq: int) -> Message:
    return Message(id=f"m{seq}", thread_id="t", role="user", content=content, seq=seq, created_at=NOW)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS, max_size=12))
def test_the_extractor_accepts_any_text_and_keeps_its_bounds(contents: list[str]) -> None:
    messages = [_message(c, i + 1) for i, c in enumerate(contents)]
    memories = HeuristicExtractor().extract(ExtractionRequest(target_messages=messages))
    assert len(memories) <= MAX_PER_PASS
    for memory in memories:
        assert memory.record_type in {RecordType.FACT, RecordType.PREFERENCE, RecordType.GUIDELINE, RecordType.MEMORY}
        assert memory.text.strip() and len(memory.entities) <= 8
        assert memory.importance is not None and 1 <= memory.importance <= 5


@settings(max_examples=100, deadline=None)
@given(st.lists(TEXTS, max_size=8), st.one_of(st.none(), st.integers(min_value=-5, max_value=400)))
def test_the_summariser_accepts_any_text_and_stays_within_its_budget(contents: list[str], token_limit: int | None) -> None:
    summary = TextRankSummariser().summarise(
        SummaryText("Earlier summary."), [_message(c, i + 1) for i, c in enumerate(contents)], token_limit=token_limit
    )
    budget = 600 if token_limit is None else max(1, int(token_limit * 3.5))
    assert len(summary.text) <= budget and len(summary.topics) <= 8


@settings(max_examples=150, deadline=None)
@given(TEXTS.filter(str.strip), TEXTS.filter(str.strip))
def test_the_link_resolver_accepts_any_pair_of_memories(new: str, old: str) -> None:
    source = MemoryRecord(id="new", record_type="preference", content=new, created_at=NOW, updated_at=NOW)
    target = MemoryRecord(id="old", record_type="preference", content=old, created_at=NOW, updated_at=NOW)
    [resolution] = RuleLinkResolver().resolve([source], {"new": [target]})
    assert all(link.link_type in {"duplicates", "refines", "supersedes"} for link in resolution.links)
