"""Application layer: cursor pages of a listing (ARCHITECTURE.md D45).

A listing is read in pages of at most ``limit`` items, in a fixed order by a key unique to each
item (a memory's or thread's ``(created_at, id)``, a message's ``seq``). A page's
``next_cursor`` is an opaque string holding the last item's key and the listing it came from;
the next page holds the items whose key comes after it. A page therefore never repeats or skips
an item that was there when the previous page was read, whatever was added or deleted between
two pages (an item added since appears once, if its key comes after the cursor: a new memory or
thread does, its creation time being later). The cursor names no user: it only narrows what the
caller may already list.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Generic, TypeVar

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .codec import encode_time

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "Page", "PageKey", "after_cursor", "page_of", "page_size"]

DEFAULT_PAGE_SIZE: Final = 50
"""Items per page when the caller names no ``limit``."""

MAX_PAGE_SIZE: Final = 500
"""The largest ``limit`` a page takes."""

T = TypeVar("T")

PageKey = tuple[str | int, ...]
"""An item's place in its listing (compared in order, so each part keeps one type per listing)."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """Up to ``limit`` items of a listing, in its order; ``next_cursor`` reads on (``None``: this is the last page)."""

    items: tuple[T, ...]
    next_cursor: str | None


def page_size(limit: int | None | NotSetType = NOTSET) -> int:
    """A page's ``limit`` checked (an integer from 1 to :data:`MAX_PAGE_SIZE`; omitted or ``None``: the default)."""
    if isinstance(limit, NotSetType) or limit is None:
        return DEFAULT_PAGE_SIZE
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_SIZE:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_PAGE_SIZE}.")
    return limit


def time_key(created_at: datetime, item_id: str) -> PageKey:
    """The key of an item ordered by creation time, then id."""
    return (encode_time(created_at) or "", item_id)


def _encode(listing: str, key: PageKey) -> str:
    raw = json.dumps([listing, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def after_cursor(cursor: str | None, listing: str, shape: tuple[type, ...]) -> PageKey | None:
    """The key a cursor of ``listing`` holds (``None`` for no cursor: the first page); a cursor
    that is not one of that listing's, with parts of the types ``shape`` names, is a ``ValidationError``."""
    if cursor is None:
        return None
    malformed = ValidationError("cursor is not one this listing gave.")
    if not isinstance(cursor, str) or not cursor or len(cursor) > 2048:
        raise malformed
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise malformed from None
    if not isinstance(decoded, list) or len(decoded) != len(shape) + 1 or decoded[0] != listing:
        raise malformed
    parts = decoded[1:]
    if any(isinstance(part, bool) or not isinstance(part, kind) for part, kind in zip(parts, shape)):
        raise malformed
    return tuple(parts)


def page_of(
    items: Iterable[T],
    key: Callable[[T], PageKey],
    *,
    listing: str,
    limit: int,
    after: PageKey | None,
) -> Page[T]:
    """The page of ``items`` (any order) that follows the key ``after`` (``None``: the first),
    at most ``limit`` long, with the cursor to the next page when more follow."""
    keyed = sorted(((key(item), item) for item in items), key=lambda pair: pair[0])
    following = [pair for pair in keyed if after is None or pair[0] > after]
    taken = following[:limit]
    more = len(following) > limit
    return Page(tuple(item for _, item in taken), _encode(listing, taken[-1][0]) if more else None)
