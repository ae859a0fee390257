"""Adapters layer: a clock that only moves when told to, for deterministic tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from palimpsest.domain.model import check_time
from palimpsest.domain.ports import Clock

__all__ = ["ManualClock"]


class ManualClock(Clock):
    """Implements the ``Clock`` port; starts at ``start`` and advances by ``tick`` per call."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        *,
        tick: timedelta = timedelta(microseconds=1),
    ) -> None:
        self._now = check_time(start, "start")
        self._tick = tick

    def now(self) -> datetime:
        current = self._now
        self._now = current + self._tick
        return current

    def advance(self, delta: timedelta) -> None:
        self._now += delta

    def set(self, when: datetime) -> None:
        self._now = check_time(when, "when")
