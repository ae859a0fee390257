"""The HTTP API's JSON answers: the codec's entity shapes (``application.codec.encode``) and
the shapes of the results that are not entities (search results, cards, summaries, pages)."""

import math
from collections.abc import Callable
from typing import Any, TypeVar

from palimpsest.application import MemoryHistory
from palimpsest.application.codec import Entity, encode
from palimpsest.application.paging import Page
from palimpsest.application.results import ContextCard, SearchResult, Summary

__all__ = ["card", "history", "page", "result", "summary"]

T = TypeVar("T", bound=Entity)


def _number(value: float) -> float | None:
    """A score as JSON takes it: ``None`` for one that is not a finite number (a linked result's distance)."""
    return value if math.isfinite(value) else None


def result(found: SearchResult) -> dict[str, Any]:
    """A search result: its record in the codec's shape, its relevance and distance (``null``
    for a result reached through links, which is not scored), and the results linked to it
    (``num_hops``), each with the stored link that reached it."""
    return {
        "id": found.id,
        "record_type": found.record_type.value,
        "content": found.content,
        "relevance": _number(found.relevance),
        "distance": _number(found.distance),
        "record": encode(found.record),
        "linked": [{"link": encode(link), "result": result(nested)} for link, nested in found.linked_results],
    }


def page(listed: Page[T], shape: Callable[[T], dict[str, Any]] = encode) -> dict[str, Any]:
    """A listing's page: ``{"items": [...], "next_cursor": <str, or null on the last page>}``."""
    return {"items": [shape(item) for item in listed.items], "next_cursor": listed.next_cursor}


def history(found: MemoryHistory) -> dict[str, Any]:
    """A memory with its links (earliest first) and the caller's memories at their other ends."""
    return {
        "memory": encode(found.record),
        "links": [encode(link) for link in found.links],
        "related": {rid: encode(record) for rid, record in sorted(found.related.items())},
    }


def summary(found: Summary) -> dict[str, Any]:
    return {"content": found.content, "topics": list(found.topics)}


def card(built: ContextCard) -> dict[str, Any]:
    """A context card: its prompt text (``content``) and the parts it was built from."""
    return {
        "content": built.content,
        "summary": built.summary,
        "topics": list(built.topics),
        "relevant_results": [result(r) for r in built.relevant_results],
        "recent_messages": [encode(m) for m in built.recent_messages],
    }
