"""Application layer: a thread-safe ledger of the tokens model calls consumed.

Model adapters that pay per token expose a ``usage`` attribute holding a :class:`TokenUsage`;
:attr:`AgentMemory.token_usage <palimpsest.application.client.AgentMemory.token_usage>` merges
the ledgers of the adapters a client was given, so a user sees what memory costs per operation
("extract_memories", "summarise", "resolve_links", "embed") and in total."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["TokenCounts", "TokenUsage", "UsageReporting", "merged_usage"]


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """Token totals over some calls (``calls`` counts the responses that reported usage or not)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )


class TokenUsage:
    """Per-operation and cumulative token counts; safe to update from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_operation: dict[str, TokenCounts] = {}
        self._total = TokenCounts()

    def record(
        self, operation: str, *, prompt_tokens: int = 0, completion_tokens: int = 0, total_tokens: int | None = None
    ) -> None:
        """Add one call's usage to ``operation`` and to the total (``total_tokens`` defaults to the sum)."""
        total = prompt_tokens + completion_tokens if total_tokens is None else total_tokens
        self._add(operation, TokenCounts(1, prompt_tokens, completion_tokens, total))

    def _add(self, operation: str, counts: TokenCounts) -> None:
        with self._lock:
            self._by_operation[operation] = self._by_operation.get(operation, TokenCounts()) + counts
            self._total = self._total + counts

    @property
    def total(self) -> TokenCounts:
        with self._lock:
            return self._total

    def for_operation(self, operation: str) -> TokenCounts:
        with self._lock:
            return self._by_operation.get(operation, TokenCounts())

    @property
    def by_operation(self) -> dict[str, TokenCounts]:
        """A snapshot copy: operation name → counts."""
        with self._lock:
            return dict(self._by_operation)

    def reset(self) -> None:
        with self._lock:
            self._by_operation.clear()
            self._total = TokenCounts()

    def __repr__(self) -> str:
        total = self.total
        return f"TokenUsage(calls={total.calls}, total_tokens={total.total_tokens})"


@runtime_checkable
class UsageReporting(Protocol):
    """An adapter that records the tokens its calls consumed."""

    @property
    def usage(self) -> TokenUsage: ...


def merged_usage(components: Iterable[object]) -> TokenUsage:
    """A new ledger adding up the distinct ledgers of ``components`` (a ledger shared by several
    adapters, such as one chat model behind the extractor and the link resolver, counts once)."""
    seen: set[int] = set()
    merged = TokenUsage()
    for component in components:
        ledger = getattr(component, "usage", None)
        if not isinstance(ledger, TokenUsage) or id(ledger) in seen:
            continue
        seen.add(id(ledger))
        for operation, counts in ledger.by_operation.items():
            merged._add(operation, counts)
    return merged
