"""Domain layer: the library's one tokeniser and stop-word list (pure Python).

Every store's keyword search asks for the same terms: word tokens (``\\w+``), lower-cased,
de-duplicated in order, without English stop words, unless the query has nothing else (a
question made only of stop words still searches for them). Stores quote each term in their own
query syntax, so no input can be an operator or a syntax error.

The rule-based model adapters (``adapters/heuristic``) and the hashing embedder read text with
the same definitions: :func:`contraction_tokens` is the variant that keeps English contractions
whole (``don't``, ``user's``), and :data:`CONTRACTED_STOP_WORDS` spells the stop words it then
meets; :data:`NEGATIONS` are the words a reader of polarity must keep, and :data:`TOPIC_FILLERS`
the chat words that are no topic of a summary. Both tokenisers are Unicode-aware, so text in any
script tokenises.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from typing import Final

__all__ = [
    "BM25_B",
    "BM25_K1",
    "CONTRACTED_STOP_WORDS",
    "INTENSIFIERS",
    "NEGATIONS",
    "STOP_WORDS",
    "TOPIC_FILLERS",
    "bm25_idf",
    "contraction_tokens",
    "document_terms",
    "fold_diacritics",
    "keyword_terms",
    "normalise_apostrophes",
    "query_terms",
    "word_key",
    "word_tokens",
]

_WORD: Final = re.compile(r"\w+")
_NON_WORD: Final = re.compile(r"\W+")
_CONTRACTION_WORD: Final = re.compile(r"[^\W_]+(?:'[^\W\d_]+)?")
"""Letters and digits (no underscore), optionally followed by an apostrophe and letters."""

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
say nothing about which record is meant. All are written without apostrophes:
:func:`word_tokens` splits a contraction at its apostrophe."""

INTENSIFIERS: Final = frozenset(
    "really actually usually generally mostly definitely absolutely truly totally".split()
)
"""Adverbs the rule-based readers skip as function words. Keyword search keeps them: dropping
them from queries was measured to change no recall figure, so the search default stays as it was."""

CONTRACTED_STOP_WORDS: Final = frozenset(
    """
    i'm i've i'd i'll it's that's there's you're you've you'll we're we've they're they've
    he's she's what's
    """.split()
)
"""The contractions among the stop words, as :func:`contraction_tokens` returns them: each
splits, under :func:`word_tokens`, into words of :data:`STOP_WORDS` (the negated contractions
are :data:`NEGATIONS`)."""

NEGATIONS: Final = frozenset({"not", "no", "never", "don't", "doesn't", "didn't", "can't", "cannot", "won't"})
"""Words that flip a statement's polarity. Keyword search drops "no" and "not" with the other
stop words; a reader that compares claims keeps every negation."""

TOPIC_FILLERS: Final = frozenset(
    """
    like want wants need needs please thanks thank yes okay ok right sure also get got let lets let's
    one would could should can't don't doesn't
    """.split()
)
"""Chat words that are content for search ("what do I like?") but never the topic of a
conversation; summarisers leave them out of topics, with the stop words."""


def word_tokens(text: str) -> list[str]:
    """Every word token of ``text``, lower-cased, in order (duplicates kept). Lower-casing, not
    case folding, so "Straße" stays one term (as SQLite's FTS5 tokenizer, which keyword search
    used first, kept it)."""
    return [token.lower() for token in _WORD.findall(text)]


def normalise_apostrophes(text: str) -> str:
    """``text`` with typographic quotes made plain (\u2019 and \u2018 become ``'``, \u201c and
    \u201d become ``"``), so "don\u2019t" and "don't" read the same."""
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def contraction_tokens(text: str) -> list[str]:
    """Every word token of ``text``, lower-cased, in order, with contractions and possessives
    kept whole (``don't``, ``user's``; typographic apostrophes count). Unlike :func:`word_tokens`,
    an underscore separates words."""
    return [token.lower() for token in _CONTRACTION_WORD.findall(normalise_apostrophes(text))]


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


@functools.lru_cache(maxsize=65_536)
def _fold_non_ascii(term: str) -> str:
    decomposed = unicodedata.normalize("NFD", term)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def fold_diacritics(term: str) -> str:
    """``term`` without combining marks ("café" → "cafe", "crème" → "creme").

    Applied on top of :func:`word_tokens`' terms, never instead of them: FTS5's ``remove_diacritics 2``
    tokenizer, which keyword search used before, matched "cafe" with "Café", and
    :class:`~palimpsest.domain.ports.RecordSearch` allows a store to fold diacritics.
    """
    return term if term.isascii() else _fold_non_ascii(term)


def document_terms(content: str) -> list[str]:
    """The indexed terms of a text: :func:`word_tokens`, diacritics
    folded (duplicates kept: their count is the term frequency)."""
    tokens = word_tokens(content)
    if content.isascii():
        return tokens
    return [fold_diacritics(token) for token in tokens]


def query_terms(text: str) -> list[str]:
    """The distinct terms a keyword search asks for: :func:`keyword_terms`
    with diacritics folded, in order of first appearance (the order scores are summed in)."""
    terms = keyword_terms(text)
    if text.isascii():
        return terms
    return list(dict.fromkeys(fold_diacritics(term) for term in terms))


BM25_K1: Final = 1.2
"""BM25's term-frequency saturation (the stores that compute BM25 themselves use these)."""
BM25_B: Final = 0.75
"""BM25's document-length normalisation."""


def bm25_idf(documents: int, document_frequency: int) -> float:
    """Okapi BM25's idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``: always positive, largest for
    a term no document holds (which still counts in a query's ideal score, so a query whose
    main word appears nowhere makes every keyword match a weak one)."""
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))
