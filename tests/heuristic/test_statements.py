"""Tests of the heuristic adapters layer: statements about a turn's speaker (``statements.py``)
and the speaker's name in the extractor's memories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from palimpsest.adapters.heuristic import HeuristicExtractor
from palimpsest.adapters.heuristic._text import third_person
from palimpsest.adapters.heuristic.extractor import extract_from_text
from palimpsest.adapters.heuristic.statements import (
    FEATURES,
    SELECTOR_WEIGHTS,
    looks_english,
    possessive,
    rewrite_first_person,
    statements,
)
from palimpsest.application.ports import ExtractionRequest
from palimpsest.domain.model import Message, RecordType

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _texts(text: str, name: str | None) -> list[str]:
    return [found[1] for found in extract_from_text(text, name)]


@pytest.mark.parametrize(
    ("sentence", "name", "expected"),
    [
        ("I went to a support group yesterday", "Caroline", "Caroline went to a support group yesterday"),
        ("I'm keen on counseling", "Caroline", "Caroline is keen on counseling"),
        ("I've painted my lake sunrise", "Melanie", "Melanie has painted Melanie's lake sunrise"),
        ("I don't eat meat", "James", "James doesn't eat meat"),
        ("My kids love me", "James", "James' kids love James"),
        ("I wanna start a dance studio", "Jon", "Jon wants to start a dance studio"),
        ("I chose a new couch", "Gina", "Gina chose a new couch"),
        ("I need vegetarian dinners", None, "The user needs vegetarian dinners"),
        ("We went camping with our kids", "Melanie", "Melanie and others went camping with their kids"),
        ("We're moving to the US", "Jon", "Jon and others are moving to the US"),
        ("I am proud of myself", None, "The user is proud of themselves"),
    ],
)
def test_first_person_is_rewritten_about_the_speaker_with_verb_agreement(
    sentence: str, name: str | None, expected: str
) -> None:
    assert rewrite_first_person(sentence, name) == expected


def test_present_verbs_ending_in_ed_take_an_s_and_past_forms_do_not() -> None:
    assert [third_person(v) for v in ("need", "feed", "embed", "wanted", "moved")] == [
        "needs", "feeds", "embeds", "wanted", "moved"
    ]


def test_possessive_of_a_name() -> None:
    assert (possessive("Caroline"), possessive("James")) == ("Caroline's", "James'")


def test_a_speakers_informative_statements_are_kept_and_questions_greetings_and_reactions_are_not() -> None:
    turn = (
        "Hey Mel! Good to see you! How have you been? I went to a LGBTQ support group yesterday. "
        "Thanks, Melanie! That's so cool! I totally agree with you. Did you go camping with the kids?"
    )
    assert statements(turn, "Caroline") == ["Caroline went to a LGBTQ support group yesterday."]


def test_chit_chat_and_hedged_sentences_yield_no_statement() -> None:
    for text in ("I'm tired today.", "If I moved to Berlin, I would need a visa.", "Maybe I should try sushi."):
        assert _texts(text, "Maya") == []


def test_pattern_memories_name_the_speaker_and_unnamed_ones_keep_the_user() -> None:
    assert _texts("I prefer window seats. My name is Maya.", "Maya") == ["Maya prefers window seats.", "Maya's name is Maya."]
    assert _texts("I prefer window seats.", None) == ["The user prefers window seats."]


def test_the_extractor_names_each_message_by_its_own_speaker() -> None:
    messages = [
        Message(id="m1", thread_id="t", role="user", content="I adopted a puppy named Oscar last week.",
                seq=1, created_at=NOW, metadata={"speaker": "Audrey"}),
        Message(id="m2", thread_id="t", role="user", content="I adopted a kitten named Max last month.",
                seq=2, created_at=NOW),
    ]
    memories = HeuristicExtractor().extract(ExtractionRequest(target_messages=messages))
    assert [(m.record_type, m.text, m.source_message_ids) for m in memories] == [
        (RecordType.MEMORY, "Audrey adopted a puppy named Oscar last week.", ("m1",)),
        (RecordType.MEMORY, "The user adopted a kitten named Max last month.", ("m2",)),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Je suis allée à un groupe de soutien hier et c'était très fort.",
        "Ich bin gestern mit meiner Schwester nach Berlin gefahren, und es war toll.",
        "Io ho una sorella e i miei genitori vivono a Roma.",
        "Me gusta mucho la comida vegetariana de mi madre.",
        "Ik woon in Amsterdam en ik werk als leraar.",
        "私は昨日サポートグループに行きました。",
    ],
)
def test_text_that_is_not_english_is_gated_off_the_english_rules(text: str) -> None:
    assert not looks_english(text)
    assert _texts(text, "Camille") == [] and _texts(text, None) == []


@pytest.mark.parametrize(
    "text", ["I really like dark roast coffee.", "Next time, book me an aisle seat.", "My name is Maya.", "Painting relaxes me."]
)
def test_short_english_text_passes_the_gate(text: str) -> None:
    assert looks_english(text)


def test_the_selector_has_one_weight_per_feature() -> None:
    assert len(SELECTOR_WEIGHTS) == len(FEATURES)
