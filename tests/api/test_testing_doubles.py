"""The shipped doubles behave as documented: the scripted ones (palimpsest.application.testing)
and the model-free HashingEmbedder (palimpsest.adapters.hashing)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import (
    Embedder,
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    Summariser,
    SummaryText,
    testing,
)
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import Message, RecordType

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _message(seq: int, content: str, role: str = "user") -> Message:
    return Message(id=f"m{seq}", thread_id="t", role=role, content=content, seq=seq, created_at=NOW)


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_the_module_exports_the_scripted_doubles() -> None:
    assert {"ScriptedSummariser", "ScriptedExtractor", "ScriptedLinkResolver"} <= set(testing.__all__)
    for name in testing.__all__:
        assert hasattr(testing, name)


def test_the_hashing_embedder_is_a_shipped_adapter_not_a_test_module_name() -> None:
    import palimpsest.adapters as adapters
    from palimpsest.adapters import hashing

    assert "HashingEmbedder" in adapters.__all__ and adapters.HashingEmbedder is hashing.HashingEmbedder
    assert not hasattr(testing, "HashingEmbedder")


def test_the_doubles_implement_their_ports() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert isinstance(ScriptedSummariser(), Summariser)
    assert isinstance(ScriptedExtractor(), Extractor)


def test_the_hashing_embedder_names_its_model_and_dimension() -> None:
    assert HashingEmbedder().dimension == 64
    assert HashingEmbedder().model_id == "hashing-v1-64"
    assert HashingEmbedder(dimension=16).model_id == "hashing-v1-16"


def test_the_hashing_embedder_returns_unit_vectors_of_its_dimension() -> None:
    vectors = HashingEmbedder(dimension=32).embed(["Pizza night", "", "!!!", "a b c d e f g h i j k"])
    for vector in vectors:
        assert len(vector) == 32
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0)


def test_the_hashing_embedder_is_deterministic_and_ignores_case_and_punctuation() -> None:
    first = HashingEmbedder().embed(["The user loves thin-crust pizza."])[0]
    again = HashingEmbedder().embed(["the USER loves thin crust pizza"], is_query=True)[0]
    assert first == again


def test_texts_sharing_words_are_closer_than_unrelated_texts() -> None:
    embedder = HashingEmbedder()
    pizza, sourdough, tax = embedder.embed(
        ["user prefers sourdough pizza", "sourdough pizza is preferred", "quarterly tax filing deadline"]
    )
    assert _cosine(pizza, sourdough) > _cosine(pizza, tax)


def test_word_order_matters_through_bigrams() -> None:
    embedder = HashingEmbedder(dimension=256)
    a, b = embedder.embed(["dog bites man", "man bites dog"])
    assert a != b


def test_the_default_summariser_keeps_the_previous_text_and_each_first_sentence() -> None:
    summariser = ScriptedSummariser()
    first = summariser.summarise(None, [_message(1, "I moved to Rome. It is sunny."), _message(2, "   ")])
    assert first.text == "I moved to Rome."
    second = summariser.summarise(first, [_message(3, "Rome has great pizza! Truly.", "assistant")], token_limit=50)
    assert second.text == "I moved to Rome.\nRome has great pizza!"
    assert second.topics[0] == "rome"
    assert "pizza" in second.topics and "the" not in second.topics
    assert len(second.topics) <= 8


def test_the_default_summariser_keeps_at_most_eight_topics() -> None:
    words = " ".join(f"topic{chr(97 + i)}" for i in range(12))
    assert len(ScriptedSummariser().summarise(None, [_message(1, words)]).topics) == 8


def test_the_summariser_records_every_call() -> None:
    summariser = ScriptedSummariser()
    previous = SummaryText("before", ("x",))
    summariser.summarise(previous, [_message(1, "hello there")], token_limit=7)
    assert len(summariser.calls) == 1
    call = summariser.calls[0]
    assert call.previous == previous
    assert [m.id for m in call.messages] == ["m1"]
    assert call.token_limit == 7


def test_a_summariser_function_decides_the_summary() -> None:
    summariser = ScriptedSummariser(lambda previous, messages: SummaryText(f"{len(messages)} messages", ("count",)))
    assert summariser.summarise(None, [_message(1, "a"), _message(2, "b")]) == SummaryText("2 messages", ("count",))
    plain = ScriptedSummariser(lambda previous, messages: "plain text")
    assert plain.summarise(None, [_message(1, "a")]) == SummaryText("plain text")


def test_the_extractor_returns_its_batches_in_order_then_nothing() -> None:
    fact = ExtractedMemory(RecordType.FACT, "The user lives in Rome.")
    preference = ExtractedMemory(RecordType.PREFERENCE, "The user prefers sourdough.")
    extractor = ScriptedExtractor([[fact], [preference, fact]])
    request = ExtractionRequest(target_messages=[_message(1, "hi")])
    assert extractor.extract(request) == [fact]
    assert extractor.extract(request) == [preference, fact]
    assert extractor.extract(request) == []
    assert extractor.requests == [request, request, request]


def test_an_extractor_function_sees_each_request() -> None:
    extractor = ScriptedExtractor(
        lambda request: [ExtractedMemory(RecordType.MEMORY, m.content) for m in request.target_messages]
    )
    request = ExtractionRequest(target_messages=[_message(1, "note one"), _message(2, "note two")])
    assert [m.text for m in extractor.extract(request)] == ["note one", "note two"]
    assert extractor.requests == [request]


def test_an_extractor_without_a_script_extracts_nothing() -> None:
    assert ScriptedExtractor().extract(ExtractionRequest(target_messages=[])) == []


def test_scripted_batches_must_hold_extracted_memories() -> None:
    with pytest.raises(TypeError):
        ScriptedExtractor([["not a memory"]])  # type: ignore[list-item]


def test_the_doubles_describe_themselves() -> None:
    assert repr(HashingEmbedder(16)) == "HashingEmbedder(dimension=16)"
    assert repr(ScriptedSummariser()) == "ScriptedSummariser(calls=0)"
    assert repr(ScriptedExtractor()) == "ScriptedExtractor(requests=0)"
