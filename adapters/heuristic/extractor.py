"""Adapters layer (heuristic): ``HeuristicExtractor``, an offline, pattern-based ``Extractor`` port."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from palimpsest.application.ports import ExtractedMemory, ExtractionRequest, Extractor, LinkProposal
from palimpsest.domain.model import Message, RecordType
from palimpsest.domain.text import NEGATIONS, contraction_tokens, normalise_apostrophes

from ._text import FUNCTION_WORDS, sentences, third_person
from .linker import classify_link
from .statements import looks_english, possessive
from .statements import statements as statement_sentences

__all__ = ["MAX_PER_MESSAGE", "MAX_PER_PASS", "USER_ROLES", "HeuristicExtractor", "extract_from_text", "pattern_hits",
           "unasserted_sentences"]

USER_ROLES: Final = frozenset({"user", "human"})

_ADV: Final = (
    r"now|really|actually|usually|generally|mostly|always|definitely|absolutely|also|still|just|truly|"
    r"totally|honestly|strongly|much|especially|typically|normally|personally|no longer|never|genuinely|"
    r"kind of|sort of|slightly|somewhat|quite|currently|sometimes|often|even|absolutely|very much"
)
_ADVS: Final = rf"(?:(?:{_ADV})\s+)*"

_FILLER: Final = re.compile(
    r"^(?:also|actually|well|oh|ok|okay|so|btw|by the way|honestly|anyway|and|but|yes|yeah|no|hey|hi|"
    r"hello|fyi|just so you know|for the record|for context|oh and|also note|note)\s*[,:\-]?\s+",
    re.IGNORECASE,
)
_QUESTION_START: Final = re.compile(
    r"^(?:what|how|why|where|when|who|whom|which|whose|do|does|did|can|could|would|will|should|shall|is|"
    r"are|am|may|have|has|isn't|aren't|won't|wouldn't|shouldn't|couldn't|any idea|anyone)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL: Final = re.compile(
    r"^(?:if|suppose|supposing|imagine|assuming|what if|maybe|perhaps|unless|in case|when|once|"
    r"I wonder|I guess|I think|I believe|I might|I may|I could|I feel like|let's say|say)\b"
    r"|\b(?:might|could have|would have|used to|wonder|wondering|hypothetically|someday|one day)\b",
    re.IGNORECASE,
)
_CONTRACTIONS: Final = (
    (re.compile(r"\bI'm\b", re.IGNORECASE), "I am"),
    (re.compile(r"\bI've\b", re.IGNORECASE), "I have"),
    (re.compile(r"\bI'd\b", re.IGNORECASE), "I would"),
    (re.compile(r"\bI'll\b", re.IGNORECASE), "I will"),
    (re.compile(r"\bi\b"), "I"),
)
_CLAUSE_SPLIT: Final = re.compile(r",?\s+(?:but|and|while|whereas)\s+(?=I\b|my\b)|,\s+(?=I\s)")

# --- guidelines ------------------------------------------------------------------------------
_G_WANT_YOU: Final = re.compile(
    r"^I\s+(?:would like|want|need|expect|would prefer|prefer)\s+(?:you|the assistant)\s+to\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_G_ALWAYS_NEVER: Final = re.compile(r"^(?:please\s+)?(?P<rest>(?:always|never)\s+(?!mind\b)\w.+)$", re.IGNORECASE)
_G_PLEASE_FIRM: Final = re.compile(
    r"^please\s+(?P<rest>(?:do not|don't|stop|avoid|keep|make sure|remember|call me|address me|refer to me)\b.+)$",
    re.IGNORECASE,
)
_G_PLEASE_MANNER: Final = re.compile(
    r"^please\s+(?P<rest>(?:use|reply|respond|answer|write|format|include|add|check|double-check|"
    r"give|show|list|put|send|sign)\b.+\b(?:in|with|using|as|without|only|every|each|whenever|when|by default)\b.+)$",
    re.IGNORECASE,
)
_G_MARKER: Final = re.compile(
    r"^(?P<rest>(?:next time|from now on|going forward|in the future|in future|for future reference|"
    r"whenever|every time|each time)\b.+)$",
    re.IGNORECASE,
)
_G_DONT: Final = re.compile(
    r"^(?:please\s+)?(?P<rest>(?:do not|don't)\s+(?!worry|mind|bother|be sorry|be silly|know|get me wrong|"
    r"forget it|panic|rush)\w.+)$",
    re.IGNORECASE,
)
_G_IMPERATIVE: Final = re.compile(
    r"^(?P<rest>(?:make sure|remember|be sure)\s+(?:to|that you)\s+.+|stop\s+\w+ing\b.+|avoid\s+\w+.+)$", re.IGNORECASE
)

# --- preferences -------------------------------------------------------------------------------
_PREF_VERBS: Final = (
    r"prefer(?:red)?|like[ds]?|love[ds]?|hate[ds]?|enjoy(?:ed)?|adore[d]?|dislike[d]?|detest(?:ed)?|"
    r"despise[d]?|can't stand|cannot stand|can not stand|can't bear|would rather|would prefer|"
    r"am (?:not )?(?:a |really )?(?:big |huge |massive )?fan of|am (?:not )?(?:really )?into"
)
_P_VERB: Final = re.compile(
    rf"^I\s+{_ADVS}(?:(?:do not|don't|did not|have always|have never|have)\s+{_ADVS})?"
    rf"(?P<verb>{_PREF_VERBS})\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
_P_FAVOURITE: Final = re.compile(
    r"^my\s+(?P<x>(?:all-time\s+)?(?:favou?rite|preferred|go-to)\s+[\w' -]+?)\s+(?:is|are)\s+(?P<obj>.+)$", re.IGNORECASE
)
_DEICTIC_OBJECT: Final = re.compile(
    r"^(?:it|this|that|them|these|those|you|your|yours|him|her|what|how|when|so|the idea|to think|to say|"
    r"to know|to ask|to help|to see|to hear|working with you|talking)\b",
    re.IGNORECASE,
)

# --- facts -------------------------------------------------------------------------------------
_DEMONYM: Final = re.compile(
    r"^(?:[A-Z][a-z]+(?:ian|ish|ese|ean)|American|Italian|German|French|Dutch|Greek|Thai|Swiss|Irish|"
    r"Scottish|Welsh|Canadian|Mexican|Brazilian|Chinese|Japanese|Korean|Indian|Israeli|Iraqi|Pakistani|"
    r"Catholic|Jewish|Muslim|Christian|Buddhist|Hindu|English|Spanish|British|Polish|Czech|Austrian)$"
)
_F_NAME: Final = re.compile(
    r"^(?i:my name is|my name's|I am called|call me|I go by|people call me|everyone calls me)\s+"
    r"(?P<name>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s*(?:[.!,].*)?$"
)
_F_I_AM_NAME: Final = re.compile(r"^I am\s+(?P<name>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)\s*(?:[.!]|,.*)?$")
_F_I_AM: Final = re.compile(r"^I am\s+(?P<obj>.+)$", re.IGNORECASE)
_TRANSIENT: Final = frozenset(
    ["fine", "good", "great", "ok", "okay", "well", "tired", "sorry", "sure", "back", "here", "done", "ready", "glad", "happy", "excited", "busy", "confused", "curious", "bored", "hungry", "thirsty", "lost", "stuck", "afraid", "thinking", "wondering", "trying", "going", "asking", "getting", "having", "feeling", "about", "kidding", "joking", "doing", "on", "late", "early", "sick", "cold", "hot", "away", "off", "out", "home", "free", "available", "listening", "waiting", "looking", "planning", "considering", "interested", "new", "unsure", "worried", "annoyed", "frustrated", "fed", "grateful", "thankful", "impressed", "surprised", "amazed", "not", "just", "so", "very", "really", "pretty", "quite", "still", "all", "almost", "nearly", "totally"]
)
_HEDGE_PREFIX: Final = re.compile(r"^(?:(?:kind of|sort of|a bit|a little|so|very|really|pretty|quite|just)\s+)+", re.IGNORECASE)
_TRANSIENT_TIME: Final = re.compile(
    r"\b(?:today|tonight|this morning|this afternoon|this evening|right now|at the moment|yesterday|tomorrow)\b",
    re.IGNORECASE,
)
_F_VERB: Final = re.compile(
    rf"^I\s+{_ADVS}(?P<verb>work(?:ed)?\s+(?:on|at|as|for|in|with|from|remotely|part-time|full-time|nights)|live\s+(?:in|near|on|at|with)|"
    r"have lived in|moved to|grew up in|was born in|was born on|study|studied|speak|use|own|drive|teach|"
    r"manage|have\s+(?:a|an|two|three|four|five|six|seven|eight|nine|ten|\d+|several|many)|"
    r"commute|volunteer|practi[cs]e|attend|collect|maintain|lead|run|do not eat|don't eat|do not drink|"
    r"don't drink|never eat|never drink|eat|follow|belong to|support|play|am based in|am married|"
    r"have been (?:a|an|\w+ing)|graduated from|report to|own|keep)\b(?P<obj>.*)$",
    re.IGNORECASE,
)
_NOT_A_FACT_OBJECT: Final = re.compile(
    r"^\s*(?:a question|a problem|an idea|a meeting|a doubt|no idea|a minute|a moment|a second|time|"
    r"a quick|an issue with this|it|this|that|them|to\b|a look|a go|fun|a good|a great|a nice|lunch|dinner|"
    r"breakfast|the same)\b",
    re.IGNORECASE,
)
_HAVE_TRANSIENT: Final = re.compile(
    r"^I\s+have\s+(?:a|an|one|two)\s+(?:quick\s+|small\s+|few\s+)?(?:question|problem|idea|meeting|doubt|minute|"
    r"moment|second|issue|look|go|feeling|suggestion|request|favou?r|thought|call|appointment)s?\b",
    re.IGNORECASE,
)
_F_MY: Final = re.compile(
    r"^(?P<my>my|our)\s+(?P<x>[\w' -]{1,60}?)\s+(?P<cop>is|are|was|were|has|have)\s+(?P<y>.+)$", re.IGNORECASE
)
_MY_EXCLUDED: Final = frozenset(
    ["question", "point", "guess", "bad", "pleasure", "apologies", "apology", "answer", "reply", "turn", "thought", "thoughts", "concern", "idea", "mind", "head", "god", "goodness", "gosh", "honest", "view", "opinion", "hunch", "feeling", "response", "request", "bet"]
)
_F_THE: Final = re.compile(
    r"^(?P<the>the|our)\s+(?P<x>[\w' -]{1,60}?)\s+(?P<cop>is|are)\s+(?P<y>.+)$", re.IGNORECASE
)
_STATUS_NOUNS: Final = frozenset(
    ["failing", "broken", "current", "main", "blocking", "deadline", "goal", "problem", "issue", "bug", "error", "budget", "target", "plan", "project", "stack", "bottleneck", "priority", "blocker", "database", "language", "framework", "release", "migration", "step", "pipeline", "job", "service", "workflow", "repo", "repository", "team", "company"]
)

# --- importance --------------------------------------------------------------------------------
_STRONG: Final = re.compile(
    r"\b(?:love|loves|hate|hates|can't stand|cannot stand|always|never|really|absolutely|strongly|"
    r"definitely|must|important|critical|allergic|allergy|deadline|medical|diabetic|vegan|vegetarian|"
    r"name is|under no circumstances)\b",
    re.IGNORECASE,
)
_WEAK: Final = re.compile(
    r"\b(?:kind of|sort of|a bit|a little|somewhat|sometimes|slightly|maybe|occasionally|not that)\b", re.IGNORECASE
)

_MAX_PER_MESSAGE: Final = 5
MAX_PER_MESSAGE: Final = 6
"""Memories of one message at most: the patterns' (at most five) and the statements'."""
MAX_PER_PASS: Final = 60
"""Memories of one extraction pass at most (a LoCoMo session of about twenty turns yields about eleven)."""
_MAX_ENTITIES: Final = 8
_CAPITALISED_SPAN: Final = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_ENTITY_SKIP: Final = FUNCTION_WORDS | NEGATIONS | frozenset(
    ["user", "the", "i", "please", "always", "never", "next", "time", "from", "now", "on", "don't", "prefer", "prefers", "like", "likes", "love", "loves", "hate", "hates", "enjoy", "enjoys", "would", "rather", "especially", "lot", "lots", "thing", "things", "stuff", "way", "much", "more", "one"]
)


@dataclass(frozen=True, slots=True)
class _Hit:
    record_type: RecordType
    text: str
    obj: str


def _strip_fillers(sentence: str) -> str:
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _FILLER.sub("", sentence).strip()
    return sentence


def _expand(sentence: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        sentence = pattern.sub(replacement, sentence)
    return sentence


def _finish(text: str) -> str:
    text = text.strip().rstrip(".!;:, ").strip()
    text = re.sub(r"\s*,?\s*please$", "", text, flags=re.IGNORECASE).strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + "."


_I_VERB: Final = re.compile(rf"\bI\s+(?P<adv>{_ADVS})(?P<verb>do not|am not|[\w']+)")


def _i_to_user(match: re.Match[str]) -> str:
    verb = match.group("verb")
    if verb.lower() == "do not":
        verb = "does not"
    elif verb.lower() == "am not":
        verb = "is not"
    else:
        verb = third_person(verb)
    return f"the user {match.group('adv')}{verb}"


def _third_person_text(text: str, *, possessive: str) -> str:
    """First person → "the user" (verb agreement for the verb after ``I``), ``my`` → ``possessive``."""
    text = _I_VERB.sub(_i_to_user, text)
    text = re.sub(r"\bI\b", "the user", text)
    text = re.sub(r"\b(?:my|our)\b", possessive, text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:mine|ours)\b", "the user's", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", "the user", text)
    return re.sub(r"^the user\b", "The user", text)


def _guideline(sentence: str) -> _Hit | None:
    for pattern in (_G_WANT_YOU, _G_PLEASE_FIRM, _G_PLEASE_MANNER, _G_MARKER, _G_DONT, _G_ALWAYS_NEVER, _G_IMPERATIVE):
        match = pattern.match(sentence)
        if match:
            rest = match.group("rest")
            text = _finish(_third_person_text(rest, possessive="the user's"))
            return _Hit(RecordType.GUIDELINE, text, rest) if text else None
    return None


def _preference(sentence: str) -> _Hit | None:
    match = _P_FAVOURITE.match(sentence)
    if match:
        text = "The user's " + _third_person_text(sentence[match.start("x"):], possessive="their")
        return _Hit(RecordType.PREFERENCE, _finish(text), match.group("obj"))
    match = _P_VERB.match(sentence)
    if match:
        obj = match.group("obj")
        if _DEICTIC_OBJECT.match(obj) or not any(t not in FUNCTION_WORDS for t in contraction_tokens(obj)):
            return None
        return _Hit(RecordType.PREFERENCE, _finish(_third_person_text(sentence, possessive="their")), obj)
    return None


def _fact(sentence: str) -> _Hit | None:
    match = _F_NAME.match(sentence)
    if match:
        return _Hit(RecordType.FACT, f"The user's name is {match.group('name')}.", match.group("name"))
    match = _F_I_AM_NAME.match(sentence)
    if match and not _DEMONYM.match(match.group("name").split()[0]):
        return _Hit(RecordType.FACT, f"The user's name is {match.group('name')}.", match.group("name"))
    match = _F_VERB.match(sentence)
    if match and not _HAVE_TRANSIENT.match(sentence):
        obj = match.group("obj")
        if _NOT_A_FACT_OBJECT.match(obj) or _TRANSIENT_TIME.search(sentence):
            return None
        if not obj.strip() and not match.group("verb").lower().startswith("am married"):
            return None
        return _Hit(RecordType.FACT, _finish(_third_person_text(sentence, possessive="their")), obj)
    match = _F_I_AM.match(sentence)
    if match:
        obj = match.group("obj")
        words = contraction_tokens(_HEDGE_PREFIX.sub("", obj))
        if not words or _TRANSIENT_TIME.search(sentence):
            return None
        head = words[1] if words[0] == "not" and len(words) > 1 else words[0]
        if head in _TRANSIENT or words[0] in _TRANSIENT - {"not"}:
            return None
        return _Hit(RecordType.FACT, _finish(_third_person_text(sentence, possessive="their")), obj)
    match = _F_MY.match(sentence)
    if match:
        subject_words = contraction_tokens(match.group("x"))
        if not subject_words or subject_words[-1] in _MY_EXCLUDED or subject_words[0] in _MY_EXCLUDED:
            return None
        rest = sentence[match.start("x"):]
        text = "The user's " + _third_person_text(rest, possessive="their")
        return _Hit(RecordType.FACT, _finish(text), match.group("y"))
    match = _F_THE.match(sentence)
    if match and set(contraction_tokens(match.group("x"))) & _STATUS_NOUNS:
        if match.group("the").lower() == "our":
            text = "The user's " + _third_person_text(sentence[match.start("x"):], possessive="their")
        else:
            text = _third_person_text(sentence, possessive="the user's")
        return _Hit(RecordType.FACT, _finish(text), match.group("y"))
    return None


def _entities(obj: str) -> tuple[str, ...]:
    found: list[str] = []
    seen: set[str] = set()

    def add(entity: str) -> None:
        key = entity.lower()
        if key not in seen and key not in _ENTITY_SKIP and len(found) < _MAX_ENTITIES:
            seen.add(key)
            found.append(entity)

    for span in _CAPITALISED_SPAN.findall(obj):
        words = [w for w in span.split() if w.lower() not in _ENTITY_SKIP]
        if words:
            add(" ".join(words))
    for token in contraction_tokens(obj):
        content = len(token) >= 3 and token not in _ENTITY_SKIP and not token.isdigit()
        if content and not any(token in e.lower().split() for e in found):
            add(token)
    return tuple(found)


def _importance(hit: _Hit, sentence: str) -> int:
    score = 4 if hit.record_type is RecordType.GUIDELINE else 3
    if hit.text.startswith("The user's name is"):
        score = 4
    if _STRONG.search(sentence):
        score += 1
    if _WEAK.search(sentence):
        score -= 1
    return max(1, min(5, score))


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip()]


_Found = tuple[RecordType, str, tuple[str, ...], int]


def _named(text: str, name: str | None) -> str:
    """A pattern's "The user ..." wording about ``name`` instead, when the message has one."""
    if not name:
        return text
    owner = possessive(name)
    text = re.sub(r"\b[Tt]he user's\b", owner, text)
    return re.sub(r"\b[Tt]he user\b", name, text)


