"""Adapters layer (heuristic): first-person statements of a chat turn, selected and rewritten
about their speaker ("I went to a support group" → "Caroline went to a support group").

The pattern families of :mod:`.extractor` find guidelines, preferences and a few fact shapes;
most of what a careful reader takes from a conversation is said otherwise ("I painted that lake
sunrise last year", "My kids loved the camping trip"). This module keeps a sentence when it is
an informative statement about its speaker: not a question, not a greeting, thanks or short
reaction, with a first-person subject or possessive and enough content words, and rewrites it
in the third person with the speaker's name (``"The user"`` when the message has none). Every
rule here is English: :func:`looks_english` gates them, so text that is clearly in another
language is left alone rather than rewritten into garbage.

A candidate is kept when a small selector scores it at or above :data:`SELECTOR_THRESHOLD`: a
logistic regression over cheap features of the sentence (:data:`FEATURES`,
:data:`SELECTOR_WEIGHTS`), fitted against LoCoMo's gold observations by ``python -m
benchmarks.extraction.selector``, which reports it leave-one-conversation-out on the
development half; ARCHITECTURE.md D47 and BENCHMARKS.md give the figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from typing import Final

from palimpsest.domain.text import contraction_tokens, normalise_apostrophes

from ._text import FUNCTION_WORDS, sentences, third_person

__all__ = [
    "FEATURES",
    "MIN_CONTENT_WORDS",
    "SELECTOR_THRESHOLD",
    "SELECTOR_WEIGHTS",
    "candidates",
    "features",
    "looks_english",
    "possessive",
    "rewrite_first_person",
    "selector_score",
    "statements",
]

MIN_CONTENT_WORDS: Final = 3
"""Content words (function words dropped) a candidate statement needs: "I'm tired today" is chat."""
SELECTOR_THRESHOLD: Final = 0.375
"""The selector score from which a candidate statement is kept (chosen on the benchmark, D47)."""
SELECTOR_WEIGHTS: Final = (
    -3.8056, 1.4194, 0.2782, 0.0789, 0.3097, 1.0023, -1.6133, -0.6599, -0.1994,
    1.1031, 0.1454, 1.2605, 0.2519, -0.0712, 0.0664, 2.1914, -0.4753,
)
"""The logistic selector's weights, one per :data:`FEATURES` (learnt on the benchmark, D47)."""
MAX_STATEMENTS_PER_MESSAGE: Final = 4
"""Statements of one message at most."""
_LATIN: Final = re.compile(r"[A-Za-z\u00c0-\u024f]")
_LETTER: Final = re.compile(r"[^\W\d_]")
_CAPITAL_I: Final = re.compile(r"\bI\b")
_SHARED_FUNCTION_WORDS: Final = frozenset(
    "a am an as die do du hat her i in is man me no of on so war was we will s t d m".split()
)
"""English function words that are common words of other languages written in Latin script
too (Spanish "me", "no"; German "was", "will", "am"; Dutch "is", "we"; Italian "i", "in"...)."""
_ENGLISH_MARKERS: Final = FUNCTION_WORDS - _SHARED_FUNCTION_WORDS
_OTHER_MARKERS: Final = frozenset(
    """
    el la los las y que de del en es un una por para con mi yo muy pero soy estoy tengo
    le les et est je suis une des du pour avec mon ma mes pas ne c'est j'ai très nous vous il elle
    der das und ist ich bin nicht ein eine mit zu von mein meine auf wir sie sehr
    lo e è che di sono ho mio mia non io molto o os é um uma com eu não meu minha muito sou
    het een ik ben niet van mijn zijn wij heb
    """.split()
)
"""Common function words of Spanish, French, German, Italian, Portuguese and Dutch."""


