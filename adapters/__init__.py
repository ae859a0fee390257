"""Adapters of palimpsest: one sub-package per technology, plus the composition root.

``open_memory`` is imported lazily so that ``import palimpsest.adapters`` stays cheap and
side-effect free. ``HashingEmbedder`` (``adapters/hashing.py``, standard library only) is the
model-free embedder for tests, examples and ``palimpsest --embedder hashing``.
"""

from __future__ import annotations

from typing import Any

from .hashing import HashingEmbedder

__all__ = ["HashingEmbedder", "open_memory"]


def open_memory(*args: Any, **kwargs: Any) -> Any:
    """See :func:`palimpsest.adapters.bootstrap.open_memory`."""
    from .bootstrap import open_memory as _open_memory

    return _open_memory(*args, **kwargs)
