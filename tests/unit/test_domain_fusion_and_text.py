"""Domain: fusing a dense and a keyword ranking, the keyword terms of a query, and the one tokeniser."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from palimpsest.domain.errors import InvalidSearchError
from palimpsest.domain.search import Fusion, SearchQuery, fuse
from palimpsest.domain.text import (
    CONTRACTED_STOP_WORDS,
    NEGATIONS,
    STOP_WORDS,
    contraction_tokens,
    keyword_terms,
    word_key,
    word_tokens,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_rrf_sums_weighted_reciprocal_ranks_and_normalises() -> None:
    fused = fuse([("a", 0.9), ("b", 0.8)], [("b", 5.0), ("c", 1.0)], fusion=Fusion.RRF, rrf_k=1)
    scores = dict(fused)
    raw = {"a": 0.5 / 2, "b": 0.5 / 3 + 0.5 / 2, "c": 0.5 / 3}
    total = sum(raw.values())
    assert [key for key, _ in fused] == ["b", "a", "c"]
    assert scores == pytest.approx({key: value / total for key, value in raw.items()})


def test_score_fusion_normalises_each_list_then_weighs_them() -> None:
    fused = fuse([("a", 0.9), ("b", 0.5), ("c", 0.1)], [("c", 12.0), ("b", 2.0)], fusion="score", dense_weight=0.25)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(0.25 * 1.0)
    assert scores["b"] == pytest.approx(0.25 * 0.5 + 0.75 * 0.0)
    assert scores["c"] == pytest.approx(0.25 * 0.0 + 0.75 * 1.0)
    assert [key for key, _ in fused] == ["c", "a", "b"]


def test_absolute_fusion_weighs_cosine_and_the_share_of_the_ideal_keyword_score() -> None:
    # keyword_scale 10: a BM25 score of 5 covers half the query, 12 is clipped to all of it.
    fused = fuse(
        [("a", 0.8), ("b", 0.4), ("c", -0.2)],
        [("c", 12.0), ("b", 5.0)],
        fusion="absolute",
        dense_weight=0.5,
        keyword_scale=10.0,
    )
    assert dict(fused) == pytest.approx({"a": 0.4, "b": 0.2 + 0.25, "c": 0.0 + 0.5})
    assert [key for key, _ in fused] == ["c", "b", "a"]
    # No per-list stretching: a weak keyword list stays weak (min-max would make "x" worth 1).
    weak = dict(fuse([("y", 0.6)], [("x", 1.0)], fusion="absolute", keyword_scale=10.0))
    assert weak["y"] > weak["x"] == pytest.approx(0.05)
    # Ties keep the order of first appearance, dense first.
    tied = fuse([("x", 0.5)], [("y", 5.0)], fusion="absolute", keyword_scale=10.0)
    assert [key for key, _ in tied] == ["x", "y"] and tied[0][1] == pytest.approx(tied[1][1])


def test_a_list_of_equal_scores_counts_fully_and_an_empty_list_adds_nothing() -> None:
    assert fuse([("a", 0.3)], [], fusion="score") == [("a", 0.5)]
    assert dict(fuse([("a", 0.3), ("b", 0.3)], [("b", 1.0)], fusion="score")) == {"a": 0.5, "b": 1.0}


@pytest.mark.parametrize("fusion", list(Fusion))
def test_a_weight_of_zero_ignores_that_list(fusion: Fusion) -> None:
    dense = [("a", 0.9), ("b", 0.1)]
    keyword = [("c", 3.0), ("b", 2.0)]
    assert [k for k, _ in fuse(dense, keyword, fusion=fusion, dense_weight=1.0)] == ["a", "b"]
    assert [k for k, _ in fuse(dense, keyword, fusion=fusion, dense_weight=0.0)] == ["c", "b"]


@pytest.mark.parametrize("fusion", [Fusion.RRF, Fusion.SCORE])
def test_ties_keep_the_order_of_first_appearance_dense_first(fusion: Fusion) -> None:
    # RRF: 1/61 + 1/62 each; score fusion: 1 + 0 against 0 + 1.
    fused = fuse([("x", 1.0), ("y", 0.5)], [("y", 2.0), ("x", 1.0)], fusion=fusion)
    assert [k for k, _ in fused] == ["x", "y"]
    assert fused[0][1] == pytest.approx(fused[1][1])


@given(
    dense=st.lists(st.tuples(st.text(max_size=3), st.floats(-1, 1)), max_size=8, unique_by=lambda t: t[0]),
    keyword=st.lists(st.tuples(st.text(max_size=3), st.floats(0, 50)), max_size=8, unique_by=lambda t: t[0]),
    weight=st.floats(0, 1),
    fusion=st.sampled_from(list(Fusion)),
)
def test_fusion_returns_each_candidate_once_best_first(
    dense: list[tuple[str, float]], keyword: list[tuple[str, float]], weight: float, fusion: Fusion
) -> None:
    dense.sort(key=lambda t: -t[1])
    keyword.sort(key=lambda t: -t[1])
    fused = fuse(dense, keyword, fusion=fusion, dense_weight=weight)
    keys = [k for k, _ in fused]
    assert len(keys) == len(set(keys))
    expected = set()
    if weight > 0:
        expected |= {k for k, _ in dense}
    if weight < 1:
        expected |= {k for k, _ in keyword}
    assert set(keys) == expected
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(-1e-9 <= s <= 1 + 1e-9 for s in scores)


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan"), True, "0.5", None])
def test_a_bad_weight_or_fusion_is_refused(weight: object) -> None:
    with pytest.raises(InvalidSearchError):
        fuse([], [], dense_weight=weight)  # type: ignore[arg-type]
    with pytest.raises(InvalidSearchError):
        SearchQuery(k=1, now=NOW, text="x", dense_weight=weight)  # type: ignore[arg-type]
    with pytest.raises(InvalidSearchError):
        SearchQuery(k=1, now=NOW, text="x", fusion="borda")  # type: ignore[arg-type]


def test_search_query_accepts_fusion_names() -> None:
    assert SearchQuery(k=1, now=NOW, text="x", fusion="score").fusion is Fusion.SCORE


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("What play did I attend last week?", ["play", "attend", "last", "week"]),
        ("Tea, TEA and tea!", ["tea"]),
        ("who is it?", ["who", "is", "it"]),  # only stop words: all of them are kept
        ("Straße CAFÉ", ["straße", "café"]),
        ("¿¡ --- !!", []),
        ("snake_case AND NEAR(x, 2)", ["snake_case", "near", "x", "2"]),
    ],
)
def test_keyword_terms(text: str, terms: list[str]) -> None:
    assert keyword_terms(text) == terms


def test_stop_words_are_lower_case_words() -> None:
    assert all(word == word.lower() and word.isalnum() for word in STOP_WORDS)


@pytest.mark.parametrize(
    "text",
    ["Can you suggest a board game?", "  CAN you   suggest, a board-game?! ", "", "...", "Straße und Café", "snake_case words"],
)
def test_word_key_joins_the_word_tokens(text: str) -> None:
    assert word_key(text) == " ".join(word_tokens(text))


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("I don\u2019t like it, the user's tea", ["i", "don't", "like", "it", "the", "user's", "tea"]),
        ("Straße und Café, Zürich 2026", ["straße", "und", "café", "zürich", "2026"]),
        ("Привет, мир", ["привет", "мир"]),
        ("snake_case 'quoted'", ["snake", "case", "quoted"]),
        ("¿¡ --- !!", []),
    ],
)
def test_contraction_tokens_keep_contractions_whole_and_read_any_script(text: str, tokens: list[str]) -> None:
    assert contraction_tokens(text) == tokens


def test_the_two_spellings_of_the_stop_words_agree() -> None:
    """A contracted stop word is one token of the contraction-aware tokeniser, and its pieces
    under the keyword tokeniser are stop words too; negations stay out of it."""
    for word in CONTRACTED_STOP_WORDS:
        assert contraction_tokens(word) == [word]
        assert all(piece in STOP_WORDS for piece in word_tokens(word)), word
    assert not CONTRACTED_STOP_WORDS & NEGATIONS
    assert {"no", "not"} <= STOP_WORDS  # keyword search drops them; polarity readers keep NEGATIONS
