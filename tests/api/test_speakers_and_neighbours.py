"""Conversations of several people: a message's speaker (OpenAI's ``name`` field, kept as
``metadata["speaker"]``) in its index texts and as a search field, and conversation context
(a turn scored with its neighbours) in ranking."""

from __future__ import annotations

import pytest
from palimpsest.application import ChatMessage, RetrievalConfig
from palimpsest.application.indexing import message_index_text
from palimpsest.domain import ValidationError
from palimpsest.domain.search import CandidateKey, KeywordCandidates, with_keyword_neighbours, with_neighbours

from .conftest import ClientFactory
from .helpers import snapshot

NO_CONTEXT = RetrievalConfig(neighbour_weight=0.0, speaker_penalty=0.0)


def test_a_name_is_kept_as_the_speaker_and_must_agree_with_metadata(make_client: ClientFactory, store) -> None:  # type: ignore[no-untyped-def]
    thread = make_client().create_thread(user_id="u")
    first, second = thread.add_messages(
        [
            {"role": "user", "name": "Caroline", "content": "I went to a support group."},
            ChatMessage(role="user", content="That sounds lovely.", name="Melanie", metadata={"mood": "warm"}),
        ]
    )
    assert thread.get_message(first).metadata == {"speaker": "Caroline"}
    assert thread.get_message(second).metadata == {"mood": "warm", "speaker": "Melanie"}
    assert thread.get_message(second).speaker == "Melanie"
    before = snapshot(store)
    for bad in (
        {"role": "user", "name": "Caroline", "content": "x", "metadata": {"speaker": "Melanie"}},
        {"role": "user", "name": "", "content": "x"},
        {"role": "user", "name": 7, "content": "x"},
        {"role": "user", "name": "x" * 101, "content": "x"},
    ):
        with pytest.raises(ValidationError):
            thread.add_messages([{"role": "user", "content": "fine"}, bad])
    assert snapshot(store) == before  # nothing of a refused batch is written


def test_the_speaker_is_part_of_both_index_texts(make_client: ClientFactory) -> None:
    client = make_client(retrieval=NO_CONTEXT)
    thread = client.create_thread(user_id="u")
    [mid] = thread.add_messages([{"role": "user", "name": "Caroline", "content": "I keep bees on the roof."}])
    embedded = message_index_text("I keep bees on the roof.", "user", None, (), "Caroline")
    assert embedded == "Caroline: I keep bees on the roof."
    # The hashing embedder gives one vector per text: relevance 1 for exactly the embedded text.
    top = client.search(embedded, user_id="u", search_strategy="vector", max_results=1)[0]
    assert top.id == mid and top.relevance == pytest.approx(1.0)
    # The keyword index holds the name: a keyword search for it alone finds the turn.
    assert [r.id for r in client.search("caroline", user_id="u", search_strategy="keyword")] == [mid]
    # Stored and rendered content stay the plain text.
    assert thread.get_message(mid).content == "I keep bees on the roof."
    # A new speaker is embedded again.
    thread.update_message(mid, metadata={"speaker": "Melanie"})
    moved = message_index_text("I keep bees on the roof.", "user", None, (), "Melanie")
    top = client.search(moved, user_id="u", search_strategy="vector", max_results=1)[0]
    assert top.relevance == pytest.approx(1.0)
    assert client.search("caroline", user_id="u", search_strategy="keyword") == []


def _conversation(client) -> list[str]:  # type: ignore[no-untyped-def]
    thread = client.create_thread(user_id="u")
    return thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What did you paint last weekend?"},
            {"role": "user", "name": "Caroline", "content": "A sunset over the lake."},
            {"role": "user", "name": "Melanie", "content": "Lovely. I painted a sunset too, in oils."},
            {"role": "user", "name": "Caroline", "content": "We should go camping soon."},
            {"role": "user", "name": "Melanie", "content": "Yes, the kids want to see the mountains."},
        ]
    )


