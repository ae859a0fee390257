"""Application layer: ``ThreadService``, the thread lifecycle (create, read, update settings and
metadata). Deleting a thread, with everything it owns, is upkeep
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

from .config import ThreadSettings

__all__ = ["ThreadService"]


class ThreadService:
    """Creates, reads and updates threads; settings are checked against the client's
    capabilities (an extractor) before anything is written."""

    def __init__(self, *, store: MemoryStore, clock: Clock, has_extractor: bool) -> None:
        self._store = store
        self._clock = clock
        self._has_extractor = has_extractor

    def create(
        self, thread_id: str, user_id: str | None, agent_id: str | None, metadata: Any, settings: ThreadSettings
    ) -> Thread:
        """Persist a new thread with its resolved settings and a zero extraction counter."""
        settings.check_capabilities(has_extractor=self._has_extractor)
        now = self._clock.now()
        thread = Thread(
            id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            metadata=metadata,
            config=settings.to_json(),
            state={"memory_extraction_state": {"last_memory_extraction_counter": 0}},
            created_at=now,
            updated_at=now,
        )
        with self._store.unit_of_work() as uow:
            uow.threads.add(thread)
            uow.commit()
        return thread

    def get(self, thread_id: str) -> Thread:
        """The stored thread; ``ThreadNotFoundError`` when there is none."""
        with self._store.reading() as uow:
            thread = uow.threads.get(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        return thread

    def list(self, *, user_id: str | None, agent_id: Any, metadata_filter: Any, limit: int | None) -> list[Thread]:
        """Threads of a user (``None``: threads without a user), oldest first, as the store lists them."""
        with self._store.reading() as uow:
            return uow.threads.list(user_id=user_id, agent_id=agent_id, metadata_filter=metadata_filter, limit=limit)

    def check(self, settings: ThreadSettings) -> ThreadSettings:
        """``settings`` if this client can honour them (``ConfigurationError`` otherwise)."""
        settings.check_capabilities(has_extractor=self._has_extractor)
        return settings

    def update(
        self, thread_id: str, metadata: Any, override: Callable[[ThreadSettings], ThreadSettings]
    ) -> tuple[Thread, ThreadSettings]:
        """Apply ``override`` to the stored settings and replace the metadata (``NOTSET``:
        kept), in one unit of work; returns the updated thread and its settings."""
        with self._store.unit_of_work() as uow:
            thread = uow.threads.get(thread_id)
            if thread is None:
                raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
            settings = self.check(override(ThreadSettings.from_json(thread.config)))
            changes: dict[str, Any] = {"config": settings.to_json(), "updated_at": self._clock.now()}
            if not isinstance(metadata, NotSetType):
                changes["metadata"] = metadata
            thread = replace(thread, **changes)
            uow.threads.update(thread)
            uow.commit()
        return thread, settings
