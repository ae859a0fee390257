"""Adapters layer (OpenAI-compatible): the pydantic models that model answers are validated against."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ExtractedItem",
    "ExtractionPayload",
    "LinkItem",
    "LinkResolutionItem",
    "LinkResolutionPayload",
    "RerankPayload",
    "RerankScore",
    "SummaryPayload",
]


class _Answer(BaseModel):
    # Unknown keys are ignored: servers and models add harmless extras.
    model_config = ConfigDict(extra="ignore")


class LinkItem(_Answer):
    candidate: int = Field(description="Index of a shown candidate, from 1.")
    link_type: str = Field(description="supersedes, refines, duplicates, contradicts or supports.")


class ExtractedItem(_Answer):
    text: str = Field(min_length=1)
    record_type: str = Field(description="preference, fact, guideline or memory.")
    scope: str | None = None
    entities: list[str] | None = None
    importance: int | None = Field(default=None, description="1 (trivia) to 5 (essential).")
    timestamp: str | None = None
    valid_to: str | None = None
    links: list[LinkItem] | None = None
    sources: list[int] | None = Field(default=None, description="Indexes of the newest messages it comes from, from 1.")
    replaces: list[int] | None = Field(
        default=None, description="Numbers, from 1, of earlier memories of this list that this one corrects."
    )


class ExtractionPayload(_Answer):
    thoughts: str | None = None
    memories: list[ExtractedItem]


class SummaryPayload(_Answer):
    summary: str = Field(min_length=1)
    topics: list[str] = Field(default_factory=list)


class LinkResolutionItem(_Answer):
    source: int
    updated_text: str | None = None
    links: list[LinkItem] = Field(default_factory=list)


class LinkResolutionPayload(_Answer):
    resolutions: list[LinkResolutionItem]


class RerankScore(_Answer):
    index: int = Field(description="Index of a shown candidate, from 1.")
    score: float = Field(description="0 (unrelated) to 10 (answers the query).")


class RerankPayload(_Answer):
    scores: list[RerankScore]