def pattern_hits(text: str, name: str | None) -> list[tuple[int, _Found]]:
    """The pattern families' memories of one message with the index of the sentence each came
    from (:func:`~._text.sentences`' order), at most five."""
    found: list[tuple[int, _Found]] = []
    seen: set[str] = set()
    for index, raw_sentence in enumerate(sentences(normalise_apostrophes(text))):
        if raw_sentence.rstrip().endswith("?") or _HYPOTHETICAL.search(_expand(_strip_fillers(raw_sentence))):
            continue  # a question, or a conditional/hedged sentence: none of its clauses is asserted
        for raw in _clauses(raw_sentence):
            sentence = _expand(_strip_fillers(raw))
            if not sentence or (_QUESTION_START.match(sentence) and not re.match(r"^do not\b", sentence, re.IGNORECASE)):
                continue
            if _HYPOTHETICAL.search(sentence):
                continue
            hit = _guideline(sentence) or _preference(sentence) or _fact(sentence)
            if hit is None or not hit.text:
                continue
            key = " ".join(contraction_tokens(hit.text))
            if key in seen:
                continue
            seen.add(key)
            text_about = _named(hit.text, name)
            found.append((index, (hit.record_type, text_about, _entities(hit.obj), _importance(hit, sentence))))
            if len(found) >= _MAX_PER_MESSAGE:
                return found
    return found


