"""Domain layer: how a search query's text becomes keyword terms (pure Python).

Every store's keyword search asks for the same terms: word tokens (``\\w+``), lower-cased,
de-duplicated in order, without English stop words, unless the query has nothing else (a
question made only of stop words still searches for them). Stores quote each term in their own
query syntax, so no input can be an operator or a syntax error.
"""

from __future__ import annotations

import math
import re
from typing import Final

__all__ = ["BM25_B", "BM25_K1", "STOP_WORDS", "bm25_idf", "keyword_terms", "word_key", "word_tokens"]

_WORD: Final = re.compile(r"\w+")
_NON_WORD: Final = re.compile(r"\W+")

STOP_WORDS: Final = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    im ive dont didnt doesnt isnt wasnt arent werent
    s t d ll m re ve also ok okay please tell remind know
    """.split()
)
"""English function words (and a few chat fillers such as "please", "tell", "remind") that
say nothing about which record is meant."""


def word_tokens(text: str) -> list[str]:
    """Every word token of ``text``, lower-cased, in order (duplicates kept). Lower-casing, not
    case folding, so "Straße" stays one term (as SQLite's FTS5 tokenizer, which keyword search
    used first, kept it)."""
    return [token.lower() for token in _WORD.findall(text)]


def word_key(text: str) -> str:
    """The text's words, lower-cased and joined by single spaces, in one regex pass: the same
    as ``" ".join(word_tokens(text))`` (lower-casing first can only differ for the rare
    characters whose lower case changes a word boundary). Texts that differ only in case,
    punctuation and spacing share a key."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def keyword_terms(text: str) -> list[str]:
    """The distinct terms a keyword search asks for, in order of first appearance."""
    tokens = list(dict.fromkeys(word_tokens(text)))
    content = [token for token in tokens if token not in STOP_WORDS]
    return content or tokens


BM25_K1: Final = 1.2
"""BM25's term-frequency saturation (the stores that compute BM25 themselves use these)."""
BM25_B: Final = 0.75
"""BM25's document-length normalisation."""


def bm25_idf(documents: int, document_frequency: int) -> float:
    """Okapi BM25's idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``: always positive, largest for
    a term no document holds (which still counts in a query's ideal score, so a query whose
    main word appears nowhere makes every keyword match a weak one)."""
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))
