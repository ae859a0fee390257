"""Application layer: ``MemoryThread``, the handle on one conversation (messages, summary, card, search)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from palimpsest.domain.errors import MessageNotFoundError, ValidationError
from palimpsest.domain.model import Message, Thread, check_id
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, reject_unknown_kwargs
from .asyncio_twins import with_async_twins
from .budgets import CHARS_PER_TOKEN, DEFAULT_SUMMARY_TOKEN_BUDGET
from .config import (
    ImageInputLimitConfig,
    MemorySearchConfig,
    ThreadSettings,
    extraction_counter,
    search_defaults,
    stored_thread_settings,
)
from .facade import MemoryFacade
from .images import ImageRecord
from .observability import observed_operations
from .requests import AppendMessages, CardRequest, ChatMessage, ListImages, UpdateMessage
from .results import ContextCard, Summary
from .wiring import ApplicationServices

__all__ = ["ChatMessage", "MemoryThread", "ThreadSettings", "extraction_counter", "stored_thread_settings"]

DEFAULT_MESSAGE_WINDOW = 100


@with_async_twins(
    "add_messages",
    "get_messages",
    "get_message",
    "update_message",
    "delete_message",
    "get_summary",
    "get_context_card",
    "wait_for_memory_extraction",
    "list_images",
)
@observed_operations("thread")
class MemoryThread(MemoryFacade):
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

    @property
    def max_message_token_length(self) -> int:
        """The prompt-time cap on one message (tokens; the stored text is never cut)."""
        return self._settings.max_message_token_length

    @property
    def message_shortening_input_token_limit(self) -> int:
        """The reference's cap on a model call shortening an oversized message (stored; prompts
        here shorten by truncation, see ``ThreadSettings``)."""
        return self._settings.message_shortening_input_token_limit

    def _scope_thread(self) -> Thread:
        return self._thread

    def _search_defaults(self) -> MemorySearchConfig | None:
        return self._settings.search_config

    def _image_limits(self, requested: ImageInputLimitConfig | None) -> ImageInputLimitConfig:
        return ImageInputLimitConfig.resolve(requested, self._settings.image_limits)

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
        request = AppendMessages(messages, metadata, ttl_days, ttl_anchor)
        if not request.messages:
            return []
        return self._services.messages.add(self._thread, self._settings, request)

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
        request = UpdateMessage(message_id, content, metadata, ttl_days, ttl_anchor)  # type: ignore[arg-type]
        self._services.messages.update(self._thread, self.get_message(message_id), request)
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
        defaults = search_defaults(self._settings.search_config)
        if isinstance(token_budget, NotSetType):
            token_budget = defaults.get("token_budget", NOTSET)
        if isinstance(soft_token_budget, NotSetType):
            soft_token_budget = defaults.get("soft_token_budget", NOTSET)
        request = CardRequest(
            fallback_message_count,
            max_relevant_results,
            max_recent_messages,
            except_last_messages,
            min_relevant_results_by_type,
            metadata_filter,
            include_invalid_results,
            token_budget,
            soft_token_budget,
        )
        return self._services.cards.card(self._thread, self._settings, request)

    # -- memory extraction (add, update, delete, link and search memories: facade.py) ----------

    def wait_for_memory_extraction(self, timeout: float | None = 300.0) -> None:
        """Wait for this thread's background extraction started by this client."""
        self._services.runner.wait(timeout, thread_id=self.thread_id)

    # -- images (add, update and delete: shared with AgentMemory, facade.py) -------------------

    def list_images(
        self,
        image_id: str | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        include_bytes: bool | NotSetType = NOTSET,
        limit: int | None | NotSetType = NOTSET,
    ) -> list[ImageRecord]:
        """This thread's images, oldest first; ``include_bytes=True`` only for one ``image_id``."""
        return self._list_images(
            ListImages(image_id, metadata_filter=metadata_filter, include_bytes=include_bytes, limit=limit)
        )
