"""Application layer of palimpsest: use cases over the domain ports (the public client comes next)."""

from .memory_service import MemoryService

__all__ = ["MemoryService"]
