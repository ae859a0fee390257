"""Tests of the heuristic adapters layer: ``TextRankSummariser`` selection, order, budget and topics."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest
from palimpsest.adapters.heuristic import TextRankSummariser
from palimpsest.adapters.heuristic import summariser as summariser_module
from palimpsest.application.ports import Summariser, SummaryText
from palimpsest.domain.model import Message

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MAYA = [
    "I'm Maya. I'm migrating our nightly invoice reconciliation workflow from cron jobs to LangGraph.",
    "Got it, Maya: the nightly invoice reconciliation workflow is moving from cron jobs to LangGraph.",
    "The failing step right now is ledger enrichment after reconciliation.",
    "Understood: ledger enrichment after reconciliation is the failing step of the workflow.",
    "Lol, what a day.",
]


def _messages(*contents: str) -> list[Message]:
    return [
        Message(id=f"m{i}", thread_id="t", role="user" if i % 2 else "assistant", content=c, seq=i + 1, created_at=NOW)
        for i, c in enumerate(contents)
    ]


def test_the_textrank_summariser_implements_the_summariser_port() -> None:
    assert isinstance(TextRankSummariser(), Summariser)


def test_the_summary_keeps_central_sentences_in_chronological_order_and_drops_chit_chat() -> None:
    summary = TextRankSummariser().summarise(None, _messages(*MAYA), token_limit=100)
    assert len(summary.text) <= 100 * 3.5
    assert "Lol" not in summary.text
    assert "ledger enrichment" in summary.text
    sentences = [s for s in MAYA if s.split(".")[0] in summary.text]
    assert [summary.text.index(s.split(".")[0]) for s in sentences] == sorted(
        summary.text.index(s.split(".")[0]) for s in sentences
    )


def test_the_default_budget_is_the_thousand_tokens_get_summary_returns() -> None:
    words = "invoice ledger garden piano kitchen museum camera bicycle salary river lake tent boat map coffee".split()
    rng = random.Random(3)
    long = [f"Sentence {i} talks about the {' and the '.join(rng.sample(words, 4))}." for i in range(200)]
    summary = TextRankSummariser().summarise(None, _messages(*long))
    assert 3000 < len(summary.text) <= 3500
    assert len(TextRankSummariser().summarise(None, _messages(*long), token_limit=100_000).text) <= 3500
    assert len(TextRankSummariser(max_chars=600).summarise(None, _messages(*long)).text) <= 600


def test_near_identical_sentences_are_said_once_in_their_newest_wording_in_any_language() -> None:
    notes = [f"Notiz {i}: die Pflanzen im Büro gießen." for i in range(300)]
    summary = TextRankSummariser().summarise(None, _messages(*notes), token_limit=100_000)
    assert summary.text == "Notiz 299: die Pflanzen im Büro gießen."


def test_a_sentence_repeated_word_for_word_across_refreshes_is_kept_once() -> None:
    previous = TextRankSummariser().summarise(None, _messages(*MAYA))
    again = TextRankSummariser().summarise(previous, _messages(*MAYA))
    assert again.text.count("ledger enrichment after reconciliation is the failing step") == 1


def test_one_ranking_sees_a_bounded_window_however_large_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    windows: list[int] = []
    rank = summariser_module._pagerank

    def counting(weights: np.ndarray) -> np.ndarray:
        windows.append(weights.shape[0])
        return rank(weights)

    monkeypatch.setattr(summariser_module, "_pagerank", counting)
    turns = [f"Turn {i} is about the {w} and the {w}s of week {i % 7}." for i, w in enumerate(["boat", "tent", "map"] * 400)]
    summary = TextRankSummariser().summarise(None, _messages(*turns), token_limit=100_000)
    assert len(windows) >= 1200 // 128 and max(windows) <= 128
    assert "Turn 1199" in summary.text, "the whole batch is folded in, window by window"


def test_the_previous_summary_is_folded_in() -> None:
    previous = SummaryText("Maya is migrating the invoice reconciliation workflow to LangGraph.")
    summary = TextRankSummariser().summarise(previous, _messages("The ledger enrichment step of the invoice workflow fails."))
    assert "Maya" in summary.text and "ledger enrichment" in summary.text


def test_topics_are_at_most_eight_ranked_keyphrases() -> None:
    summary = TextRankSummariser().summarise(None, _messages(*MAYA), token_limit=400)
    assert 0 < len(summary.topics) <= 8
    assert summary.topics[0] in {"invoice reconciliation", "ledger enrichment", "reconciliation", "workflow"}
    assert all(t == t.lower() and t.strip() for t in summary.topics)


def test_no_messages_and_no_previous_summary_give_an_empty_summary() -> None:
    assert TextRankSummariser().summarise(None, []) == SummaryText("", ())


def test_an_isolated_chit_chat_sentence_is_left_out_even_when_the_budget_has_room() -> None:
    summary = TextRankSummariser().summarise(None, _messages(*MAYA), token_limit=1000)
    assert "ledger enrichment" in summary.text
    assert "Lol" not in summary.text


def test_topics_of_non_english_text_keep_whole_words() -> None:
    summary = TextRankSummariser().summarise(None, _messages("Wir essen Käse aus Zürich.", "Der Käse ist gut."))
    assert "käse" in summary.topics and "zürich" in summary.topics