def looks_english(text: str) -> bool:
    """Whether ``text`` may be English (a cheap script and stop-word test): mostly Latin
    letters, and no more function words of other languages (Spanish, French, German, Italian,
    Portuguese, Dutch) than English ones that those languages do not share ("the", "my", "you",
    a capital "I"...). A text with neither is taken as English."""
    letters = _LETTER.findall(text)
    if not letters or sum(1 for c in letters if _LATIN.match(c)) < 0.8 * len(letters):
        return False
    words = contraction_tokens(text)
    english = sum(1 for w in words if w in _ENGLISH_MARKERS) + len(_CAPITAL_I.findall(text))
    other = sum(1 for w in words if w in _OTHER_MARKERS)
    return english > other or english == other == 0


def possessive(name: str) -> str:
    """``name``'s possessive (``Caroline's``, ``James'``)."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


_CONTRACTIONS: Final = (
    (re.compile(r"\bI'm\b", re.IGNORECASE), "I am"),
    (re.compile(r"\bIm\b"), "I am"),
    (re.compile(r"\bI've\b", re.IGNORECASE), "I have"),
    (re.compile(r"\bI'd\b", re.IGNORECASE), "I would"),
    (re.compile(r"\bI'll\b", re.IGNORECASE), "I will"),
    (re.compile(r"\bi\b"), "I"),
)
_ADVERBS: Final = (
    r"(?:(?:now|really|actually|usually|also|still|just|always|never|recently|finally|even|totally|"
    r"definitely|absolutely|already|often|sometimes|truly|honestly|currently|especially|both|all|"
    r"kinda|gonna)\s+)*"
)
_I_VERB: Final = re.compile(rf"\bI\s+(?P<adv>{_ADVERBS})(?P<verb>do not|am not|[\w']+)")
_NOT_VERB: Final = frozenset({"and", "or", "too", "also", "myself", "alone", "both", "personally", "mean"})
_COLLOQUIAL: Final = {"wanna": "wants to", "gotta": "has to", "gonna": "is going to", "got": "got", "ain't": "isn't"}
_PAST: Final = frozenset(
    "chose did had heard read saw tried put cut set let hit hurt quit shut spread bet cast cost split thrust "
    "drew threw grew blew knew rode wrote woke sang rang swam began drank sank shook forgot forgave "
    "held fell fed led bled fled hung dug stuck struck caught taught fought sought brought bought "
    "thought meant dealt felt kept slept swept wept left lent sent spent built bent lost shot got "
    "made paid said laid sold told found ground stood understood won spun sat lit met ran came became "
    "went gave ate saw took shook mistook".split()
)


def rewrite_first_person(text: str, name: str | None) -> str:
    """``text`` with its first person about ``name`` (``"the user"`` when ``None``): "I" and the
    verb after it agree ("I am" → "Caroline is", "I love" → "Caroline loves"), "my" → the
    possessive, "me"/"myself" → the name/"themselves"; "we"/"our"/"us" →
    "<name> and others"/"their"/"them" (the plural verb stays)."""
    subject = name or "the user"
    owner = possessive(name) if name else "the user's"
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)

    def i_verb(match: re.Match[str]) -> str:
        verb = match.group("verb")
        low = verb.lower()
        if low == "do not":
            verb = "does not"
        elif low == "am not":
            verb = "is not"
        elif low in _COLLOQUIAL:
            verb = _COLLOQUIAL[low]
        elif low not in _NOT_VERB and low not in _PAST:
            verb = third_person(verb)
        return f"{subject} {match.group('adv')}{verb}"

    text = _I_VERB.sub(i_verb, text)
    text = re.sub(r"\bI\b", subject, text)
    # the name every time: "their"/"them" after its first mention scored lower on the benchmark
    text = re.sub(r"\b(?:my|mine)\b", owner, text, flags=re.IGNORECASE)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", subject, text, flags=re.IGNORECASE)
    # "we" keeps its plural verb: "we went" -> "Caroline and others went"
    text = re.sub(r"\bwe're\b", f"{subject} and others are", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe've\b", f"{subject} and others have", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe'd\b", f"{subject} and others would", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe\b", f"{subject} and others", text, flags=re.IGNORECASE)
    text = re.sub(r"\bour\b", "their", text, flags=re.IGNORECASE)
    text = re.sub(r"\bus\b", "them", text)  # not "US"
    if text.startswith("the user"):
        text = "T" + text[1:]
    return text


_OPENERS: Final = re.compile(
    r"^(?:(?:wow|oh|ah|aw+|hey|hi|hello|yeah|yes|yep|yup|no|nope|well|ok|okay|so|and|but|also|actually|"
    r"honestly|haha|lol|omg|thanks|thank you|totally|sure|hmm|um|btw|by the way|anyway|right|cool|great|"
    r"awesome|absolutely|definitely|true|exactly|indeed|congrats|congratulations)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
_FIRST_PERSON: Final = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|mine|myself|[Ww]e|[Ww]e're|[Ww]e've|[Oo]ur)\b")
_WE: Final = re.compile(r"\b(?:we|we're|we've|we'd|our|us)\b", re.IGNORECASE)
_SECOND_PERSON_START: Final = re.compile(r"^(?:you|your|you're|you've|you'd|you'll)\b", re.IGNORECASE)
_NON_STATEMENT_START: Final = re.compile(
    r"^(?:what|how|why|where|when|who|which|do|does|did|can|could|would|will|should|is|are|have|has|"
    r"let's|let me|keep|take|thanks|thank|congrats|congratulations|good luck|take care|talk|see you|bye|"
    r"glad|happy to|sounds|that's|that sounds|looks|it's so|so glad|nice|wow|cool)\b",
    re.IGNORECASE,
)
_REACTION: Final = re.compile(
    r"^I\s+(?:am|was)\s+(?:so\s+|really\s+|very\s+)?(?:glad|happy|sorry|thrilled|proud)\s+(?:for|to hear|that you|you)\b"
    r"|^I\s+(?:totally\s+|completely\s+)?(?:agree|understand|hear you|know what you mean|appreciate)\b"
    r"|^I\s+(?:can't|cannot)\s+wait\b|^I\s+(?:hope|bet|guess)\b",
    re.IGNORECASE,
)


def _finish(text: str) -> str:
    text = text.strip().rstrip(".!;:,- ").strip()
    return text[0].upper() + text[1:] + "." if text else ""


def _content_words(text: str) -> int:
    """Words of ``text`` that are no function words and have two letters or more."""
    return sum(1 for t in contraction_tokens(text) if t not in FUNCTION_WORDS and sum(c.isalpha() for c in t) > 1)


def candidates(text: str, name: str | None, *, skip: Collection[int] = ()) -> list[tuple[str, str]]:
    """Every first-person statement of one message that passes the rules, as (the sentence as
    said, cleaned of openers; its rewrite about ``name``), in order; the sentences whose indices
    (in :func:`~._text.sentences`' order) are in ``skip`` are left out. The rules are English:
    callers check :func:`looks_english` first."""
    text = normalise_apostrophes(text)
    found: list[tuple[str, str]] = []
    for index, raw in enumerate(sentences(text)):
        if index in skip or raw.rstrip().endswith("?"):
            continue
        sentence = _OPENERS.sub("", raw).strip()
        if name:  # a vocative: "Thanks, Caroline!" is about nobody
            sentence = re.sub(rf"^\s*{re.escape(name.split()[0])}\b[\s,!.]*", "", sentence).strip()
        if not sentence or _NON_STATEMENT_START.match(sentence) or _SECOND_PERSON_START.match(sentence):
            continue
        if not _FIRST_PERSON.search(sentence) or _REACTION.match(sentence):
            continue
        if _content_words(sentence) < MIN_CONTENT_WORDS:
            continue
        rewritten = _finish(rewrite_first_person(sentence, name))
        if rewritten and rewritten not in (r for _, r in found):
            found.append((sentence, rewritten))
    return found


_TIME: Final = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:week|month|year|night|weekend)|ago|recently|"
    r"this (?:week|month|year|weekend|morning)|next (?:week|month|year)|tomorrow|\d{4})\b",
    re.IGNORECASE,
)
_FEELING: Final = re.compile(
    r"\b(?:feel|felt|feeling|happy|glad|love|loved|awesome|amazing|great|cool|excited|thrilled|grateful|"
    r"thankful|proud|inspiring|inspired|fun|nice|sweet|wonderful|blessed)\b",
    re.IGNORECASE,
)
_INTENT: Final = re.compile(r"\b(?:gonna|going to|will|plan|planning|hope|want|wanna)\b", re.IGNORECASE)
_YOU: Final = re.compile(r"\byou(?:r|'re|'ve)?\b", re.IGNORECASE)
_DEICTIC: Final = re.compile(r"\b(?:it|this|that)\b", re.IGNORECASE)
_SELF: Final = re.compile(r"\b(?:I|my|me)\b")
_CAPITALISED: Final = re.compile(r"\b[A-Z][a-z]+")

FEATURES: Final = (
    "bias", "log content words", "log words", "5+ content words", "starts with I",
    "starts with my", "second person", "first person plural", "exclamation", "time expression", "digit",
    "capitalised word inside", "message of 1-2 sentences", "feeling word", "intent word",
    "share of I/my/me", "it/this/that",
)
"""The selector's features of a candidate statement, in the order of :data:`SELECTOR_WEIGHTS`."""


def features(sentence: str, sentences_in_message: int) -> list[float]:
    """The selector's features (:data:`FEATURES`) of a candidate sentence, as said (cleaned of
    openers), in a message of ``sentences_in_message`` sentences."""
    tokens = contraction_tokens(sentence)
    content = sum(1 for t in tokens if t not in FUNCTION_WORDS and len(t) > 1)
    values = (
        1.0,
        math.log1p(content),
        math.log1p(len(tokens)),
        content >= 5,
        bool(re.match(r"^I\b", sentence)),
        bool(re.match(r"^my\b", sentence, re.IGNORECASE)),
        bool(_YOU.search(sentence)),
        bool(_WE.search(sentence)),
        "!" in sentence,
        bool(_TIME.search(sentence)),
        any(c.isdigit() for c in sentence),
        bool(_CAPITALISED.search(sentence[1:])),
        sentences_in_message <= 2,
        bool(_FEELING.search(sentence)),
        bool(_INTENT.search(sentence)),
        len(_SELF.findall(sentence)) / max(len(tokens), 1),
        bool(_DEICTIC.search(sentence)),
    )
    return [float(v) for v in values]


def selector_score(values: Sequence[float], weights: Sequence[float]) -> float:
    """The logistic selector's probability that a candidate with these features is a fact a
    careful reader would note."""
    z = sum(v * w for v, w in zip(values, weights))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def statements(
    text: str,
    name: str | None,
    *,
    skip: Collection[int] = (),
    threshold: float | None = None,
    weights: Sequence[float] | None = None,
    english: bool | None = None,
) -> list[str]:
    """The informative first-person statements of one message, rewritten about ``name`` (the
    speaker; ``"The user"`` when ``None``), in order, at most :data:`MAX_STATEMENTS_PER_MESSAGE`:
    the :func:`candidates` whose selector score (:func:`selector_score` with ``weights``,
    default :data:`SELECTOR_WEIGHTS`) is at least ``threshold`` (default
    :data:`SELECTOR_THRESHOLD`). The sentences whose indices are in ``skip`` are left out;
    nothing when the text does not look English (``english``: the caller's :func:`looks_english`
    of ``text``, when it has it already)."""
    if not (looks_english(text) if english is None else english):
        return []
    found = candidates(text, name, skip=skip)
    if not found:
        return []
    count = len(sentences(normalise_apostrophes(text)))
    chosen = SELECTOR_WEIGHTS if weights is None else weights
    cut = SELECTOR_THRESHOLD if threshold is None else threshold
    kept = [rewritten for said, rewritten in found if selector_score(features(said, count), chosen) >= cut]
    return kept[:MAX_STATEMENTS_PER_MESSAGE]