def test_a_turn_is_lifted_towards_its_best_matching_neighbour(make_client: ClientFactory) -> None:
    plain = make_client(retrieval=NO_CONTEXT)
    thread = plain.create_thread(user_id="u")
    ids = thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What did you paint last weekend?"},
            {"role": "user", "name": "Caroline", "content": "You will laugh."},
            {"role": "user", "name": "Caroline", "content": "A sunset over the lake."},
            {"role": "user", "name": "Caroline", "content": "We should go camping soon."},
            {"role": "user", "name": "Melanie", "content": "Yes, the kids want to see the mountains."},
        ]
    )
    answer, other = ids[2], ids[3]
    query = "What did Caroline paint last weekend?"
    without = {r.id: r.relevance for r in plain.search(query, user_id="u", search_strategy="keyword", max_results=5)}
    context = make_client(retrieval=RetrievalConfig(neighbour_weight=0.5, neighbour_radius=1, speaker_penalty=0.0))
    found = context.search(query, user_id="u", search_strategy="keyword", max_results=5)
    with_context = {r.id: r.relevance for r in found}
    # The answer only shares the speaker's name with the question, like the turn after it; it
    # sits next to the turn that holds the question's words (the question is in that turn's
    # keyword text), and is lifted towards it (in keyword relevance, then in score), never past it.
    assert abs(without[answer] - without[other]) < 0.02  # alike without context (lengths aside)
    assert with_context[answer] - with_context[other] > 0.2 and with_context[answer] > without[answer]
    assert with_context[answer] < with_context[ids[1]]


def test_a_named_turns_keyword_text_holds_the_turn_before_it(make_client: ClientFactory) -> None:
    client = make_client(retrieval=NO_CONTEXT)
    thread = client.create_thread(user_id="u")
    q, a, b = thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What are you researching?"},
            {"role": "user", "name": "Caroline", "content": "Adoption agencies."},
            {"role": "user", "name": "Melanie", "content": "Good luck!"},
        ]
    )

    def found(words: str) -> set[str]:
        return {r.id for r in client.search(words, user_id="u", search_strategy="keyword", max_results=10)}

    assert found("researching") == {q, a}  # the answer is read with the question it answers
    assert found("adoption") == {a, b}
    thread.update_message(q, content="What are you reading?")  # the next turn's text follows the edit
    assert found("researching") == set() and found("reading") == {q, a}
    thread.delete_message(a)  # the turn after a deleted one now follows the one before it
    assert found("adoption") == set() and found("reading") == {q, b}
    [bot] = thread.add_messages([{"role": "assistant", "content": "Noted, good luck."}])
    assert bot not in found("reading") and found("luck") == {b, bot}  # unnamed: its own text only


def test_a_question_naming_one_speaker_demotes_the_others_turns(make_client: ClientFactory) -> None:
    ids = _conversation(make_client())
    query = "Melanie and the lake"
    plain = make_client(retrieval=NO_CONTEXT)
    named = make_client(retrieval=RetrievalConfig(neighbour_weight=0.0, speaker_penalty=0.9))
    before = [r.id for r in plain.search(query, user_id="u", search_strategy="keyword", max_results=5)]
    after = [r.id for r in named.search(query, user_id="u", search_strategy="keyword", max_results=5)]
    assert sorted(before) == sorted(after)  # a reordering: nothing dropped or brought in
    melanie = {ids[0], ids[2], ids[4]}

    def inversions(order: list[str]) -> int:  # Caroline's turns ranked above Melanie's
        return sum(1 for i, a in enumerate(order) if a not in melanie for b in order[i + 1 :] if b in melanie)

    assert before[0] not in melanie and after[0] in melanie
    assert 0 <= inversions(after) < inversions(before)
    # A question naming both speakers (or none) changes nothing.
    for neutral in ("Melanie and Caroline: a sunset over the lake?", "A sunset over the lake?"):
        a = [r.id for r in plain.search(neutral, user_id="u", search_strategy="keyword", max_results=5)]
        b = [r.id for r in named.search(neutral, user_id="u", search_strategy="keyword", max_results=5)]
        assert a == b


def test_neighbour_lift_keeps_scores_in_range_and_records_unchanged() -> None:
    m = lambda i: (True, f"m{i}")  # noqa: E731
    record: CandidateKey = (False, "r1")
    ranked = [(m(1), 0.8), (record, 0.7), (m(3), 0.2)]
    out = dict(with_neighbours(ranked, {"m1": ["m2"], "m3": ["m2", "m4"]}, 0.5))
    assert out[record] == 0.7  # memory records keep their score
    assert out[m(1)] == 0.8  # m2 is not ranked: no lift for m1
    assert out[m(2)] == pytest.approx(0.5 * 0.8)  # brought in by its best neighbour
    assert out[m(4)] == pytest.approx(0.5 * 0.2)
    assert with_neighbours(ranked, {}, 0.5) == ranked and with_neighbours(ranked, {"m1": ["m3"]}, 0.0) == ranked
    lifted = dict(with_neighbours([(m(1), 0.9), (m(2), 0.5)], {"m1": ["m2"], "m2": ["m1"]}, 0.5))
    assert lifted[m(2)] == pytest.approx(0.5 + 0.5 * 0.4) and lifted[m(1)] == 0.9  # never past its best neighbour
    alike = [(m(1), 0.6), (m(2), 0.6)]
    assert with_neighbours(alike, {"m1": ["m2"], "m2": ["m1"]}, 0.9) == alike  # alike matches lift nothing


