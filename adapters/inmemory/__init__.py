"""Adapters layer: in-memory fakes of every port, shipped for tests and prototypes."""

from .clock import ManualClock
from .store import InMemoryStore

__all__ = ["InMemoryStore", "ManualClock"]
