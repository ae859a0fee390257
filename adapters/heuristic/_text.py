"""Adapters layer (heuristic): English helpers on top of the domain's tokeniser — crude stems,
sentence split, third-person verbs. Tokens and stop words are ``palimpsest.domain.text``'s."""

from __future__ import annotations

import re
from typing import Final

from palimpsest.domain.text import (
    CONTRACTED_STOP_WORDS,
    INTENSIFIERS,
    NEGATIONS,
    STOP_WORDS,
    normalise_apostrophes,
)

__all__ = ["FUNCTION_WORDS", "sentences", "stem", "third_person"]

_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+|\n+")

FUNCTION_WORDS: Final = (STOP_WORDS | CONTRACTED_STOP_WORDS | INTENSIFIERS) - NEGATIONS
"""The domain's stop words in both spellings, less the negations, which carry polarity."""

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
_PRESENT_IN_ED: Final = frozenset(
    ["need", "feed", "bleed", "breed", "speed", "proceed", "succeed", "exceed", "heed", "seed", "weed", "embed", "shed", "wed"]
)
"""Present-tense verbs that end in "ed" (not past forms: "I need" → "needs")."""
_THIRD_PERSON_IRREGULAR: Final = {
    "am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "don't": "doesn't", "go": "goes",
    "haven't": "hasn't", "'d": "would", "'ll": "will", "aren't": "isn't", "am not": "is not",
}


def third_person(verb: str) -> str:
    """The third-person singular present of a first-person verb form (``prefer`` → ``prefers``)."""
    low = verb.lower()
    if low in _THIRD_PERSON_IRREGULAR:
        return _THIRD_PERSON_IRREGULAR[low]
    if low in _MODALS or low in _IRREGULAR_PAST or not low.isalpha() or (low.endswith("ed") and low not in _PRESENT_IN_ED):
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
