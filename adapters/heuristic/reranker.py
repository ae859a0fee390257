"""Adapters layer (heuristic): ``LexicalReranker``, the ``Reranker`` port by BM25 over the candidates plus recency."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

from palimpsest.application.ports import RerankCandidate, Reranker
from palimpsest.domain.errors import ArgumentTypeError, ConfigurationError
from palimpsest.domain.text import keyword_terms, word_tokens

__all__ = ["LexicalReranker", "light_stem"]

K1: Final = 1.2
"""BM25's term-frequency saturation."""
B: Final = 0.75
"""BM25's length normalisation."""
PREFIX_MATCH_WEIGHT: Final = 0.5
"""How much one occurrence counts when a word only shares a prefix with a query term
(``attend`` in ``attendance``), against 1 for the same stem."""
MIN_PREFIX: Final = 4
"""The shorter stem of a prefix match has at least this many characters (``art`` never meets ``article``)."""
DEFAULT_RECENCY_WEIGHT: Final = 0.1
DEFAULT_HALF_LIFE_DAYS: Final = 30.0
_SECONDS_PER_DAY: Final = 86_400.0
_VOWELS: Final = frozenset("aeiouy")
_NOT_UNDOUBLED: Final = _VOWELS | frozenset("lsz")


@lru_cache(maxsize=65_536)
def light_stem(token: str) -> str:
    """A light, deterministic English stem of a lower-cased word token: ``-ies``/``-ied`` become
    ``y``; otherwise a final ``-s`` goes, then ``-ing`` or ``-ed`` (when a vowel stays), then a
    doubled consonant and a final ``e``. So ``attended``/``attends``/``attending`` → ``attend``,
    ``meetings`` → ``meet``, ``moved``/``move`` → ``mov``, ``running`` → ``run``, ``cities`` →
    ``city``. Tokens with a digit, or of three characters or fewer, are kept as they are."""
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith(("ies", "ied")) and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]  # meetings → meeting → meet
    stem = token
    if token.endswith("ing") and len(token) >= 6:
        stem = token[:-3]
    elif token.endswith("ed") and not token.endswith("eed") and len(token) >= 5:
        stem = token[:-2]
    if not _VOWELS.intersection(stem):
        stem = token  # string, spring, shed: no stem without a vowel
    elif stem != token and len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in _NOT_UNDOUBLED:
        stem = stem[:-1]  # running → runn → run, stopped → stopp → stop
    if len(stem) > 3 and stem.endswith("e"):
        stem = stem[:-1]  # move/moved, like/liked, box/boxes meet
    return stem


def _matching_tokens(terms: Sequence[str], vocabulary: Iterable[str]) -> dict[str, tuple[tuple[int, float], ...]]:
    """The words of ``vocabulary`` that meet a query term: word → ((term index, weight), ...).

    A word and a term meet when their stems are equal (weight 1) or, both at least
    :data:`MIN_PREFIX` long, one starts with the other (:data:`PREFIX_MATCH_WEIGHT`). Either
    way the word begins with the term's first two characters (a stem keeps its word's first two),
    which cheaply rules out most of the vocabulary before any stemming.
    """
    index = {term: i for i, term in enumerate(terms)}
    long_terms = [(i, term) for i, term in enumerate(terms) if len(term) >= MIN_PREFIX]
    heads = {term[:2] for term in terms}
    matching: dict[str, tuple[tuple[int, float], ...]] = {}
    for token in vocabulary:
        if token[:2] not in heads:
            continue
        stem = light_stem(token)
        exact = index.get(stem)
        if exact is not None:
            matching[token] = ((exact, 1.0),)
        elif len(stem) >= MIN_PREFIX:
            found = tuple(
                (i, PREFIX_MATCH_WEIGHT) for i, term in long_terms if stem.startswith(term) or term.startswith(stem)
            )
            if found:
                matching[token] = found
    return matching


