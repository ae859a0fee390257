"""Application layer: ``*_async`` twins of blocking methods, run in worker threads.

The stores and model ports are blocking; an async caller must not stall its event loop, so
each twin hands the sync method to ``asyncio.to_thread``. One decorator writes every twin,
so the sync and async APIs cannot drift apart.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["with_async_twins"]

C = TypeVar("C", bound=type)


def _twin(name: str, sync: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(sync)
    async def twin(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Looked up on the instance, not captured: a subclass's override (or a decorator's
        # wrapper, e.g. the observed operations of D39) is what the twin runs.
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    twin.__name__ = f"{name}_async"
    twin.__qualname__ = f"{sync.__qualname__}_async"
    twin.__doc__ = f"Async twin of :meth:`{name}`; runs it in a worker thread."
    return twin


def with_async_twins(*names: str) -> Callable[[C], C]:
    def decorate(cls: C) -> C:
        for name in names:
            setattr(cls, f"{name}_async", _twin(name, getattr(cls, name)))
        return cls

    return decorate
