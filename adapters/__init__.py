"""Adapters of palimpsest: one sub-package per technology, plus the composition root.

``open_memory`` (:func:`palimpsest.adapters.bootstrap.open_memory`, typed: keywords in,
``AgentMemory`` out) is imported on first use, so that ``import palimpsest.adapters`` stays
cheap and side-effect free. ``HashingEmbedder`` (``adapters/hashing.py``, standard library only) is the
model-free embedder for tests, examples and ``palimpsest --embedder hashing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hashing import HashingEmbedder

if TYPE_CHECKING:
    from .bootstrap import open_memory

__all__ = ["HashingEmbedder", "open_memory"]


def __getattr__(name: str) -> Any:
    """``open_memory`` itself (its signature and return type), loaded on first use."""
    if name == "open_memory":
        from .bootstrap import open_memory

        return open_memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
