"""Builders for the contract suite: entities with deterministic times, small vectors, helpers.

Every entity is built here so that tests only spell out what matters to them. Times are
offsets from one fixed, timezone-aware ``NOW``; vectors are 4-dimensional so that expected
cosine rankings can be read off the numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from palimpsest.domain.links import LIFECYCLE_REASONS, opposite_label
from palimpsest.domain.model import (
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
)
from palimpsest.domain.ports import MemoryStore, UnitOfWork
from palimpsest.domain.search import LinkedRecord, ScopeFilter, SearchHit, SearchQuery
from palimpsest.domain.sentinel import ANY

NOW = datetime(2025, 3, 14, 12, 0, 0, tzinfo=UTC)
DIMENSION = 4

# Unit axes and a few mixtures; cosine to E1: E1 1.0 > NEAR_E1 ~0.99 > DIAG_12 ~0.71 > E2 0.0 > MINUS_E1 -1.0
E1 = (1.0, 0.0, 0.0, 0.0)
E2 = (0.0, 1.0, 0.0, 0.0)
E3 = (0.0, 0.0, 1.0, 0.0)
E4 = (0.0, 0.0, 0.0, 1.0)
NEAR_E1 = (0.9, 0.1, 0.0, 0.0)
DIAG_12 = (1.0, 1.0, 0.0, 0.0)
MINUS_E1 = (-1.0, 0.0, 0.0, 0.0)


def at(minutes: float = 0, *, days: float = 0) -> datetime:
    """``NOW`` shifted by minutes (and days); negative is the past."""
    return NOW + timedelta(minutes=minutes, days=days)


def thread(
    thread_id: str = "t1",
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    created_at: datetime = NOW,
    config: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
) -> Thread:
    return Thread(
        id=thread_id,
        created_at=created_at,
        updated_at=created_at,
        user_id=user_id,
        agent_id=agent_id,
        metadata=dict(metadata) if metadata is not None else None,
        config=dict(config or {}),
        state=dict(state or {}),
    )


def message(
    message_id: str,
    thread_id: str = "t1",
    seq: int = 1,
    content: str = "hello there",
    *,
    role: str = "user",
    user_id: str | None = None,
    agent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    created_at: datetime | None = None,
    expires_at: datetime | None = None,
    timestamp: datetime | None = None,
) -> Message:
    return Message(
        id=message_id,
        thread_id=thread_id,
        role=role,
        content=content,
        seq=seq,
        created_at=created_at if created_at is not None else at(seq),
        timestamp=timestamp,
        metadata=dict(metadata) if metadata is not None else None,
        user_id=user_id,
        agent_id=agent_id,
        expires_at=expires_at,
    )


def record(
    record_id: str,
    content: str | None = None,
    *,
    record_type: RecordType = RecordType.FACT,
    user_id: str | None = None,
    agent_id: str | None = None,
    thread_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    created_at: datetime = NOW,
    expires_at: datetime | None = None,
    timestamp: datetime | None = None,
) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        record_type=record_type,
        content=content if content is not None else f"memory {record_id}",
        created_at=created_at,
        updated_at=created_at,
        user_id=user_id,
        agent_id=agent_id,
        thread_id=thread_id,
        metadata=dict(metadata) if metadata is not None else None,
        expires_at=expires_at,
        timestamp=timestamp,
    )


def invalid_record(
    record_id: str,
    content: str | None = None,
    *,
    reason: str = LIFECYCLE_REASONS["supersedes"],
    invalidated_at: datetime | None = None,
    **kwargs: Any,
) -> MemoryRecord:
    """A record stored as INVALID history (status set directly, as a service would persist it)."""
    base = record(record_id, content, **kwargs)
    return MemoryRecord(
        id=base.id,
        record_type=base.record_type,
        content=base.content,
        created_at=base.created_at,
        updated_at=base.updated_at,
        user_id=base.user_id,
        agent_id=base.agent_id,
        thread_id=base.thread_id,
        metadata=base.metadata,
        status=RecordStatus.INVALID,
        invalidation_reason=reason,
        invalidated_at=invalidated_at if invalidated_at is not None else base.created_at,
        timestamp=base.timestamp,
        expires_at=base.expires_at,
    )


def link(
    link_id: str,
    source: MemoryRecord | str,
    target: MemoryRecord | str,
    relation_type: str = "supports",
    *,
    created_at: datetime = NOW,
    opposite: str | None = None,
    source_type: RecordType = RecordType.FACT,
    target_type: RecordType = RecordType.FACT,
    metadata: Mapping[str, Any] | None = None,
) -> RecordLink:
    """A link ``source -[relation_type]-> target``; records or bare ids (typed as facts)."""
    if isinstance(source, MemoryRecord):
        source_type, source = source.record_type, source.id
    if isinstance(target, MemoryRecord):
        target_type, target = target.record_type, target.id
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=source_type,
        target_id=target,
        target_type=target_type,
        relation_type=relation_type,
        opposite_relation_type=opposite_label(relation_type, opposite),
        created_at=created_at,
        metadata=dict(metadata) if metadata is not None else None,
    )


def query(
    *,
    vector: Sequence[float] | None = None,
    text: str | None = None,
    k: int = 10,
    now: datetime = NOW,
    user_id: Any = ANY,
    agent_id: Any = ANY,
    thread_id: Any = ANY,
    **kwargs: Any,
) -> SearchQuery:
    return SearchQuery(
        k=k,
        now=now,
        vector=tuple(vector) if vector is not None else None,
        text=text,
        scope=ScopeFilter(user_id=user_id, agent_id=agent_id, thread_id=thread_id),
        **kwargs,
    )


# --- store helpers ---------------------------------------------------------------------------


@contextmanager
def committing(store: MemoryStore) -> Iterator[UnitOfWork]:
    """A unit of work that commits when the block ends normally."""
    with store.unit_of_work() as uow:
        yield uow
        uow.commit()


@contextmanager
def reading(store: MemoryStore) -> Iterator[UnitOfWork]:
    """A read-only unit of work (``store.reading()``)."""
    with store.reading() as uow:
        yield uow


def seed(
    store: MemoryStore,
    *,
    threads: Iterable[Thread] = (),
    messages: Iterable[Message | tuple[Message, Sequence[float] | None]] = (),
    records: Iterable[MemoryRecord | tuple[MemoryRecord, Sequence[float] | None]] = (),
    links: Iterable[RecordLink] = (),
) -> None:
    """Store everything in one committed unit of work (threads, messages, records, links)."""
    with committing(store) as uow:
        for t in threads:
            uow.threads.add(t)
        for item in messages:
            m, vec = item if isinstance(item, tuple) else (item, None)
            uow.messages.add(m, embedding=vec)
        for item in records:
            r, vec = item if isinstance(item, tuple) else (item, None)
            uow.records.add(r, embedding=vec)
        for lk in links:
            uow.links.add(lk)


def ids(hits: Iterable[SearchHit]) -> list[str]:
    return [h.id for h in hits]


def flatten(nodes: Iterable[LinkedRecord]) -> list[LinkedRecord]:
    """Every node of a linked-record tree, depth-first in stored order."""
    out: list[LinkedRecord] = []
    for node in nodes:
        out.append(node)
        out.extend(flatten(node.children))
    return out


def tree_ids(hit: SearchHit) -> set[str]:
    return {node.record.id for node in flatten(hit.linked)}


def edges(hit: SearchHit) -> dict[str, tuple[str, int, str]]:
    """record id -> (parent id, depth, relation label) for every node of the hit's tree."""
    return {n.record.id: (n.parent_id, n.depth, n.relation_label) for n in flatten(hit.linked)}


def chain(prefix: str, length: int, *, start: datetime = NOW) -> tuple[list[MemoryRecord], list[RecordLink]]:
    """Records ``prefix0 -> prefix1 -> ... -> prefix{length}`` linked by 'supports', in order."""
    recs = [record(f"{prefix}{i}", f"chain node {i}") for i in range(length + 1)]
    lks = [
        link(f"{prefix}-l{i}", recs[i], recs[i + 1], created_at=start + timedelta(minutes=i))
        for i in range(length)
    ]
    return recs, lks