def unasserted_sentences(text: str) -> set[int]:
    """The indices (:func:`~._text.sentences`' order) of the sentences of ``text`` that assert
    nothing: conditional or hedged ("if …", "maybe …", "I might …", "used to …")."""
    return {
        index
        for index, sentence in enumerate(sentences(normalise_apostrophes(text)))
        if _HYPOTHETICAL.search(_expand(_strip_fillers(sentence)))
    }


def extract_from_text(text: str, name: str | None = None, *, statements: bool = True) -> list[_Found]:
    """Every (type, text, entities, importance) found in one user message, in order: the pattern
    families' first (at most five), then, with ``statements``, the informative first-person
    statements of the other sentences (:func:`~.statements.statements`, record type
    ``memory``), at most :data:`MAX_PER_MESSAGE` in all. About ``name`` (the message's
    speaker) when given, else "The user". Nothing when the text does not look English (the rules
    are English only). Exposed for benchmarks and tests; :class:`HeuristicExtractor` wraps it."""
    if not looks_english(text):
        return []
    hits = pattern_hits(text, name)
    found = [hit for _, hit in hits]
    if not statements:
        return found
    skip = {index for index, _ in hits} | unasserted_sentences(text)
    for sentence_text in statement_sentences(text, name, skip=skip, english=True):
        if len(found) >= MAX_PER_MESSAGE:
            break
        entities = _entities(sentence_text)
        importance = 3 - (1 if _WEAK.search(sentence_text) else 0) + (1 if _STRONG.search(sentence_text) else 0)
        found.append((RecordType.MEMORY, sentence_text, entities, max(1, min(5, importance))))
    return found


