"""The HTTP API's answer models: what the OpenAPI document says each route answers. Entities
carry the codec's fields (``application.codec.FIELDS``, every one written, ``"kind"`` first),
so the document cannot drift from what ``encode`` writes."""

from typing import Any, Literal

from palimpsest.application.codec import FIELDS
from pydantic import BaseModel, ConfigDict, create_model

__all__ = [
    "CardAnswer",
    "HistoryAnswer",
    "IdAnswer",
    "IdsAnswer",
    "Memory",
    "MemoryPage",
    "MessagePage",
    "SearchAnswer",
    "SummaryAnswer",
    "Thread",
    "ThreadPage",
]


def _entity(kind: str) -> type[BaseModel]:
    fields: dict[str, Any] = {"kind": (Literal[kind], ...)}
    fields.update(dict.fromkeys(FIELDS[kind], (Any, ...)))
    model: type[BaseModel] = create_model(kind.capitalize(), __config__=ConfigDict(extra="forbid"), **fields)
    return model


Memory = _entity("memory")
Thread = _entity("thread")
Message = _entity("message")
Link = _entity("link")


class IdAnswer(BaseModel):
    id: str


class IdsAnswer(BaseModel):
    ids: list[str]


class MemoryPage(BaseModel):
    items: list[Memory]  # type: ignore[valid-type]
    next_cursor: str | None


class ThreadPage(BaseModel):
    items: list[Thread]  # type: ignore[valid-type]
    next_cursor: str | None


class MessagePage(BaseModel):
    items: list[Message]  # type: ignore[valid-type]
    next_cursor: str | None


class Found(BaseModel):
    """A search result; ``relevance`` and ``distance`` are ``null`` for a result reached through links."""

    id: str
    record_type: str
    content: str
    relevance: float | None
    distance: float | None
    record: dict[str, Any]
    linked: list["LinkedFound"]


class LinkedFound(BaseModel):
    link: Link  # type: ignore[valid-type]
    result: Found


class SearchAnswer(BaseModel):
    results: list[Found]


class HistoryAnswer(BaseModel):
    memory: Memory  # type: ignore[valid-type]
    links: list[Link]  # type: ignore[valid-type]
    related: dict[str, Memory]  # type: ignore[valid-type]


class SummaryAnswer(BaseModel):
    content: str
    topics: list[str]


class CardAnswer(BaseModel):
    content: str
    summary: str
    topics: list[str]
    relevant_results: list[Found]
    recent_messages: list[Message]  # type: ignore[valid-type]


Found.model_rebuild()