def test_keyword_neighbours_lift_raw_relevance() -> None:
    keyword = KeywordCandidates([((True, "a"), 4.0), ((True, "b"), 1.0), ((False, "r"), 3.0)], 10.0)
    out = with_keyword_neighbours(keyword, {"a": ["b", "c"], "b": ["a"]}, 0.5)
    scores = dict(out.ranked)
    assert scores[(True, "b")] == pytest.approx(1.0 + 0.5 * 3.0)
    assert scores[(True, "a")] == 4.0
    assert scores[(True, "c")] == pytest.approx(2.0)
    assert scores[(False, "r")] == 3.0 and out.ideal == 10.0
    assert [key for key, _ in out.ranked] == sorted(scores, key=lambda k: -scores[k])


def test_unnamed_chat_turns_get_no_conversation_context(make_client: ClientFactory) -> None:
    # A user-assistant chat (no speaker names) ranks exactly as without conversation context.
    client = make_client()
    thread = client.create_thread(user_id="u")
    thread.add_messages(
        [
            {"role": "user", "content": "What did you paint last weekend?"},
            {"role": "assistant", "content": "A sunset over the lake."},
            {"role": "user", "content": "Lovely. I painted a sunset too, in oils."},
        ]
    )
    plain = make_client(retrieval=NO_CONTEXT)
    for query in ("What was painted last weekend?", "sunset lake"):
        with_defaults = [(r.id, r.relevance) for r in client.search(query, user_id="u")]
        without = [(r.id, r.relevance) for r in plain.search(query, user_id="u")]
        assert with_defaults == without


def _relevance_of(client, text: str, message_id: str) -> float:  # type: ignore[no-untyped-def]
    found = client.search(text, user_id="u", search_strategy="vector", max_results=20, record_types=["message"])
    return next(r.relevance for r in found if r.id == message_id)


def test_a_named_turn_is_embedded_after_the_named_turn_before_it(make_client: ClientFactory) -> None:
    client = make_client(retrieval=NO_CONTEXT)
    thread = client.create_thread(user_id="u")
    q, a = thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What are you researching?"},
            {"role": "user", "name": "Caroline", "content": "Adoption agencies."},
        ]
    )
    [later] = thread.add_messages([{"role": "user", "name": "Melanie", "content": "Good luck!"}])  # a new batch
    [bot] = thread.add_messages([{"role": "assistant", "content": "Noted."}])  # unnamed: no context
    # The hashing embedder gives one vector per text: relevance 1 for exactly the embedded text.
    assert _relevance_of(client, "Melanie: What are you researching?", q) == pytest.approx(1.0)
    assert _relevance_of(client, "Melanie: What are you researching?\nCaroline: Adoption agencies.", a) == (
        pytest.approx(1.0)
    )
    assert _relevance_of(client, "Caroline: Adoption agencies.\nMelanie: Good luck!", later) == pytest.approx(1.0)
    assert _relevance_of(client, "Noted.", bot) == pytest.approx(1.0)
    # An edit of the turn before re-embeds the turn after it; so does its deletion.
    thread.update_message(q, content="What are you reading?")
    assert _relevance_of(client, "Melanie: What are you reading?\nCaroline: Adoption agencies.", a) == (
        pytest.approx(1.0)
    )
    thread.delete_message(a)
    assert _relevance_of(client, "Melanie: What are you reading?\nMelanie: Good luck!", later) == pytest.approx(1.0)
    # reembed() recomputes the same index texts.
    client.reembed()
    assert _relevance_of(client, "Melanie: What are you reading?\nMelanie: Good luck!", later) == pytest.approx(1.0)
    assert _relevance_of(client, "Melanie: What are you reading?", q) == pytest.approx(1.0)


