"""Application layer: token budgets, the one estimate of a text's tokens (3.5 characters a
token) and shortening texts to fit a model prompt."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.sentinel import NotSetType

from .caller_warnings import warn_caller

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_SUMMARY_TOKEN_BUDGET",
    "OMISSION_MARKER",
    "apply_token_budgets",
    "estimate_tokens",
    "shorten_for_prompt",
    "warn_small_token_budget",
]

CHARS_PER_TOKEN: Final = 3.5
DEFAULT_SUMMARY_TOKEN_BUDGET: Final = 1000
"""What ``get_summary`` returns at most by default (tokens), and what a summary is bounded to."""


SMALL_TOKEN_BUDGET: Final = 1000
"""Below this (and above 0) a search's or card's ``token_budget`` is warned about: a hard budget
smaller than the first result returns nothing."""


def warn_small_token_budget(token_budget: object) -> None:
    """One ``UserWarning`` for a positive ``token_budget`` below :data:`SMALL_TOKEN_BUDGET`
    (≤0 disables the budget and is not warned about), as the reference warns."""
    if isinstance(token_budget, int) and not isinstance(token_budget, bool) and 0 < token_budget < SMALL_TOKEN_BUDGET:
        warn_caller("token_budget below 1000 may return no search results.", UserWarning)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _budget(value: object, name: str) -> int | None:
    if value is None or isinstance(value, NotSetType):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an integer or None.")
    return value if value > 0 else None


def apply_token_budgets(items: Sequence[Any], texts: Sequence[str], token_budget: object, soft_token_budget: object) -> list[Any]:
    """Keep results in rank order within the budgets (never splitting one).

    Hard budget: keep while the running total fits (the first one too large → none). Soft
    budget: keep up to and including the result that reaches the target. ≤0 disables.
    """
    hard = _budget(token_budget, "token_budget")
    soft = _budget(soft_token_budget, "soft_token_budget")
    kept: list[Any] = []
    total = 0
    for item, text in zip(items, texts):
        cost = estimate_tokens(text)
        if hard is not None and total + cost > hard:
            break
        kept.append(item)
        total += cost
        if soft is not None and total >= soft:
            break
    return kept




OMISSION_MARKER: Final = "[... omitted to enforce size limit ...]"


def shorten_for_prompt(messages: Sequence[Any], max_tokens: int | None) -> list[Any]:
    """Copies of ``messages`` whose text fits ``max_tokens`` (3.5 characters a token) for a
    model prompt: an oversized text keeps its beginning and end around an omission marker.
    The stored messages are untouched; ``None`` or a non-positive limit changes nothing."""
    if max_tokens is None or max_tokens <= 0:
        return list(messages)
    limit = int(max_tokens * CHARS_PER_TOKEN)
    out = []
    for message in messages:
        text = message.content
        if len(text) > limit:
            keep = max(0, limit - len(OMISSION_MARKER) - 2)
            head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :] if keep // 3 else ""
            message = replace(message, content=f"{head}\n{OMISSION_MARKER}\n{tail}")
        out.append(message)
    return out
