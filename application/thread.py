"""Application layer: ``MemoryThread``, the handle on one conversation (messages, summary, card, search)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import InvalidScopeError, MessageNotFoundError, ValidationError
from palimpsest.domain.images import ImageMimeType
from palimpsest.domain.model import (
    MAX_SPEAKER_LENGTH,
    SPEAKER_KEY,
    Message,
    Thread,
    check_id,
    check_metadata,
    check_text,
)
from palimpsest.domain.sentinel import ANY, NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, list_limit, parse_timestamp, reject_unknown_kwargs
from .asyncio_twins import with_async_twins
from .budgets import CHARS_PER_TOKEN, DEFAULT_SUMMARY_TOKEN_BUDGET
from .config import ThreadSettings, extraction_counter, stored_thread_settings
from .context_cards import CardPlan
from .images import ImageRecord, parse_image_part
from .messages import NewMessage
from .results import ContextCard, SearchResult, Summary
from .searching import SearchScope, SearchStrategy, resolve_scope
from .wiring import ApplicationServices

__all__ = ["ChatMessage", "MemoryThread", "ThreadSettings", "extraction_counter", "stored_thread_settings"]

DEFAULT_MESSAGE_WINDOW = 100


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A message to append: role and text, optionally an id, an event timestamp, metadata and
    the ``name`` of the participant who wrote it (kept as ``metadata["speaker"]``)."""

    role: str
    content: str
    timestamp: str | datetime | None = None
    metadata: dict[str, Any] | None = None
    id: str | None = None
    name: str | None = None


def _content_of(content: Any) -> tuple[str, tuple[tuple[int, object, object, object], ...]]:
    """Message content as its text and its image parts: a string, or a content-part list whose
    text parts make the text and whose image parts (:func:`parse_image_part`) are kept with
    their position."""
    if isinstance(content, str):
        return content, ()
    if isinstance(content, (list, tuple)):
        if not content:
            raise ValidationError("Message requires at least one content part.")
        texts = []
        images = []
        for position, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise ValidationError("Message content must be a string or a sequence of content parts.")
            kind = part.get("type", "text")
            if kind == "image":
                images.append((position, *parse_image_part(part)))
            elif kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                raise ValidationError('A content part is {"type": "text", "text": ...} or {"type": "image", ...}.')
        return "".join(texts), tuple(images)
    raise ValidationError("Message content must be a string or a sequence of content parts.")


def _text_of(content: Any) -> str:
    """The new text of an edited message (its images are not edited this way)."""
    text, images = _content_of(content)
    if images:
        raise ValidationError("update_message changes a message's text; its images stay as they are.")
    return text


def _per_message(value: Any, count: int, name: str) -> list[Any]:
    if isinstance(value, list):
        if len(value) != count:
            raise ValidationError(f"When using a list for {name}, its length must match the messages.")
        return value
    return [value] * count


def _with_speaker(metadata: dict[str, Any] | None, name: Any) -> dict[str, Any] | None:
    """``metadata`` with the message's ``name`` (OpenAI's participant name) as its speaker."""
    if name is None:
        return metadata
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("Message name must be a non-empty string or None.")
    if len(name) > MAX_SPEAKER_LENGTH:
        raise ValidationError(f"Message name must be at most {MAX_SPEAKER_LENGTH} characters.")
    check_text(name, "message name")
    current = (metadata or {}).get(SPEAKER_KEY)
    if current is not None and current != name:
        raise ValidationError(
            f"Message name {name!r} differs from its metadata[{SPEAKER_KEY!r}] {current!r}; give one of them."
        )
    return {**(metadata or {}), SPEAKER_KEY: name}


