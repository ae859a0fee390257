"""Application layer: read-only views of a store, for the tools that inspect it.

The command line's listings (threads with their message counts, memory records by scope, type
and status, one record by id), the links of the memory graph (those among a set of records)
and a lookup that sees expired records too (the LangGraph store reads its own items'
TTLs with it). Each view is one read-only unit of work of the
:class:`~palimpsest.domain.ports.MemoryStore` port; "now" comes from the caller's clock, so
expired rows are hidden exactly as the client hides them. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from palimpsest.domain.errors import RecordNotFoundError
from palimpsest.domain.model import MemoryRecord, RecordLink, RecordStatus, RecordType, Thread
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.sentinel import NOTSET, NotSetType

__all__ = [
    "ThreadOverview",
    "get_record",
    "links_among",
    "list_records",
    "list_threads",
    "records_by_id",
]

Scope = str | None | NotSetType


def get_record(store: MemoryStore, clock: Clock, record_id: str) -> MemoryRecord:
    """The record with ``record_id`` if it is visible now; ``RecordNotFoundError`` otherwise."""
    with store.reading() as uow:
        record = uow.records.get(record_id, now=clock.now())
    if record is None:
        raise RecordNotFoundError(f"No memory record with id {record_id!r}.")
    return record


def records_by_id(store: MemoryStore, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
    """The stored records among ``record_ids``, by id, expired ones not yet purged included."""
    with store.reading() as uow:
        return uow.records.get_many(list(record_ids))


@dataclass(frozen=True, slots=True)
class ThreadOverview:
    """A thread and how many of its messages are visible now."""

    thread: Thread
    message_count: int


def list_threads(
    store: MemoryStore,
    clock: Clock,
    *,
    user_id: Scope = NOTSET,
    agent_id: Scope = NOTSET,
    limit: int | None = None,
) -> list[ThreadOverview]:
    """Threads matching the scope, oldest first (``limit`` keeps the newest), with their counts."""
    with store.reading() as uow:
        threads = uow.threads.list(user_id=user_id, agent_id=agent_id, limit=limit)
        now = clock.now()
        return [ThreadOverview(t, len(uow.messages.list_for_thread(t.id, now=now))) for t in threads]


def list_records(
    store: MemoryStore,
    clock: Clock,
    *,
    user_id: Scope = NOTSET,
    agent_id: Scope = NOTSET,
    thread_id: Scope = NOTSET,
    record_types: Iterable[RecordType] | None = None,
    status: RecordStatus | None = None,
    limit: int | None = None,
) -> list[MemoryRecord]:
    """Visible records matching the filters, oldest first; ``status`` keeps valid or invalid
    ones only (``None``: both), then ``limit`` keeps the newest ``limit`` (``None``: all)."""
    with store.reading() as uow:
        found = uow.records.list(
            now=clock.now(),
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            record_types=None if record_types is None else frozenset(record_types),
            limit=limit if status is None else None,
        )
    if status is None:
        return found
    kept = [record for record in found if record.status is status]
    return kept[-limit:] if limit else kept


def links_among(store: MemoryStore, record_ids: Iterable[str]) -> list[RecordLink]:
    """The stored links whose two ends are both among ``record_ids``, earliest created first
    (then by id): the edges of the memory graph of those records. One read-only unit of work."""
    ids = set(record_ids)
    links: dict[str, RecordLink] = {}
    with store.reading() as uow:
        for record_id in sorted(ids):
            for link in uow.links.list(source_id=record_id, limit=None):
                if link.target_id in ids:
                    links[link.id] = link
    return sorted(links.values(), key=lambda link: (link.created_at, link.id))