class HeuristicExtractor(Extractor):
    """Implements the ``Extractor`` port with English regular-expression patterns, offline.

    It reads the *user* turns of ``request.target_messages`` (roles ``user``/``human``; other
    turns are context, never a source of memories), splits them into sentences and clauses, and
    keeps a clause when one of these pattern families matches it:

    * **guideline** — "please always/never …", "next time …", "from now on …", "don't …",
      "I want you to …", "make sure to …";
    * **preference** — "I prefer/like/love/hate/enjoy/can't stand/now prefer/would rather …",
      "I'm a fan of …", "my favourite X is Y";
    * **fact** — "my name is …", "I'm Maya", "I'm a …", "I work on/at/as …", "I live in …",
      "I have a …", "my X is Y", "the failing step … is …" (a status noun such as *failing*,
      *deadline* or *goal* must appear before the verb).

    Then, from the sentences no pattern matched, **statements** (record type ``memory``,
    :mod:`~palimpsest.adapters.heuristic.statements`): informative first-person sentences ("I
    went to a support group yesterday", "We went camping with the kids") that are no question,
    greeting, thanks or short reaction, have three content words or more, and pass a small
    learnt selector (ARCHITECTURE.md D47).

    Questions, hedged or hypothetical clauses ("if …", "maybe …", "I might …", "used to …"),
    transient states ("I'm tired today") and deictic objects ("I love it") are skipped; third
    parties ("my sister loves jazz") match no first-person pattern. First person is rewritten
    into a self-contained sentence about the message's speaker (its ``name``, stored as
    ``metadata["speaker"]``) with verb agreement ("I went to a support group." by Caroline →
    "Caroline went to a support group."; "my" → "Caroline's"), or about "The user" when the
    message has no speaker ("I now prefer sourdough pizza." → "The user now prefers sourdough
    pizza."). Entities are capitalised spans and content words of the matched object or
    statement (at most 8); importance is 1–5 from simple cues (strong words raise it, hedges
    lower it). At most 6 memories per message (5 from the patterns) and 60 per call. With
    ``link_candidates``, links are proposed by the same rules as
    :class:`~palimpsest.adapters.heuristic.RuleLinkResolver`, to those candidates only.

    The rules are English only: a message that does not look English (a cheap script and
    function-word test, :func:`~palimpsest.adapters.heuristic.statements.looks_english`) yields
    nothing rather than a garbled rewrite. Because it only matches patterns, it cannot follow
    instructions found in the text — an instruction such as "ignore previous rules" is at most
    stored as a guideline-shaped string, never executed. It ignores ``custom_instructions`` for
    the same reason, and ``history_messages``, ``summary``, ``past_memories`` and
    ``token_limit`` too (each sentence must stand on its own). Measured against LoCoMo's gold
    observations by ``python -m benchmarks.extraction`` (BENCHMARKS.md).
    """

    reads_past_memories = False
    """It never reads ``past_memories``: a pass does not search for them (the ``Extractor`` port)."""

    def __init__(self, *, roles: frozenset[str] = USER_ROLES) -> None:
        self._roles = frozenset(r.lower() for r in roles)

    def extract(self, request: ExtractionRequest) -> list[ExtractedMemory]:
        memories: list[ExtractedMemory] = []
        seen: set[str] = set()
        for message in request.target_messages:
            if not self._is_source(message):
                continue
            for record_type, text, entities, importance in extract_from_text(message.content, message.speaker):
                key = " ".join(contraction_tokens(text))
                if key in seen:
                    continue
                seen.add(key)
                links = self._links(record_type, text, request)
                memories.append(
                    ExtractedMemory(
                        record_type=record_type,
                        text=text,
                        entities=entities,
                        importance=importance,
                        timestamp=message.timestamp,
                        links=links,
                        source_message_ids=(message.id,),
                    )
                )
                if len(memories) >= MAX_PER_PASS:
                    return memories
        return memories

    def _is_source(self, message: Message) -> bool:
        return message.role.lower() in self._roles

    @staticmethod
    def _links(record_type: RecordType, text: str, request: ExtractionRequest) -> tuple[LinkProposal, ...]:
        proposals: list[LinkProposal] = []
        for candidate in request.link_candidates:
            link_type = classify_link(text, record_type, candidate.content, candidate.record_type)
            if link_type is not None:
                proposals.append(LinkProposal(candidate.id, link_type))
        return tuple(proposals)

    def __repr__(self) -> str:
        return f"HeuristicExtractor(roles={sorted(self._roles)})"
