"""Adapters layer (heuristic): ``TextRankSummariser``, an extractive TextRank ``Summariser`` port."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Final

import numpy as np
from palimpsest.application.budgets import CHARS_PER_TOKEN, DEFAULT_SUMMARY_TOKEN_BUDGET
from palimpsest.application.ports import Summariser, SummaryText
from palimpsest.domain.model import Message
from palimpsest.domain.text import TOPIC_FILLERS, contraction_tokens

from ._text import FUNCTION_WORDS, sentences, stem

__all__ = ["TextRankSummariser"]

_DAMPING: Final = 0.85
_MIN_ISOLATED_WORDS: Final = 3
_DEFAULT_MAX_CHARS: Final = int(DEFAULT_SUMMARY_TOKEN_BUDGET * CHARS_PER_TOKEN)
"""3,500 characters: the 1,000 tokens ``get_summary`` returns by default."""
_DUPLICATE_SIMILARITY: Final = 0.7
_MAX_TOPICS: Final = 8
_WINDOW_SENTENCES: Final = 128
"""The most sentences one ranking sees: the kept summary's and as many new ones as fit."""
_MAX_SUMMARY_SENTENCES: Final = 48
_RECENT_SHARE: Final = 0.25
_MAX_SENTENCE_CHARS: Final = 300
_CACHED_SENTENCES: Final = 4096
"""Sentences whose words are remembered: a summary's sentences are read again at every refresh."""
_TERMINATED: Final = re.compile(r"[.!?;]$")
_TOPIC_STOPWORDS: Final = FUNCTION_WORDS | TOPIC_FILLERS | frozenset({"user"})


def _split(text: str) -> list[str]:
    """The sentences of ``text``, each cut at 300 characters and ending in a sentence mark (one
    is added where none closes it, so that a summary splits back into the same sentences)."""
    return [_terminated(cut) for sentence in sentences(text) if (cut := sentence[:_MAX_SENTENCE_CHARS].strip())]


@lru_cache(maxsize=_CACHED_SENTENCES)
def _sentence_tokens(sentence: str) -> frozenset[str]:
    """Every word of ``sentence``, lower-cased (what near-duplicates are told by)."""
    return frozenset(contraction_tokens(sentence))


@lru_cache(maxsize=_CACHED_SENTENCES)
def _sentence_words(sentence: str) -> frozenset[str]:
    """The content stems of ``sentence`` (what TextRank's similarity counts)."""
    return frozenset(stem(t) for t in contraction_tokens(sentence) if t not in _TOPIC_STOPWORDS and len(t) > 1)


