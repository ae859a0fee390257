"""Loads the development half of LoCoMo (``locomo10.json``) as typed objects.

Only the five development conversations (:data:`DEV_CONVERSATIONS`) are meant to be used here;
the other five are held out for an independent evaluation. The loader selects entries by
``sample_id`` and skips every other entry without reading any of its fields.

Evidence ids in the file need repair (:func:`repair_evidence`): several ids can share one
string (``"D8:6; D9:17"``), some have a stray colon (``D:11:26``) or a zero-padded turn
(``D30:05``), and some name no turn of the conversation. Questions of categories 1-4 are kept
when at least one evidence id survives; category 5 (adversarial, no evidence) is dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "DEV_CONVERSATIONS",
    "DOWNLOAD_HINT",
    "Conversation",
    "Observation",
    "Question",
    "Turn",
    "load",
    "parse_session_date",
    "repair_evidence",
]

DEV_CONVERSATIONS: tuple[str, ...] = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
"""The development half. The other five conversations are held out: never loaded here."""

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The categories kept (5, adversarial, has no evidence). Names as the LoCoMo paper's
evaluation code maps the numbers (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)."""

DOWNLOAD_HINT = (
    "download eval/locomo10.json from https://github.com/BAI-LAB/MemoryOS "
    "(CC BY-NC 4.0; keep it out of version control, e.g. in benchmarks/locomo/data/)"
)

_SESSION_KEY = re.compile(r"session_(\d+)")
_OBSERVATION_KEY = re.compile(r"session_(\d+)_observation")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_STRAY_COLON = re.compile(r"D:(\d+):(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn: its id (``D<session>:<turn>``), speaker, text and session."""

    dia_id: str
    speaker: str
    text: str
    session: int
    session_date: datetime
    caption: str | None = None
    """The ``blip_caption`` of a shared image, when the turn has one (not part of ``text``)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A question of category 1-4 with its repaired evidence (at least one turn id)."""

    sample_id: str
    index: int
    """Position in the conversation's ``qa`` list (before filtering)."""
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        return CATEGORIES[self.category]


@dataclass(frozen=True, slots=True)
class Observation:
    """One gold observation of a session: a fact about ``speaker`` (as the file writes the
    name), with the turns it was taken from (repaired like a question's evidence; may be empty)."""

    session: int
    speaker: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_questions: int = 0
    """Questions of categories 1-4 dropped because none of their evidence ids survived repair."""
    dropped_evidence: int = 0
    """Evidence ids (after splitting) that name no turn of the conversation."""
    observations: tuple[Observation, ...] = ()
    """The sessions' gold observations (``observation`` of the file), session by session."""

    @property
    def sessions(self) -> int:
        return len({t.session for t in self.turns})


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware datetime (no zone in the data: read as UTC)."""
    cleaned = " ".join(text.replace(",", " ").split())
    return datetime.strptime(cleaned, "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)


def _normalise_id(raw: str) -> str:
    """``D:11:26`` -> ``D11:26``; ``D30:05`` -> ``D30:5``; anything else unchanged."""
    stray = _STRAY_COLON.fullmatch(raw)
    if stray:
        raw = f"D{stray.group(1)}:{stray.group(2)}"
    match = _DIA_ID.fullmatch(raw)
    if match:
        return f"D{int(match.group(1))}:{int(match.group(2))}"
    return raw


def repair_evidence(evidence: Iterable[str], known: frozenset[str] | set[str]) -> tuple[tuple[str, ...], int]:
    """The evidence ids of one question, repaired, in order and without repeats; and how many
    ids (after splitting) were dropped because ``known`` (the conversation's turn ids) lacks them.

    Each string is split on ``;``, ``,`` and white space, and each part normalised
    (:func:`_normalise_id`)."""
    kept: list[str] = []
    dropped = 0
    for entry in evidence:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            if not part:
                continue
            dia_id = _normalise_id(part)
            if dia_id not in known:
                dropped += 1
            elif dia_id not in kept:
                kept.append(dia_id)
    return tuple(kept), dropped


def _turns(conversation: dict[str, Any]) -> list[Turn]:
    sessions = sorted(
        (int(match.group(1)), key)
        for key in conversation
        if (match := _SESSION_KEY.fullmatch(key)) and isinstance(conversation[key], list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        date = parse_session_date(conversation[f"{key}_date_time"])
        for raw in conversation[key]:
            turns.append(
                Turn(
                    dia_id=_normalise_id(str(raw["dia_id"])),
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    session=number,
                    session_date=date,
                    caption=raw.get("blip_caption"),
                )
            )
    return turns


def _observations(raw: Any, known: frozenset[str]) -> list[Observation]:
    """``{"session_<n>_observation": {speaker: [[text, evidence], ...]}}`` in session order;
    evidence is one id string or a list of them."""
    if not isinstance(raw, dict):
        return []
    sessions = sorted(
        (int(match.group(1)), key) for key in raw if (match := _OBSERVATION_KEY.fullmatch(key))
    )
    observations: list[Observation] = []
    for number, key in sessions:
        for speaker, facts in (raw[key] or {}).items():
            for fact in facts:
                text, evidence = str(fact[0]), fact[1] if len(fact) > 1 else ()
                ids, _ = repair_evidence([evidence] if isinstance(evidence, str) else evidence, known)
                observations.append(Observation(number, str(speaker), text, ids))
    return observations


def _conversation(entry: dict[str, Any]) -> Conversation:
    sample_id = str(entry["sample_id"])
    body = entry["conversation"]
    turns = _turns(body)
    known = frozenset(t.dia_id for t in turns)
    questions: list[Question] = []
    dropped_questions = dropped_evidence = 0
    for index, qa in enumerate(entry["qa"]):
        category = int(qa["category"])
        if category not in CATEGORIES:
            continue
        evidence, dropped = repair_evidence(qa.get("evidence") or (), known)
        dropped_evidence += dropped
        if not evidence:
            dropped_questions += 1
            continue
        questions.append(
            Question(sample_id, index, str(qa["question"]), str(qa.get("answer", "")), category, evidence)
        )
    return Conversation(
        sample_id,
        str(body["speaker_a"]),
        str(body["speaker_b"]),
        tuple(turns),
        tuple(questions),
        dropped_questions,
        dropped_evidence,
        tuple(_observations(entry.get("observation"), known)),
    )


def load(path: str | Path, sample_ids: Sequence[str] = DEV_CONVERSATIONS) -> list[Conversation]:
    """The conversations ``sample_ids`` (the development half by default) of ``locomo10.json``,
    in the order given. Every other entry is skipped on its ``sample_id`` alone.

    Raises ``FileNotFoundError`` (saying where to get the file) when ``path`` does not exist,
    and ``KeyError`` when a requested conversation is not in the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo data not found at {path}: {DOWNLOAD_HINT}")
    with path.open(encoding="utf-8") as handle:
        entries = json.load(handle)
    wanted = set(sample_ids)
    selected = {}
    for entry in entries:
        sample_id = entry.get("sample_id")  # the only field read of an entry not asked for
        if sample_id in wanted:
            selected[sample_id] = entry
    missing = [s for s in sample_ids if s not in selected]
    if missing:
        raise KeyError(f"conversations not in {path}: {', '.join(missing)}")
    return [_conversation(selected[s]) for s in sample_ids]
