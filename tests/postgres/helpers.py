"""Test support for the PostgreSQL suite: rows written with plain SQL (the store's repositories
come from the shared SQL kit), and the same rows written to an embedded store to compare with.

:func:`write` is a minimal writer for tests only: it inserts threads, messages, records and
links as the repositories will, vectors as pgvector text, and indexes keyword documents the way
every store does (a message's keyword text includes the turn before it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from palimpsest.adapters.postgres.keywords import index_documents
from palimpsest.adapters.postgres.schema import fix_dimension
from palimpsest.adapters.postgres.search import vector_literal
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordType, Thread, keyword_text
from palimpsest.domain.search import ScopeFilter, SearchQuery
from palimpsest.domain.sentinel import ANY
from psycopg.types.json import Jsonb

NOW = datetime(2025, 3, 14, 12, 0, 0, tzinfo=UTC)

Vectors = Mapping[str, Sequence[float]]


def at(minutes: float = 0) -> datetime:
    return NOW + timedelta(minutes=minutes)


def thread(thread_id: str, *, user_id: str | None = None, agent_id: str | None = None) -> Thread:
    return Thread(id=thread_id, created_at=NOW, updated_at=NOW, user_id=user_id, agent_id=agent_id)


def message(
    message_id: str, thread_id: str, seq: int, content: str, *, user_id: str | None = None,
    speaker: str | None = None, metadata: Mapping[str, Any] | None = None, expires_at: datetime | None = None,
) -> Message:
    meta = dict(metadata or {})
    if speaker is not None:
        meta["speaker"] = speaker
    return Message(
        id=message_id, thread_id=thread_id, role="user", content=content, seq=seq, created_at=at(seq),
        metadata=meta or None, user_id=user_id, expires_at=expires_at,
    )


def record(
    record_id: str, content: str, *, record_type: RecordType = RecordType.FACT, user_id: str | None = None,
    agent_id: str | None = None, thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
    expires_at: datetime | None = None, created: float = 0,
) -> MemoryRecord:
    return MemoryRecord(
        id=record_id, record_type=record_type, content=content, created_at=at(created), updated_at=at(created),
        user_id=user_id, agent_id=agent_id, thread_id=thread_id,
        metadata=dict(metadata) if metadata is not None else None, expires_at=expires_at,
    )


def link(link_id: str, source: MemoryRecord, target: MemoryRecord, relation: str = "supports", *, created: float = 0) -> RecordLink:
    return RecordLink(
        id=link_id, source_id=source.id, source_type=source.record_type, target_id=target.id,
        target_type=target.record_type, relation_type=relation, opposite_relation_type=f"{relation} (reverse)",
        created_at=at(created),
    )


def query(
    *, vector: Sequence[float] | None = None, text: str | None = None, k: int = 10, user_id: Any = ANY,
    agent_id: Any = ANY, thread_id: Any = ANY, now: datetime = NOW, **options: Any,
) -> SearchQuery:
    return SearchQuery(
        k=k, now=now, vector=None if vector is None else tuple(vector), text=text,
        scope=ScopeFilter(user_id=user_id, agent_id=agent_id, thread_id=thread_id), **options,
    )


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _vector(vectors: Vectors, key: str) -> str | None:
    found = vectors.get(key)
    return None if found is None else vector_literal(found)


def message_keyword_texts(messages: Sequence[Message]) -> dict[str, str]:
    """Each message's keyword text: its searched text after the turn before it in its thread."""
    texts: dict[str, str] = {}
    by_thread: dict[str, list[Message]] = {}
    for m in messages:
        by_thread.setdefault(m.thread_id, []).append(m)
    for turns in by_thread.values():
        turns.sort(key=lambda m: m.seq)
        before: Message | None = None
        for m in turns:
            texts[m.id] = keyword_text(
                m.content, m.speaker, None if before is None else before.content, None if before is None else before.speaker
            )
            before = m
    return texts


def write(
    conn: psycopg.Connection[Any],
    *,
    threads: Sequence[Thread] = (),
    messages: Sequence[Message] = (),
    records: Sequence[MemoryRecord] = (),
    links: Sequence[RecordLink] = (),
    vectors: Vectors | None = None,
    dimension: int | None = None,
) -> None:
    """Insert the rows in the caller's transaction (``search_path`` at the store's schema)."""
    vectors = vectors or {}
    if dimension is not None:
        fix_dimension(conn, dimension)
    for t in threads:
        conn.execute(
            "INSERT INTO threads (id, user_id, agent_id, metadata, config, state, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (t.id, t.user_id, t.agent_id, _json(t.metadata), Jsonb(t.config), Jsonb(t.state), t.created_at, t.updated_at),
        )
    for m in messages:
        conn.execute(
            "INSERT INTO messages (id, thread_id, seq, role, content, timestamp, metadata, user_id, agent_id, "
            "created_at, expires_at, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
            (m.id, m.thread_id, m.seq, m.role, m.content, m.timestamp, _json(m.metadata), m.user_id, m.agent_id,
             m.created_at, m.expires_at, _vector(vectors, m.id)),
        )
    for r in records:
        conn.execute(
            "INSERT INTO records (id, record_type, content, user_id, agent_id, thread_id, metadata, status, "
            "invalidation_reason, invalidated_at, timestamp, expires_at, created_at, updated_at, embedding) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
            (r.id, r.record_type.value, r.content, r.user_id, r.agent_id, r.thread_id, _json(r.metadata),
             r.status.value, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at,
             r.updated_at, _vector(vectors, r.id)),
        )
    for l in links:
        conn.execute(
            "INSERT INTO links (id, source_id, source_type, target_id, target_type, relation_type, "
            "opposite_relation_type, metadata, timestamp, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (l.id, l.source_id, l.source_type.value, l.target_id, l.target_type.value, l.relation_type,
             l.opposite_relation_type, _json(l.metadata), l.timestamp, l.created_at),
        )
    texts = message_keyword_texts(messages)
    index_documents(
        conn, [(True, m.id, texts[m.id]) for m in messages] + [(False, r.id, r.content) for r in records]
    )


def write_embedded(
    store: Any,
    *,
    threads: Sequence[Thread] = (),
    messages: Sequence[Message] = (),
    records: Sequence[MemoryRecord] = (),
    links: Sequence[RecordLink] = (),
    vectors: Vectors | None = None,
) -> None:
    """The same rows through an embedded store's repositories."""
    vectors = vectors or {}
    with store.unit_of_work() as uow:
        for t in threads:
            uow.threads.add(t)
        for m in messages:
            found = vectors.get(m.id)
            uow.messages.add(m, embedding=None if found is None else tuple(found))
        for r in records:
            found = vectors.get(r.id)
            uow.records.add(r, embedding=None if found is None else tuple(found))
        for l in links:
            uow.links.add(l)
        uow.commit()
