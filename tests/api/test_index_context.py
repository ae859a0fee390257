"""Index text with context (RetrievalConfig.index_context, application/indexing.py): what a
message's vector is made from, kept apart from what is stored and rendered."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from palimpsest.application import RetrievalConfig
from palimpsest.application.indexing import check_index_context, message_index_text
from palimpsest.domain import ConfigurationError

from .conftest import ClientFactory

WHEN = datetime(2023, 5, 20, 2, 21, tzinfo=UTC)


def test_the_index_text_of_a_message() -> None:
    assert message_index_text("Book it.", "user", WHEN, ()) == "Book it."
    assert message_index_text("Book it.", "user", WHEN, ("role",)) == "user: Book it."
    assert message_index_text("Book it.", "user", WHEN, ("date",)) == "on Saturday 20 May 2023: Book it."
    assert message_index_text("Book it.", "assistant", WHEN, ("role", "date")) == (
        "assistant on Saturday 20 May 2023: Book it."
    )
    assert message_index_text("Book it.", "user", None, ("date",)) == "Book it."  # no time, no date


def test_the_recipe_is_canonical_and_checked() -> None:
    assert check_index_context(["date", "role", "date"]) == ("role", "date")
    assert RetrievalConfig(index_context=["date"]).index_context == ("date",)  # type: ignore[arg-type]
    for bad in ("role", ("speaker",), 3):
        with pytest.raises(ConfigurationError):
            RetrievalConfig(index_context=bad)  # type: ignore[arg-type]


def _top_relevance(client, text: str) -> float:  # type: ignore[no-untyped-def]
    found = client.search(text, user_id="u", search_strategy="vector", max_results=1)
    return found[0].relevance


@pytest.mark.parametrize("context", [(), ("role",), ("role", "date")])
def test_a_message_is_embedded_with_its_context_but_stored_and_rendered_plain(
    make_client: ClientFactory, context: tuple[str, ...]
) -> None:
    client = make_client(retrieval=RetrievalConfig(index_context=context))
    thread = client.create_thread(user_id="u")
    text = "I keep bees on the roof."
    [mid] = thread.add_messages([{"role": "user", "content": text, "timestamp": WHEN}])
    # The hashing embedder gives one vector per text: relevance 1 for exactly the embedded text.
    embedded = message_index_text(text, "user", WHEN, context)
    assert _top_relevance(client, embedded) == pytest.approx(1.0)
    if context:
        assert _top_relevance(client, text) < 0.99
    assert thread.get_message(mid).content == text
    assert "user: I keep" not in thread.get_context_card().content
    # An edit is embedded with the same recipe.
    thread.update_message(mid, content="I keep wasps on the roof.")
    assert _top_relevance(client, message_index_text("I keep wasps on the roof.", "user", WHEN, context)) == (
        pytest.approx(1.0)
    )


def test_another_recipe_is_refused_until_reembedded(make_client: ClientFactory) -> None:
    first = make_client(retrieval=RetrievalConfig(index_context=("role",)))
    first.create_thread(user_id="u").add_messages([{"role": "user", "content": "I keep bees on the roof."}])
    with pytest.raises(ConfigurationError, match="index_context"):
        make_client()
    with pytest.raises(ConfigurationError, match="index_context"):
        make_client(retrieval=RetrievalConfig(index_context=("role", "date")))
    assert make_client(retrieval=RetrievalConfig(index_context=("role",))) is not None
    changed = make_client(allow_embedding_model_change=True)
    assert changed.reembed() == 1
    plain = make_client()  # the store now records the plain recipe
    assert _top_relevance(plain, "I keep bees on the roof.") == pytest.approx(1.0)
