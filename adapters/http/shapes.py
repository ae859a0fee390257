"""The HTTP API's JSON answers: the codec's entity shapes (``application.codec.encode``), the
results' shapes every server shares (``application.result_codec``) and a listing's page."""

from collections.abc import Callable
from typing import Any, TypeVar

from palimpsest.application.codec import Entity, encode
from palimpsest.application.paging import Page
from palimpsest.application.result_codec import card, history, result, summary

__all__ = ["card", "history", "page", "result", "summary"]

T = TypeVar("T", bound=Entity)


def page(listed: Page[T], shape: Callable[[T], dict[str, Any]] = encode) -> dict[str, Any]:
    """A listing's page: ``{"items": [...], "next_cursor": <str, or null on the last page>}``."""
    return {"items": [shape(item) for item in listed.items], "next_cursor": listed.next_cursor}
