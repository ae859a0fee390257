"""Adapters layer: the system clock behind the ``Clock`` port."""

from __future__ import annotations

from datetime import UTC, datetime

from palimpsest.domain.ports import Clock

__all__ = ["SystemClock"]


class SystemClock(Clock):
    """UTC wall-clock time."""

    def now(self) -> datetime:
        return datetime.now(UTC)
