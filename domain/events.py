"""Domain layer: past-tense events returned by domain decisions (no bus; callers may log them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .model import RecordLink

__all__ = [
    "DomainEvent",
    "LinkCreated",
    "LinkDeleted",
    "LinkUpdated",
    "RecordInvalidated",
    "RecordRevalidated",
]


@dataclass(frozen=True, slots=True)
class LinkCreated:
    link: RecordLink


@dataclass(frozen=True, slots=True)
class LinkUpdated:
    before: RecordLink
    after: RecordLink


@dataclass(frozen=True, slots=True)
class LinkDeleted:
    link: RecordLink


@dataclass(frozen=True, slots=True)
class RecordInvalidated:
    record_id: str
    reason: str
    at: datetime
    by_link_id: str


@dataclass(frozen=True, slots=True)
class RecordRevalidated:
    record_id: str
    at: datetime


DomainEvent = LinkCreated | LinkUpdated | LinkDeleted | RecordInvalidated | RecordRevalidated
