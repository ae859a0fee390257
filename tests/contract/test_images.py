"""Contract: the image repository (``uow.images``) and image record rows, on every store.

An image is a record row of type ``image`` (search, scope, expiry and metadata need nothing
new) plus its bytes beside it; the bytes go with the record, and are read only when asked for.
"""

from __future__ import annotations

import pytest
from images_samples import jpeg, png
from palimpsest.domain.errors import DuplicateIdError, ReadOnlyError, RecordNotFoundError
from palimpsest.domain.images import ImageMimeType, StoredImage
from palimpsest.domain.model import MemoryRecord, RecordType
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.search import ScopeFilter, SearchQuery

from .builders import E1, E2, NOW, message, record, thread


def image_record(record_id: str, content: str = "a red bicycle", **kwargs: object) -> MemoryRecord:
    return record(record_id, content, record_type=RecordType.IMAGE, **kwargs)  # type: ignore[arg-type]


def test_an_image_round_trips_with_its_bytes_only_when_asked(store: MemoryStore) -> None:
    data = png(seed=7)
    with store.unit_of_work() as uow:
        uow.records.add(image_record("i1", user_id="u"), embedding=E1)
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, data))
        uow.commit()
    with store.reading() as uow:
        light = uow.images.get_many(["i1", "absent"])
        full = uow.images.get_many(["i1"], include_bytes=True)
        row = uow.records.get("i1")
    assert light == {"i1": StoredImage("i1", ImageMimeType.PNG, None)}
    assert full["i1"].data == data and full["i1"].mime_type is ImageMimeType.PNG
    assert row is not None and row.record_type is RecordType.IMAGE and row.content == "a red bicycle"


def test_bytes_need_an_image_record_and_are_stored_once(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.records.add(record("m1", "a memory"))
        uow.records.add(image_record("i1"))
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, png()))
        with pytest.raises(RecordNotFoundError):
            uow.images.add(StoredImage("absent", ImageMimeType.PNG, png()))
        with pytest.raises(RecordNotFoundError):
            uow.images.add(StoredImage("m1", ImageMimeType.PNG, png()))
        with pytest.raises(DuplicateIdError):
            uow.images.add(StoredImage("i1", ImageMimeType.JPEG, jpeg()))
        uow.commit()
    with store.reading() as uow:
        assert uow.images.get_many(["i1", "m1"], include_bytes=True)["i1"].data == png()
        assert "m1" not in uow.images.get_many(["i1", "m1"])


def test_replace_changes_the_bytes_and_type_and_keeps_the_message(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1", user_id="u"))
        uow.messages.add(message("msg1", "t1", 1, "look", user_id="u"))
        uow.records.add(image_record("i1", user_id="u", thread_id="t1"))
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, png(), message_id="msg1", position=1))
        uow.images.replace(StoredImage("i1", ImageMimeType.JPEG, jpeg()))
        with pytest.raises(RecordNotFoundError):
            uow.images.replace(StoredImage("absent", ImageMimeType.JPEG, jpeg()))
        uow.commit()
    with store.reading() as uow:
        stored = uow.images.get_many(["i1"], include_bytes=True)["i1"]
    assert (stored.mime_type, stored.data, stored.message_id, stored.position) == (
        ImageMimeType.JPEG, jpeg(), "msg1", 1
    )


def test_images_of_messages_come_in_part_order_without_bytes(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1", user_id="u"))
        uow.messages.add(message("msg1", "t1", 1, "two pictures", user_id="u"))
        uow.messages.add(message("msg2", "t1", 2, "one picture", user_id="u"))
        for rid, mid, position in (("b", "msg1", 2), ("a", "msg1", 0), ("c", "msg2", 1)):
            uow.records.add(image_record(rid, user_id="u", thread_id="t1"))
            uow.images.add(StoredImage(rid, ImageMimeType.PNG, png(seed=position), message_id=mid, position=position))
        uow.commit()
    with store.reading() as uow:
        found = uow.images.of_messages(["msg2", "msg1", "none"])
    assert list(found) == ["msg2", "msg1"]
    assert [(i.record_id, i.position, i.data) for i in found["msg1"]] == [("a", 0, None), ("b", 2, None)]
    assert [i.record_id for i in found["msg2"]] == ["c"]


def test_the_bytes_go_with_their_record_and_their_thread(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t1", user_id="u"))
        uow.records.add(image_record("i1", user_id="u"))
        uow.records.add(image_record("i2", user_id="u", thread_id="t1"))
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, png()))
        uow.images.add(StoredImage("i2", ImageMimeType.PNG, png()))
        uow.commit()
    with store.unit_of_work() as uow:
        assert uow.records.delete("i1")
        assert uow.threads.delete("t1")
        uow.commit()
    with store.reading() as uow:
        assert uow.images.get_many(["i1", "i2"]) == {}


def test_a_read_only_unit_of_work_refuses_to_store_bytes(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.records.add(image_record("i1"))
        uow.commit()
    with store.reading() as uow, pytest.raises(ReadOnlyError):
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, png()))


def test_search_finds_an_image_by_its_description_and_filters_by_type(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        uow.records.add(image_record("i1", "a red bicycle by the canal", user_id="u"), embedding=E1)
        uow.images.add(StoredImage("i1", ImageMimeType.PNG, png()))
        uow.records.add(record("m1", "the bicycle needs new brakes", user_id="u"), embedding=E2)
        uow.commit()
    scope = ScopeFilter(user_id="u")
    images = store.search(
        SearchQuery(k=5, now=NOW, text="bicycle", scope=scope, record_types=frozenset({RecordType.IMAGE}))
    )
    assert [h.record.id for h in images] == ["i1"]
    every = store.search(SearchQuery(k=5, now=NOW, text="bicycle", vector=E1, scope=scope))
    assert {h.record.id for h in every} == {"i1", "m1"}
    memories = store.search(
        SearchQuery(k=5, now=NOW, vector=E1, scope=scope, record_types=frozenset({RecordType.FACT}))
    )
    assert [h.record.id for h in memories] == ["m1"]
