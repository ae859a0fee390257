"""Properties of the third-party demotion (application/retrieval.py, ARCHITECTURE.md D21): it
only re-orders, never drops or invents a hit; hits about the speaker keep their relative order
and are never ranked below a demoted hit they outscored; a penalty of 0, or a question not in the
first person, changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from palimpsest.application.retrieval import demote_third_parties, demoted_score, third_party_test
from palimpsest.domain.model import Message
from palimpsest.domain.search import SearchHit

T0 = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
TEXTS = (
    "I live in Porto.",
    "My sister lives in Oslo.",
    "My manager is Bruno.",
    "My wife's manager is Farid.",
    "The user's brother likes Java.",
    "It rained all day.",
    "My friend and I went hiking.",
)
QUESTIONS = (
    "Where do I live?",
    "Where does my sister live?",
    "What is the capital of France?",
    "Who is my boss?",
)


def _hits(draw_texts: list[int], scores: list[float]) -> list[SearchHit]:
    ranked = sorted(zip(scores, draw_texts, strict=False), key=lambda pair: -pair[0])
    return [
        SearchHit(
            Message(id=f"m{i}", thread_id="t", role="user", content=TEXTS[t], seq=i + 1, created_at=T0),
            score,
            1.0 - score,
        )
        for i, (score, t) in enumerate(ranked)
    ]


hits_strategy = st.integers(0, 20).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, len(TEXTS) - 1), min_size=n, max_size=n),
        st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=n, max_size=n),
    )
)


@given(hits_strategy, st.sampled_from(QUESTIONS), st.floats(0.0, 1.0, allow_nan=False))
def test_demotion_only_reorders_and_keeps_the_speakers_hits_in_order(
    drawn: tuple[list[int], list[float]], question: str, penalty: float
) -> None:
    hits = _hits(*drawn)
    demoted = third_party_test(question)
    if demoted is None:
        assert question == "What is the capital of France?"
        return
    out = demote_third_parties(hits, penalty, demoted)
    assert sorted(h.id for h in out) == sorted(h.id for h in hits)
    kept = [h.id for h in hits if not demoted(h)]
    assert [h.id for h in out if not demoted(h)] == kept
    scores = [demoted_score(h, penalty, demoted) for h in out]
    assert scores == sorted(scores, reverse=True)
    if penalty == 0.0:
        assert [h.id for h in out] == [h.id for h in hits]
    if "sister" in question:
        assert not any(demoted(h) and "sister" in h.record.content.lower() for h in hits)