def _parse_message(
    raw: Any,
) -> tuple[str, str, datetime | None, dict[str, Any] | None, str | None, tuple[Any, ...]]:
    role: Any  # checked below, whatever the input was
    name: Any = None
    if isinstance(raw, ChatMessage):
        role, content, ts, meta, mid, name = raw.role, raw.content, raw.timestamp, raw.metadata, raw.id, raw.name
    elif isinstance(raw, Message):
        role, content, ts, meta, mid = raw.role, raw.content, raw.timestamp, raw.metadata, raw.id
    elif isinstance(raw, Mapping):
        if "content" not in raw:
            raise ValidationError("Each thread message must include content.")
        role, content, name = raw.get("role"), raw["content"], raw.get("name")
        ts, meta, mid = raw.get("timestamp"), raw.get("metadata"), raw.get("id")
    else:
        raise ValidationError("messages must be dicts or ChatMessage objects.")
    if not isinstance(role, str) or not role.strip():
        raise ValidationError("Message role must be a non-empty string.")
    text, images = _content_of(content)
    return role, text, parse_timestamp(ts), _with_speaker(check_metadata(meta), name), mid, images


@with_async_twins(
    "add_messages",
    "get_messages",
    "get_message",
    "update_message",
    "delete_message",
    "get_summary",
    "get_context_card",
    "search",
    "add_memory",
    "update_memory",
    "delete_memory",
    "link_records",
    "update_record_link",
    "delete_record_link",
    "wait_for_memory_extraction",
    # images part (re-home with the facade's other methods)
    "add_image",
    "update_image",
    "delete_image",
    "list_images",
)
class MemoryThread:
    """One conversation: its messages, durable summary, context cards, and scoped memory."""

    def __init__(self, services: ApplicationServices, thread: Thread, settings: ThreadSettings) -> None:
        self._services = services
        self._thread = thread
        self._settings = settings

    @property
    def thread_id(self) -> str:
        return self._thread.id

    @property
    def user_id(self) -> str | None:
        return self._thread.user_id

    @property
    def agent_id(self) -> str | None:
        return self._thread.agent_id

    @property
    def metadata(self) -> dict[str, Any] | None:
        return self._thread.metadata

    @property
    def settings(self) -> ThreadSettings:
        return self._settings

    # -- messages --------------------------------------------------------------------------

    def add_messages(
        self,
        messages: Sequence[Mapping[str, Any] | ChatMessage],
        metadata: Mapping[str, Any] | None | list[Any] | NotSetType = NOTSET,
        ttl_days: float | None | list[Any] | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | list[Any] | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> list[str]:
        """Append messages (all committed together, before any model call); returns their ids."""
        reject_unknown_kwargs("add_messages", kwargs)
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise ValidationError("messages must be a list of messages.")
        parsed = [_parse_message(m) for m in messages]
        if not parsed:
            return []
        given = [p[4] for p in parsed]
        if any(i is None for i in given) and any(i is not None for i in given):
            raise ValidationError("message ids must be either all set or all omitted.")
        ids = [check_id(i, "message id") if i is not None else self._services.new_id() for i in given]
        if len(set(ids)) != len(ids):
            raise ValidationError("Duplicate message ids are not allowed.")
        shared_meta = _per_message(NOTSET if isinstance(metadata, NotSetType) else metadata, len(parsed), "metadata")
        ttls = _per_message(ttl_days, len(parsed), "ttl_days")
        anchors = _per_message(ttl_anchor, len(parsed), "ttl_anchor")
        rows = []
        for (role, text, ts, meta, _, images), mid, extra, ttl, anchor in zip(parsed, ids, shared_meta, ttls, anchors):
            if not isinstance(extra, NotSetType) and extra is not None:
                meta = {**check_metadata(extra), **(meta or {})}  # type: ignore[dict-item]
            rows.append(NewMessage(mid, role, text, ts, meta, ttl, anchor, images))
        self._services.messages.append(self._thread, self._settings, rows)
        return ids

    def get_messages(
        self,
        *,
        start: int | NotSetType = NOTSET,
        end: int | None | NotSetType = NOTSET,
        include_image_bytes: bool | NotSetType = NOTSET,
    ) -> list[Message]:
        """Messages oldest first. Both omitted: the newest 100. ``start`` alone: 100 from it.
        ``end`` is exclusive (``None``/-1: to the end); a negative ``start`` counts from the end.
        A message with images has its content ``parts`` in order (image bytes only with
        ``include_image_bytes=True``)."""
        if include_image_bytes is not True and include_image_bytes is not False and not isinstance(
            include_image_bytes, NotSetType
        ):
            raise ValidationError("include_image_bytes must be True or False.")
        return self._services.messages.with_parts(
            self._window(start, end), image_bytes=include_image_bytes is True
        )

    def _window(self, start: int | NotSetType, end: int | None | NotSetType) -> list[Message]:
        for name, value in (("start", start), ("end", end)):
            if not isinstance(value, NotSetType) and value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValidationError(f"{name} must be an integer.")
        if start is None:
            raise ValidationError("start must be an integer; omit it for the newest messages.")
        messages_service = self._services.messages
        if isinstance(start, NotSetType) and isinstance(end, NotSetType):
            return messages_service.visible(self._thread, last_n=DEFAULT_MESSAGE_WINDOW)
        messages = messages_service.visible(self._thread)
        first = 0 if isinstance(start, NotSetType) else start
        if first < 0:
            first = max(0, len(messages) + first)
        if isinstance(end, NotSetType):
            stop = first + DEFAULT_MESSAGE_WINDOW
        elif end is None or end == -1:
            stop = len(messages)
        else:
            stop = end
        return messages[first:stop]

    def get_message(self, message_id: str, *, included_image_ids: Iterable[str] | NotSetType = NOTSET) -> Message:
        """One message of this thread; with images, its content ``parts`` (bytes only for the
        images named in ``included_image_ids``)."""
        check_id(message_id, "message_id")
        if isinstance(included_image_ids, NotSetType):
            wanted: frozenset[str] = frozenset()
        elif isinstance(included_image_ids, (str, bytes)) or not isinstance(included_image_ids, Iterable):
            raise ValidationError("included_image_ids must be a list of image ids.")
        else:
            wanted = frozenset(check_id(i, "image id") for i in included_image_ids)
        return self._services.messages.get(self._thread, message_id, image_bytes=wanted)

    def update_message(
        self,
        message_id: str,
        content: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Edit a message's text, metadata or TTL (role and time are immutable)."""
        reject_unknown_kwargs("update_message", kwargs)
        if content is None:
            raise ValidationError("content must be provided when updating a message; omit content to preserve it.")
        text = NOTSET if isinstance(content, NotSetType) else _text_of(content)
        meta = NOTSET if isinstance(metadata, NotSetType) else check_metadata(metadata)
        message = self.get_message(message_id)
        self._services.messages.update(
            self._thread, message, content=text, metadata=meta, ttl_days=ttl_days, ttl_anchor=ttl_anchor
        )
        return message_id

    def delete_message(self, message_id: str) -> int:
        """Delete one raw message (memories derived from it stay)."""
        try:
            message = self.get_message(message_id)
        except MessageNotFoundError:
            return 0
        return int(self._services.messages.delete(self._thread, message))

    # -- summary and context card ------------------------------------------------------------

    def get_summary(
        self, except_last: int | NotSetType = NOTSET, token_budget: int | None | NotSetType = NOTSET, **kwargs: Any
    ) -> Summary:
        """The thread's summary (refreshed when stale); ``except_last=N`` summarises all but the
        newest N messages transiently. ``token_budget`` (default 1000) truncates the text."""
        reject_unknown_kwargs("get_summary", kwargs)
        skip = 0 if isinstance(except_last, NotSetType) else except_last
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
            raise ValidationError("except_last must be a non-negative integer.")
        budget = DEFAULT_SUMMARY_TOKEN_BUDGET if isinstance(token_budget, NotSetType) else token_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
            raise ValidationError("token_budget must be an integer or None.")
        summary = self._services.cards.summary_text(self._thread, self._settings, skip, fallback_message_count=5)
        text = summary.text
        if budget is not None and budget > 0 and len(text) > budget * CHARS_PER_TOKEN:
            text = "(truncated)\n" + text[: int(budget * CHARS_PER_TOKEN)]
        return Summary(text, summary.topics)

    def get_context_card(
        self,
        fallback_message_count: int | NotSetType = NOTSET,
        max_relevant_results: int | NotSetType = NOTSET,
        max_recent_messages: int | NotSetType = NOTSET,
        except_last_messages: int | NotSetType = NOTSET,
        min_relevant_results_by_type: Mapping[str, int] | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        include_invalid_results: bool | NotSetType = NOTSET,
        token_budget: int | None | NotSetType = NOTSET,
        soft_token_budget: int | None | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> ContextCard:
        """Summary, topics, the most relevant records and (optionally) the newest messages."""
        reject_unknown_kwargs("get_context_card", kwargs)
        plan = CardPlan.validate(
            fallback_message_count,
            max_relevant_results,
            max_recent_messages,
            except_last_messages,
            min_relevant_results_by_type,
            include_invalid_results,
        )
        return self._services.cards.card(
            self._thread, self._settings, plan, metadata_filter, token_budget, soft_token_budget
        )

    # -- search and thread-scoped memory ------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        exact_user_match: bool | NotSetType = NOTSET,
        exact_agent_match: bool | NotSetType = NOTSET,
        exact_thread_match: bool | NotSetType = NOTSET,
        max_results: int | NotSetType = NOTSET,
        token_budget: int | None | NotSetType = NOTSET,
        soft_token_budget: int | None | NotSetType = NOTSET,
        record_types: Iterable[str] | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        num_hops: int | NotSetType = NOTSET,
        max_linked_results: int | NotSetType = NOTSET,
        include_invalid_results: bool | NotSetType = NOTSET,
        scope: SearchScope | NotSetType = NOTSET,
        search_strategy: SearchStrategy | NotSetType = NOTSET,
    ) -> list[SearchResult]:
        """Search with the thread's defaults: its user and agent exactly, any of their threads
        (``exact_thread_match=True`` keeps to this thread); ``search_strategy`` as in
        :meth:`AgentMemory.search`.

        A thread handle never reads outside its user: a ``scope`` without a user means the
        thread's, and another user (or none, for a thread with one) or
        ``exact_user_match=False`` is an ``InvalidScopeError``."""
        if isinstance(scope, NotSetType):
            user_id = self.user_id if isinstance(user_id, NotSetType) else user_id
            agent_id = self.agent_id if isinstance(agent_id, NotSetType) else agent_id
            thread_id = self.thread_id if isinstance(thread_id, NotSetType) else thread_id
            exact_user_match = True if isinstance(exact_user_match, NotSetType) else exact_user_match
            exact_agent_match = True if isinstance(exact_agent_match, NotSetType) else exact_agent_match
        elif isinstance(scope, SearchScope) and isinstance(scope.user_id, NotSetType):
            scope = replace(scope, user_id=self.user_id)
        resolved = resolve_scope(
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            exact_user_match=exact_user_match,
            exact_agent_match=exact_agent_match,
            exact_thread_match=exact_thread_match,
            scope=scope,
            require_user=False,
        )
        if resolved.user_id is ANY or resolved.user_id != self.user_id:
            raise InvalidScopeError(
                "A thread handle searches its own user's records only: leave user_id unset (or give "
                "the thread's) and keep exact_user_match; search other users through AgentMemory.search."
            )
        return self._services.searcher.run(
            query,
            now=self._services.clock.now(),
            scope=resolved,
            max_results=max_results,
            record_types=record_types,
            metadata_filter=metadata_filter,
            num_hops=num_hops,
            max_linked_results=max_linked_results,
            include_invalid_results=include_invalid_results,
            token_budget=token_budget,
            soft_token_budget=soft_token_budget,
            search_strategy=search_strategy,
        )

    def add_memory(
        self,
        content: str,
        *,
        memory_type: str | NotSetType = NOTSET,
        memory_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        memory_id_to_link: str | NotSetType = NOTSET,
        link_type: str | NotSetType = NOTSET,
        link_id: str | NotSetType = NOTSET,
        link_timestamp: str | datetime | None | NotSetType = NOTSET,
        link_metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        autonomous_linking: bool | NotSetType = NOTSET,
    ) -> str:
        """A memory owned by this thread (its user, agent and thread); a link target must be
        owned by this thread too."""
        return self._services.records.add_memory(
            content,
            memory_type=memory_type,
            user_id=self.user_id,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
            memory_id=memory_id,
            metadata=metadata,
            timestamp=timestamp,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
            memory_id_to_link=memory_id_to_link,
            link_type=link_type,
            link_id=link_id,
            link_timestamp=link_timestamp,
            link_metadata=link_metadata,
            require_thread=self.thread_id,
            autonomous_linking=autonomous_linking,
        )

    def update_memory(
        self,
        memory_id: str,
        content: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        reject_unknown_kwargs("update_memory", kwargs)
        return self._services.records.update_memory(
            memory_id, content, metadata, timestamp, ttl_days, ttl_anchor, owner_thread=self.thread_id
        )

    def delete_memory(self, memory_id: str) -> int:
        """Delete one of this thread's memories (0 for any other record)."""
        check_id(memory_id, "memory_id")
        return int(self._services.memory.delete_record(memory_id, owner_thread=self.thread_id))

    def link_records(
        self,
        source_record_id: str,
        source_record_type: str,
        target_record_id: str,
        target_record_type: str,
        relation_type: str,
        opposite_relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> str:
        return self._services.records.link_records(
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            opposite_relation_type,
            relation_id,
            timestamp,
            metadata,
            owner_thread=self.thread_id,
        )

    def update_record_link(
        self,
        relation_id: str,
        relation_type: str | NotSetType = NOTSET,
        opposite_relation_type: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> int:
        return self._services.records.update_record_link(
            relation_id, relation_type, opposite_relation_type, timestamp, metadata, owner_thread=self.thread_id
        )

    def delete_record_link(
        self,
        source_record_id: str | NotSetType = NOTSET,
        source_record_type: str | NotSetType = NOTSET,
        target_record_id: str | NotSetType = NOTSET,
        target_record_type: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
    ) -> int:
        return self._services.records.delete_record_link(
            source_record_id,
            source_record_type,
            target_record_id,
            target_record_type,
            relation_type,
            relation_id,
            owner_thread=self.thread_id,
        )

    def wait_for_memory_extraction(self, timeout: float | None = 300.0) -> None:
        """Wait for this thread's background extraction started by this client."""
        self._services.runner.wait(timeout, thread_id=self.thread_id)

    # -- images (images part: thin facades over ImageService; re-home with the others) -------

    def add_image(
        self,
        image: bytes,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        image_id: str | NotSetType = NOTSET,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Store a standalone image of this thread (its user and agent); a scope given here must
        be this thread's ("Image scope must match this thread.")."""
        reject_unknown_kwargs("add_image", kwargs)
        return self._services.images.add_image(
            image, description=description, mime_type=mime_type, image_id=image_id, user_id=user_id,
            agent_id=agent_id, thread_id=thread_id, metadata=metadata, timestamp=timestamp, ttl_days=ttl_days,
            ttl_anchor=ttl_anchor, limits=self._settings.image_limits, owner=self._thread,
        )

    def update_image(
        self,
        image_id: str,
        image: bytes | NotSetType = NOTSET,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Change one of this thread's images (see ``AgentMemory.update_image``)."""
        reject_unknown_kwargs("update_image", kwargs)
        return self._services.images.update_image(
            image_id, image=image, description=description, mime_type=mime_type, metadata=metadata,
            timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor, limits=self._settings.image_limits,
            owner=self._thread,
        )

    def delete_image(self, image_id: str) -> int:
        """Delete one of this thread's standalone images: 1, or 0 when it has none by that id."""
        return self._services.images.delete_image(image_id, owner=self._thread)

    def list_images(
        self,
        image_id: str | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        include_bytes: bool | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[ImageRecord]:
        """This thread's images, oldest first; ``include_bytes=True`` only for one ``image_id``."""
        return self._services.images.list_images(
            image_id=image_id, metadata_filter=metadata_filter, include_bytes=include_bytes,
            limit=list_limit(limit), owner=self._thread,
        )
