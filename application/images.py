"""Application layer: images — standalone and message-attached, their limits and captions.

An image is stored as a record row of type ``image`` whose content is its description (so
search by caption, scopes, expiry and metadata filters work as for any record) plus its bytes
and MIME type beside it (:class:`~palimpsest.domain.images.StoredImage`). Every check runs
before anything is written: the bytes (format, pixels, no animation), the limits of
:class:`~palimpsest.application.config.ImageInputLimitConfig` (resolved request → thread →
client → default), the scope, and the caption, which a configured
:class:`~palimpsest.application.ports.ImageCaptioner` writes inline when the caller gives
none. Images are never linked and never listed as memories.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from palimpsest.domain.errors import (
    ConfigurationError,
    ImageLimitError,
    InvalidScopeError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.images import (
    ImageMimeType,
    ImagePart,
    StoredImage,
    TextPart,
    check_image_bytes,
    detect_mime_type,
)
from palimpsest.domain.model import (
    MemoryRecord,
    Message,
    RecordType,
    Thread,
    check_id,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import resolve_expiry
from .config import ImageInputLimitConfig, MemoryRetentionConfig
from .embedding import EmbeddingHelper
from .ports import ImageCaptioner
from .requests import (
    AddImage,
    ImageInput,
    ListImages,
    UpdateImage,
    image_description,
    parse_image_part,
    raw_image_bytes,
)

__all__ = [
    "LLM_REQUIRED_MESSAGE",
    "ImageParts",
    "ImageRecord",
    "ImageService",
    "check_request_images",
    "parse_image_part",
    "raw_image_bytes",
    "with_image_captions",
]

LLM_REQUIRED_MESSAGE: Final = "An LLM is required for image description generation."
SCOPE_REQUIRED_MESSAGE: Final = "An image owner scope is required."
THREAD_SCOPE_MESSAGE: Final = "Image scope must match this thread."
RAW_SIZE_MESSAGE: Final = "Raw image size exceeds the configured limit."
COUNT_MESSAGE: Final = "LLM image count exceeds the configured limit."
TOTAL_MESSAGE: Final = "LLM raw image bytes exceed the configured aggregate limit."


@dataclass(frozen=True, slots=True)
class ImageRecord:
    """An image as the API returns it: its record (``content`` is the description) and, when
    asked for, its bytes. ``message_id`` names the message it is attached to, if any."""

    id: str
    content: str
    mime_type: ImageMimeType
    created_at: datetime
    updated_at: datetime
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    timestamp: datetime | None = None
    expires_at: datetime | None = None
    message_id: str | None = None
    bytes: bytes | None = None

    record_type: RecordType = RecordType.IMAGE

    @property
    def description(self) -> str:
        return self.content

    @classmethod
    def of(cls, record: MemoryRecord, image: StoredImage) -> ImageRecord:
        return cls(
            id=record.id,
            content=record.content,
            mime_type=image.mime_type,
            created_at=record.created_at,
            updated_at=record.updated_at,
            user_id=record.user_id,
            agent_id=record.agent_id,
            thread_id=record.thread_id,
            metadata=record.metadata,
            timestamp=record.timestamp,
            expires_at=record.expires_at,
            message_id=image.message_id,
            bytes=image.data,
        )


def _checked_image(
    data: bytes, mime_type: ImageMimeType | None | NotSetType, limits: ImageInputLimitConfig
) -> ImageMimeType:
    """The image's MIME type (detected when ``NOTSET`` or ``None``), after the size limit and
    the check of its bytes."""
    if len(data) > limits.limit("max_raw_image_bytes"):
        raise ImageLimitError(RAW_SIZE_MESSAGE)
    mime = detect_mime_type(data) if mime_type is None or isinstance(mime_type, NotSetType) else mime_type
    check_image_bytes(data, mime)
    return mime


def check_request_images(sizes: Sequence[int], limits: ImageInputLimitConfig) -> None:
    """The images one model request would carry (their byte sizes) against the limits."""
    if len(sizes) > limits.limit("max_images_per_llm_request"):
        raise ImageLimitError(COUNT_MESSAGE)
    if sum(sizes) > limits.limit("max_total_raw_image_bytes_per_llm_request"):
        raise ImageLimitError(TOTAL_MESSAGE)


def with_image_captions(uow: UnitOfWork, messages: Sequence[Message]) -> list[Message]:
    """``messages`` as text for a model that reads no images: each image part of a message is
    written ``[image: <description>]`` at its place among the text. Description texts are user
    data like the message's (the prompt's untrusted-content rule covers them)."""
    out = []
    for message in ImageService.parts_of(uow, messages, False):
        if not message.parts:
            out.append(message)
            continue
        pieces = [p.text if isinstance(p, TextPart) else f"[image: {p.description}]" for p in message.parts]
        out.append(replace(message, content="\n".join(pieces), parts=()))
    return out


@dataclass(frozen=True, slots=True)
class ImageParts:
    """A checked image content part, before anything is written: the message it belongs to (its
    index in the append), its position among that message's parts, its bytes, MIME type and
    description (``None`` until captioned)."""

    message: int
    position: int
    data: bytes
    mime_type: ImageMimeType
    description: str | None


class ImageService:
    """Add, update, delete and list images (client and thread handles call it alike; a thread
    handle passes its thread as ``owner``, and its scope must match)."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        embeddings: EmbeddingHelper,
        retention: MemoryRetentionConfig,
        captioner: ImageCaptioner | None,
        limits: ImageInputLimitConfig | None,
        new_id: Callable[[], str],
    ) -> None:
        self._store = store
        self._clock = clock
        self._embeddings = embeddings
        self._retention = retention
        self._captioner = captioner
        self._limits = ImageInputLimitConfig.resolve(limits)
        self._new_id = new_id

    @property
    def limits(self) -> ImageInputLimitConfig:
        """The client's resolved limits (what a thread without its own inherits)."""
        return self._limits

    # -- captions ---------------------------------------------------------------------------

    def caption(self, data: bytes, mime_type: ImageMimeType, limits: ImageInputLimitConfig) -> str:
        """A description from the captioner (one image, one request)."""
        if self._captioner is None:
            raise ConfigurationError(LLM_REQUIRED_MESSAGE)
        check_request_images([len(data)], limits)
        text = self._captioner.describe(data, mime_type.value)
        return image_description(text.strip() if isinstance(text, str) else text)

    def message_parts(self, parts: Sequence[tuple[int, ImageInput]], limits: ImageInputLimitConfig) -> list[ImageParts]:
        """Check the image parts of the messages of one append (each with the index of its
        message) against the limits before anything is written; the ones without a description
        are captioned, and together they count as one model request for the limits."""
        checked = [
            ImageParts(message, part.position, part.data, _checked_image(part.data, part.mime_type, limits), part.caption)
            for message, part in parts
        ]
        uncaptioned = [p for p in checked if p.description is None]
        if uncaptioned:
            if self._captioner is None:
                raise ConfigurationError(LLM_REQUIRED_MESSAGE)
            check_request_images([len(p.data) for p in uncaptioned], limits)
            checked = [
                p if p.description is not None else replace(p, description=self.caption(p.data, p.mime_type, limits))
                for p in checked
            ]
        return checked

    def attach_in(
        self, uow: UnitOfWork, message_id: str, scope: Thread, expires_at: datetime | None,
        parts: Sequence[ImageParts], now: datetime,
    ) -> list[str]:
        """Store a message's checked image parts as attached images, inside the caller's unit
        of work (the message's scope and expiry); returns their ids."""
        ids: list[str] = []
        vectors = self._embeddings.documents_when_up([p.description or "" for p in parts])
        self._embeddings.wrote(vectors)  # committed with the caller's unit of work
        for part, vector in zip(parts, vectors, strict=True):
            image_id = self._new_id()
            record = MemoryRecord(
                id=image_id,
                record_type=RecordType.IMAGE,
                content=part.description or "",
                created_at=now,
                updated_at=now,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                thread_id=scope.id,
                expires_at=expires_at,
            )
            uow.records.add(record, embedding=vector)
            uow.images.add(StoredImage(image_id, part.mime_type, part.data, message_id, part.position))
            ids.append(image_id)
        return ids

    # -- commands ---------------------------------------------------------------------------

    def add_image(
        self, request: AddImage, *, limits: ImageInputLimitConfig | None = None, owner: Thread | None = None
    ) -> str:
        """Check everything (bytes, limits, scope, caption), then store the record and its bytes
        in one unit of work; returns the image's id. ``limits`` are the call's (over the
        client's); a thread handle passes its thread as ``owner``."""
        resolved = ImageInputLimitConfig.resolve(limits, self._limits)
        data = request.image
        mime = _checked_image(data, request.mime, resolved)
        scope = self._scope(request.scope, owner)
        rid = self._new_id() if request.image_id is None or isinstance(request.image_id, NotSetType) else request.image_id
        now = self._clock.now()
        event_time = request.event_time
        expires = resolve_expiry(
            now=now, ttl_days=request.ttl_days, ttl_anchor=request.ttl_anchor, timestamp=event_time,
            retention=self._retention,
        )
        thread = self._thread_of(scope)
        description = request.description
        text = self.caption(data, mime, resolved) if description is None or isinstance(description, NotSetType) else description
        vector = self._embeddings.documents_when_up([text])[0]
        with self._store.unit_of_work() as uow:
            if thread is not None and uow.threads.get(thread.id) is None:
                raise ThreadNotFoundError(f"No thread found with id {thread.id!r}.")
            record = MemoryRecord(
                id=rid,
                record_type=RecordType.IMAGE,
                content=text,
                created_at=now,
                updated_at=now,
                metadata=None if isinstance(request.metadata, NotSetType) else request.metadata,
                timestamp=event_time,
                expires_at=expires,
                user_id=scope["user_id"],
                agent_id=scope["agent_id"],
                thread_id=scope["thread_id"],
            )
            uow.records.add(record, embedding=vector)
            uow.images.add(StoredImage(rid, mime, data))
            uow.commit()
        self._embeddings.wrote([vector])
        return rid

    def update_image(
        self, request: UpdateImage, *, limits: ImageInputLimitConfig | None = None, owner: Thread | None = None
    ) -> str:
        """Partial update: new bytes (``image`` and ``mime_type`` together), description
        (``None`` regenerates it), metadata, timestamp, time to live. Checked before writing."""
        rid = request.image_id
        image, description = request.image, request.description
        resolved = ImageInputLimitConfig.resolve(limits, self._limits)
        now = self._clock.now()
        record, stored = self._visible(rid, now, owner, include_bytes=description is None and isinstance(image, NotSetType))
        if stored.message_id is not None and request.changes_expiry:
            raise ValidationError(
                "The time to live of an image attached to a message follows the message: update the message instead."
            )
        new_image: StoredImage | None = None
        if not isinstance(image, NotSetType):
            new_image = StoredImage(rid, _checked_image(image, request.mime, resolved), image)
        changes: dict[str, Any] = {"updated_at": now}
        if description is None:
            source = new_image if new_image is not None else stored
            if source.data is None:  # pragma: no cover - loaded above
                raise ValidationError("Image bytes are required for description generation.")
            changes["content"] = self.caption(source.data, source.mime_type, resolved)
        elif not isinstance(description, NotSetType):
            changes["content"] = description
        if not isinstance(request.metadata, NotSetType):
            changes["metadata"] = request.metadata
        event_time = record.timestamp
        if not isinstance(request.event_time, NotSetType):
            event_time = changes["timestamp"] = request.event_time
        if request.changes_expiry:
            changes["expires_at"] = resolve_expiry(
                now=now, ttl_days=request.ttl_days, ttl_anchor=request.ttl_anchor, timestamp=event_time,
                retention=self._retention,
            )
        embedding: Any = NOTSET
        if "content" in changes and changes["content"] != record.content:
            embedding = self._embeddings.documents_when_up([changes["content"]])[0]
        updated = replace(record, **changes)
        with self._store.unit_of_work() as uow:
            current = uow.records.get(rid, now=now)
            if current is None or current.record_type is not RecordType.IMAGE:
                raise RecordNotFoundError(f"No image with id {rid!r}.")
            uow.records.update(updated, embedding=embedding)
            if new_image is not None:
                uow.images.replace(new_image)
            uow.commit()
        if embedding is not NOTSET:
            self._embeddings.wrote([embedding])
        return rid

    def delete_image(self, image_id: str, *, owner: Thread | None = None) -> int:
        """Delete a standalone image (1), or 0 when there is none; an image attached to a message
        goes with its message, not alone."""
        rid = check_id(image_id, "image_id")
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            record = uow.records.get(rid, now=now)
            if record is None or record.record_type is not RecordType.IMAGE or not self._owned(record, owner):
                return 0
            stored = uow.images.get_many([rid]).get(rid)
            if stored is not None and stored.message_id is not None:
                raise ValidationError("An image attached to a message cannot be deleted alone: delete the message.")
            uow.records.delete(rid)
            uow.commit()
        return 1

    def list_images(self, request: ListImages, *, owner: Thread | None = None) -> list[ImageRecord]:
        """Visible images matching the filters, oldest first (``limit`` keeps the newest). At
        least one scope must be a value (not omitted, not ``None``; a thread handle's is its
        thread's); bytes are loaded only for one named image (``image_id``)."""
        scope = request.scope if owner is None else {"user_id": owner.user_id, "agent_id": owner.agent_id, "thread_id": owner.id}
        if not any(isinstance(v, str) for v in scope.values()):
            raise InvalidScopeError(SCOPE_REQUIRED_MESSAGE)
        rid = None if isinstance(request.image_id, NotSetType) else request.image_id
        now = self._clock.now()
        with self._store.reading() as uow:
            records = uow.records.list(
                now=now,
                record_types=frozenset({RecordType.IMAGE}),
                metadata_filter=request.metadata_filter,
                limit=None if rid is not None else request.limit,  # type: ignore[arg-type]
                **scope,
            )
            if rid is not None:
                records = [r for r in records if r.id == rid]
            images = uow.images.get_many([r.id for r in records], include_bytes=request.include_bytes is True)
        return [ImageRecord.of(r, images[r.id]) for r in records if r.id in images]

    @staticmethod
    def parts_of(uow: UnitOfWork, messages: Sequence[Message], include_bytes: bool | frozenset[str]) -> list[Message]:
        """``messages`` with the content parts of those that have images (``Message.parts``):
        the text, then each image at its position; bytes for every image (``True``) or for the
        named ones. Messages without images come back as they are."""
        attached = uow.images.of_messages([m.id for m in messages])
        if not attached:
            return list(messages)
        image_ids = [i.record_id for images in attached.values() for i in images]
        records = uow.records.get_many(image_ids)
        wanted = image_ids if include_bytes is True else [i for i in image_ids if include_bytes and i in include_bytes]
        loaded = uow.images.get_many(wanted, include_bytes=True) if wanted else {}
        out = []
        for message in messages:
            images = attached.get(message.id)
            if not images:
                out.append(message)
                continue
            placed: dict[int, Any] = {}
            for image in images:
                record = records.get(image.record_id)
                data = loaded[image.record_id].data if image.record_id in loaded else None
                placed[image.position or 0] = ImagePart(
                    image.record_id, image.mime_type, record.content if record is not None else "", data
                )
            if message.content:
                free = next(p for p in range(len(placed) + 1) if p not in placed)
                placed[free] = TextPart(message.content)
            out.append(replace(message, parts=tuple(placed[p] for p in sorted(placed))))
        return out

    @staticmethod
    def detach_in(uow: UnitOfWork, message_id: str, *, expires_at: datetime | None | NotSetType = NOTSET) -> None:
        """Inside the caller's unit of work: delete the images attached to a message (``NOTSET``)
        or move their expiry to the message's new one."""
        attached = uow.images.of_messages([message_id]).get(message_id, [])
        if not attached:
            return
        if isinstance(expires_at, NotSetType):
            for image in attached:
                uow.records.delete(image.record_id)
            return
        records = uow.records.get_many([i.record_id for i in attached])
        for record in records.values():
            uow.records.update(replace(record, expires_at=expires_at))

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _owned(record: MemoryRecord, owner: Thread | None) -> bool:
        return owner is None or (
            record.thread_id == owner.id and record.user_id == owner.user_id and record.agent_id == owner.agent_id
        )

    def _visible(
        self, rid: str, now: datetime, owner: Thread | None, *, include_bytes: bool
    ) -> tuple[MemoryRecord, StoredImage]:
        with self._store.reading() as uow:
            record = uow.records.get(rid, now=now)
            stored = None if record is None else uow.images.get_many([rid], include_bytes=include_bytes).get(rid)
        if record is None or stored is None or record.record_type is not RecordType.IMAGE or not self._owned(record, owner):
            raise RecordNotFoundError(f"No image with id {rid!r}.")
        return record, stored

    @staticmethod
    def _scope(given: Mapping[str, str | None | NotSetType], owner: Thread | None) -> dict[str, str | None]:
        """The image's user, agent and thread (``given`` checked by the request): at least one
        must be a value; a thread's user and agent are authoritative (omitted ones come from
        it, others must match)."""
        if owner is not None:
            expected = {"user_id": owner.user_id, "agent_id": owner.agent_id, "thread_id": owner.id}
            if any(not isinstance(v, NotSetType) and v != expected[k] for k, v in given.items()):
                raise InvalidScopeError(THREAD_SCOPE_MESSAGE)
            return expected
        values = {k: v if isinstance(v, str) else None for k, v in given.items()}
        if not any(isinstance(v, str) for v in values.values()):
            raise InvalidScopeError(SCOPE_REQUIRED_MESSAGE)
        return values  # a thread named here is checked against the store by _thread_of

    def _thread_of(self, scope: dict[str, str | None]) -> Thread | None:
        """The thread an image is filed under (its user and agent fill omitted ones and must
        match given ones); ``None`` for an image without a thread."""
        thread_id = scope.get("thread_id")
        if thread_id is None:
            return None
        with self._store.reading() as uow:
            thread = uow.threads.get(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        for name in ("user_id", "agent_id"):
            value = scope.get(name)
            if value is None:
                scope[name] = getattr(thread, name)
            elif value != getattr(thread, name):
                raise InvalidScopeError(
                    f"An image of thread {thread_id!r} must have that thread's user_id and agent_id "
                    "(omit them to take the thread's)."
                )
        return thread
