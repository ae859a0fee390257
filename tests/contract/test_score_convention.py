"""Contract: the one score convention of ``SearchHit.score`` (see ``run_search``), on every store.

* dense only: the cosine similarity of the record's vector to the query vector;
* keyword only: ``keyword_score(raw, ideal)`` = clip(raw / ideal, 0, 1), where raw is the
  record's keyword relevance and ideal the query's (BM25: the sum of the query terms' idf over
  the admitted collection); for the stores that score with BM25 themselves, the value is the
  one computed here by hand from ``domain.text``'s BM25 helpers, so it is the same on each;
* hybrid, ``Fusion.ABSOLUTE``: ``w · clip(cosine) + (1 - w) · keyword_score``, in [0, 1];
* every strategy: ``distance == 1 - score``, hits best first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.search import SearchHit, keyword_score
from palimpsest.domain.text import BM25_B, BM25_K1, bm25_idf, keyword_terms, word_tokens

from .builders import (
    DIAG_12,
    E1,
    E2,
    E3,
    MINUS_E1,
    NEAR_E1,
    ids,
    invalid_record,
    link,
    message,
    query,
    record,
    seed,
    thread,
)
from .conftest import StoreFactory

BM25_STORES = {"memory", "embedded", "postgres"}
"""The stores whose raw keyword relevance is Okapi BM25 with ``domain.text``'s constants. Oracle
Text scores with its own formula (raw = SCORE, ideal = 100), so only the convention itself,
not the hand-computed value, is checked there."""


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))


def _bm25_by_hand(text: str, documents: Mapping[str, str]) -> tuple[dict[str, float], float]:
    """Okapi BM25 of every document sharing a term with ``text`` (id -> raw) and the query's
    ideal relevance (the sum of its terms' idf, absent terms included), written from the formula."""
    tokens = {key: word_tokens(body) for key, body in documents.items()}
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n
    terms = keyword_terms(text)
    idf = {term: bm25_idf(n, sum(1 for t in tokens.values() if term in t)) for term in terms}
    raw: dict[str, float] = {}
    for key, words in tokens.items():
        counts = Counter(words)
        score = sum(
            idf[term]
            * counts[term]
            * (BM25_K1 + 1)
            / (counts[term] + BM25_K1 * (1 - BM25_B + BM25_B * len(words) / avgdl))
            for term in terms
            if counts[term]
        )
        if score > 0:
            raw[key] = score
    return raw, sum(idf.values())


def _assert_distance_is_one_minus_score(hits: Sequence[SearchHit]) -> None:
    for hit in hits:
        assert hit.distance == pytest.approx(1.0 - hit.score, abs=1e-12), hit.id
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


# --- the corpus every test here searches ------------------------------------------------------

VECTORS = {"same": E1, "near": NEAR_E1, "diag": DIAG_12, "ortho": E2, "opposite": MINUS_E1, "far": E3}
TEXTS = {
    "same": "tea tea",  # short and twice the term: a BM25 score above the ideal, clipped to 1
    "near": "green tea with lemon",
    "diag": "tea ceremony in kyoto",
    "ortho": "a long text about many things that mentions tea once near the end of it",
    "opposite": "black coffee in the morning",
    "far": "sparkling mineral water",
    "novec": "kyoto in spring",
}
MESSAGE_TEXT = "shall we have tea"


@pytest.fixture
def corpus(store: MemoryStore) -> MemoryStore:
    seed(
        store,
        threads=[thread("t1", user_id="A")],
        messages=[(message("msg", "t1", 1, MESSAGE_TEXT, user_id="A"), NEAR_E1)],
        records=[
            (record(rid, body, user_id="A" if rid in {"same", "near", "novec"} else "B"), VECTORS.get(rid))
            for rid, body in TEXTS.items()
        ],
        links=[link("l1", "same", "near"), link("l2", "near", "novec")],
    )
    return store


def _documents(user_id: str | None = None) -> dict[str, str]:
    """The texts a query of ``user_id`` (None: any) admits, by hit id."""
    docs = {
        rid: body
        for rid, body in TEXTS.items()
        if user_id is None or (rid in {"same", "near", "novec"}) == (user_id == "A")
    }
    if user_id in (None, "A"):
        docs["msg"] = MESSAGE_TEXT
    return docs


def _session_keyword(store: MemoryStore, **kwargs) -> tuple[dict[str, float], float]:
    q = query(**kwargs)
    with store.searching() as session:
        found = session.keyword_candidates(q, 1000)
    return {key[1]: raw for key, raw in found.ranked}, found.ideal


# --- dense only -------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", [E1, NEAR_E1, (0.2, -0.5, 0.1, 0.9)], ids=["E1", "NEAR_E1", "mixed"])
def test_a_dense_only_score_is_the_cosine_and_its_distance_one_minus_it(corpus: MemoryStore, vector) -> None:
    hits = corpus.search(query(vector=vector, k=100))
    expected = {rid: _cos(v, vector) for rid, v in VECTORS.items()} | {"msg": _cos(NEAR_E1, vector)}
    assert {h.id: h.score for h in hits} == pytest.approx(expected, abs=1e-6)
    for hit in hits:
        assert hit.distance == pytest.approx(1.0 - _cos(_vector_of(hit), vector), abs=1e-6)
    _assert_distance_is_one_minus_score(hits)
    assert min(h.score for h in hits) < 0  # a negative cosine is reported as is, not clipped


def _vector_of(hit: SearchHit) -> Sequence[float]:
    return NEAR_E1 if hit.id == "msg" else VECTORS[hit.id]


# --- keyword only -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["tea", "tea kyoto", "kyoto unheardof", "TEA Ceremony"])
def test_a_keyword_only_score_is_the_raw_relevance_over_the_ideal_clipped(
    corpus: MemoryStore, text: str
) -> None:
    hits = corpus.search(query(text=text, k=100))
    raw, ideal = _session_keyword(corpus, text=text)
    assert ideal > 0 and all(r > 0 for r in raw.values())
    assert {h.id: h.score for h in hits} == pytest.approx(
        {rid: min(1.0, r / ideal) for rid, r in raw.items()}, abs=1e-9
    )
    assert {h.id: h.score for h in hits} == pytest.approx(
        {rid: keyword_score(r, ideal) for rid, r in raw.items()}
    )
    assert all(0.0 < h.score <= 1.0 for h in hits)
    _assert_distance_is_one_minus_score(hits)


def _assert_bm25_by_hand(stores: StoreFactory, store: MemoryStore, text: str, user_id: str | None) -> None:
    if stores.adapter not in BM25_STORES:
        pytest.skip(f"the {stores.adapter} store's keyword engine does not score with BM25")
    scope = {} if user_id is None else {"user_id": user_id}
    raw, ideal = _bm25_by_hand(text, _documents(user_id))
    expected = {rid: min(1.0, r / ideal) for rid, r in raw.items()}
    hits = store.search(query(text=text, k=100, **scope))
    assert {h.id: h.score for h in hits} == pytest.approx(expected, rel=1e-6)
    session_raw, session_ideal = _session_keyword(store, text=text, **scope)
    assert session_raw == pytest.approx(raw, rel=1e-6)
    assert session_ideal == pytest.approx(ideal, rel=1e-9)


@pytest.mark.parametrize("text", ["tea", "tea kyoto", "kyoto unheardof", "green tea lemon"])
def test_a_keyword_only_score_is_the_bm25_value_computed_by_hand(
    stores: StoreFactory, corpus: MemoryStore, text: str
) -> None:
    """Every BM25 store reports the same keyword-only score for the same data and query."""
    _assert_bm25_by_hand(stores, corpus, text, None)


@pytest.mark.parametrize(("text", "user_id"), [("tea kyoto", "A"), ("tea", "B")])
def test_keyword_statistics_come_from_the_whole_collection_whatever_the_scope(
    stores: StoreFactory, corpus: MemoryStore, text: str, user_id: str
) -> None:
    """``SearchSession.keyword_candidates``: term statistics (document count, document
    frequencies, average length) come from the store's whole collection, so a search scoped to
    one user returns that user's texts with the scores an unscoped search gives them (the hand
    values count every stored text)."""
    if stores.adapter not in BM25_STORES:
        pytest.skip(f"the {stores.adapter} store's keyword engine does not score with BM25")
    raw, ideal = _bm25_by_hand(text, _documents(None))
    admitted = set(_documents(user_id))
    expected = {rid: min(1.0, r / ideal) for rid, r in raw.items() if rid in admitted}
    hits = corpus.search(query(text=text, k=100, user_id=user_id))
    assert {h.id: h.score for h in hits} == pytest.approx(expected, rel=1e-6)
    session_raw, session_ideal = _session_keyword(corpus, text=text, user_id=user_id)
    assert session_raw == pytest.approx({rid: r for rid, r in raw.items() if rid in admitted}, rel=1e-6)
    assert session_ideal == pytest.approx(ideal, rel=1e-9)


def test_the_hand_computed_case_reaches_both_sides_of_the_clip(corpus: MemoryStore) -> None:
    """The hand values above would not catch a missing clip or a wrong scale if every score were
    on one side of 1: here ``same`` ("tea tea") scores above the ideal, ``ortho`` (a long text
    holding "tea" once) below it."""
    raw, ideal = _bm25_by_hand("tea", _documents())
    assert raw["same"] > ideal > raw["ortho"]
    scores = {h.id: h.score for h in corpus.search(query(text="tea", k=100))}
    assert scores["same"] == pytest.approx(1.0)
    assert 0.0 < scores["ortho"] < 1.0
    assert scores["ortho"] == min(scores.values())


def test_a_query_term_found_nowhere_lowers_every_keyword_score(corpus: MemoryStore) -> None:
    plain = {h.id: h.score for h in corpus.search(query(text="kyoto", k=100))}
    diluted = {h.id: h.score for h in corpus.search(query(text="kyoto unheardof", k=100))}
    assert set(plain) == set(diluted) == {"diag", "novec"}
    assert all(diluted[rid] < plain[rid] for rid in plain)


# --- hybrid -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dense_weight", [0.5, 0.3, 0.8])
@pytest.mark.parametrize("text", ["tea", "kyoto coffee unheardof"])
def test_an_absolute_hybrid_score_adds_the_clipped_cosine_to_the_keyword_score(
    corpus: MemoryStore, dense_weight: float, text: str
) -> None:
    hits = corpus.search(query(vector=E1, text=text, k=100, fusion="absolute", dense_weight=dense_weight))
    raw, ideal = _session_keyword(corpus, text=text)
    cosine = {rid: _cos(v, E1) for rid, v in VECTORS.items()} | {"msg": _cos(NEAR_E1, E1)}
    expected = {
        rid: dense_weight * min(1.0, max(0.0, cosine.get(rid, 0.0)))
        + (1 - dense_weight) * keyword_score(raw.get(rid, 0.0), ideal)
        for rid in set(cosine) | set(raw)
    }
    assert {h.id: h.score for h in hits} == pytest.approx(expected, abs=1e-6)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    _assert_distance_is_one_minus_score(hits)


def test_absolute_hybrid_scores_stay_in_the_unit_interval_for_every_weight(corpus: MemoryStore) -> None:
    for dense_weight in (0.0, 0.1, 0.5, 0.9, 1.0):
        for vector in (E1, MINUS_E1, E3):
            hits = corpus.search(query(vector=vector, text="tea tea kyoto", k=100, dense_weight=dense_weight))
            assert hits
            assert all(0.0 <= h.score <= 1.0 for h in hits), (dense_weight, vector)
            _assert_distance_is_one_minus_score(hits)


# --- every strategy ---------------------------------------------------------------------------

STRATEGIES = {
    "dense": {"vector": E1},
    "dense-opposite": {"vector": MINUS_E1},
    "keyword": {"text": "tea kyoto"},
    "hybrid-absolute": {"vector": E1, "text": "tea kyoto", "fusion": "absolute"},
    "hybrid-rrf": {"vector": E1, "text": "tea kyoto", "fusion": "rrf"},
    "hybrid-score": {"vector": E1, "text": "tea kyoto", "fusion": "score"},
    "hybrid-dense-weight-1": {"vector": E1, "text": "tea kyoto", "dense_weight": 1.0},
    "hybrid-dense-weight-0": {"vector": E1, "text": "tea kyoto", "dense_weight": 0.0},
}
VARIANTS = {
    "plain": {},
    "hops": {"num_hops": 2},
    "narrowed": {"record_ids": frozenset({"same", "diag", "novec", "far"})},
    "scoped": {"user_id": "A", "num_hops": 1},
    "small-k": {"k": 2},
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_hit_of_every_strategy_has_distance_one_minus_score(
    corpus: MemoryStore, strategy: str, variant: str
) -> None:
    kwargs = {"k": 100, **STRATEGIES[strategy], **VARIANTS[variant]}
    hits = corpus.search(query(**kwargs))
    assert hits
    _assert_distance_is_one_minus_score(hits)
    if strategy.startswith("hybrid") or strategy == "keyword":
        assert all(0.0 <= h.score <= 1.0 for h in hits)  # every fusion and keyword_score stay in [0, 1]
    else:
        assert all(-1.0 - 1e-9 <= h.score <= 1.0 + 1e-9 for h in hits)  # a cosine


def test_a_narrowed_search_reports_the_scores_of_the_whole_search(corpus: MemoryStore) -> None:
    """``record_ids`` narrows the hits, not their score: a dense or keyword score is the one the
    unnarrowed search reports (the fusions that rank within their lists, RRF and min–max, aside)."""
    named = frozenset({"same", "diag", "novec"})
    for strategy in ("dense", "keyword", "hybrid-absolute"):
        whole = {h.id: h.score for h in corpus.search(query(k=100, **STRATEGIES[strategy]))}
        narrowed = corpus.search(query(k=100, record_ids=named, **STRATEGIES[strategy]))
        assert set(ids(narrowed)) == named & set(whole), strategy
        assert {h.id: h.score for h in narrowed} == pytest.approx(
            {rid: whole[rid] for rid in ids(narrowed)}
        ), strategy


def test_an_invalid_record_is_scored_like_any_other(store: MemoryStore) -> None:
    seed(store, records=[(record("current", "tea"), E1), (invalid_record("stale", "tea"), E1)])
    hits = store.search(query(vector=E1, text="tea", k=10))
    assert {h.id for h in hits} == {"current", "stale"}
    assert hits[0].score == pytest.approx(hits[1].score)
