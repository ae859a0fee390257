"""Application layer: the use cases over memory records and links, on the storage ports only.

Each operation is one unit of work: load what the domain rule needs, let the pure domain
function decide (new link, retyped link, derived statuses), persist the outcome, commit.
Domain events are handed to a sink (by default the event log) only after the commit succeeded.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import (
    AgentMemoryError,
    CrossScopeLinkError,
    InvalidScopeError,
    LinkNotFoundError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.events import DomainEvent, LinkCreated, LinkDeleted, LinkUpdated
from palimpsest.domain.links import check_link_request, derive_status, new_link, retype_link, set_status
from palimpsest.domain.model import (
    MEMORY_RECORD_TYPES,
    MemoryRecord,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
    check_id,
    check_metadata,
    check_time,
    expiry_from_ttl,
    parse_record_type,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .event_log import log_event
from .principal import Principal

__all__ = ["NewLinkRequest", "RecordService"]

Owner = str | Principal | None
"""Who a call is made for: ``None`` the client, a thread's id its handle, or a principal (D44)."""

log = logging.getLogger("palimpsest")

EventSink = Callable[[DomainEvent], None]


@dataclass(frozen=True, slots=True)
class NewLinkRequest:
    """The link an added record makes to an existing one (``link_id`` ``None``: generated)."""

    target_id: str
    relation_type: str
    link_id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


def _new_id() -> str:
    return str(uuid.uuid4())


