"""Adapters layer (heuristic): ``RuleLinkResolver``, a conservative rule-based ``LinkResolver`` port."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from palimpsest.application.ports import LinkProposal, LinkResolution, LinkResolver
from palimpsest.domain.model import MemoryRecord, RecordType
from palimpsest.domain.text import NEGATIONS, contraction_tokens, normalise_apostrophes

from ._text import FUNCTION_WORDS, stem

__all__ = ["RuleLinkResolver", "classify_link"]

_GENERIC: Final = frozenset(
    ["user", "now", "right", "currently", "anymore", "instead", "lately", "recently", "these", "days", "style", "kind", "type", "sort", "thing", "things", "especially", "particularly", "generally", "usually", "really", "much", "lot", "lots", "more", "most", "very", "quite", "rather", "also", "still", "just", "always"]
)
"""Words that neither make a claim different nor make it more specific."""

_PREFERENCE_STEMS: Final = frozenset(
    {"prefer", "like", "love", "enjoy", "favourite", "hate", "dislike", "stand", "rather", "fan", "adore",
     "detest", "despise", "into", "go-to"}
)
_POLARITY_FLIP: Final = frozenset({"hate", "dislike", "stand", "detest", "despise"})
_CHANGE_MARKERS: Final = re.compile(
    r"\b(?:now|no longer|anymore|any more|instead|switched|changed|these days|nowadays|lately|moved|"
    r"has since|not \w+ anymore)\b",
    re.IGNORECASE,
)
_SINGLE_VALUED_PREDICATES: Final = (
    ("live", re.compile(r"\b(?:lives? (?:in|near)|moved to|is based in|relocated to)\s+(?P<obj>.+)$", re.IGNORECASE)),
    ("work", re.compile(r"\b(?:works? (?:at|for)|is employed (?:at|by)|joined)\s+(?P<obj>.+)$", re.IGNORECASE)),
    ("job", re.compile(r"\b(?:works? as|is employed as)\s+(?P<obj>.+)$", re.IGNORECASE)),
)
_COPULA: Final = re.compile(r"^(?P<subject>.+?)\s+(?:is|are)\s+(?:now\s+)?(?P<obj>.+)$", re.IGNORECASE)
_SINGLE_VALUED_SUBJECT: Final = frozenset(
    {"name", "favourite", "prefer", "age", "email", "birthday", "phone", "address", "deadline", "timezone",
     "step", "failing", "goal", "budget", "manager", "boss", "job", "role", "title", "current", "main"}
)


def _clean(text: str) -> str:
    return " ".join(contraction_tokens(text))


@dataclass(frozen=True, slots=True)
class _Claim:
    text: str
    sequence: tuple[str, ...]
    """Content stems in order (generic words and negations left out)."""
    words: frozenset[str]
    """Content stems minus generic words and negations."""
    negative: bool
    preference: bool
    subject: tuple[str, ...]
    copula_subject: tuple[str, ...] | None
    copula_object: frozenset[str] | None
    single_valued: tuple[str, frozenset[str]] | None


def _stems(text: str) -> list[str]:
    return [stem(t) for t in contraction_tokens(text) if t not in FUNCTION_WORDS and t not in NEGATIONS]


def _claim(text: str) -> _Claim:
    text = normalise_apostrophes(text).strip()
    raw = contraction_tokens(text)
    stems = [s for s in _stems(text) if s not in _GENERIC]
    words = frozenset(stems)
    preference = bool(words & _PREFERENCE_STEMS)
    negations = sum(1 for t in raw if t in NEGATIONS)
    negative = (negations % 2 == 1) ^ bool(words & _POLARITY_FLIP)
    subject = ("user",) if re.match(r"^the user\b", text, re.IGNORECASE) else tuple(stems[:1])
    copula_subject = copula_object = None
    match = _COPULA.match(text.rstrip("."))
    if match:
        subject_stems = tuple(s for s in _stems(match.group("subject")) if s not in _GENERIC)
        copula_subject = subject_stems
        copula_object = frozenset(s for s in _stems(match.group("obj")) if s not in _GENERIC)
    single_valued = None
    for key, pattern in _SINGLE_VALUED_PREDICATES:
        found = pattern.search(text.rstrip("."))
        if found:
            single_valued = (key, frozenset(s for s in _stems(found.group("obj")) if s not in _GENERIC))
            break
    return _Claim(text, tuple(stems), words, negative, preference, subject, copula_subject, copula_object, single_valued)


def _topic(words: frozenset[str]) -> frozenset[str]:
    return words - _PREFERENCE_STEMS - {"user", "be", "have"}


def classify_link(
    new_text: str, new_type: RecordType | str, old_text: str, old_type: RecordType | str
) -> str | None:
    """The lifecycle link a new memory should have to an old one (``duplicates``, ``refines``,
    ``supersedes``), or ``None`` — the rules of :class:`RuleLinkResolver`."""
    if _clean(new_text) == _clean(old_text):
        return "duplicates"
    new, old = _claim(new_text), _claim(old_text)
    if not new.words or not old.words:
        return None
    if new.sequence == old.sequence and new.negative == old.negative and RecordType(new_type) is RecordType(old_type):
        return "duplicates"
    if RecordType(new_type) is not RecordType(old_type) or new.subject != old.subject:
        return None
    if new.negative == old.negative and old.words < new.words and _topic(new.words - old.words):
        return "refines"
    return "supersedes" if _supersedes(new, old) else None


def _supersedes(new: _Claim, old: _Claim) -> bool:
    changed_marker = bool(_CHANGE_MARKERS.search(new.text))
    # Same single-valued predicate (lives in, works at, works as) with another object.
    if new.single_valued and old.single_valued and new.single_valued[0] == old.single_valued[0]:
        return new.single_valued[1] != old.single_valued[1] and not new.single_valued[1] <= old.single_valued[1]
    # "X is A" vs "X is B" with the same specific subject.
    if (
        new.copula_subject
        and new.copula_subject == old.copula_subject
        and new.copula_subject != ("user",)
        and new.copula_object != old.copula_object
        and (set(new.copula_subject) & _SINGLE_VALUED_SUBJECT or changed_marker)
    ):
        return True
    # Two preferences about the same topic with a changed object or polarity.
    if new.preference and old.preference:
        new_topic, old_topic = _topic(new.words), _topic(old.words)
        shared = new_topic & old_topic
        if not shared:
            return False
        if new.negative != old.negative and old_topic <= new_topic:
            return True
        if new_topic == old_topic and new.sequence != old.sequence and new.negative == old.negative:
            return changed_marker  # "now prefers spaces over tabs" vs "prefers tabs over spaces"
        changed_object = bool(new_topic - old_topic) and bool(old_topic - new_topic)
        single_valued = any(
            c.copula_subject is not None and set(c.copula_subject) & {"favourite", "prefer"} for c in (new, old)
        )
        return changed_object and (changed_marker or single_valued)
    # "The user is no longer X" / "The user is now Y" against "The user is X".
    return changed_marker and new.negative != old.negative and _topic(old.words) <= _topic(new.words)


class RuleLinkResolver(LinkResolver):
    """Implements the ``LinkResolver`` port with a few conservative English rules (no model).

    For each source memory and each of its candidates (new → candidate), the first rule that
    applies decides:

    1. **duplicates** — the same normalised text, or the same content words with the same
       polarity and record type;
    2. **refines** — same record type and subject, same polarity, and the new memory's content
       words strictly contain the old one's plus at least one specific word ("… sourdough,
       especially Neapolitan sourdough" refines "… prefers sourdough pizza");
    3. **supersedes** — same record type and subject, and a changed object: the same
       single-valued predicate (lives in, works at/as) or subject ("X is A" vs "X is B" for a
       specific X such as *name* or *the failing step*) with another value, or two preferences
       about a shared topic with different objects when the new one says it changed ("now",
       "no longer", "instead") or either is single-valued ("preferred pizza style is …"), or
       a flipped polarity on the same topic.

    Otherwise no link: precision is preferred to recall, so unrelated or merely similar
    memories stay unlinked. It never rewrites text (``updated_text`` is always ``None``) and
    ignores ``custom_instructions``; it cannot follow instructions found in memories because it
    only compares words.

    It is not a model (``uses_model`` is False): it links extracted memories, and
    ``add_memory`` asks it only when called with ``autonomous_linking=True``.
    """

    uses_model = False

    def resolve(
        self,
        sources: Sequence[MemoryRecord],
        candidates: Mapping[str, Sequence[MemoryRecord]],
        *,
        custom_instructions: str | None = None,
    ) -> list[LinkResolution]:
        resolutions: list[LinkResolution] = []
        for source in sources:
            links: list[LinkProposal] = []
            for candidate in candidates.get(source.id, ()):
                if candidate.id == source.id:
                    continue
                link_type = classify_link(source.content, source.record_type, candidate.content, candidate.record_type)
                if link_type is not None:
                    links.append(LinkProposal(candidate.id, link_type))
            resolutions.append(LinkResolution(source.id, tuple(links)))
        return resolutions

    def __repr__(self) -> str:
        return "RuleLinkResolver()"
