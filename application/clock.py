"""Application layer: the system clock, the one default behind the ``Clock`` port.

It lives here (standard library only) so that ``AgentMemory`` built directly, without a
clock, and the composition root in ``palimpsest.adapters.bootstrap`` use the same class;
``palimpsest.adapters.clock`` re-exports it. Tests inject ``ManualClock`` instead.
"""

from __future__ import annotations

from datetime import UTC, datetime

from palimpsest.domain.ports import Clock

__all__ = ["SystemClock"]


class SystemClock(Clock):
    """UTC wall-clock time."""

    def now(self) -> datetime:
        return datetime.now(UTC)