class RecordService:
    """Add, update, delete and link memory records while keeping the lifecycle invariant:

    a record is INVALID exactly when a supersedes/refines/duplicates link targets it.
    """

    def __init__(
        self,
        store: MemoryStore,
        clock: Clock,
        *,
        id_factory: Callable[[], str] = _new_id,
        event_sink: EventSink | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._new_id = id_factory
        self._sink = event_sink if event_sink is not None else log_event

    @property
    def store(self) -> MemoryStore:
        return self._store

    def publish(self, events: Iterable[DomainEvent]) -> None:
        """Hand events of a unit of work a caller committed to the sink (see the module doc)."""
        self._publish(events)

    def _publish(self, events: Iterable[DomainEvent]) -> None:
        if self._sink is not None:
            for event in events:
                self._sink(event)

    # -- records ---------------------------------------------------------------------------

    def add_record_with_link(
        self,
        *,
        content: str,
        record_type: RecordType,
        record_id: str,
        scope: Mapping[str, Any],
        metadata: dict[str, Any] | None,
        timestamp: datetime | None,
        expires_at: datetime | None,
        embedding: Sequence[float] | None,
        link: NewLinkRequest | None,
        require_thread: Owner = None,
        status: RecordStatus | NotSetType = NOTSET,
    ) -> MemoryRecord:
        """Add a record, optionally linked to an existing one, in one unit of work.

        ``scope`` maps user_id/agent_id/thread_id to a value or ``NOTSET``. An omitted user,
        agent or thread comes from the thread the memory is filed under, else from the link
        target (as the reference does: a library caller may name any user anyway, and a server
        sets the user from its credentials, so the target must then be that user's), else is
        unscoped. A given user or agent that differs from the target's is refused with a
        :class:`CrossScopeLinkError` naming the target and the value to pass.
        ``require_thread`` restricts the link target to that thread (thread-owned writes).
        The link obeys the lifecycle and scope rules of :func:`new_link`; a refused link
        writes neither the record nor the link. ``status`` is the caller's initial status
        (:func:`~palimpsest.domain.links.set_status`; valid when omitted).
        """
        now = self._clock.now()
        events: list[DomainEvent] = []
        with self._store.unit_of_work() as uow:
            target = None
            if link is not None:
                target = self._visible(uow, link.target_id, now)
                if require_thread is not None and not self._in_thread(uow, [target], require_thread):
                    where = "" if isinstance(require_thread, Principal) else " in this thread"
                    raise RecordNotFoundError(f"No memory record with id {target.id!r}{where}.")
            user = scope.get("user_id", NOTSET)
            thread_id = scope.get("thread_id", NOTSET)
            # A memory filed under a thread is its user's and agent's: omitted ones come from it.
            owner = uow.threads.get(thread_id) if isinstance(thread_id, str) else None
            if isinstance(user, NotSetType) and owner is not None:
                user = owner.user_id
            elif isinstance(user, NotSetType) and target is not None:
                user = target.user_id  # the reference's rule: an omitted scope is the link target's
            values: dict[str, str | None] = {"user_id": None if isinstance(user, NotSetType) else user}
            inherit = target is not None and target.user_id == values["user_id"]
            for name in ("agent_id", "thread_id"):
                value = scope.get(name, NOTSET)
                if isinstance(value, NotSetType):
                    if name == "agent_id" and owner is not None:
                        value = owner.agent_id
                    else:
                        value = getattr(target, name) if inherit else None
                values[name] = value
            self._check_thread_scope(uow, values, owner)
            record = MemoryRecord(
                id=record_id,
                record_type=record_type,
                content=content,
                created_at=now,
                updated_at=now,
                metadata=metadata,
                timestamp=timestamp,
                expires_at=expires_at,
                user_id=values["user_id"],
                agent_id=values["agent_id"],
                thread_id=values["thread_id"],
            )
            if not isinstance(status, NotSetType):
                record = set_status(record, status, now)
            created = None
            if link is not None and target is not None:
                _check_target_scope(values, target)
                check_link_request(link.relation_type)
                created = new_link(
                    link_id=link.link_id or self._new_id(),
                    source=record,
                    target=target,
                    relation_type=link.relation_type,
                    existing_between=(),
                    metadata=link.metadata,
                    timestamp=link.timestamp,
                    now=now,
                )
            uow.records.add(record, embedding=embedding)
            if created is not None and target is not None:
                uow.links.add(created)
                events.append(LinkCreated(created))
                events.extend(self._rederive(uow, {target.id}, now))
            uow.commit()
        self._publish(events)
        return record

    def add_extracted(
        self,
        records: Sequence[tuple[MemoryRecord, Sequence[float] | None]],
        links: Sequence[tuple[str, str, str]] = (),
    ) -> list[MemoryRecord]:
        """Add one extraction pass's records (with their vectors) and the links proposed with
        them, as ``(source_id, target_id, relation_type)``, in one unit of work: a pass is
        stored whole or not at all.

        A proposed link that the lifecycle rules refuse (a target that is gone or expired, a
        repeat, the reverse orientation, another user's record) is skipped and logged: a
        model's mistake never undoes the memories."""
        now = self._clock.now()
        events: list[DomainEvent] = []
        with self._store.unit_of_work() as uow:
            added = {}
            for record, embedding in records:
                uow.records.add(record, embedding=embedding)
                added[record.id] = record
            for source_id, target_id, relation_type in links:
                source = added.get(source_id)
                if source is None:
                    continue
                try:
                    check_link_request(relation_type)
                    target = self._visible(uow, target_id, now)
                    created = new_link(
                        link_id=self._new_id(),
                        source=source,
                        target=target,
                        relation_type=relation_type,
                        existing_between=uow.links.between(source_id, target_id),
                        now=now,
                    )
                except AgentMemoryError as exc:
                    log.info("skipped a proposed %s link %s -> %s: %s", relation_type, source_id, target_id, exc)
                    continue
                uow.links.add(created)
                events.append(LinkCreated(created))
                events.extend(self._rederive(uow, {target_id}, now))
            uow.commit()
        self._publish(events)
        return list(added.values())

    def get_record(self, record_id: str, *, owner_thread: Owner = None) -> MemoryRecord:
        """The record if it exists and has not expired (and, with ``owner_thread``, belongs to
        that thread); ``RecordNotFoundError`` otherwise."""
        with self._store.reading() as uow:
            return self._visible(uow, record_id, self._clock.now(), owner_thread)

    def update_record(
        self,
        record_id: str,
        *,
        content: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        embedding: Sequence[float] | None | NotSetType = NOTSET,
        expires_at: datetime | None | NotSetType = NOTSET,
        status: RecordStatus | NotSetType = NOTSET,
    ) -> MemoryRecord:
        """Partial update; omitted fields stay. Scope and type cannot be set here; ``status`` is
        the caller's (:func:`~palimpsest.domain.links.set_status`), until a link change touching
        the record derives it again. ``expires_at`` sets the expiry directly (``ttl_days``
        computes it from now).

        Changing ``content`` without a new ``embedding`` drops the old vector: a vector of
        the old text would make search answer for words the record no longer says.
        """
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            record = self._visible(uow, record_id, now)
            changes: dict[str, Any] = {"updated_at": now}
            if not isinstance(content, NotSetType):
                changes["content"] = content
                if isinstance(embedding, NotSetType) and content != record.content:
                    embedding = None
            if not isinstance(metadata, NotSetType):
                changes["metadata"] = check_metadata(metadata)
            if not isinstance(timestamp, NotSetType):
                changes["timestamp"] = timestamp
            if not isinstance(ttl_days, NotSetType):
                changes["expires_at"] = expiry_from_ttl(now, ttl_days)
            if not isinstance(expires_at, NotSetType):
                changes["expires_at"] = expires_at
            updated = replace(record, **changes)
            if not isinstance(status, NotSetType):
                updated = set_status(updated, status, now)
            uow.records.update(updated, embedding=embedding)
            uow.commit()
        return updated

    def refresh_ttl(self, until: Mapping[str, datetime]) -> dict[str, MemoryRecord]:
        """Move each record's expiry to the time ``until`` gives for its id, in one unit of work.

        Only the expiry changes: ``updated_at`` stays, since keeping a record alive (a read
        that restarts its time to live) is not an edit. Records that are not visible now
        (absent, or already expired) are left alone. Returns the refreshed records by id.
        """
        expiries = {check_id(key, "record id"): check_time(when, "until") for key, when in until.items()}
        if not expiries:
            return {}
        now = self._clock.now()
        refreshed: dict[str, MemoryRecord] = {}
        with self._store.unit_of_work() as uow:
            for record_id, expires_at in expiries.items():
                current = uow.records.get(record_id, now=now)
                if current is None:
                    continue
                updated = replace(current, expires_at=expires_at)
                uow.records.update(updated)
                refreshed[record_id] = updated
            uow.commit()
        return refreshed

    def delete_record(self, record_id: str, *, owner_thread: Owner = None) -> bool:
        """Delete a record and its links; records it had retired become valid again if no
        other lifecycle link still targets them. ``owner_thread`` deletes only that thread's."""
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            record = uow.records.get(record_id)
            if (
                record is None
                or not record.record_type.is_memory_like  # a profile goes by delete_user/delete_agent, an image by delete_image
                or (owner_thread is not None and not self._in_thread(uow, [record], owner_thread))
            ):
                return False
            events = self.delete_records_in(uow, [record_id], now)
            uow.commit()
        self._publish(events)
        return True

    def delete_records_in(self, uow: UnitOfWork, record_ids: Sequence[str], now: datetime) -> list[DomainEvent]:
        """Delete records (with their links) inside a caller's unit of work and re-derive the
        status of the records they were linked to; the caller commits."""
        doomed = set(record_ids)
        partners: set[str] = set()
        events: list[DomainEvent] = []
        for record_id in record_ids:
            links = uow.links.touching(record_id)
            if uow.records.delete(record_id):
                partners.update(link.other_end(record_id) for link in links)
                events.extend(LinkDeleted(link) for link in links)
        events.extend(self._rederive(uow, partners - doomed, now))
        return events

    def list_records(
        self,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        record_types: Iterable[RecordType | str] | None = None,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        types = (
            MEMORY_RECORD_TYPES
            if record_types is None
            else frozenset(parse_record_type(t, memory_only=True) for t in record_types)
        )
        with self._store.reading() as uow:
            return uow.records.list(
                now=self._clock.now(),
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                record_types=types,
                metadata_filter=metadata_filter,
                limit=limit,
            )

    # -- links -----------------------------------------------------------------------------

    def link(
        self,
        source_id: str,
        target_id: str,
        relation_type: str,
        *,
        opposite_relation_type: str | None = None,
        link_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: datetime | None = None,
        expected_types: tuple[RecordType, RecordType] | None = None,
        owner_thread: Owner = None,
    ) -> RecordLink:
        """Create ``source -[relation_type]-> target``; a lifecycle type retires the target.

        ``expected_types`` must match the stored endpoint types when given; ``owner_thread``
        restricts both endpoints to that thread's records (thread-scoped linking)."""
        check_link_request(relation_type)
        check_id(source_id, "source_record_id")
        check_id(target_id, "target_record_id")
        link_id = check_id(link_id, "link id") if link_id is not None else self._new_id()
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            source = self._visible(uow, source_id, now, owner_thread)
            target = self._visible(uow, target_id, now, owner_thread)
            if expected_types is not None and (source.record_type, target.record_type) != expected_types:
                raise ValidationError(
                    "The given record types do not match the stored records "
                    f"({source.record_type.value} → {target.record_type.value})."
                )
            link = new_link(
                link_id=link_id,
                source=source,
                target=target,
                relation_type=relation_type,
                opposite_relation_type=opposite_relation_type,
                existing_between=uow.links.between(source_id, target_id),
                metadata=check_metadata(metadata),
                timestamp=timestamp,
                now=now,
            )
            uow.links.add(link)
            events: list[DomainEvent] = [LinkCreated(link)]
            events.extend(self._rederive(uow, {target_id}, now))
            uow.commit()
        self._publish(events)
        return link

    def update_link(
        self,
        link_id: str,
        *,
        relation_type: str | NotSetType = NOTSET,
        opposite_relation_type: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: datetime | None | NotSetType = NOTSET,
        owner_thread: Owner = None,
    ) -> RecordLink:
        """Change a link; omitted fields stay, ``None`` clears metadata/timestamp. Retyping
        re-derives the status of both endpoints."""
        if not isinstance(relation_type, NotSetType):
            check_link_request(relation_type)
        if opposite_relation_type is None:
            raise ValidationError("opposite_relation_type cannot be None; omit it to keep the current label.")
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            before = uow.links.get(link_id)
            if before is None or not self._owned(uow, before, owner_thread):
                raise LinkNotFoundError(f"No link with id {link_id!r}.")
            ends = uow.records.get_many([before.source_id, before.target_id])
            after = retype_link(
                before,
                relation_type=None if isinstance(relation_type, NotSetType) else relation_type,
                opposite_relation_type=None
                if isinstance(opposite_relation_type, NotSetType)
                else opposite_relation_type,
                siblings=uow.links.between(before.source_id, before.target_id),
                endpoints=(ends[before.source_id], ends[before.target_id]),
            )
            if not isinstance(metadata, NotSetType):
                after = replace(after, metadata=check_metadata(metadata))
            if not isinstance(timestamp, NotSetType):
                after = replace(after, timestamp=timestamp)
            uow.links.update(after)
            events: list[DomainEvent] = [LinkUpdated(before, after)]
            events.extend(self._rederive(uow, {before.source_id, before.target_id}, now))
            uow.commit()
        self._publish(events)
        return after

    def delete_link(self, link_id: str, *, owner_thread: Owner = None) -> bool:
        """Delete a link by id; its target becomes valid again if nothing else retires it."""
        return self._delete_link(lambda uow: uow.links.get(link_id), owner_thread, None)

    def delete_link_between(
        self,
        source_id: str,
        target_id: str,
        relation_type: str,
        *,
        expected_types: tuple[RecordType, RecordType] | None = None,
        owner_thread: Owner = None,
    ) -> bool:
        """Delete by the complete directed tuple (stored orientation and type), its ids and
        label checked as :meth:`link` checks them."""
        check_id(source_id, "source_record_id")
        check_id(target_id, "target_record_id")
        check_link_request(relation_type)
        return self._delete_link(
            lambda uow: uow.links.find(source_id, target_id, relation_type), owner_thread, expected_types
        )

    def _delete_link(
        self,
        locate: Callable[[UnitOfWork], RecordLink | None],
        owner_thread: Owner,
        expected_types: tuple[RecordType, RecordType] | None,
    ) -> bool:
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            link = locate(uow)
            if link is None or not self._owned(uow, link, owner_thread):
                return False
            if expected_types is not None and (link.source_type, link.target_type) != expected_types:
                return False
            uow.links.delete(link.id)
            events: list[DomainEvent] = [LinkDeleted(link)]
            events.extend(self._rederive(uow, {link.source_id, link.target_id}, now))
            uow.commit()
        self._publish(events)
        return True

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _in_thread(uow: UnitOfWork, records: Iterable[MemoryRecord], thread_id: str | Principal) -> bool:
        """Whether the owner of a call owns every record. A thread (its id): each is in it and
        of its user; a record the client filed under another user's thread is not the thread's
        to change. A :class:`Principal`: each is its user's (and its agent's, when it has one)."""
        if isinstance(thread_id, Principal):
            return all(thread_id.owns(r.user_id, r.agent_id) for r in records)
        thread = uow.threads.get(thread_id)
        return thread is not None and all(r.thread_id == thread_id and r.user_id == thread.user_id for r in records)

    @classmethod
    def _visible(
        cls, uow: UnitOfWork, record_id: str, now: datetime, owner_thread: Owner = None
    ) -> MemoryRecord:
        check_id(record_id, "record id")
        record = uow.records.get(record_id, now=now)
        if (
            record is None
            or not record.record_type.is_memory_like  # a profile or an image is no memory to change or link
            or (owner_thread is not None and not cls._in_thread(uow, [record], owner_thread))
        ):
            raise RecordNotFoundError(f"No memory record with id {record_id!r}.")
        return record

    @staticmethod
    def _check_thread_scope(uow: UnitOfWork, values: Mapping[str, Any], loaded: Thread | None) -> None:
        """A memory filed under a thread belongs to that thread's user and agent: one filed
        under another user's thread would be read, changed and deleted with that user's.
        ``loaded`` is the thread already read, if it is that one."""
        thread_id = values.get("thread_id")
        if thread_id is None:
            return
        thread = loaded if loaded is not None and loaded.id == thread_id else uow.threads.get(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"No thread found with id {thread_id!r}.")
        if (values.get("user_id"), values.get("agent_id")) != (thread.user_id, thread.agent_id):
            raise InvalidScopeError(
                f"A memory of thread {thread_id!r} must have that thread's user_id and agent_id "
                "(omit them to take the thread's)."
            )

    @classmethod
    def _owned(cls, uow: UnitOfWork, link: RecordLink, owner_thread: Owner) -> bool:
        if owner_thread is None:
            return True
        ends = uow.records.get_many([link.source_id, link.target_id])
        return len(ends) == 2 and cls._in_thread(uow, ends.values(), owner_thread)

    def rederive_in(self, uow: UnitOfWork, record_ids: Iterable[str], now: datetime) -> list[DomainEvent]:
        """Re-derive statuses inside a caller's unit of work (deletes done outside this service)."""
        return self._rederive(uow, record_ids, now)

    @staticmethod
    def _rederive(uow: UnitOfWork, record_ids: Iterable[str], now: datetime) -> list[DomainEvent]:
        events: list[DomainEvent] = []
        for record_id in sorted(record_ids):
            record = uow.records.get(record_id)
            if record is None:
                continue
            derived, new_events = derive_status(record, uow.links.touching(record_id), now)
            if derived is not record:
                uow.records.update(derived)
            events.extend(new_events)
        return events


def _check_target_scope(values: Mapping[str, str | None], target: MemoryRecord) -> None:
    """Refuse a new memory whose given user or agent differs from its link target's, naming
    the target and what to pass (the domain's own check would name the new memory's id, which
    the caller may never have seen)."""
    for name, noun in (("user_id", "user"), ("agent_id", "agent")):
        wanted = getattr(target, name)
        given = values[name]
        if wanted is not None and given != wanted and (name == "user_id" or given is not None):
            raise CrossScopeLinkError(
                f"memory_id_to_link {target.id!r} belongs to {noun} {wanted!r}, not {given!r}: pass "
                f"{name}={wanted!r} (or leave {name} out to take the target's); links stay inside one {noun}."
            )
