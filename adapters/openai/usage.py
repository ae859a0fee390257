"""Adapters layer (OpenAI-compatible): the token ledger, defined in the application layer and re-exported here."""

from palimpsest.application.usage import TokenCounts, TokenUsage

__all__ = ["TokenCounts", "TokenUsage"]