@lru_cache(maxsize=_CACHED_SENTENCES)
def _sentence_terms(sentence: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The candidate topic unigrams and adjacent bigrams of one sentence, in order."""
    words = contraction_tokens(sentence)
    unigrams = tuple(w for w in words if w not in _TOPIC_STOPWORDS and len(w) > 2 and not w.isdigit())
    bigrams = tuple(
        f"{a} {b}"
        for a, b in pairwise(words)
        if a not in _TOPIC_STOPWORDS
        and b not in _TOPIC_STOPWORDS
        and len(a) >= 3
        and len(b) >= 3
        and not a.isdigit()
        and not b.isdigit()
    )
    return unigrams, bigrams


def keyphrases(text: str, limit: int = _MAX_TOPICS) -> tuple[str, ...]:
    """Up to ``limit`` keyphrases: frequent non-stopword unigrams and adjacent bigrams, ranked by
    frequency (a bigram counts 1.5× per occurrence and only when it occurs twice, or when its
    words occur nowhere else), ties by first appearance; a unigram inside a chosen bigram is dropped."""
    unigrams: Counter[str] = Counter()
    bigrams: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    position = 0
    for sentence in sentences(text):
        sentence_unigrams, sentence_bigrams = _sentence_terms(sentence)
        for word in sentence_unigrams:
            unigrams[word] += 1
            first_seen.setdefault(word, position)
            position += 1
        for phrase in sentence_bigrams:
            bigrams[phrase] += 1
            first_seen.setdefault(phrase, position)
    scores: dict[str, float] = {word: float(count) for word, count in unigrams.items()}
    for phrase, count in bigrams.items():
        if count >= 2:
            scores[phrase] = 1.5 * count
    ranked = sorted(scores, key=lambda p: (-scores[p], first_seen[p]))
    chosen: list[str] = []
    covered: set[str] = set()
    for phrase in ranked:
        if len(chosen) >= limit:
            break
        if " " in phrase:
            if set(phrase.split()) <= covered:
                continue
            chosen = [c for c in chosen if c not in phrase.split()]
            covered.update(phrase.split())
            chosen.append(phrase)
        elif phrase not in covered:
            covered.add(phrase)
            chosen.append(phrase)
    return tuple(chosen[:limit])


def _binary_rows(token_sets: Sequence[frozenset[str]]) -> np.ndarray:
    """One row per set, one column per distinct token, 1 where the set holds it (float64)."""
    vocabulary: dict[str, int] = {}
    pairs = [(row, vocabulary.setdefault(t, len(vocabulary))) for row, tokens in enumerate(token_sets) for t in tokens]
    matrix = np.zeros((len(token_sets), max(len(vocabulary), 1)))
    if pairs:
        rows, columns = zip(*pairs, strict=True)
        matrix[list(rows), list(columns)] = 1.0
    return matrix


def _superseded(token_sets: Sequence[frozenset[str]], threshold: float) -> np.ndarray:
    """Whether each sentence is repeated by a later one: the Jaccard similarity of their word
    sets (every word, lower-cased: no stop words, no stemming, any language) is at least
    ``threshold``. The later sentence is kept, the earlier one dropped."""
    rows = _binary_rows(token_sets)
    shared = rows @ rows.T
    sizes = rows.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - shared
    jaccard = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
    return np.asarray(np.triu(jaccard >= threshold, k=1).any(axis=1))


def _similarities(word_sets: Sequence[frozenset[str]]) -> np.ndarray:
    """TextRank's overlap similarity of every pair at once: the shared content stems, each
    weighted by its inverse frequency among the sentences, over the sum of the log lengths of
    the two sentences (zero on the diagonal and where nothing is shared)."""
    rows = _binary_rows(word_sets)
    document_frequency = rows.sum(axis=0)
    idf = np.log((len(word_sets) + 1) / (document_frequency + 0.5))
    shared = (rows * idf) @ rows.T
    logs = np.log(rows.sum(axis=1) + 1)
    denominator = logs[:, None] + logs[None, :]
    weights: np.ndarray = np.divide(shared, denominator, out=np.zeros_like(shared), where=(shared > 0) & (denominator > 0))
    np.fill_diagonal(weights, 0.0)
    return weights


def _pagerank(weights: np.ndarray) -> np.ndarray:
    """Weighted PageRank (damping 0.85) by power iteration on the similarity matrix: the same
    iteration as ``networkx.pagerank`` (a sentence linked to nothing spreads its rank evenly)."""
    count = weights.shape[0]
    out_weight = weights.sum(axis=1)
    dangling = out_weight == 0
    transition = np.divide(weights, out_weight[:, None], out=np.zeros_like(weights), where=~dangling[:, None])
    rank = np.full(count, 1.0 / count)
    for _ in range(200):
        previous = rank
        rank = _DAMPING * (rank @ transition + rank[dangling].sum() / count) + (1 - _DAMPING) / count
        if np.abs(rank - previous).sum() < count * 1e-10:
            break
    return rank


def _terminated(sentence: str) -> str:
    """``sentence`` ending in a sentence mark, so the summary splits back into the same sentences."""
    return sentence if _TERMINATED.search(sentence) else sentence + "."


class TextRankSummariser(Summariser):
    """Implements the ``Summariser`` port by extractive TextRank, offline and deterministic.

    The summary is folded forward: the sentences of the previous summary and of the new
    messages (oldest first) form a window of at most 128 sentences — a batch of messages too
    large for one window is folded in window by window — so the work of a refresh does not grow
    with the thread. In each window:

    * a sentence repeated by a later one is dropped (the Jaccard similarity of their word sets,
      every word lower-cased, at least ``duplicate_similarity``, 0.7 by default; the words are
      language-neutral: no stop words, no stemming), so a restated fact keeps its newest wording;
    * the rest are ranked by PageRank over their pairwise similarities (shared content stems,
      each weighted by its inverse frequency in the window, over the log lengths of the two
      sentences, after Mihalcea & Tarau's TextRank), computed as one matrix with NumPy, times
      the log of the sentence's content words (so "Wow, that sounds awesome!", which shares
      common words with everything, does not outrank what was said);
    * the newest sentences are kept first, up to a quarter of the budget, so the summary always
      says what the thread is about now; the best-ranked fill the rest, at most 48 sentences in
      all, emitted in their original (chronological) order. A sentence that shares no word with
      any other and has fewer than three content words ("Lol, what a day.") is left out.

    The budget is ``max_chars`` (3,500: the 1,000 tokens ``get_summary`` returns by default),
    or ``token_limit × 3.5`` characters when that is smaller. Topics are up to 8 keyphrases of
    the summary text (frequent non-stopword unigrams and repeated bigrams). It paraphrases
    nothing: every sentence of the summary is a sentence of its input (a full stop is added to
    one that has no closing mark, so that the next refresh splits the summary into the same
    sentences), so it cannot follow instructions in it either. Sentences are not rewritten to
    third person and are cut at 300 characters.
    """

    def __init__(
        self, *, max_chars: int = _DEFAULT_MAX_CHARS, duplicate_similarity: float = _DUPLICATE_SIMILARITY
    ) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValueError("max_chars must be a positive integer.")
        number = isinstance(duplicate_similarity, (int, float)) and not isinstance(duplicate_similarity, bool)
        if not number or not 0 < duplicate_similarity <= 1:
            raise ValueError("duplicate_similarity must be a number in (0, 1].")
        self._max_chars = max_chars
        self._duplicate_similarity = float(duplicate_similarity)

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        budget = self._max_chars
        if token_limit is not None:
            budget = min(budget, max(1, int(token_limit * CHARS_PER_TOKEN)))
        kept = _split(previous.text) if previous is not None else []
        incoming = [s for m in messages for s in _split(m.content)]
        if not kept and not incoming:
            return SummaryText("", ())
        while True:
            room = max(_WINDOW_SENTENCES - len(kept), 1)
            chunk, incoming = incoming[:room], incoming[room:]
            kept = self._select(kept + chunk, budget)
            if not incoming:
                break
        text = " ".join(kept)
        if len(text) > budget:
            text = text[:budget].rsplit(" ", 1)[0] if " " in text[:budget] else text[:budget]
        return SummaryText(text, keyphrases(text))

    def _select(self, candidates: list[str], budget: int) -> list[str]:
        """The sentences of one window that the summary keeps, in their order."""
        tokens = [_sentence_tokens(s) for s in candidates]
        alive = [i for i in np.flatnonzero(~_superseded(tokens, self._duplicate_similarity)) if tokens[i]]
        window = [candidates[i] for i in alive]
        if not window:
            return []
        words = [_sentence_words(s) for s in window]
        weights = _similarities(words)
        degree = np.count_nonzero(weights, axis=1)
        has_edges = bool(degree.any())
        scores = _pagerank(weights) if has_edges else np.ones(len(window))
        scores = scores * np.log1p([len(w) for w in words])  # what a sentence says, not only how central

        def chit_chat(index: int) -> bool:  # shares no word with anything and says little itself
            return has_edges and degree[index] == 0 and len(words[index]) < _MIN_ISOLATED_WORDS

        chosen: list[int] = []
        used = 0

        def take(index: int, limit: int) -> None:
            nonlocal used
            cost = len(window[index]) + (1 if chosen else 0)
            if index not in chosen and len(chosen) < _MAX_SUMMARY_SENTENCES and used + cost <= limit:
                chosen.append(index)
                used += cost

        recent_limit = int(budget * _RECENT_SHARE)
        for index in reversed(range(len(window))):  # the newest first, up to a quarter of the budget
            if used >= recent_limit:
                break
            if not chit_chat(index):
                take(index, recent_limit)
        # Ties (and isolated sentences) favour the newest sentence.
        for index in sorted(range(len(window)), key=lambda i: (-round(float(scores[i]), 12), -i)):
            if not chit_chat(index):
                take(index, budget)
        if not chosen:
            chosen = [max(range(len(window)), key=lambda i: (round(float(scores[i]), 12), i))]
        return [window[i] for i in sorted(chosen)]

    def __repr__(self) -> str:
        return f"TextRankSummariser(max_chars={self._max_chars}, duplicate_similarity={self._duplicate_similarity})"
