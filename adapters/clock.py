"""Adapters layer: the system clock behind the ``Clock`` port.

The class itself is :class:`palimpsest.application.clock.SystemClock` (standard library
only), so that ``AgentMemory`` built without a clock and the composition root share one
clock; this module keeps its adapter-side name.
"""

from __future__ import annotations

from palimpsest.application.clock import SystemClock

__all__ = ["SystemClock"]