def _check_number(name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a finite number, not {value!r}.")
    if positive and value <= 0:
        raise ConfigurationError(f"{name} must be greater than 0, not {value!r}.")
    if not positive and value < 0:
        raise ConfigurationError(f"{name} must be 0 or more, not {value!r}.")
    return float(value)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class LexicalReranker(Reranker):
    """Implements the ``Reranker`` port offline: lexical relevance to the query plus a recency bonus.

    Relevance is BM25 computed over the candidate set itself (its own document frequencies and
    average length): the query's keyword terms (stop words dropped, as in keyword search) are
    stemmed lightly (:func:`light_stem`) and matched against the stems of each candidate's words;
    a word whose stem only starts with a term's stem, or the other way round (both at least four
    characters: ``attendance`` and ``attend``), counts half an occurrence. The best
    candidate's relevance is scaled to 1 and every other one proportionally, so relevance is in
    ``[0, 1]`` and 0 means no query term at all.

    The recency bonus is ``recency_weight * 0.5 ** (age_days / half_life_days)``, with the age
    measured from ``now`` to the candidate's timestamp (no timestamp: no bonus; a timestamp in
    the future counts as now; naive datetimes are read as UTC). With the defaults (0.1, 30 days), a candidate from today gains 0.1
    and one from a month ago 0.05: recency breaks near-ties and never outweighs a clearly better
    lexical match. ``recency_weight=0`` turns it off.

    Scores are comparable within one call only. Deterministic, pure Python, no model.
    """

    def __init__(
        self, *, recency_weight: float = DEFAULT_RECENCY_WEIGHT, half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    ) -> None:
        self._recency_weight = _check_number("recency_weight", recency_weight, positive=False)
        self._half_life_days = _check_number("half_life_days", half_life_days, positive=True)

    @property
    def recency_weight(self) -> float:
        return self._recency_weight

    @property
    def half_life_days(self) -> float:
        return self._half_life_days

    @property
    def model_id(self) -> str:
        return f"lexical-bm25+recency(weight={self._recency_weight:g},half_life_days={self._half_life_days:g})"

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], *, now: datetime) -> list[float]:
        if not isinstance(query, str):
            raise ArgumentTypeError(f"rerank() takes the query as a string, not {type(query).__name__}.")
        if not isinstance(now, datetime):
            raise ArgumentTypeError(f"rerank() takes now as a datetime, not {type(now).__name__}.")
        items = list(candidates)
        if not items:
            return []
        relevance = self._relevance(query, items)
        if self._recency_weight == 0:
            return relevance
        reference = _utc(now)
        scale = self._half_life_days * _SECONDS_PER_DAY
        scores = []
        for score, candidate in zip(relevance, items):
            if candidate.timestamp is not None:
                age = max(0.0, (reference - _utc(candidate.timestamp)).total_seconds())
                score += self._recency_weight * 0.5 ** (age / scale)
            scores.append(score)
        return scores

    @staticmethod
    def _relevance(query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        terms = list(dict.fromkeys(light_stem(t) for t in keyword_terms(query)))
        if not terms:
            return [0.0] * len(candidates)
        documents = [word_tokens(c.text) for c in candidates]
        matching = _matching_tokens(terms, set().union(*documents))
        matched = matching.keys()
        frequencies: list[list[float]] = []
        document_counts = [0] * len(terms)
        for tokens in documents:
            tf = [0.0] * len(terms)
            for token in matched & set(tokens):
                count = tokens.count(token)
                for i, weight in matching[token]:
                    tf[i] += weight * count
            for i, value in enumerate(tf):
                if value:
                    document_counts[i] += 1
            frequencies.append(tf)

        n = len(candidates)
        lengths = [len(tokens) for tokens in documents]
        average_length = (sum(lengths) / n) or 1.0
        idf = [math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for df in document_counts]
        raw = []
        for tf, length in zip(frequencies, lengths):
            norm = K1 * (1.0 - B + B * length / average_length)
            raw.append(sum(idf[i] * f * (K1 + 1.0) / (f + norm) for i, f in enumerate(tf) if f))
        best = max(raw)
        return [score / best for score in raw] if best > 0 else [0.0] * n

    def __repr__(self) -> str:
        return f"LexicalReranker(recency_weight={self._recency_weight:g}, half_life_days={self._half_life_days:g})"
