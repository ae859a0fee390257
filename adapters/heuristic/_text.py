"""Adapters layer (heuristic): shared English text helpers — tokens, crude stems, sentence split."""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "NEGATIONS",
    "STOPWORDS",
    "content_stems",
    "normalise_apostrophes",
    "sentences",
    "stem",
    "third_person",
    "tokens",
]

_TOKEN: Final = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+|\n+")

STOPWORDS: Final = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "nor", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "i'm", "it's", "also", "really", "actually", "usually", "generally", "mostly", "definitely", "absolutely", "truly", "totally"]
)
"""Function words. Negations are deliberately *not* stopwords: they carry polarity."""

NEGATIONS: Final = frozenset({"not", "no", "never", "don't", "doesn't", "didn't", "can't", "cannot", "won't"})

_IRREGULAR_STEMS: Final = {
    "prefers": "prefer", "preferred": "prefer", "preference": "prefer", "preferences": "prefer",
    "prefering": "prefer", "preferring": "prefer",
    "likes": "like", "liked": "like", "loves": "love", "loved": "love", "hates": "hate", "hated": "hate",
    "enjoys": "enjoy", "enjoyed": "enjoy", "favorite": "favourite", "favourites": "favourite",
    "favorites": "favourite", "lives": "live", "lived": "live", "living": "live",
    "works": "work", "worked": "work", "working": "work", "user's": "user", "users": "user",
    "is": "be", "are": "be", "was": "be", "were": "be", "has": "have", "had": "have",
    "dislikes": "dislike", "disliked": "dislike", "moved": "move", "moves": "move",
}


def normalise_apostrophes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def tokens(text: str) -> list[str]:
    """Lowercased word tokens, apostrophe contractions kept whole (``don't``, ``user's``)."""
    return [t.lower() for t in _TOKEN.findall(normalise_apostrophes(text))]


def stem(token: str) -> str:
    """A crude, consistent English stem: enough to make ``prefers``/``preferred`` meet."""
    token = token.lower()
    if token in _IRREGULAR_STEMS:
        return _IRREGULAR_STEMS[token]
    token = token.removesuffix("'s")
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def content_stems(text: str, *, extra_stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Stems of the non-stopword tokens, in order (negations kept)."""
    return [
        stem(t)
        for t in tokens(text)
        if t not in STOPWORDS and t not in extra_stopwords and (len(t) > 1 or t.isdigit())
    ]


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after ``.!?;`` and at line breaks), whitespace collapsed."""
    parts = (" ".join(p.split()) for p in _SENTENCE_END.split(normalise_apostrophes(text)))
    return [p for p in parts if p]


_MODALS: Final = frozenset(
    {"can", "can't", "cannot", "could", "couldn't", "will", "won't", "would", "wouldn't", "should",
     "shouldn't", "must", "might", "may", "was", "wasn't", "did", "didn't", "used", "had"}
)
_IRREGULAR_PAST: Final = frozenset(
    ["grew", "went", "came", "got", "made", "took", "saw", "knew", "began", "became", "left", "felt", "kept", "met", "ran", "spoke", "taught", "wrote", "bought", "brought", "built", "thought", "found", "told", "said", "gave", "sold", "drove", "flew", "lost", "paid", "sent", "spent", "stood", "understood", "won", "were"]
)
_THIRD_PERSON_IRREGULAR: Final = {
    "am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "don't": "doesn't", "go": "goes",
    "haven't": "hasn't", "'d": "would", "'ll": "will", "aren't": "isn't", "am not": "is not",
}


def third_person(verb: str) -> str:
    """The third-person singular present of a first-person verb form (``prefer`` → ``prefers``)."""
    low = verb.lower()
    if low in _THIRD_PERSON_IRREGULAR:
        return _THIRD_PERSON_IRREGULAR[low]
    if low in _MODALS or low in _IRREGULAR_PAST or not low.isalpha() or low.endswith("ed"):
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
