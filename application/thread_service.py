"""Application layer: ``ThreadService``, the thread lifecycle (create, open, list, update settings
and metadata). Deleting a thread, with everything it owns, is upkeep
(:class:`~palimpsest.application.maintenance.MaintenanceService`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from palimpsest.domain.errors import ThreadNotFoundError
from palimpsest.domain.model import Thread
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NotSetType

from .config import ImageInputLimitConfig, MemoryExtractionConfig, MemorySearchConfig, ThreadSettings
from .requests import CreateThread, GetThread, ListThreads, ThreadOptions, UpdateThread

__all__ = ["ThreadService"]


class ThreadService:
    """Creates, opens, lists and updates threads; settings are resolved from a request's
    :class:`~palimpsest.application.requests.ThreadOptions` over the stored ones (or the
    client's) and checked against the client's capabilities (an extractor) before anything is
    written."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        has_extractor: bool,
        new_id: Callable[[], str],
        extraction_config: MemoryExtractionConfig | None = None,
        image_limits: ImageInputLimitConfig | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._has_extractor = has_extractor
        self._new_id = new_id
        self._extraction_config = extraction_config
        self._image_limits = ImageInputLimitConfig.resolve(image_limits)

    def create(self, request: CreateThread, *, search_config: MemorySearchConfig | None) -> tuple[Thread, ThreadSettings]:
        """Persist a new thread (its id generated when the request has none) with the settings
        of the request over the client's (``search_config``: the client's search defaults) and
        a zero extraction counter."""
        extraction = request.memory_extraction_config
        settings = ThreadSettings.create(
            client_config=self._extraction_config,
            thread_config=None if isinstance(extraction, NotSetType) else extraction,
            max_message_token_length=request.max_message_token_length,
            context_card_token_limit=request.context_card_token_limit,
            context_card_type_search_concurrency=request.context_card_type_search_concurrency,
            message_shortening_input_token_limit=request.message_shortening_input_token_limit,
            search_config=request.search_config,
            client_search_config=search_config,
        ).with_image_limits(request.image_input_limit_config, self._image_limits)
        self.check(settings)
        now = self._clock.now()
        thread = Thread(
            id=self._new_id() if isinstance(request.thread_id, NotSetType) else request.thread_id,
            user_id=None if isinstance(request.user_id, NotSetType) else request.user_id,
            agent_id=None if isinstance(request.agent_id, NotSetType) else request.agent_id,
            metadata=None if isinstance(request.metadata, NotSetType) else request.metadata,
            config=settings.to_json(),
            state={"memory_extraction_state": {"last_memory_extraction_counter": 0}},
            created_at=now,
            updated_at=now,
        )
        with self._store.unit_of_work() as uow:
            uow.threads.add(thread)
            uow.commit()
        return thread, settings

    def get(self, thread_id: str) -> Thread:
        """The stored thread; ``ThreadNotFoundError`` when there is none."""
        with self._store.reading() as uow:
            thread = uow.threads.get(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        return thread

    def open(self, request: GetThread) -> tuple[Thread, ThreadSettings]:
        """The stored thread and its settings with the request's overrides (not persisted)."""
        thread = self.get(request.thread_id)
        return thread, self.check(self._overridden(ThreadSettings.from_json(thread.config), request))

    def list(self, request: ListThreads) -> list[Thread]:
        """Threads of a user (``None``: threads without a user), oldest first, as the store lists them."""
        with self._store.reading() as uow:
            return uow.threads.list(
                user_id=request.user_id,
                agent_id=request.agent_id,
                metadata_filter=request.metadata_filter,
                limit=request.limit,  # type: ignore[arg-type]
            )

    def check(self, settings: ThreadSettings) -> ThreadSettings:
        """``settings`` if this client can honour them (``ConfigurationError`` otherwise)."""
        settings.check_capabilities(has_extractor=self._has_extractor)
        return settings

    def update(self, request: UpdateThread) -> tuple[Thread, ThreadSettings]:
        """Apply the request's overrides to the stored settings and replace the metadata
        (omitted: kept), in one unit of work; returns the updated thread and its settings."""
        with self._store.unit_of_work() as uow:
            thread = uow.threads.get(request.thread_id)
            if thread is None:
                raise ThreadNotFoundError(f"No thread found with id {request.thread_id!r}.")
            settings = self.check(self._overridden(ThreadSettings.from_json(thread.config), request))
            changes: dict[str, Any] = {"config": settings.to_json(), "updated_at": self._clock.now()}
            if not isinstance(request.metadata, NotSetType):
                changes["metadata"] = request.metadata
            thread = replace(thread, **changes)
            uow.threads.update(thread)
            uow.commit()
        return thread, settings

    @staticmethod
    def _overridden(settings: ThreadSettings, options: ThreadOptions) -> ThreadSettings:
        """``settings`` with the options that were given."""
        return settings.overridden(
            memory_extraction_config=options.memory_extraction_config,
            max_message_token_length=options.max_message_token_length,
            context_card_token_limit=options.context_card_token_limit,
            context_card_type_search_concurrency=options.context_card_type_search_concurrency,
            message_shortening_input_token_limit=options.message_shortening_input_token_limit,
            search_config=options.search_config,
        ).with_image_limits(options.image_input_limit_config)
