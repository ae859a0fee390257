"""Adapters layer (heuristic): ``TextRankSummariser``, an extractive TextRank ``Summariser`` port."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import combinations, pairwise
from typing import Final

import networkx as nx
import numpy as np
from palimpsest.application.ports import Summariser, SummaryText
from palimpsest.domain.model import Message
from palimpsest.domain.text import TOPIC_FILLERS, contraction_tokens

from ._text import FUNCTION_WORDS, sentences, stem

__all__ = ["TextRankSummariser"]

_CHARS_PER_TOKEN: Final = 3.5
_DAMPING: Final = 0.85
_MIN_ISOLATED_WORDS: Final = 3
_DEFAULT_MAX_CHARS: Final = 600
_MAX_TOPICS: Final = 8
_MAX_SENTENCES: Final = 400
_MAX_SENTENCE_CHARS: Final = 300
_TOPIC_STOPWORDS: Final = FUNCTION_WORDS | TOPIC_FILLERS | frozenset({"user"})


def _sentence_words(sentence: str) -> frozenset[str]:
    return frozenset(stem(t) for t in contraction_tokens(sentence) if t not in _TOPIC_STOPWORDS and len(t) > 1)


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """TextRank's overlap similarity: shared words over the log lengths of both sentences."""
    shared = len(a & b)
    if not shared:
        return 0.0
    denominator = math.log(len(a) + 1) + math.log(len(b) + 1)
    return shared / denominator if denominator > 0 else 0.0


def keyphrases(text: str, limit: int = _MAX_TOPICS) -> tuple[str, ...]:
    """Up to ``limit`` keyphrases: frequent non-stopword unigrams and adjacent bigrams, ranked by
    frequency (a bigram counts 1.5× per occurrence and only when it occurs twice, or when its
    words occur nowhere else), ties by first appearance; a unigram inside a chosen bigram is dropped."""
    unigrams: Counter[str] = Counter()
    bigrams: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    position = 0
    for sentence in sentences(text):
        words = list(contraction_tokens(sentence))
        for word in words:
            if word not in _TOPIC_STOPWORDS and len(word) > 2 and not word.isdigit():
                unigrams[word] += 1
                first_seen.setdefault(word, position)
                position += 1
        for a, b in pairwise(words):
            if a in _TOPIC_STOPWORDS or b in _TOPIC_STOPWORDS or len(a) < 3 or len(b) < 3:
                continue
            if a.isdigit() or b.isdigit():
                continue
            phrase = f"{a} {b}"
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


def _pagerank(graph: nx.Graph[int]) -> dict[int, float]:
    """``networkx.pagerank`` (weighted, damping 0.85); networkx needs SciPy for it, so without SciPy
    the same power iteration runs on networkx's dense adjacency matrix with NumPy."""
    try:
        return dict(nx.pagerank(graph, alpha=_DAMPING, weight="weight", max_iter=200, tol=1e-10))
    except ModuleNotFoundError:
        pass
    nodes = list(graph.nodes)
    adjacency = nx.to_numpy_array(graph, nodelist=nodes, weight="weight")
    out_weight = adjacency.sum(axis=1)
    dangling = out_weight == 0
    transition = np.divide(adjacency, out_weight[:, None], out=np.zeros_like(adjacency), where=~dangling[:, None])
    count = len(nodes)
    rank = np.full(count, 1.0 / count)
    for _ in range(200):
        previous = rank
        rank = _DAMPING * (rank @ transition + rank[dangling].sum() / count) + (1 - _DAMPING) / count
        if np.abs(rank - previous).sum() < count * 1e-10:
            break
    return {node: float(score) for node, score in zip(nodes, rank, strict=True)}


class TextRankSummariser(Summariser):
    """Implements the ``Summariser`` port by extractive TextRank, offline and deterministic.

    The sentences of the previous summary and of the new messages (oldest first) form a graph
    whose edges weigh word overlap (shared content stems over the log lengths of the two
    sentences, as in Mihalcea & Tarau's TextRank); ``networkx.pagerank`` ranks them (or, when
    SciPy — which networkx needs for it — is absent, the same power iteration in NumPy). The best
    sentences are taken until the budget is spent — ``token_limit × 3.5`` characters when
    ``token_limit`` is given, otherwise about 600 — and emitted in their original
    (chronological) order; a sentence that shares no word with any other and has fewer than
    three content words ("Lol, what a day.") is left out. Topics are up to 8 keyphrases of the summary text (frequent
    non-stopword unigrams and repeated bigrams). It paraphrases nothing: every sentence of
    the summary is a sentence that was in its input, so it cannot follow instructions in it
    either. Sentences are not rewritten to third person, and very long inputs keep their
    newest 400 sentences.
    """

    def __init__(self, *, default_max_chars: int = _DEFAULT_MAX_CHARS) -> None:
        if isinstance(default_max_chars, bool) or not isinstance(default_max_chars, int) or default_max_chars < 1:
            raise ValueError("default_max_chars must be a positive integer.")
        self._default_max_chars = default_max_chars

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        budget = (
            max(1, int(token_limit * _CHARS_PER_TOKEN)) if token_limit is not None else self._default_max_chars
        )
        candidates: list[str] = []
        seen: set[str] = set()
        sources = ([previous.text] if previous is not None else []) + [m.content for m in messages]
        for source in sources:
            for sentence in sentences(source):
                sentence = sentence[:_MAX_SENTENCE_CHARS].strip()
                key = " ".join(contraction_tokens(sentence))
                if key and key not in seen:
                    seen.add(key)
                    candidates.append(sentence)
        candidates = candidates[-_MAX_SENTENCES:]
        if not candidates:
            return SummaryText("", ())
        chosen = self._select(candidates, budget)
        text = " ".join(candidates[i] for i in sorted(chosen))
        if len(text) > budget:
            text = text[:budget].rsplit(" ", 1)[0] if " " in text[:budget] else text[:budget]
        return SummaryText(text, keyphrases(text))

    @staticmethod
    def _select(candidates: list[str], budget: int) -> list[int]:
        words = [_sentence_words(s) for s in candidates]
        graph: nx.Graph[int] = nx.Graph()
        graph.add_nodes_from(range(len(candidates)))
        for i, j in combinations(range(len(candidates)), 2):
            weight = _similarity(words[i], words[j])
            if weight > 0:
                graph.add_edge(i, j, weight=weight)
        if graph.number_of_edges():
            scores = _pagerank(graph)
        else:
            scores = dict.fromkeys(range(len(candidates)), 1.0)
        # Ties (and isolated sentences) favour the newest sentence, then the longer one.
        order = sorted(range(len(candidates)), key=lambda i: (-round(scores[i], 12), -i))
        chosen: list[int] = []
        used = 0
        for index in order:
            if graph.degree(index) == 0 and len(words[index]) < _MIN_ISOLATED_WORDS and graph.number_of_edges():
                continue  # chit-chat: shares no word with anything and says little itself
            cost = len(candidates[index]) + (1 if chosen else 0)
            if used + cost <= budget:
                chosen.append(index)
                used += cost
        if not chosen:
            chosen = [order[0]]
        return chosen

    def __repr__(self) -> str:
        return f"TextRankSummariser(default_max_chars={self._default_max_chars})"
