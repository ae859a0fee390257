"""A message's keyword text holds the turn before it (``keyword_text``), so a store must keep
the next turn's text in step when a message is added before it, edited or deleted: keyword
candidates then score exactly as in a store that was given the final conversation at once."""

from __future__ import annotations

from palimpsest.domain.ports import MemoryStore

from .builders import message, query, seed, thread
from .conftest import StoreFactory


def _said(message_id: str, seq: int, speaker: str, content: str) -> object:
    return message(message_id, "t1", seq, content, metadata={"speaker": speaker})


def _keyword(store: MemoryStore, text: str) -> tuple[dict[str, float], float]:
    with store.searching() as session:
        found = session.keyword_candidates(query(text=text), 1000)
    return {key[1]: raw for key, raw in found.ranked}, found.ideal


def test_keyword_texts_follow_edits_and_deletes_of_the_turn_before(stores: StoreFactory) -> None:
    edited = stores.new()
    seed(
        edited,
        threads=[thread("t1")],
        messages=[
            _said("m1", 1, "Ann", "Where did you travel?"),
            _said("m2", 2, "Bob", "Kyoto for the temples."),
            _said("m3", 3, "Ann", "Lovely, any tea?"),
            _said("m4", 4, "Bob", "Matcha every day."),
        ],
    )
    with edited.unit_of_work() as uow:
        uow.messages.update(_said("m2", 2, "Bob", "Osaka for the food."))  # m3 reads it
        uow.commit()
    with edited.unit_of_work() as uow:
        assert uow.messages.delete("m3")  # m4 now follows m2
        uow.commit()
    fresh = stores.new()
    seed(
        fresh,
        threads=[thread("t1")],
        messages=[
            _said("m1", 1, "Ann", "Where did you travel?"),
            _said("m2", 2, "Bob", "Osaka for the food."),
            _said("m4", 4, "Bob", "Matcha every day."),
        ],
    )
    for text in ("kyoto temples", "osaka food matcha", "lovely tea", "travel"):
        assert _keyword(edited, text) == _keyword(fresh, text), text
