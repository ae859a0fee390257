"""Images through the public API: add, list, update, delete, search by caption, limits, captions,
thread handles. Every refusal is checked to write nothing (a snapshot of the store, bytes
included, is the same after)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from images_samples import jpeg, png, webp
from palimpsest.application import AgentMemory
from palimpsest.application.config import ImageInputLimitConfig
from palimpsest.domain.errors import (
    ConfigurationError,
    ImageLimitError,
    InvalidImageError,
    InvalidScopeError,
    LinkEndpointTypeError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.images import ImageMimeType
from palimpsest.domain.model import RecordType
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import EPOCH, snapshot


class FakeCaptioner:
    """Describes every image the same way, and counts the images it was shown."""

    def __init__(self, text: str = "a drawing of a lighthouse at dusk") -> None:
        self.text = text
        self.seen: list[tuple[int, str]] = []

    def describe(self, image: bytes, mime_type: str) -> str:
        self.seen.append((len(image), mime_type))
        return self.text


def unchanged(store: MemoryStore, call: Callable[[], Any], error: type[Exception], match: str | None = None) -> None:
    before = snapshot(store)
    with pytest.raises(error, match=match):
        call()
    assert snapshot(store) == before


def test_a_standalone_image_is_stored_listed_searched_and_deleted(memory: AgentMemory) -> None:
    image_id = memory.add_image(png(seed=3), "a red bicycle by the canal", user_id="u")
    listed = memory.list_images(user_id="u")
    assert [(i.id, i.content, i.mime_type, i.bytes) for i in listed] == [
        (image_id, "a red bicycle by the canal", ImageMimeType.PNG, None)
    ]
    full = memory.list_images(image_id=image_id, user_id="u", include_bytes=True)
    assert full[0].bytes == png(seed=3)
    hits = memory.search("bicycle", user_id="u", record_types=["image"])
    assert [(h.record.id, h.record.record_type) for h in hits] == [(image_id, RecordType.IMAGE)]
    assert memory.list_memories(user_id="u") == []  # an image is not a memory
    assert memory.delete_image(image_id) == 1
    assert memory.delete_image(image_id) == 0
    assert memory.list_images(user_id="u") == []
    assert memory.search("bicycle", user_id="u", record_types=["image"]) == []


def test_the_mime_type_is_detected_or_must_match_the_bytes(memory: AgentMemory, store: MemoryStore) -> None:
    jpeg_id = memory.add_image(jpeg(), "a photo", user_id="u")
    webp_id = memory.add_image(webp(), "a sticker", user_id="u", mime_type="image/webp")
    by_id = {i.id: i.mime_type for i in memory.list_images(user_id="u")}
    assert by_id == {jpeg_id: ImageMimeType.JPEG, webp_id: ImageMimeType.WEBP}
    unchanged(store, lambda: memory.add_image(png(), "x", user_id="u", mime_type=ImageMimeType.JPEG), InvalidImageError,
              "Image bytes are invalid or do not match the supplied MIME type.")
    unchanged(store, lambda: memory.add_image(b"GIF89a" + b"\x00" * 30, "x", user_id="u"), InvalidImageError)
    unchanged(store, lambda: memory.add_image("not bytes", "x", user_id="u"), ValidationError,  # type: ignore[arg-type]
              "image must be raw bytes.")


def test_an_image_needs_an_owner_scope(memory: AgentMemory, store: MemoryStore) -> None:
    unchanged(store, lambda: memory.add_image(png(), "x"), InvalidScopeError, "An image owner scope is required.")
    unchanged(store, lambda: memory.add_image(png(), "x", user_id=None), InvalidScopeError)
    with pytest.raises(InvalidScopeError):
        memory.list_images()
    with pytest.raises(InvalidScopeError):
        memory.list_images(user_id=None)


def test_bytes_are_listed_for_one_named_image_only(memory: AgentMemory) -> None:
    memory.add_image(png(), "x", user_id="u")
    with pytest.raises(ValidationError, match="image_id"):
        memory.list_images(user_id="u", include_bytes=True)


def test_a_thread_s_user_and_agent_are_the_image_s(make_client: ClientFactory, store: MemoryStore) -> None:
    memory = make_client()
    memory.create_thread(thread_id="t1", user_id="u", agent_id="a")
    image_id = memory.add_image(png(), "a map", thread_id="t1")
    (stored,) = memory.list_images(thread_id="t1")
    assert (stored.id, stored.user_id, stored.agent_id, stored.thread_id) == (image_id, "u", "a", "t1")
    unchanged(store, lambda: memory.add_image(png(), "x", thread_id="t1", user_id="other"), InvalidScopeError)
    unchanged(store, lambda: memory.add_image(png(), "x", thread_id="absent"), ThreadNotFoundError)


def test_a_raw_image_over_the_limit_is_refused_before_anything_is_written(
    make_client: ClientFactory, store: MemoryStore
) -> None:
    data = png(20, 20)
    memory = make_client(image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=len(data) - 1))
    unchanged(store, lambda: memory.add_image(data, "x", user_id="u"), ImageLimitError,
              "Raw image size exceeds the configured limit.")
    # A request may raise its own limit, within the absolute maximum.
    wider = ImageInputLimitConfig(max_raw_image_bytes=len(data))
    assert memory.add_image(data, "x", user_id="u", image_input_limit_config=wider)


def test_thread_limits_are_persisted_and_inherited(make_client: ClientFactory, store: MemoryStore) -> None:
    data = png(20, 20)
    memory = make_client()
    memory.create_thread(
        thread_id="t1", user_id="u",
        image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=len(data) - 1),
    )
    with store.reading() as uow:
        stored = uow.threads.get("t1")
    assert stored is not None
    assert stored.config["image_input_limit_config"] == {
        "max_raw_image_bytes": len(data) - 1,
        "max_images_per_llm_request": 100,
        "max_total_raw_image_bytes_per_llm_request": 100 * 1024 * 1024,
    }
    thread = memory.get_thread("t1")
    unchanged(store, lambda: thread.add_image(data, "x"), ImageLimitError)
    memory.update_thread("t1", image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=len(data)))
    assert memory.get_thread("t1").add_image(data, "x")


def test_a_thread_s_request_limits_go_over_the_thread_s_own(make_client: ClientFactory, store: MemoryStore) -> None:
    data = png(20, 20)
    memory = make_client()
    thread = memory.create_thread(
        thread_id="t1", user_id="u",
        image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=len(data) - 1),
    )
    # A field the request leaves unset is the thread's (not the client's default).
    other_field = ImageInputLimitConfig(max_images_per_llm_request=5)
    unchanged(store, lambda: thread.add_image(data, "x", image_input_limit_config=other_field), ImageLimitError)
    unchanged(store, lambda: thread.add_image(data, "x", image_input_limit_config={"max_raw_image_bytes": 1}),
              ConfigurationError, "image_input_limit_config must be an ImageInputLimitConfig.")
    wider = ImageInputLimitConfig(max_raw_image_bytes=len(data))
    image_id = thread.add_image(data, "x", image_input_limit_config=wider)
    assert [i.id for i in thread.list_images()] == [image_id]


def test_limits_are_bounded_by_the_absolute_maxima() -> None:
    with pytest.raises(ConfigurationError):
        ImageInputLimitConfig(max_raw_image_bytes=32 * 1024 * 1024 + 1)
    with pytest.raises(ConfigurationError):
        ImageInputLimitConfig(max_images_per_llm_request=0)
    assert ImageInputLimitConfig.resolve().to_json() == {
        "max_raw_image_bytes": 10 * 1024 * 1024,
        "max_images_per_llm_request": 100,
        "max_total_raw_image_bytes_per_llm_request": 100 * 1024 * 1024,
    }


def test_a_caption_is_written_by_the_captioner_when_no_description_is_given(make_client: ClientFactory) -> None:
    captioner = FakeCaptioner()
    memory = make_client(image_captioner=captioner)
    image_id = memory.add_image(png(), user_id="u")
    assert memory.list_images(user_id="u")[0].content == captioner.text
    assert captioner.seen == [(len(png()), "image/png")]
    assert [h.record.id for h in memory.search("lighthouse", user_id="u", record_types=["image"])] == [image_id]


def test_without_a_captioner_a_missing_description_writes_nothing(memory: AgentMemory, store: MemoryStore) -> None:
    unchanged(store, lambda: memory.add_image(png(), user_id="u"), ConfigurationError,
              "An LLM is required for image description generation.")
    unchanged(store, lambda: memory.add_image(png(), None, user_id="u"), ConfigurationError)


def test_a_caption_request_over_the_aggregate_limit_is_refused(make_client: ClientFactory, store: MemoryStore) -> None:
    data = png(20, 20)
    captioner = FakeCaptioner()
    limits = ImageInputLimitConfig(max_total_raw_image_bytes_per_llm_request=len(data) - 1)
    memory = make_client(image_captioner=captioner, image_input_limit_config=limits)
    unchanged(store, lambda: memory.add_image(data, user_id="u"), ImageLimitError,
              "LLM raw image bytes exceed the configured aggregate limit.")
    assert captioner.seen == []


def test_update_image_changes_bytes_description_metadata_and_ttl(make_client: ClientFactory, store: MemoryStore) -> None:
    captioner = FakeCaptioner("a harbour at night")
    memory = make_client(image_captioner=captioner)
    image_id = memory.add_image(png(), "a sketch", user_id="u", metadata={"source": "chat"})
    unchanged(store, lambda: memory.update_image(image_id, image=jpeg()), ValidationError,
              "image and mime_type must be updated together.")
    unchanged(store, lambda: memory.update_image(image_id, image=jpeg(), mime_type="image/png"), InvalidImageError)
    memory.update_image(image_id, image=jpeg(), mime_type="image/jpeg", metadata={"source": "email"}, ttl_days=3)
    (updated,) = memory.list_images(image_id=image_id, user_id="u", include_bytes=True)
    assert (updated.bytes, updated.mime_type, updated.content, updated.metadata) == (
        jpeg(), ImageMimeType.JPEG, "a sketch", {"source": "email"}
    )
    assert updated.expires_at is not None
    memory.update_image(image_id, description=None)  # a new caption, from the stored bytes
    assert captioner.seen == [(len(jpeg()), "image/jpeg")]
    assert memory.list_images(user_id="u")[0].content == "a harbour at night"
    with pytest.raises(RecordNotFoundError):
        memory.update_image("absent", description="x")


def test_memory_commands_do_not_reach_images(memory: AgentMemory) -> None:
    image_id = memory.add_image(png(), "a chart", user_id="u")
    memory_id = memory.add_memory("the chart shows sales", user_id="u")
    with pytest.raises(RecordNotFoundError):
        memory.update_memory(image_id, content="changed")
    assert memory.delete_memory(image_id) == 0
    with pytest.raises(ValidationError, match="memory-like"):
        memory.link_records(memory_id, "memory", image_id, "image", "supports")
    with pytest.raises((LinkEndpointTypeError, RecordNotFoundError)):
        memory.link_records(memory_id, "memory", image_id, "memory", "supports")
    assert memory.list_images(user_id="u")[0].content == "a chart"


def test_images_are_never_expanded_by_num_hops(memory: AgentMemory) -> None:
    memory.add_image(png(), "a chart of sales", user_id="u")
    first = memory.add_memory("sales grew in march", user_id="u")
    second = memory.add_memory("sales fell in april", user_id="u")
    memory.link_records(second, "memory", first, "memory", "supersedes")
    hits = memory.search("sales chart", user_id="u", num_hops=2)
    for hit in hits:
        if hit.record.record_type is RecordType.IMAGE:
            assert not hit.linked_results


def test_thread_handles_keep_their_images_to_themselves(make_client: ClientFactory, store: MemoryStore) -> None:
    memory = make_client()
    mine = memory.create_thread(thread_id="t1", user_id="u", agent_id="a")
    other = memory.create_thread(thread_id="t2", user_id="u", agent_id="a")
    image_id = mine.add_image(png(), "a receipt")
    unchanged(store, lambda: mine.add_image(png(), "x", user_id="someone"), InvalidScopeError,
              "Image scope must match this thread.")
    assert [i.id for i in mine.list_images()] == [image_id]
    assert other.list_images() == []
    assert other.delete_image(image_id) == 0
    with pytest.raises(RecordNotFoundError):
        other.update_image(image_id, description="mine now")
    assert mine.list_images(image_id=image_id, include_bytes=True)[0].bytes == png()
    assert mine.delete_image(image_id) == 1


def test_async_twins_exist_for_the_image_commands(memory: AgentMemory) -> None:
    import asyncio

    async def run() -> list[Any]:
        image_id = await memory.add_image_async(png(), "async", user_id="u")  # type: ignore[attr-defined]
        listed = await memory.list_images_async(user_id="u")  # type: ignore[attr-defined]
        return [image_id, listed]

    image_id, listed = asyncio.run(run())
    assert [i.id for i in listed] == [image_id]


# -- images in messages ------------------------------------------------------------------------


def test_a_message_s_image_parts_are_stored_searched_and_read_back_in_order(make_client: ClientFactory) -> None:
    import base64

    memory = make_client(image_captioner=FakeCaptioner("a whiteboard with a timeline"))
    thread = memory.create_thread(thread_id="t1", user_id="u", agent_id="a")
    (mid,) = thread.add_messages([{
        "role": "user",
        "content": [
            {"type": "text", "text": "here is the plan"},
            {"type": "image", "data": base64.b64encode(png(seed=9)).decode("ascii")},
            {"type": "image", "bytes": jpeg(), "mime_type": "image/jpeg", "description": "a team photo"},
        ],
    }])
    (message,) = thread.get_messages()
    assert message.content == "here is the plan"  # the searchable text is the text parts
    kinds = [(p.type, getattr(p, "description", None), getattr(p, "bytes", None)) for p in message.parts]
    assert kinds == [
        ("text", None, None),
        ("image", "a whiteboard with a timeline", None),
        ("image", "a team photo", None),
    ]
    with_bytes = thread.get_messages(include_image_bytes=True)[0].parts
    assert [p.bytes for p in with_bytes[1:]] == [png(seed=9), jpeg()]
    first_image = message.parts[1].id
    one = thread.get_message(mid, included_image_ids=[first_image]).parts
    assert [getattr(p, "bytes", None) for p in one] == [None, png(seed=9), None]
    images = thread.list_images()
    assert {(i.message_id, i.content) for i in images} == {(mid, "a whiteboard with a timeline"), (mid, "a team photo")}
    hits = memory.search("timeline whiteboard", user_id="u", record_types=["image"])
    assert hits[0].record.id == first_image
    # the client's listing of messages across threads gives the same parts, bytes when asked
    (listed,) = memory.list_messages(user_id="u")
    assert [getattr(p, "bytes", None) for p in listed.parts] == [None, None, None]
    (listed,) = memory.list_messages(user_id="u", include_image_bytes=True)
    assert [getattr(p, "bytes", None) for p in listed.parts] == [None, png(seed=9), jpeg()]
    with pytest.raises(ValidationError, match="include_image_bytes must be True or False"):
        memory.list_messages(user_id="u", include_image_bytes="yes")  # type: ignore[arg-type]


def test_an_attached_image_goes_with_its_message_and_follows_its_ttl(make_client: ClientFactory) -> None:
    memory = make_client()
    thread = memory.create_thread(thread_id="t1", user_id="u")
    (mid,) = thread.add_messages([{
        "role": "user", "content": [{"type": "image", "bytes": png(), "description": "a ticket"}],
    }])
    (image,) = thread.list_images()
    with pytest.raises(ValidationError):
        memory.delete_image(image.id)
    with pytest.raises(ValidationError):
        memory.update_image(image.id, ttl_days=1)
    thread.update_message(mid, ttl_days=2)
    (moved,) = thread.list_images()
    assert moved.expires_at is not None and moved.expires_at == thread.get_message(mid).expires_at
    assert thread.delete_message(mid) == 1
    assert thread.list_images() == []


def test_a_refused_image_part_writes_no_message(make_client: ClientFactory, store: MemoryStore) -> None:
    data = png(20, 20)
    memory = make_client(image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=len(data) - 1))
    thread = memory.create_thread(thread_id="t1", user_id="u")
    part = {"type": "image", "bytes": data, "description": "x"}
    unchanged(store, lambda: thread.add_messages([{"role": "user", "content": [part]}]), ImageLimitError)
    unchanged(store, lambda: thread.add_messages([{"role": "user", "content": [{"type": "image", "bytes": png()}]}]),
              ConfigurationError, "An LLM is required for image description generation.")
    unchanged(store, lambda: thread.add_messages([{"role": "user", "content": [{"type": "image", "data": "@@"}]}]),
              ValidationError)


def test_the_images_of_one_append_count_as_one_caption_request(make_client: ClientFactory, store: MemoryStore) -> None:
    captioner = FakeCaptioner()
    limits = ImageInputLimitConfig(max_images_per_llm_request=1)
    memory = make_client(image_captioner=captioner, image_input_limit_config=limits)
    thread = memory.create_thread(thread_id="t1", user_id="u")
    two = [{"type": "image", "bytes": png()}, {"type": "image", "bytes": png(seed=1)}]
    unchanged(store, lambda: thread.add_messages([{"role": "user", "content": two}]), ImageLimitError,
              "LLM image count exceeds the configured limit.")
    assert captioner.seen == []


@pytest.mark.parametrize("context", ["disabled", "caption"])
def test_extraction_reads_image_captions_only_when_asked(
    make_client: ClientFactory, context: str
) -> None:
    from palimpsest.application import MemoryExtractionConfig
    from palimpsest.application.ports import ExtractionRequest

    seen: list[str] = []

    class Recorder:
        def extract(self, request: ExtractionRequest) -> list[Any]:
            seen.extend(m.content for m in request.target_messages)
            return []

    config = MemoryExtractionConfig(extraction_mode="INLINE", memory_extraction_image_context=context)
    memory = make_client(extractor=Recorder(), memory_extraction_config=config)
    thread = memory.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": [
        {"type": "text", "text": "my new bike"}, {"type": "image", "bytes": png(), "description": "a red bicycle"},
    ]}])
    assert seen == (["my new bike\n[image: a red bicycle]"] if context == "caption" else ["my new bike"])


def test_an_export_leaves_images_out_and_an_import_refuses_image_rows(memory: AgentMemory, store: MemoryStore) -> None:
    import io
    import json

    from palimpsest.application.transfer import decode_line, export_store
    from palimpsest.domain.errors import InvalidImportError

    memory.add_memory("the bike is red", user_id="u")
    memory.add_image(png(), "a red bicycle", user_id="u")
    out = io.StringIO()
    export_store(store, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["memory_type"] for line in lines if line["kind"] == "memory"] == ["memory"]
    row = next(line for line in lines if line["kind"] == "memory") | {"memory_type": "image"}
    with pytest.raises(InvalidImportError, match="images are not exported or imported yet"):
        decode_line(json.dumps(row), 1)


def test_an_expired_image_is_hidden_then_purged_with_its_bytes(
    memory: AgentMemory, store: MemoryStore, clock: Any
) -> None:
    from datetime import timedelta

    image_id = memory.add_image(png(), "a boarding pass", user_id="u", ttl_days=1)
    kept = memory.add_image(png(seed=2), "a passport photo", user_id="u")
    clock.advance(timedelta(days=2))
    assert [i.id for i in memory.list_images(user_id="u")] == [kept]
    assert [h.record.id for h in memory.search("boarding pass", user_id="u", record_types=["image"])] != [image_id]
    memory.purge_expired()
    with store.reading() as uow:
        assert uow.records.get(image_id) is None
        assert set(uow.images.get_many([image_id, kept])) == {kept}


def test_deleting_a_thread_deletes_its_images(make_client: ClientFactory, store: MemoryStore) -> None:
    memory = make_client()
    thread = memory.create_thread(thread_id="t1", user_id="u")
    standalone = thread.add_image(png(), "a floor plan")
    thread.add_messages([{"role": "user", "content": [{"type": "image", "bytes": jpeg(), "description": "a door"}]}])
    assert memory.delete_thread("t1") == 1
    with store.reading() as uow:
        assert uow.records.list(now=EPOCH, limit=None) == []
        assert uow.images.get_many([standalone]) == {}

