"""Application layer: ``ProfileService``, the user and agent profiles and the deletion of
everything a user (an agent) owns.

A profile is a record of type ``user_profile`` (``agent_profile``) whose id is the user's
(agent's) id and whose scope is that id on its own dimension only (ARCHITECTURE.md D37): it is
stored, embedded and keyword-indexed like a memory, so a search scoped to the user finds it on
every store, but it is not memory-like (never linked, never listed as a memory, never written by
extraction). The id is the caller's: ``add_user("u1", ...)`` is trusted to name user ``u1``, as
every ``user_id`` the library receives is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from palimpsest.domain.errors import DuplicateIdError
from palimpsest.domain.events import DomainEvent
from palimpsest.domain.model import (
    MemoryRecord,
    RecordType,
    profile_scope,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .embedding import EmbeddingHelper
from .jobs import ExtractionRunner
from .maintenance import DELETE_THREAD_WAIT, MaintenanceService
from .record_service import RecordService
from .requests import AddProfile, DeleteProfile, ListProfiles

__all__ = ["ProfileService"]

EVERY_ROW: Final = datetime.min.replace(tzinfo=UTC)
"""A ``now`` before every expiry: a listing read "as of" it sees expired rows not yet purged,
which are still the user's data when the user is deleted."""

class _Owner:
    """The listing filters naming what one user (agent) owns: that id on its dimension, the
    other dimension unfiltered."""

    def __init__(self, kind: RecordType, owner_id: str) -> None:
        user = kind is RecordType.USER_PROFILE
        self.user_id: str | NotSetType = owner_id if user else NOTSET
        self.agent_id: str | NotSetType = NOTSET if user else owner_id


class ProfileService:
    """Add (insert or extend), list and delete user and agent profiles; the cascade of a
    deletion removes what the user (agent) owns."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        clock: Clock,
        memory: RecordService,
        embeddings: EmbeddingHelper,
        runner: ExtractionRunner,
        maintenance: MaintenanceService,
    ) -> None:
        self._store = store
        self._clock = clock
        self._memory = memory
        self._embeddings = embeddings
        self._runner = runner
        self._maintenance = maintenance

    def add(self, request: AddProfile) -> str:
        """Store the profile, or replace the text (and re-embed it) and, unless ``metadata`` is
        omitted, the metadata of the one stored. ``DuplicateIdError`` when the id names a record
        of another type (a memory, or the other kind of profile): ids are one namespace."""
        kind, profile_id, information, meta = request.record_type, request.profile_id, request.information, request.metadata
        vector = self._embeddings.documents_when_up([information])[0]
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            stored = uow.records.get(profile_id)
            if stored is None:
                scope = profile_scope(kind, profile_id)
                record = MemoryRecord(
                    id=profile_id,
                    record_type=kind,
                    content=information,
                    created_at=now,
                    updated_at=now,
                    metadata=None if isinstance(meta, NotSetType) else meta,
                    user_id=scope.user_id,
                    agent_id=scope.agent_id,
                )
                uow.records.add(record, embedding=vector)
            elif stored.record_type is kind:
                changes: dict[str, Any] = {"content": information, "updated_at": now}
                if not isinstance(meta, NotSetType):
                    changes["metadata"] = meta
                uow.records.update(replace(stored, **changes), embedding=vector)
            else:
                raise DuplicateIdError(
                    f"The id {profile_id!r} is taken by a {stored.record_type.value} record; "
                    f"a {kind.value} takes the {request.owner} as its id."
                )
            uow.commit()
        self._embeddings.wrote([vector])
        return profile_id

    def list(self, request: ListProfiles) -> list[MemoryRecord]:
        """Profiles of one kind, oldest first; ``metadata_filter=None``: those without
        metadata; ``limit`` keeps the newest ``limit`` (``None``: every one)."""
        with self._store.reading() as uow:
            return uow.records.list(
                now=self._clock.now(),
                record_types=frozenset({request.record_type}),
                metadata_filter=request.metadata_filter,
                limit=request.limit,  # type: ignore[arg-type]
            )

    def delete(self, request: DeleteProfile) -> int:
        """Delete the profile; returns 1, or 0 when there was none.

        With ``cascade`` (the default), also everything the user (agent) owns, in one unit of
        work, whether or not a profile exists: the threads of that user (agent), with their
        messages, memories, summaries and extraction jobs (after their running extraction
        finished, as ``delete_thread`` waits), then the messages and records still scoped to
        that user (agent), expired ones not yet purged included. Records linked to a deleted
        one are re-derived. Nothing of another user (agent) is read or changed."""
        kind, profile_id, cascade = request.record_type, request.profile_id, request.cascade
        scope = _Owner(kind, profile_id)
        if cascade:
            with self._store.reading() as uow:
                owned = [t.id for t in uow.threads.list(user_id=scope.user_id, agent_id=scope.agent_id, limit=None)]
            for thread_id in owned:  # let each owned thread's running extraction finish first
                self._runner.wait(DELETE_THREAD_WAIT, thread_id=thread_id)
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            events: list[DomainEvent] = []
            stored = uow.records.get(profile_id)
            deleted = 0
            if stored is not None and stored.record_type is kind:
                events.extend(self._memory.delete_records_in(uow, [profile_id], now))
                deleted = 1
            if cascade:
                events.extend(self._delete_owned(uow, scope, now))
            uow.commit()
        self._memory.publish(events)
        return deleted

    def _delete_owned(self, uow: UnitOfWork, scope: _Owner, now: datetime) -> Sequence[DomainEvent]:
        """The cascade of :meth:`delete`, inside its unit of work."""
        events: list[DomainEvent] = []
        for thread in uow.threads.list(user_id=scope.user_id, agent_id=scope.agent_id, limit=None):
            events.extend(self._maintenance.delete_thread_in(uow, thread.id, now))
        # A message carries its thread's user and agent, so none is left; a store written
        # otherwise (an import of another tool's data, say) loses them here all the same.
        for message in uow.messages.list(now=EVERY_ROW, user_id=scope.user_id, agent_id=scope.agent_id):
            uow.messages.delete(message.id)
        owned = uow.records.list(now=EVERY_ROW, user_id=scope.user_id, agent_id=scope.agent_id)
        events.extend(self._memory.delete_records_in(uow, [r.id for r in owned if not r.record_type.is_profile], now))
        return events
