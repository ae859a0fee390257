"""A summary's quotes: which message each of its sentences was taken from."""

from __future__ import annotations

from palimpsest.application.quotes import (
    find_quotes,
    quoted,
    quotes_from_metadata,
    quotes_metadata,
    summary_sentences,
)


def test_sentences_are_split_as_an_extractive_summariser_takes_them() -> None:
    assert summary_sentences("It rained.  We stayed in; we read!\n\nWhy ’not’?") == [
        "It rained.",
        "We stayed in;",
        "we read!",
        "Why 'not'?",
    ]


def test_each_sentence_quotes_the_first_source_that_has_it() -> None:
    sources = [
        ("We grow tomatoes. The heater broke last week.", "m1"),
        ("The heater broke last week. It is fixed now.", "m2"),
        ("My   daughter   plays the cello, every day.", "m3"),
    ]
    text = "The heater broke last week. My daughter plays the cello, every day. Life is busy. It is"
    assert find_quotes(text, sources) == ("m1", "m3", None, "m2")  # the last one cut short
    assert find_quotes("", sources) == ()
    assert find_quotes("Nothing here.", []) == (None,)


def test_quotes_line_up_with_their_text_or_not_at_all() -> None:
    assert quoted("A one. A two.", ("m1", None)) == (("A one.", "m1"), ("A two.", None))
    assert quoted("A one. A two.", ("m1",)) == ()
    assert quoted("A one.", ()) == ()


def test_quotes_are_kept_in_metadata_only_when_one_sentence_quotes_a_message() -> None:
    assert quotes_metadata(("m1", None)) == {"quotes": ["m1", None]}
    assert quotes_metadata((None, None)) is None
    assert quotes_metadata((None,), {"quotes": ["old"], "other": 1}) == {"other": 1}
    assert quotes_from_metadata({"quotes": ["m1", None]}) == ("m1", None)
    for bad in (None, {}, {"quotes": "m1"}, {"quotes": [1]}, {"quotes": [["m1"]]}):
        assert quotes_from_metadata(bad) == ()


def test_known_sentences_are_tried_before_the_new_messages() -> None:
    known = [("The heater broke last week.", "m1"), ("We grow tomatoes in the greenhouse.", "m0")]
    sources = [("The heater broke last week. It is fixed now.", "m2")]
    text = "The heater broke last week. It is fixed now. We grow tomatoes"
    assert find_quotes(text, sources, known) == ("m1", "m2", "m0")