def test_an_import_embeds_named_turns_after_the_turn_before_them(make_client: ClientFactory, store) -> None:  # type: ignore[no-untyped-def]
    import io

    from palimpsest.adapters import HashingEmbedder
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.transfer import export_store, import_items, read_items

    source = make_client(retrieval=NO_CONTEXT)
    thread = source.create_thread(user_id="u")
    q, a = thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What are you researching?"},
            {"role": "user", "name": "Caroline", "content": "Adoption agencies."},
        ]
    )
    dump = io.StringIO()
    export_store(store, dump)
    target = InMemoryStore()
    import_items(target, read_items(dump.getvalue().splitlines()), embedder=HashingEmbedder())
    copy = make_client(store=target, retrieval=NO_CONTEXT)
    assert _relevance_of(copy, "Melanie: What are you researching?\nCaroline: Adoption agencies.", a) == (
        pytest.approx(1.0)
    )
    assert _relevance_of(copy, "Melanie: What are you researching?", q) == pytest.approx(1.0)


class _FailsOn:
    """The hashing embedder, failing for any text containing ``marker`` (a model down when the
    neighbour is re-embedded)."""

    def __init__(self, marker: str) -> None:
        from palimpsest.adapters import HashingEmbedder

        self._inner = HashingEmbedder()
        self.dimension = self._inner.dimension
        self.model_id = self._inner.model_id
        self.marker: str | None = None
        self._armed = marker

    def arm(self) -> None:
        self.marker = self._armed

    def embed(self, texts: list[str], *, is_query: bool = False) -> list[list[float]]:
        from palimpsest.domain import ModelError

        if self.marker is not None and not is_query and any(self.marker in text for text in texts):
            raise ModelError("embedding service unavailable")
        return self._inner.embed(texts, is_query=is_query)


def test_a_model_failing_on_the_next_turn_leaves_the_edit_and_the_delete_unwritten(
    make_client: ClientFactory,
) -> None:
    """The turn after an edited or deleted one is re-embedded before the write opens: when the
    model fails there, the caller gets the model's error and nothing is written."""
    from palimpsest.domain import ModelError

    embedder = _FailsOn("Adoption agencies.")
    client = make_client(retrieval=NO_CONTEXT, embedder=embedder)
    thread = client.create_thread(user_id="u")
    q, a = thread.add_messages(
        [
            {"role": "user", "name": "Melanie", "content": "What are you researching?"},
            {"role": "user", "name": "Caroline", "content": "Adoption agencies."},
        ]
    )
    embedder.arm()  # only the follower's index text holds the marker
    with pytest.raises(ModelError):
        thread.update_message(q, content="What are you reading?")
    with pytest.raises(ModelError):
        thread.delete_message(q)
    assert [m.content for m in thread.get_messages()] == ["What are you researching?", "Adoption agencies."]
    embedder.marker = None
    assert _relevance_of(client, "Melanie: What are you researching?\nCaroline: Adoption agencies.", a) == (
        pytest.approx(1.0)
    )


def test_no_model_runs_while_the_store_is_locked_for_writing(make_client: ClientFactory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Editing or deleting a named turn re-embeds the turn after it without holding the write
    lock meanwhile (a slow model would otherwise keep every other writer waiting)."""
    import sqlite3

    from palimpsest.adapters import HashingEmbedder
    from palimpsest.adapters.embedded import EmbeddedStore

    path = tmp_path / "locks.db"
    locked: list[bool] = []

    class Probing(HashingEmbedder):
        def embed(self, texts: list[str], *, is_query: bool = False) -> list[list[float]]:
            probe = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
                locked.append(False)
            except sqlite3.OperationalError:
                locked.append(True)
            finally:
                probe.close()
            return super().embed(texts, is_query=is_query)

    with EmbeddedStore(path) as store:
        client = make_client(store=store, embedder=Probing(), retrieval=NO_CONTEXT)
        thread = client.create_thread(user_id="u")
        q, a, b = thread.add_messages(
            [
                {"role": "user", "name": "Melanie", "content": "What are you researching?"},
                {"role": "user", "name": "Caroline", "content": "Adoption agencies."},
                {"role": "user", "name": "Melanie", "content": "Good luck!"},
            ]
        )
        locked.clear()
        thread.update_message(q, content="What are you reading?")
        thread.delete_message(a)
        assert len(locked) >= 3 and not any(locked)  # the edit, its follower, the deletion's follower
        assert _relevance_of(client, "Melanie: What are you reading?\nMelanie: Good luck!", b) == pytest.approx(1.0)
