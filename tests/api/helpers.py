"""Helpers of the public-API suite: store snapshots and direct reads that bypass the client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from palimpsest.application import MemoryExtractionConfig
from palimpsest.domain.model import MemoryRecord, RecordLink, ThreadSummary
from palimpsest.domain.ports import MemoryStore

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
SETTINGS_KEYS = ("memory_retention_config", "embedding_model")


def snapshot(store: MemoryStore) -> dict[str, Any]:
    """Everything stored, expired rows included, in a comparable form."""
    with store.unit_of_work() as uow:
        threads = uow.threads.list(limit=None)
        messages = {t.id: uow.messages.list_for_thread(t.id, now=EPOCH) for t in threads}
        summaries = {t.id: uow.summaries.list_for_thread(t.id) for t in threads}
        records = uow.records.list(now=EPOCH, limit=None)
        images = uow.images.get_many([r.id for r in records], include_bytes=True)
        links = uow.links.list(limit=None)
        settings = {key: uow.settings.get(key) for key in SETTINGS_KEYS}
    return {
        "threads": sorted(threads, key=lambda t: t.id),
        "messages": messages,
        "summaries": summaries,
        "records": sorted(records, key=lambda r: r.id),
        "images": images,
        "links": sorted(links, key=lambda link: link.id),
        "settings": settings,
    }


def stored_record(store: MemoryStore, record_id: str) -> MemoryRecord | None:
    """The stored row itself (expired or not), bypassing the client."""
    with store.unit_of_work() as uow:
        return uow.records.get(record_id)


def stored_link(store: MemoryStore, link_id: str) -> RecordLink | None:
    with store.unit_of_work() as uow:
        return uow.links.get(link_id)


def stored_summaries(store: MemoryStore, thread_id: str) -> list[ThreadSummary]:
    with store.unit_of_work() as uow:
        return uow.summaries.list_for_thread(thread_id)


def days(n: float) -> timedelta:
    return timedelta(days=n)


"""Both stores, the in-memory one expected to fail until its ``last_n`` slice is fixed."""

ARGUMENT_CHECK = pytest.mark.parametrize("store", ["memory"], indirect=True)
"""For tests of argument validation that fails before any storage call: one store is enough
(the rejected call never reaches a store, and the snapshot proves it)."""
