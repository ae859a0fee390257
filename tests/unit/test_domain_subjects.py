"""Whose fact a statement states, and whom a question asks about (domain/subjects.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from palimpsest.domain.subjects import (
    RELATION_WORDS,
    STATEMENTS_READ,
    asked_relations,
    names_in,
    third_party_of,
)


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("My sister lives in Oslo.", "sister"),
        ("my sister lives in oslo", "sister"),
        ("My wife's manager is Farid Haddad.", "wife"),
        ("Our neighbours bought a Volvo.", "neighbours"),
        ("Also, my brother loves Java. What should I read next?", "brother"),
        ("My mother's birthday is on May 23, so I need to buy her a present.", "mother"),
        ("Btw my friend wonders which company he should work at; Globex made him an offer.", "friend"),
        # about the speaker
        ("I live in Porto.", None),
        ("I'm a nurse.", None),
        ("We moved to Rome in May.", None),
        ("My manager is Bruno Costa.", None),  # a role in the speaker's life, not a relative
        ("My favourite sport is rowing.", None),
        ("My sister and I moved to Rome.", None),
        ("My sister lives in Oslo. I live in Porto.", None),  # any sentence about the speaker wins
        ("The user works at Globex.", None),  # extracted memories speak of "the user"
        # about no one in particular, or not recognised
        ("Can my friend come along?", None),  # a question states nothing
        ("It rained all day.", None),
        ("Anna lives in Oslo.", None),
        ("Mi hermana vive en Oslo.", None),
        ("", None),
        ("...", None),
    ],
)
def test_third_party_of(text: str, about: str | None) -> None:
    assert third_party_of(text) == about


@pytest.mark.parametrize(
    ("query", "relations"),
    [
        ("Where do I live?", frozenset()),
        ("Who is my boss?", frozenset()),
        ("What did my sister recommend to me?", frozenset({"sister"})),
        ("Which gifts did I buy for my mom and my dad?", frozenset({"mom", "dad"})),
        ("What is the capital of France?", None),
        ("Where does Anna live?", None),
    ],
)
def test_asked_relations(query: str, relations: frozenset[str] | None) -> None:
    assert asked_relations(query) == relations


@given(st.text(max_size=200))
def test_never_raises_and_answers_a_relation_word_or_none(text: str) -> None:
    about = third_party_of(text)
    assert about is None or about in RELATION_WORDS
    relations = asked_relations(text)
    assert relations is None or relations <= RELATION_WORDS


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("My wife and kids live in Oslo with me.", None),
        ("My kids, who are 5 and 7, live with me.", "kids"),  # judged by the first clause
        ("My dad drives a Volvo, but I drive a Fiat.", "dad"),  # the first clause is the dad's
        ("My dad drives a Volvo. I drive a Fiat.", None),
    ],
)
def test_a_sentence_is_judged_by_its_first_clause(text: str, about: str | None) -> None:
    assert third_party_of(text) == about


def test_only_the_opening_statements_are_read() -> None:
    assert STATEMENTS_READ == 3
    opening = "My sister lives in Oslo. My sister likes jazz. My sister has a cat. "
    assert third_party_of(opening + "I live in Porto.") == "sister"  # the fourth is not read
    assert third_party_of("My sister lives in Oslo. Why? I live in Porto.") is None  # questions do not count
    assert third_party_of("My sister " + "x" * 100_000) == "sister"


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("The user's wife's manager is Farid Haddad.", "wife"),
        ("The user's sister lives in Oslo.", "sister"),
        ("The user's manager is Bruno Costa.", None),
        ("The user's favourite sport is rowing.", None),
        ("The user lives in Porto.", None),
        ("User's sister lives in Oslo.", "sister"),
        ("User prefers tea.", None),
    ],
)
def test_extracted_memories_speak_of_the_user_in_the_third_person(text: str, about: str | None) -> None:
    assert third_party_of(text) == about


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What did I buy for Anna?", {"anna"}),
        ("Where do I live, Porto or Oslo?", {"porto", "oslo"}),
        ("Who is my boss? Is it Bruno?", {"bruno"}),  # "Is" opens a sentence
        ("Where do I live?", set()),
        ("I met Rachel.", {"rachel"}),
        ("What did I get for Anna's birthday?", {"anna"}),  # as word tokens split "Anna's"
        ("I'm seeing Jean-Luc tonight, what should I bring?", {"jean", "luc"}),
    ],
)
def test_names_in(query: str, names: set[str]) -> None:
    assert names_in(query) == names
